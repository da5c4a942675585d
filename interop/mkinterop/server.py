"""Starts and stops the real mk-server binary for the interop suite.

The binary comes from the environment variable MK_SERVER_BIN (set by
`cargo xtask interop`). Each server gets free loopback ports that are chosen
here (the Kafka listeners of several brokers sit on consecutive ports, so
`--kafka-listen 127.0.0.1:0` cannot be used), a fresh `--data-dir`, and is
ready when it has printed its one-line banner on stdout.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

# The banner line is read as the repository's Python package reads it
# (python/mk_server; pytest.ini puts ../python on the path).
from mk_server import _first_line as _read_banner

BANNER_PREFIX = "mk-server listening on "
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 20.0


class ServerError(AssertionError):
    """The server did not start or stop as it should (a test failure)."""


def server_binary() -> Path:
    """The mk-server binary under test; a missing one is a failure."""
    value = os.environ.get("MK_SERVER_BIN")
    if not value:
        raise ServerError(
            "MK_SERVER_BIN is not set: run the suite through `cargo xtask interop`, "
            "which builds mk-server and passes its path"
        )
    path = Path(value)
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise ServerError(f"MK_SERVER_BIN={value} is not an executable file")
    return path


def _port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def pick_ports(count: int, rng: random.Random) -> list[int]:
    """`count` consecutive free loopback ports (bind-then-close each).

    Another process may still take one before the server binds it; the
    caller retries with new ports when the server refuses to start.
    """
    for _ in range(200):
        base = rng.randrange(20000, 60000 - count)
        ports = list(range(base, base + count))
        if all(_port_is_free(p) for p in ports):
            return ports
    raise ServerError(f"found no {count} consecutive free ports on 127.0.0.1")


@dataclass
class MkServer:
    """One running mk-server process."""

    process: subprocess.Popen
    kafka_addrs: list[str]
    json_addr: str
    broker_ids: list[int]
    data_dir: Path
    log_path: Path
    banner: str
    args: list[str] = field(default_factory=list)
    restarts: int = 0
    # The web console's address (`host:port`) when started with one.
    console_addr: str | None = None

    @property
    def console_url(self) -> str:
        """The console's base URL; a server started without it is an error."""
        if self.console_addr is None:
            raise ServerError("this server was started without the console (start_server(console=True))")
        return f"http://{self.console_addr}"

    @property
    def bootstrap(self) -> str:
        """bootstrap.servers for a client: the first broker's listener."""
        return self.kafka_addrs[0]

    def kafka_addr_of(self, broker_id: int) -> str:
        return self.kafka_addrs[self.broker_ids.index(broker_id)]

    def log_tail(self, lines: int = 60) -> str:
        return file_tail(self.log_path, lines)

    def cli(self, *args: str, timeout_s: float = 30.0) -> subprocess.CompletedProcess:
        """Runs an mk-server client subcommand against this server's JSON-TCP port."""
        return subprocess.run(
            [str(server_binary()), *args, "--server", self.json_addr],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )

    def describe_group(self, group: str) -> dict:
        """The group as `mk-server group describe --json` shows it."""
        proc = self.cli("group", "describe", group, "--json")
        assert proc.returncode == 0, f"mk-server group describe {group}: {proc.stdout}{proc.stderr}"
        return json.loads(proc.stdout.strip().splitlines()[-1])

    def restart(self) -> None:
        """SIGTERM (must exit 0), then the same command line again: same
        ports, same data dir. The new process logs to a new file."""
        code = self.stop()
        if code != 0:
            raise ServerError(f"mk-server exited {code} after SIGTERM; log tail:\n{self.log_tail()}")
        self.restarts += 1
        log_path = self.log_path.with_name(f"{self.log_path.stem}-restart{self.restarts}.log")
        env = dict(os.environ)
        env.setdefault("RUST_LOG", "info")
        with open(log_path, "wb") as log:
            process = subprocess.Popen(
                self.args, stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL, env=env
            )
        line = _read_banner(process, time.monotonic() + START_TIMEOUT_S)
        if line is None or not line.startswith(BANNER_PREFIX):
            if process.poll() is None:
                process.kill()
            process.wait()
            raise ServerError(
                f"mk-server did not restart ({' '.join(self.args)}): banner {line!r}, exit {process.returncode}, "
                f"stderr:\n{log_path.read_text(errors='replace')[-4000:]}"
            )
        kafka_addrs, json_addr = _parse_banner(line)
        if (kafka_addrs, json_addr) != (self.kafka_addrs, self.json_addr):
            process.kill()
            process.wait()
            raise ServerError(f"restarted mk-server listens elsewhere: {line!r}, was {self.banner!r}")
        self.process, self.log_path, self.banner = process, log_path, line

    def stop(self) -> int:
        """SIGTERM, then wait for the graceful shutdown; returns the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
                raise ServerError(
                    f"mk-server did not stop within {STOP_TIMEOUT_S}s of SIGTERM "
                    f"(killed); log tail:\n{self.log_tail()}"
                ) from None
        if self.process.stdout:
            self.process.stdout.close()
        return self.process.returncode


def file_tail(path: Path, lines: int = 60) -> str:
    """The last `lines` lines of a log file, or why it cannot be read."""
    try:
        text = path.read_text(errors="replace")
    except OSError as e:
        return f"(cannot read {path}: {e})"
    return "\n".join(text.splitlines()[-lines:])


def _parse_banner(line: str) -> tuple[list[str], str]:
    """Kafka addresses and the JSON-TCP address named by the banner, e.g.
    `mk-server listening on 127.0.0.1:9092, 127.0.0.1:9093 (Kafka) and
    127.0.0.1:9192 (JSON-TCP), data in ..., brokers [1, 2]`."""
    m = re.match(r"mk-server listening on (.+?) \(Kafka\) and (\S+) \(JSON-TCP\)", line)
    if not m:
        raise ServerError(f"unexpected banner: {line!r}")
    return [a.strip() for a in m.group(1).split(",")], m.group(2)


def start_server(
    tmp_dir: Path,
    brokers: list[int] | None = None,
    min_insync_replicas: int | None = None,
    extra_args: list[str] | None = None,
    name: str = "mk",
    console: bool = False,
) -> MkServer:
    """Starts mk-server on free ports with a fresh data dir under `tmp_dir`;
    with `console`, the web console too, on a port of its own that a
    restart keeps."""
    binary = server_binary()
    brokers = brokers or [1]
    rng = random.Random()
    last_error = ""
    for attempt in range(5):
        ports = pick_ports(len(brokers) + 1, rng)
        kafka_port, json_port = ports[0], ports[-1]
        console_port = pick_ports(1, rng)[0] if console else None
        data_dir = tmp_dir / f"{name}-data-{attempt}"
        log_path = tmp_dir / f"{name}-server-{attempt}.log"
        args = [
            str(binary),
            "--data-dir",
            str(data_dir),
            "--kafka-listen",
            f"127.0.0.1:{kafka_port}",
            "--listen",
            f"127.0.0.1:{json_port}",
            "--console-listen",
            f"127.0.0.1:{console_port}" if console_port else "off",
            "--brokers",
            ",".join(str(b) for b in brokers),
        ]
        if min_insync_replicas is not None:
            args += ["--min-insync-replicas", str(min_insync_replicas)]
        extra = list(extra_args or [])
        # Kafka's initial rebalance delay (3 s) would only slow the suite's
        # many short-lived groups; a test that wants it passes the flag.
        if "--group-initial-rebalance-delay-ms" not in extra:
            extra += ["--group-initial-rebalance-delay-ms", "0"]
        args += extra
        env = dict(os.environ)
        env.setdefault("RUST_LOG", "info")
        with open(log_path, "wb") as log:
            process = subprocess.Popen(
                args, stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL, env=env
            )
        line = _read_banner(process, time.monotonic() + START_TIMEOUT_S)
        if line is not None and line.startswith(BANNER_PREFIX):
            kafka_addrs, json_addr = _parse_banner(line)
            if len(kafka_addrs) != len(brokers):
                process.kill()
                process.wait()
                raise ServerError(f"banner names {len(kafka_addrs)} Kafka listeners for brokers {brokers}: {line!r}")
            return MkServer(
                process=process,
                kafka_addrs=kafka_addrs,
                json_addr=json_addr,
                broker_ids=list(brokers),
                data_dir=data_dir,
                log_path=log_path,
                banner=line,
                args=args,
                console_addr=f"127.0.0.1:{console_port}" if console_port else None,
            )
        if process.poll() is None:
            process.kill()
        process.wait()
        log_text = log_path.read_text(errors="replace")
        last_error = f"banner {line!r}, exit {process.returncode}, stderr:\n{log_text[-4000:]}"
        # A port taken between the check and the bind: try other ports.
        if "cannot listen" not in log_text and "Address already in use" not in log_text:
            break
    raise ServerError(f"mk-server did not start ({' '.join(args)}): {last_error}")
