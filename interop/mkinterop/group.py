"""Consumer-group members as child processes, seen from the test process.

Each `MemberProcess` runs one member (mkinterop/member.py for the Python
clients, `js/mk_interop.js group-member` for kafkajs, the Java driver's
`member` scenario for the Java client) and collects the JSON
events it prints: assignments, revocations, the records it processed and
the offsets it committed. Scenarios wait for conditions over those events
with deadlines, stop members gracefully (`stop` on stdin: commit, close,
LeaveGroup) or SIGKILL them.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

from . import java_client
from .server import file_tail

INTEROP_DIR = Path(__file__).resolve().parent.parent
JS_DIR = INTEROP_DIR / "js"
SESSION_TIMEOUT_MS = 6000  # the broker's group.min.session.timeout.ms
HEARTBEAT_INTERVAL_MS = 1000
MAX_POLL_INTERVAL_MS = 30000  # also the rebalance timeout
WAIT_S = 60.0


class MemberProcess:
    def __init__(
        self,
        client: str,
        bootstrap: str,
        group: str,
        topics: list[str],
        name: str,
        log_dir: Path,
        module: str = "mkinterop.member",
        **cfg,
    ):
        self.client = client
        self.name = name
        self.cfg = {
            "client": client,
            "bootstrap": bootstrap,
            "group": group,
            "topics": topics,
            "session_timeout_ms": SESSION_TIMEOUT_MS,
            "heartbeat_interval_ms": HEARTBEAT_INTERVAL_MS,
            "max_poll_interval_ms": MAX_POLL_INTERVAL_MS,
            **cfg,
        }
        self.log_path = log_dir / f"member-{name}-{client}.log"
        self.events: list[dict] = []
        self.other_output: list[str] = []
        self.lock = threading.Lock()
        self.started_at = time.time()
        if client == "kafkajs" and module == "mkinterop.member":
            cmd = ["node", str(JS_DIR / "mk_interop.js"), "group-member", json.dumps(self.cfg)]
            cwd = JS_DIR
        elif client == "java":
            # The Java driver's scenario with the same config and events.
            cmd = java_client.command("run", java_client.RUN_SCENARIOS[module], json.dumps(self.cfg))
            cwd = INTEROP_DIR
        else:
            cmd = [sys.executable, "-m", module, json.dumps(self.cfg)]
            cwd = INTEROP_DIR
        env = dict(os.environ, KAFKAJS_NO_PARTITIONER_WARNING="1", PYTHONUNBUFFERED="1")
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            cmd, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log
        )
        self._reader = threading.Thread(target=self._read, name=f"member-{name}", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            line = raw.decode(errors="replace").strip()
            try:
                ev = json.loads(line)
            except ValueError:
                with self.lock:
                    self.other_output.append(line)
                continue
            with self.lock:
                self.events.append(ev)

    # ---- views of the events

    def snapshot(self) -> list[dict]:
        with self.lock:
            return list(self.events)

    def of(self, kind: str) -> list[dict]:
        return [e for e in self.snapshot() if e["ev"] == kind]

    @property
    def assignment(self) -> list[int]:
        """The partitions held now. An `assigned` event adds partitions (the
        whole new assignment in the eager protocol, which revoked everything
        first; the increment in the cooperative one) or, with `full`, is the
        whole assignment; `revoked` removes partitions."""
        current: set[int] = set()
        for e in self.snapshot():
            if e["ev"] == "assigned":
                current = set(e["partitions"]) if e.get("full") else current | set(e["partitions"])
            elif e["ev"] == "revoked":
                current -= set(e["partitions"])
        return sorted(current)

    @property
    def records(self) -> list[tuple[int, int, str]]:
        return [(p, o, v) for e in self.of("records") for p, o, v in e["recs"]]

    @property
    def committed(self) -> dict[int, int]:
        out: dict[int, int] = {}
        for e in self.of("committed"):
            for p, o in e["offsets"].items():
                out[int(p)] = o
        return out

    @property
    def errors(self) -> list[dict]:
        return self.of("error") + self.of("commit_failed")

    def rebalance_events(self, since: float = 0.0) -> list[dict]:
        return [e for e in self.snapshot() if e["ev"] in ("assigned", "revoked") and e["t"] >= since]

    def alive(self) -> bool:
        return self.proc.poll() is None

    def log_tail(self, n: int = 60) -> str:
        return file_tail(self.log_path, n)

    def describe(self) -> str:
        evs = self.snapshot()
        counts = Counter(e["ev"] for e in evs)
        rebal = [(e["ev"], e.get("partitions"), round(e["t"] - self.started_at, 2)) for e in evs if e["ev"] in ("assigned", "revoked")]
        return (
            f"member {self.name} ({self.client}, pid {self.proc.pid}, exit {self.proc.poll()}): "
            f"events {dict(counts)}, assignment {self.assignment}, rebalances {rebal}, "
            f"committed {self.committed}, errors {self.errors[:3]}, other output {self.other_output[-5:]}"
        )

    # ---- control

    def stop(self, timeout_s: float = WAIT_S) -> None:
        """Graceful stop: `stop` on stdin; the member commits, closes
        (LeaveGroup) and must exit 0."""
        if self.alive():
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write(b"stop\n")
                self.proc.stdin.flush()
                self.proc.stdin.close()
            except (BrokenPipeError, OSError):
                pass
        self.wait_exit(timeout_s)

    def wait_exit(self, timeout_s: float = WAIT_S) -> None:
        try:
            code = self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"{self.describe()} did not exit within {timeout_s}s (killed)") from None
        self._reader.join(timeout=10)
        assert code == 0, f"{self.describe()} exited {code}; its log:\n{self.log_tail()}"
        assert self.of("closed"), f"{self.describe()} exited without closing its consumer"

    def kill(self) -> None:
        if self.alive():
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self._reader.join(timeout=10)

    def cleanup(self) -> None:
        self.kill()
        self._log.close()
        if self.proc.stdin:
            try:
                self.proc.stdin.close()
            except OSError:
                pass


class Members:
    """The members a scenario started; killed at teardown, shown on failure."""

    def __init__(self, log_dir: Path):
        self.log_dir = log_dir
        self.all: list[MemberProcess] = []

    def start(self, client: str, bootstrap: str, group: str, topic: str, name: str, **cfg) -> MemberProcess:
        m = MemberProcess(client, bootstrap, group, [topic], name, self.log_dir, **cfg)
        self.all.append(m)
        return m

    def report_sections(self) -> list[tuple[str, str]]:
        return [(f"group member {m.name} ({m.client})", m.describe() + "\n--- log tail ---\n" + m.log_tail(40)) for m in self.all]

    def cleanup(self) -> None:
        for m in self.all:
            m.cleanup()


def wait_until(
    condition, what: str, timeout_s: float = WAIT_S, members: list[MemberProcess] = (), poll_s: float = 0.05
):
    """Polls `condition()` -> (ok, detail) every `poll_s` until ok or the
    deadline. A member that exits while waited for fails the wait at once."""
    deadline = time.monotonic() + timeout_s
    detail = None
    while time.monotonic() < deadline:
        ok, detail = condition()
        if ok:
            return detail
        dead = [m for m in members if not m.alive()]
        if dead:
            raise AssertionError(
                f"waiting for {what}: a member exited: " + "; ".join(m.describe() + "\n" + m.log_tail(30) for m in dead)
            )
        time.sleep(poll_s)
    raise AssertionError(
        f"{what} within {timeout_s}s; last seen: {detail}\n" + "\n".join(m.describe() for m in members)
    )


def settled(members: list[MemberProcess], partitions: int):
    """Condition: every member holds a non-empty assignment, the
    assignments are disjoint and together cover every partition."""

    def check():
        assignments = {m.name: m.assignment for m in members}
        flat = [p for a in assignments.values() for p in a]
        ok = all(assignments.values()) and sorted(flat) == list(range(partitions))
        return ok, assignments

    return check


def read_everything(members: list[MemberProcess], produced: dict[str, tuple[int, int]]):
    """Condition: the members together have processed every produced value."""

    def check():
        seen = {v for m in members for _, _, v in m.records}
        missing = set(produced) - seen
        return not missing, f"{len(missing)} of {len(produced)} records not read yet"

    return check


def check_exactly_once(members: list[MemberProcess], produced: dict[str, tuple[int, int]]) -> None:
    """Every produced record was processed by exactly one member, exactly
    once, at the partition and offset it was acknowledged at; nothing else
    was processed."""
    count: Counter = Counter()
    where: dict[str, list[tuple[str, int, int]]] = defaultdict(list)
    for m in members:
        for p, o, v in m.records:
            count[v] += 1
            where[v].append((m.name, p, o))
    dupes = {v: where[v] for v, n in count.items() if n > 1}
    assert not dupes, f"{len(dupes)} records processed more than once: {list(dupes.items())[:5]}"
    missing = sorted(set(produced) - set(count))
    assert not missing, f"{len(missing)} records never processed: {missing[:5]}"
    extra = sorted(set(count) - set(produced))
    assert not extra, f"processed records that were never produced: {extra[:5]}"
    moved = [(v, produced[v], where[v][0][1:]) for v in produced if produced[v] != where[v][0][1:]]
    assert not moved, f"records read elsewhere than acknowledged (value, acked, read): {moved[:5]}"


def offsets_by_partition(records: list[tuple[int, int, str]]) -> dict[int, list[int]]:
    out: dict[int, list[int]] = defaultdict(list)
    for p, o, _ in records:
        out[p].append(o)
    return out


class PacedProducer:
    """Produces rounds of one record per partition from its own thread, a
    few milliseconds apart, so records keep arriving while the group
    rebalances (confluent-kafka, acks=all, idempotent): `rounds` rounds, or
    with `rounds=None` until `finish()`, so that a scenario's membership
    changes happen while records arrive however slow the machine is.
    `acked` maps each value to where it was acknowledged."""

    def __init__(self, bootstrap: str, topic: str, rounds: int | None, tag: str, partitions: int = 3):
        from confluent_kafka import Producer

        from .drivers import ConfluentKafka

        self.topic, self.rounds, self.tag, self.partitions = topic, rounds, tag, partitions
        self.acked: dict[str, tuple[int, int]] = {}
        self.failed: list[str] = []
        self.sent = 0
        self.left = None
        self._finish = threading.Event()
        self.producer = Producer(
            ConfluentKafka()._conf(bootstrap, **{"acks": "all", "enable.idempotence": True, "linger.ms": 5})
        )
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _delivered(self, err, msg):
        if err is None:
            self.acked[msg.value().decode()] = (msg.partition(), msg.offset())
        else:
            self.failed.append(str(err))

    def _run(self):
        r = 0
        while (r < self.rounds) if self.rounds is not None else not self._finish.is_set():
            for p in range(self.partitions):
                self.producer.produce(self.topic, value=f"{self.tag}-{r:05d}-{p}".encode(), partition=p, on_delivery=self._delivered)
                self.sent += 1
            self.producer.poll(0.005)
            r += 1
        self.left = self.producer.flush(60)

    def finish(self):
        """Stops an open-ended producer after its current round."""
        self._finish.set()

    def join(self):
        self.finish()
        self.thread.join(timeout=120)
        assert not self.thread.is_alive(), "producer thread did not finish"
        assert self.left == 0 and not self.failed, f"{self.left} undelivered, failures {self.failed[:5]}"
        assert len(self.acked) == self.sent
        if self.rounds is not None:
            assert self.sent == self.rounds * self.partitions


def committed_offsets(bootstrap: str, group: str, topic: str, partitions: int = 3) -> dict[int, int]:
    """The group's committed offsets, from an OffsetFetch of an independent
    client (a confluent-kafka consumer that never joins); -1 for none."""
    from confluent_kafka import Consumer, TopicPartition

    from .drivers import ConfluentKafka

    consumer = Consumer(ConfluentKafka()._conf(bootstrap, **{"group.id": group, "enable.auto.commit": False}))
    try:
        tps = consumer.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=10)
        for tp in tps:
            assert tp.error is None, f"OffsetFetch {group} {topic}[{tp.partition}]: {tp.error}"
        return {tp.partition: tp.offset if tp.offset >= 0 else -1 for tp in tps}
    finally:
        consumer.close()
