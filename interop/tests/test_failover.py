"""Failover seen by real clients (issue 9): three brokers in one mk-server
(`--brokers 1,2,3 --min-insync-replicas 2`, background drivers on), a topic
with replication factor 3, and a confluent-kafka producer (acks=all,
enable.idempotence) that keeps producing while the broker leading partition
0 is taken offline with `mk-server broker offline <id>` and brought back with
`mk-server broker online <id>`, twice (the second time the new leader goes,
so leadership moves to the broker that came back). The producer must re-route to the new leader
on its own. A confluent-kafka consumer tails the topic through it all, and
afterwards a kafka-python consumer reads it from the start: each sees every
acknowledged record exactly once, in order."""

from __future__ import annotations

import functools
import threading
import time
from collections import defaultdict

from conftest import unique_topic

from mkinterop.drivers import DRIVERS, ConfluentKafka
from mkinterop.group import wait_until

PARTITIONS = 3
PHASE_RECORDS = 300  # acknowledged on partition 0 in each phase
PHASE_TIMEOUT_S = 60.0
MAX_RECORDS = 200_000  # a bound on the producer loop whatever happens
# Each phase's polls: every 0.05 s, for up to PHASE_TIMEOUT_S.
_wait_for = functools.partial(wait_until, timeout_s=PHASE_TIMEOUT_S, poll_s=0.05)


class BackgroundProducer:
    """Produces `<partition>:<seq>` values round robin over the partitions
    from its own thread until stopped; remembers every delivery report."""

    def __init__(self, bootstrap: str, topic: str):
        from confluent_kafka import Producer

        self.topic = topic
        self.lock = threading.Lock()
        self.acked: dict[bytes, tuple[int, int]] = {}  # value -> (partition, offset)
        self.failed: dict[bytes, str] = {}
        self.sent: list[bytes] = []
        self.fatal: list[str] = []
        self.stop_flag = threading.Event()
        self.left: int | None = None  # undelivered after the final flush
        self.producer = Producer(
            ConfluentKafka()._conf(
                bootstrap,
                **{
                    "acks": "all",
                    "enable.idempotence": True,
                    "linger.ms": 5,
                    "error_cb": self._on_error,
                },
            )
        )
        self.thread = threading.Thread(target=self._run, name="failover-producer", daemon=True)

    def _on_error(self, err) -> None:
        if err.fatal():
            with self.lock:
                self.fatal.append(str(err))

    def _on_delivery(self, err, msg) -> None:
        with self.lock:
            if err is None:
                self.acked[msg.value()] = (msg.partition(), msg.offset())
            else:
                self.failed[msg.value()] = str(err)

    def _run(self) -> None:
        seq = [0] * PARTITIONS
        i = 0
        while not self.stop_flag.is_set() and i < MAX_RECORDS:
            p = i % PARTITIONS
            value = f"{p}:{seq[p]:07d}".encode()
            try:
                self.producer.produce(self.topic, value=value, partition=p, on_delivery=self._on_delivery)
            except BufferError:
                self.producer.poll(0.05)
                continue
            self.sent.append(value)
            seq[p] += 1
            i += 1
            # Serves delivery reports and paces the loop to the acks.
            self.producer.poll(0.001)
        self.left = self.producer.flush(PHASE_TIMEOUT_S)

    def acked_on(self, partition: int) -> int:
        with self.lock:
            return sum(1 for p, _ in self.acked.values() if p == partition)

    def wait_acked_on(self, partition: int, count: int, what: str) -> None:
        deadline = time.monotonic() + PHASE_TIMEOUT_S
        while time.monotonic() < deadline:
            with self.lock:
                assert not self.fatal, f"producer hit a fatal error {what}: {self.fatal}"
            if self.acked_on(partition) >= count:
                return
            assert self.thread.is_alive(), f"producer thread ended {what}"
            time.sleep(0.02)
        raise AssertionError(
            f"{what}: {self.acked_on(partition)} records acknowledged on partition {partition} "
            f"within {PHASE_TIMEOUT_S}s, waited for {count}; failed deliveries: {list(self.failed.items())[:5]}"
        )


class TailingConsumer:
    """A confluent-kafka consumer (manual assignment from offset 0, no
    group) that reads the topic while the failover happens. After a leader
    change librdkafka validates its position at the new leader with
    OffsetForLeaderEpoch (KIP-320) before it fetches again."""

    def __init__(self, bootstrap: str, topic: str):
        from confluent_kafka import Consumer, TopicPartition

        self.lock = threading.Lock()
        self.got: list[tuple[int, int, bytes]] = []  # (partition, offset, value)
        self.errors: list[str] = []
        self.stop_flag = threading.Event()
        self.consumer = Consumer(
            ConfluentKafka()._conf(
                bootstrap,
                **{"group.id": "mk-interop-unused", "enable.auto.commit": False, "auto.offset.reset": "error"},
            )
        )
        self.consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        self.thread = threading.Thread(target=self._run, name="failover-consumer", daemon=True)

    def _run(self) -> None:
        try:
            while not self.stop_flag.is_set():
                for m in self.consumer.consume(num_messages=500, timeout=0.2):
                    with self.lock:
                        if m.error():
                            self.errors.append(str(m.error()))
                        else:
                            self.got.append((m.partition(), m.offset(), m.value()))
        finally:
            self.consumer.close()

    def wait_for(self, values: set[bytes]) -> None:
        def seen():
            with self.lock:
                have = {v for _, _, v in self.got}
            return values <= have, f"{len(values - have)} of {len(values)} acknowledged records not read yet"

        _wait_for(seen, "the tailing consumer to read every acknowledged record")


def _partition_state(bootstrap: str, topic: str) -> dict[int, tuple[int, list[int]]]:
    from confluent_kafka.admin import AdminClient

    md = AdminClient(ConfluentKafka()._conf(bootstrap)).list_topics(topic, timeout=10).topics[topic]
    return {p: (pm.leader, sorted(pm.isrs)) for p, pm in md.partitions.items()}


def test_failover_confluent_producer_then_kafka_python_reads_everything(three_brokers, request):
    server = three_brokers
    bootstrap = ",".join(server.kafka_addrs)
    topic = unique_topic("failover")
    DRIVERS["confluent-kafka"].create_topic(bootstrap, topic, PARTITIONS, replication_factor=3)

    def all_in_sync():
        state = _partition_state(bootstrap, topic)
        return all(isr == [1, 2, 3] for _, isr in state.values()), state

    _wait_for(all_in_sync, "every partition's ISR to be [1, 2, 3]")
    old_leader = _partition_state(bootstrap, topic)[0][0]
    assert old_leader in (1, 2, 3), f"partition 0 leader {old_leader}"

    producer = BackgroundProducer(bootstrap, topic)
    tail = TailingConsumer(bootstrap, topic)
    # Whatever fails, the consumer thread stops before the server does.
    request.addfinalizer(lambda: (tail.stop_flag.set(), tail.thread.join(timeout=30)))
    tail.thread.start()
    producer.thread.start()
    leaders_seen = [old_leader]
    try:
        producer.wait_acked_on(0, PHASE_RECORDS, "before the leader goes offline")
        # Two rounds: the second takes the new leader offline, so leadership
        # moves to the broker that came back and caught up in round one.
        for round_no in (1, 2):
            leader = leaders_seen[-1]
            off = server.cli("broker", "offline", str(leader))
            assert off.returncode == 0, f"mk-server broker offline {leader}: {off.stdout}{off.stderr}"
            acked_at_offline = producer.acked_on(0)

            def new_leader(leader=leader):
                state = _partition_state(bootstrap, topic)
                now, isr = state[0]
                return now not in (-1, leader) and leader not in isr, state

            state = _wait_for(new_leader, f"round {round_no}: partition 0 to get a leader other than broker {leader}")
            leaders_seen.append(state[0][0])
            producer.wait_acked_on(0, acked_at_offline + PHASE_RECORDS, f"round {round_no}: broker {leader} offline")

            on = server.cli("broker", "online", str(leader))
            assert on.returncode == 0, f"mk-server broker online {leader}: {on.stdout}{on.stderr}"
            _wait_for(all_in_sync, f"round {round_no}: broker {leader} to rejoin every ISR")
            producer.wait_acked_on(0, producer.acked_on(0) + PHASE_RECORDS, f"round {round_no}: broker {leader} back")
    finally:
        producer.stop_flag.set()
        producer.thread.join(timeout=PHASE_TIMEOUT_S + 30)
    assert not producer.thread.is_alive(), "producer thread did not stop"
    assert producer.left == 0, f"{producer.left} records undelivered at the end"
    assert not producer.fatal, f"fatal producer errors: {producer.fatal}"

    tail.wait_for(set(producer.acked))
    tail.stop_flag.set()
    tail.thread.join(timeout=30)
    assert not tail.thread.is_alive(), "tailing consumer did not stop"
    tail_values = [v for _, _, v in tail.got]
    assert len(tail_values) == len(set(tail_values)), "the tailing consumer read some records more than once"
    for p in range(PARTITIONS):
        offsets = [o for q, o, _ in tail.got if q == p]
        assert offsets == list(range(len(offsets))), f"tailing consumer, partition {p}: offsets skip or repeat"
    tail_moved = [(v, (q, o)) for q, o, v in tail.got if v in producer.acked and producer.acked[v] != (q, o)]
    assert not tail_moved, f"tailing consumer read records elsewhere than acknowledged: {tail_moved[:5]}"

    got = DRIVERS["kafka-python"].read_all(bootstrap, topic)
    values = [g.value for g in got]
    assert len(values) == len(set(values)), "some records were read more than once"
    read_at = {g.value: (g.partition, g.offset) for g in got}
    sent = set(producer.sent)
    assert set(values) <= sent, f"read values never sent: {sorted(set(values) - sent)[:5]}"
    missing = sorted(set(producer.acked) - set(values))
    assert not missing, f"{len(missing)} acknowledged records are not readable, first {missing[:5]}"
    moved = {v: (at, read_at[v]) for v, at in producer.acked.items() if read_at[v] != at}
    assert not moved, f"records read elsewhere than acknowledged (acked, read): {list(moved.items())[:5]}"
    by_partition = defaultdict(list)
    for g in got:
        assert g.value.startswith(f"{g.partition}:".encode()), f"{g.value!r} read from partition {g.partition}"
        by_partition[g.partition].append(g)
    for p, recs in by_partition.items():
        seqs = [int(g.value.split(b":")[1]) for g in recs]
        assert seqs == sorted(seqs), f"partition {p} not in production order"
        assert [g.offset for g in recs] == list(range(len(recs))), f"partition {p} offsets not contiguous"
    # Failed deliveries are allowed only as "maybe written"; report them.
    print(
        f"failover: {len(producer.sent)} sent, {len(producer.acked)} acknowledged, "
        f"{len(producer.failed)} failed, {len(got)} read; partition 0 leaders {leaders_seen}; "
        f"tailing consumer read {len(tail.got)}, its errors: {tail.errors[:5]}"
    )
