"""Runs kcat (Debian's package) and mk-server's own topic command."""

from __future__ import annotations

import os
import subprocess

DEBUG = os.environ.get("MK_INTEROP_DEBUG") == "1"


def kcat(server, *args: str, stdin: bytes | None = None, timeout_s: float = 120.0) -> subprocess.CompletedProcess:
    """Runs `kcat -b <server> ARGS`; a non-zero exit is a failure. Its stderr
    is printed (pytest shows it for a failed test)."""
    cmd = ["kcat", "-b", server.bootstrap, "-X", "broker.address.family=v4", *args]
    if DEBUG:
        cmd += ["-d", "protocol,broker,msg"]
    proc = subprocess.run(cmd, input=stdin, capture_output=True, timeout=timeout_s, check=False)
    if proc.stderr:
        print(f"--- {' '.join(cmd)} stderr ---\n{proc.stderr.decode(errors='replace')[-20000:]}")
    assert proc.returncode == 0, (
        f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr.decode(errors='replace')[-4000:]}"
    )
    return proc


def create_topic_via_cli(server, topic: str, partitions: int, replication_factor: int = 1) -> None:
    """kcat cannot create topics: `mk-server topic create` (JSON-TCP) does."""
    proc = server.cli(
        "topic", "create", topic, "--partitions", str(partitions), "--replication-factor", str(replication_factor)
    )
    assert proc.returncode == 0, f"mk-server topic create failed: {proc.stdout}{proc.stderr}"
