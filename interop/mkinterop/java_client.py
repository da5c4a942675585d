"""The official Java client (kafka-clients 4.3.0), driven through our Java
driver (interop/java/src/mkinterop/Driver.java).

The driver runs named scenarios. `cargo xtask interop` compiles it and sets
MK_JAVA_CLASSPATH (the driver's jar and the client's jars) and
MK_JAVA_ARCHIVE (its class data sharing archive); this module starts it:

- `call(scenario, **args)`: runs one scenario in this process's long-lived
  driver (`Driver serve`, started on first use, one per pytest worker, so
  the JVM starts once) and returns the scenario's result (parsed JSON). A
  scenario that throws raises JavaFailure with the Java exception's class,
  Kafka error name and message, and the tail of the driver's log.
- `command("run", scenario, json)`: the command line of a driver process of
  its own, for scenarios that run until stopped (`stop` on stdin) or
  killed: group members and the exactly-once processor, started through
  mkinterop/group.py like the Python members.

Every scenario takes `bootstrap` and `props` (any Kafka client property,
applied last: security settings, group.protocol, ...). Keys, values and
header values travel as base64 (`b64`/`unb64`), so bytes and nulls cross
exactly.

`JavaKafka` is the Java client behind the same driver interface as the
Python clients (mkinterop/drivers.py), so every scenario of
tests/test_clients.py runs for it too; `JavaTxnProducer` is its
transactional producer behind mkinterop/txn.py's interface.
"""

from __future__ import annotations

import atexit
import base64
import itertools
import json
import os
import queue
import subprocess
import tempfile
import threading
import time
import uuid
from pathlib import Path

from .model import Ack, Got, Rec, got_from

DEBUG = os.environ.get("MK_INTEROP_DEBUG") == "1"
INTEROP_DIR = Path(__file__).resolve().parent.parent
JAVA_DIR = INTEROP_DIR / "java"
LOG_CONFIG = JAVA_DIR / "log4j2.properties"
# The JVM options, shared with xtask's class data sharing dump.
JVM_OPTIONS = JAVA_DIR / "jvm.options"
CALL_TIMEOUT_S = 180.0
START_TIMEOUT_S = 60.0


class JavaFailure(AssertionError):
    """A Java scenario failed: `type` is the exception's class (simple name),
    `code` the Kafka error name the client maps it to (e.g.
    UNSUPPORTED_VERSION), `message` its message."""

    def __init__(self, scenario: str, failure: dict, log_tail: str = ""):
        self.scenario = scenario
        self.failure = failure
        self.type = failure.get("type", "?")
        self.code = failure.get("code", "?")
        self.message = failure.get("message", "")
        text = f"Java scenario {scenario!r} failed: {self.type} ({self.code}): {self.message}"
        if failure.get("trace"):
            text += f"\n--- Java trace ---\n{failure['trace'][-4000:]}"
        if log_tail:
            text += f"\n--- Java client log (tail) ---\n{log_tail}"
        super().__init__(text)


def b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode()


def unb64(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


def classpath() -> str:
    value = os.environ.get("MK_JAVA_CLASSPATH")
    if not value:
        raise JavaFailure(
            "(start)",
            {
                "type": "Setup",
                "message": "MK_JAVA_CLASSPATH is not set: run the suite through `cargo xtask interop`, "
                "which fetches kafka-clients, compiles the Java driver and passes its classpath",
            },
        )
    return value


def command(*driver_args: str) -> list[str]:
    """The java command line running `mkinterop.Driver DRIVER_ARGS`, with
    the class data sharing archive xtask recorded (MK_JAVA_ARCHIVE; a JVM
    that cannot use it starts without it, only slower)."""
    archive = os.environ.get("MK_JAVA_ARCHIVE")
    return [
        "java",
        f"@{JVM_OPTIONS}",
        *([f"-XX:SharedArchiveFile={archive}"] if archive else []),
        f"-Dlog4j2.configurationFile={LOG_CONFIG}",
        f"-Dmk.log.level={'DEBUG' if DEBUG else 'INFO'}",
        "-cp",
        classpath(),
        "mkinterop.Driver",
        *driver_args,
    ]


def _tail(path: Path, start: int = 0, lines: int = 60) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(start)
            text = f.read().decode(errors="replace")
    except OSError as e:
        return f"(cannot read {path}: {e})"
    return "\n".join(text.splitlines()[-lines:])


class JavaDriver:
    """One `Driver serve` process. Requests run one after the other (a lock
    serializes callers); the client log goes to `log_path`."""

    def __init__(self, log_path: Path):
        self.log_path = log_path
        self._log = open(log_path, "ab")
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._lines: queue.Queue = queue.Queue()
        self.other_output: list[str] = []
        self.proc = subprocess.Popen(
            command("serve"), cwd=INTEROP_DIR, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log
        )
        threading.Thread(target=self._read, name="java-driver", daemon=True).start()
        ready = self._next(time.monotonic() + START_TIMEOUT_S, "(start)")
        if ready.get("ev") != "ready":
            raise JavaFailure("(start)", {"type": "Protocol", "message": f"expected ready, got {ready}"}, self.log_tail())

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            line = raw.decode(errors="replace").strip()
            try:
                self._lines.put(json.loads(line))
            except ValueError:
                self.other_output.append(line)
        self._lines.put(None)

    def _next(self, deadline: float, scenario: str) -> dict:
        try:
            line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            self.kill()
            raise JavaFailure(scenario, {"type": "Timeout", "message": "no answer in time (driver killed)"}, self.log_tail()) from None
        if line is None:
            raise JavaFailure(
                scenario,
                {"type": "Exited", "message": f"the driver exited ({self.proc.wait()}); other output {self.other_output[-5:]}"},
                self.log_tail(),
            )
        return line

    def alive(self) -> bool:
        return self.proc.poll() is None

    def log_tail(self, start: int = 0, lines: int = 60) -> str:
        self._log.flush()
        return _tail(self.log_path, start, lines)

    def call_with_events(self, scenario: str, timeout_s: float = CALL_TIMEOUT_S, **args) -> tuple[object, list[dict]]:
        """Runs `scenario` with `args`; returns (result, the events it emitted)."""
        with self._lock:
            request_id = next(self._ids)
            log_start = self.log_path.stat().st_size
            assert self.proc.stdin is not None
            try:
                self.proc.stdin.write((json.dumps({"id": request_id, "scenario": scenario, "args": args}) + "\n").encode())
                self.proc.stdin.flush()
            except OSError as e:
                raise JavaFailure(scenario, {"type": "Exited", "message": f"cannot write to the driver: {e}"}, self.log_tail()) from None
            deadline = time.monotonic() + timeout_s
            events = []
            while True:
                line = self._next(deadline, scenario)
                if line.get("id") != request_id:
                    continue
                if line["ev"] == "result":
                    return line["result"], events
                if line["ev"] == "error" and "failure" in line:
                    raise JavaFailure(scenario, line["failure"], self.log_tail(log_start))
                events.append(line)

    def call(self, scenario: str, timeout_s: float = CALL_TIMEOUT_S, **args):
        return self.call_with_events(scenario, timeout_s, **args)[0]

    def kill(self) -> None:
        if self.alive():
            self.proc.kill()
        self.proc.wait()

    def close(self) -> None:
        """Closing stdin ends the serve loop (it closes what it holds)."""
        if self.alive():
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.close()
                self.proc.wait(timeout=20)
            except (OSError, subprocess.TimeoutExpired):
                self.kill()
        self._log.close()


_shared: JavaDriver | None = None
_shared_lock = threading.Lock()
_log_dir: Path | None = None


def set_log_dir(path: Path) -> None:
    """Where the shared driver writes its log (conftest.py: pytest's temp
    dir of the worker, which pytest rotates)."""
    global _log_dir
    _log_dir = path


def driver() -> JavaDriver:
    """This process's shared driver, started on first use (and again if it
    died). Its log is in the log dir (the system temp dir unless set),
    named by pid."""
    global _shared
    with _shared_lock:
        if _shared is None or not _shared.alive():
            log_dir = _log_dir or Path(tempfile.gettempdir()) / "mk-interop-java"
            log_dir.mkdir(parents=True, exist_ok=True)
            _shared = JavaDriver(log_dir / f"driver-{os.getpid()}.log")
        return _shared


def log_position() -> tuple[Path, int] | None:
    """Where the shared driver's log ends now (None before it started)."""
    if _shared is None:
        return None
    try:
        return _shared.log_path, _shared.log_path.stat().st_size
    except OSError:
        return None


def log_section(start: tuple[Path, int] | None, lines: int = 80) -> tuple[str, str] | None:
    """(title, text): what the shared driver logged since `start` (a
    log_position(), or None: since it started), or None if it logged
    nothing, e.g. because the test did not use it."""
    now = log_position()
    if now is None:
        return None
    path, end = now
    begin = start[1] if start is not None and start[0] == path else 0
    if end <= begin:
        return None
    return f"Java driver log ({path})", _tail(path, begin, lines)


@atexit.register
def _close_shared() -> None:
    if _shared is not None:
        _shared.close()


def call(scenario: str, **args):
    """Runs `scenario` in the shared driver; returns its result."""
    return driver().call(scenario, **args)


def call_with_events(scenario: str, **args):
    return driver().call_with_events(scenario, **args)


# --------------------------------------------------------------------------
# The Java client behind the Python clients' driver interface.


def rec_json(r: Rec) -> dict:
    return {
        "key": b64(r.key),
        "value": b64(r.value),
        "partition": r.partition,
        "timestamp": r.timestamp_ms,
        "headers": [[k, b64(v)] for k, v in r.headers],
    }


def got_of(j: dict) -> Got:
    return got_from(j, unb64)


def checked(answer: dict, what: str) -> dict:
    """A per-item Admin answer that must not be an error."""
    errors = {k: v for k, v in answer.items() if isinstance(v, dict) and v.get("error")}
    if errors:
        raise JavaFailure(what, {"type": "AdminError", "message": json.dumps(errors)})
    return answer


class JavaKafka:
    name = "java"
    codecs = ("gzip", "snappy", "lz4", "zstd")
    # offsetsForTimes answers null when no record is at or after the time.
    past_end_offset_is_end = False
    alter_configs_api = "IncrementalAlterConfigs"

    def create_topic(self, bootstrap: str, topic: str, partitions: int, replication_factor: int = 1) -> None:
        spec = {"name": topic, "partitions": partitions, "replication_factor": replication_factor}
        checked(call("create-topics", bootstrap=bootstrap, topics=[spec]), f"createTopics {topic}")
        deadline = time.monotonic() + 60
        seen = None
        while time.monotonic() < deadline:
            seen = self.leaders(bootstrap, topic)
            if len(seen) == partitions and all(leader >= 0 for leader in seen.values()):
                return
            time.sleep(0.05)
        raise JavaFailure("create-topics", {"type": "Metadata", "message": f"{topic}: leaders {seen}, expected {partitions} partitions"})

    def leaders(self, bootstrap: str, topic: str) -> dict[int, int]:
        answer = call("describe-topics", bootstrap=bootstrap, topics=[topic])[topic]
        if answer["error"]:
            return {}
        return {p["partition"]: p["leader"] for p in answer["partitions"]}

    def partition_count(self, bootstrap: str, topic: str) -> int:
        answer = checked(call("describe-topics", bootstrap=bootstrap, topics=[topic]), f"describeTopics {topic}")
        return len(answer[topic]["partitions"])

    def produce(self, bootstrap: str, topic: str, records: list[Rec], compression: str | None = None) -> list[Ack]:
        args = {"compression": compression} if compression else {}
        answer = call("produce", bootstrap=bootstrap, topic=topic, records=[rec_json(r) for r in records], **args)
        return [Ack(r.value, p, o) for r, (p, o, _) in zip(records, answer["acks"])]

    def read_all(self, bootstrap: str, topic: str, max_fetch_bytes: int | None = None) -> list[Got]:
        args = {"max_fetch_bytes": max_fetch_bytes} if max_fetch_bytes is not None else {}
        return [got_of(j) for j in call("read", bootstrap=bootstrap, topic=topic, **args)["records"]]

    def read_isolated(self, bootstrap: str, topic: str, isolation: str) -> list[Got]:
        return [got_of(j) for j in call("read", bootstrap=bootstrap, topic=topic, isolation=isolation)["records"]]

    def offsets_for_times(self, bootstrap: str, topic: str, partitions: int, timestamp_ms: int) -> dict[int, int | None]:
        answer = call("offsets-for-times", bootstrap=bootstrap, topic=topic, partitions=partitions, timestamp=timestamp_ms)
        return {int(p): o for p, o in answer.items()}

    def describe_topic_config(self, bootstrap: str, topic: str) -> dict[str, str | None]:
        answer = checked(call("describe-configs", bootstrap=bootstrap, resources=[{"type": "topic", "name": topic}]), "describeConfigs")
        return {k: e["value"] for k, e in answer[topic]["configs"].items()}

    def alter_topic_config(self, bootstrap: str, topic: str, key: str, value: str) -> None:
        resources = [{"type": "topic", "name": topic, "ops": [["SET", key, value]]}]
        checked(call("alter-configs", bootstrap=bootstrap, resources=resources), "incrementalAlterConfigs")

    def create_partitions(self, bootstrap: str, topic: str, total: int) -> None:
        checked(call("create-partitions", bootstrap=bootstrap, partitions={topic: total}), "createPartitions")

    def delete_topic(self, bootstrap: str, topic: str) -> None:
        checked(call("delete-topics", bootstrap=bootstrap, topics=[topic]), "deleteTopics")

    def topic_names(self, bootstrap: str) -> set[str]:
        return set(call("list-topics", bootstrap=bootstrap)["names"])

    # ---- consumer groups

    def list_groups(self, bootstrap: str) -> dict[str, str | None]:
        listed = call("list-groups", bootstrap=bootstrap)
        return {g: (v["state"].lower() if v["state"] else None) for g, v in listed.items()}

    def describe_group(self, bootstrap: str, group: str) -> dict:
        d = checked(call("describe-groups", bootstrap=bootstrap, groups=[group]), "describeConsumerGroups")[group]
        members = [
            {"member_id": m["member_id"], "client_id": m["client_id"], "assignment": m["assignment"]} for m in d["members"]
        ]
        return {"state": d["state"].lower(), "protocol": d["assignor"] or None, "members": members}

    def groups_offsets(self, bootstrap: str, groups: list[str], topic: str, partitions: int) -> dict[str, dict[int, int]]:
        answer = checked(call("group-offsets", bootstrap=bootstrap, groups=groups), "listConsumerGroupOffsets")
        out = {}
        for g in groups:
            found = {p: o for t, p, o, _, _ in answer[g]["offsets"] if t == topic}
            out[g] = {p: found.get(p, -1) for p in range(partitions)}
        return out

    def group_offsets(self, bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
        return self.groups_offsets(bootstrap, [group], topic, partitions)[group]

    def delete_group(self, bootstrap: str, group: str) -> str | None:
        return call("delete-groups", bootstrap=bootstrap, groups=[group])[group].get("code")

    def set_group_offsets(self, bootstrap: str, group: str, topic: str, offsets: dict[int, int]) -> None:
        rows = [[topic, p, o] for p, o in offsets.items()]
        checked(call("alter-group-offsets", bootstrap=bootstrap, group=group, offsets=rows), "alterConsumerGroupOffsets")

    def delete_group_offsets(self, bootstrap: str, group: str, topic: str, partitions: list[int]) -> dict[int, str | None]:
        answer = call("delete-group-offsets", bootstrap=bootstrap, group=group, partitions=[[topic, p] for p in partitions])
        return {int(k.rsplit(":", 1)[1]): v.get("code") for k, v in answer["partitions"].items()}


# --------------------------------------------------------------------------
# The transactional producer behind mkinterop/txn.py's interface.


class JavaTxnProducer:
    """A Java transactional producer held by the shared driver under a name
    of its own. Sends are shipped to the driver in one request before the
    next step (the Java producer's send is asynchronous anyway)."""

    client = "java"

    def __init__(self, bootstrap: str, transactional_id: str, transaction_timeout_ms: int | None = None):
        self.name = f"txn-{uuid.uuid4().hex[:8]}"
        self.acked: dict[bytes, tuple[int, int]] = {}
        self.failed: dict[bytes, str] = {}
        self._sends: list[tuple[str, dict]] = []
        self._unflushed: list[bytes] = []
        args = {"transaction_timeout_ms": transaction_timeout_ms} if transaction_timeout_ms is not None else {}
        call("txn-open", bootstrap=bootstrap, name=self.name, transactional_id=transactional_id, **args)

    def _step(self, scenario: str, **args):
        for topic, batch in _group_by_topic(self._sends):
            call("txn-send", name=self.name, topic=topic, records=batch)
        self._sends = []
        return call(scenario, name=self.name, **args)

    def init(self):
        self._step("txn-init")

    def begin(self):
        self._step("txn-begin")

    def send(self, topic: str, value: bytes, partition: int, key: bytes | None = None):
        self._sends.append((topic, {"key": b64(key), "value": b64(value), "partition": partition}))
        self._unflushed.append(value)

    def flush(self):
        values, self._unflushed = self._unflushed, []
        acks = self._step("txn-flush")["acks"]
        for value, (p, o) in zip(values, acks):
            self.acked[value] = (p, o)

    def send_offsets(self, topic: str, offsets: dict[int, int], consumer):
        raise NotImplementedError("the Java consume-transform-produce loop is the eos-processor scenario")

    def commit(self):
        self._step("txn-commit")

    def abort(self):
        self._step("txn-abort")

    def close(self):
        self._sends = []
        call("txn-close", name=self.name)


def _group_by_topic(sends: list[tuple[str, dict]]) -> list[tuple[str, list[dict]]]:
    """Consecutive sends to one topic as one batch, in order."""
    out: list[tuple[str, list[dict]]] = []
    for topic, rec in sends:
        if out and out[-1][0] == topic:
            out[-1][1].append(rec)
        else:
            out.append((topic, [rec]))
    return out


# What a Python member module is for Java: the driver scenario that emits
# the same events (mkinterop/group.py starts it with `run`).
RUN_SCENARIOS = {
    "mkinterop.member": "member",
    "mkinterop.txn_processor": "eos-processor",
    "mkinterop.share_member": "share-member",
}
