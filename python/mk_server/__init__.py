"""The MiniKafka broker for Python tests: the ``mk-server`` binary this
package carries, and :class:`Broker`, which runs it on free loopback ports
with a temporary data directory.

>>> from mk_server import Broker
>>> with Broker() as broker:                      # doctest: +SKIP
...     broker.create_topic("events", partitions=3)
...     producer = Producer({"bootstrap.servers": broker.bootstrap})

The pytest plugin (``mk_server.pytest_plugin``, loaded automatically once
the package is installed) wraps it as the ``kafka_broker`` fixtures.
"""

from __future__ import annotations

import json
import os
import re
import selectors
import shutil
import signal
import socket
import subprocess
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Iterable, Mapping, Optional, Sequence

__all__ = ["Broker", "BrokerError", "binary"]

START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 20.0
_BANNER = re.compile(
    r"mk-server listening on (?:(?P<kafka>.+?) \(Kafka\) and )?(?P<json>\S+) "
    r"\(JSON-TCP(?:; Kafka protocol off)?\), data in "
)
# Flags the Broker sets itself, so that it can choose free ports and keep
# them across a restart.
_OWNED_FLAGS = ("--listen", "--kafka-listen", "--data-dir", "--brokers")


class BrokerError(RuntimeError):
    """The broker did not start or stop as it should."""


def binary() -> Path:
    """The ``mk-server`` executable: ``$MK_SERVER_BIN`` if set, else the one
    this package installed (the environment's scripts directory), else the
    first on ``PATH``."""
    override = os.environ.get("MK_SERVER_BIN")
    candidates = [Path(override)] if override else []
    scripts = sysconfig.get_path("scripts")
    if scripts:
        candidates.append(Path(scripts) / "mk-server")
    on_path = shutil.which("mk-server")
    if on_path:
        candidates.append(Path(on_path))
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return path
    raise BrokerError(
        "no mk-server executable: install this package's wheel, put mk-server on PATH "
        f"or set MK_SERVER_BIN (looked at {[str(c) for c in candidates]})"
    )


def _consecutive_free_ports(count: int) -> int:
    """The first of ``count`` consecutive loopback ports that were free a
    moment ago (the kernel picks the first)."""
    for _ in range(100):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            first = s.getsockname()[1]
        if first + count > 65536:
            continue
        free = True
        for port in range(first + 1, first + count):
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    free = False
                    break
        if free:
            return first
    raise BrokerError(f"found no {count} consecutive free ports on 127.0.0.1")


class Broker:
    """One ``mk-server`` process (hosting one or several broker ids).

    ``brokers``: the broker ids (``--brokers``), each with its own Kafka
    listener. ``args``: any other flag of ``mk-server --help``, e.g.
    ``["--min-insync-replicas", "2"]``. ``data_dir``: keep the data there
    instead of a temporary directory. ``kafka=False`` serves JSON-TCP only.
    ``env``: extra environment (``RUST_LOG`` defaults to ``info``; the log
    goes to :attr:`log_path`).
    """

    def __init__(
        self,
        brokers: Sequence[int] = (1,),
        args: Iterable[str] = (),
        data_dir: Optional[os.PathLike] = None,
        kafka: bool = True,
        env: Optional[Mapping[str, str]] = None,
    ) -> None:
        self.broker_ids = [int(b) for b in brokers]
        self.args = [str(a) for a in args]
        for arg in self.args:
            if arg.split("=", 1)[0] in _OWNED_FLAGS:
                raise ValueError(f"{arg}: the Broker sets --listen, --kafka-listen, --data-dir and --brokers itself")
        self.kafka = kafka
        self.env = dict(env or {})
        self._scratch = tempfile.TemporaryDirectory(prefix="mk-server-")
        scratch = Path(self._scratch.name)
        self.data_dir = Path(data_dir) if data_dir is not None else scratch / "data"
        self.log_path = scratch / "mk-server.log"
        self.process: Optional[subprocess.Popen] = None
        self.kafka_addrs: list[str] = []
        self.json_addr = ""
        self.banner = ""

    # Addresses.

    @property
    def bootstrap(self) -> str:
        """``bootstrap.servers``: every broker's Kafka listener, comma separated."""
        if not self.kafka_addrs:
            raise BrokerError("the broker is not running, or runs with the Kafka protocol off")
        return ",".join(self.kafka_addrs)

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    # Lifecycle.

    def start(self) -> "Broker":
        """Starts on free ports and waits until the broker listens."""
        if self.running:
            raise BrokerError("already running")
        several = self.kafka and len(self.broker_ids) > 1
        last = ""
        for _ in range(5):
            kafka = "off"
            if self.kafka:
                kafka = f"127.0.0.1:{_consecutive_free_ports(len(self.broker_ids)) if several else 0}"
            error = self._launch("127.0.0.1:0", kafka)
            if error is None:
                return self
            last = error
            # A chosen port taken by another process in between: other ports.
            if not (several and "cannot listen" in error):
                break
        raise BrokerError(f"mk-server did not start: {last}")

    def stop(self) -> int:
        """SIGTERM and the wait for the graceful shutdown; the exit code (0
        after a clean shutdown). The data stays for :meth:`restart`."""
        process = self.process
        if process is None:
            return 0
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
                raise BrokerError(f"mk-server did not stop within {STOP_TIMEOUT_S}s of SIGTERM (killed)") from None
        if process.stdout:
            process.stdout.close()
        return process.returncode

    def kill(self) -> None:
        """SIGKILL, as a crash; :meth:`restart` recovers every acknowledged record."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        if self.process is not None and self.process.stdout:
            self.process.stdout.close()

    def restart(self) -> None:
        """Stops gracefully (it must exit 0) unless it already exited, then
        starts again on the same data directory and the same ports."""
        if self.running:
            code = self.stop()
            if code != 0:
                raise BrokerError(f"mk-server exited {code} after SIGTERM; log tail:\n{self.log_tail()}")
        kafka = self.kafka_addrs[0] if self.kafka_addrs else "off"
        previous = (list(self.kafka_addrs), self.json_addr)
        error = self._launch(self.json_addr, kafka)
        if error is not None:
            raise BrokerError(f"mk-server did not restart: {error}")
        if (self.kafka_addrs, self.json_addr) != previous:
            raise BrokerError(f"mk-server restarted elsewhere: {self.banner}")

    def close(self) -> None:
        """Stops the broker and removes its temporary directory."""
        try:
            self.stop()
        finally:
            self._scratch.cleanup()

    def __enter__(self) -> "Broker":
        return self.start() if not self.running else self

    def __exit__(self, *exc) -> None:
        self.close()

    # Helpers.

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        replication_factor: int = 1,
        config: Optional[Mapping[str, object]] = None,
    ) -> None:
        """Creates a topic (over JSON-TCP; a Kafka admin client works too)."""
        request: dict = {
            "operation": "create_topic",
            "topic": name,
            "partitions": partitions,
            "replication_factor": replication_factor,
        }
        if config:
            request["config"] = dict(config)
        answer = self.json_request(request)
        if not answer.get("ok"):
            raise BrokerError(f"create_topic {name}: {answer.get('code')} {answer.get('message')}")

    def json_request(self, request: Mapping[str, object]) -> dict:
        """One JSON-TCP request (docs/json-protocol.md); the answer."""
        host, port = self.json_addr.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=START_TIMEOUT_S) as s:
            s.sendall((json.dumps(request) + "\n").encode())
            data = b""
            while not data.endswith(b"\n"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        return json.loads(data)

    def cli(self, *args: str, input: Optional[str] = None, timeout_s: float = 30.0) -> subprocess.CompletedProcess:
        """Runs an ``mk-server`` client subcommand against this broker,
        e.g. ``cli("topic", "describe", "events")``."""
        return subprocess.run(
            [str(binary()), *args, "--server", self.json_addr],
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )

    def log_tail(self, lines: int = 60) -> str:
        """The end of the broker's log (stderr)."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError as e:
            return f"(cannot read {self.log_path}: {e})"
        return "\n".join(text.splitlines()[-lines:])

    # Internals.

    def _launch(self, listen: str, kafka: str) -> Optional[str]:
        """Starts the process; None once it listens, else why not."""
        command = [
            str(binary()),
            "--listen",
            listen,
            "--kafka-listen",
            kafka,
            "--console-listen",
            "off",
            "--data-dir",
            str(self.data_dir),
            "--brokers",
            ",".join(str(b) for b in self.broker_ids),
            *self.args,
        ]
        env = dict(os.environ)
        env.setdefault("RUST_LOG", "info")
        env.update(self.env)
        with open(self.log_path, "ab") as log:
            process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL, env=env)
        line = _first_line(process, time.monotonic() + START_TIMEOUT_S)
        match = _BANNER.match(line or "")
        if match is None:
            if process.poll() is None:
                process.kill()
            process.wait()
            return f"first line {line!r}, exit {process.returncode}; log tail:\n{self.log_tail()}"
        self.process = process
        self.banner = line
        self.json_addr = match.group("json")
        kafka_addrs = match.group("kafka")
        self.kafka_addrs = [a.strip() for a in kafka_addrs.split(",")] if kafka_addrs else []
        return None

    def __repr__(self) -> str:
        state = f"bootstrap={self.kafka_addrs}, json={self.json_addr}" if self.running else "stopped"
        return f"<mk_server.Broker brokers={self.broker_ids} {state}>"


def _first_line(process: subprocess.Popen, deadline: float) -> Optional[str]:
    """The first stdout line, or None if the process exited or time ran out.
    Later output is not read: the broker prints one line."""
    assert process.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(process.stdout, selectors.EVENT_READ)
    buf = b""
    try:
        while time.monotonic() < deadline:
            if not sel.select(timeout=max(0.0, deadline - time.monotonic())):
                continue
            chunk = os.read(process.stdout.fileno(), 4096)
            if not chunk:
                return None
            buf += chunk
            if b"\n" in buf:
                return buf.split(b"\n", 1)[0].decode(errors="replace")
        return None
    finally:
        sel.close()
