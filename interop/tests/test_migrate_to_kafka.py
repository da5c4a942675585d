"""docs/migrating-to-kafka.md's recipe, run as the page shows it:
`tools/migrate-to-kafka.py --source ... --target ...` between two real
mk-server processes, the second standing in for the Apache Kafka cluster.
The same consumer code, pointed at the target, must resume each partition
at the record it would have read next on the source — also where the
source log has transaction markers and an aborted transaction, whose
offsets the target does not have."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, NewTopic
from mkinterop.server import start_server

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "migrate-to-kafka.py"
TIMEOUT_S = 60.0


def admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap})


def produce(bootstrap: str, records: list[tuple[str, int, bytes, bytes, list]], **conf) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", **conf})
    failures = []
    for topic, partition, key, value, headers in records:
        p.produce(topic, key=key, value=value, partition=partition, headers=headers,
                  on_delivery=lambda err, _m: err and failures.append(err))
    assert p.flush(TIMEOUT_S) == 0 and not failures, failures


def committed_records(bootstrap: str, topic: str, partition: int) -> list[tuple[int, bytes, bytes, tuple]]:
    """(offset, key, value, headers) of every record a read_committed
    reader gets from the partition."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "migrate-test-reader", "enable.auto.commit": False,
                  "enable.partition.eof": True, "isolation.level": "read_committed"})
    try:
        c.assign([TopicPartition(topic, partition, 0)])
        out = []
        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                assert m.error().code() == KafkaError._PARTITION_EOF, m.error()
                return out
            out.append((m.offset(), m.key(), m.value(), tuple(m.headers() or ())))
        raise AssertionError(f"reading {topic}-{partition} timed out after {len(out)} records")
    finally:
        c.close()


def consume_as_the_application(bootstrap: str, group: str, topics: list[str], count: int) -> list[tuple]:
    """The application's consumer: subscribes, takes `count` records,
    commits and leaves. Returns (topic, partition, key, value, headers)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                  "auto.offset.reset": "earliest"})
    got = []
    try:
        c.subscribe(topics)
        deadline = time.monotonic() + TIMEOUT_S
        while len(got) < count:
            assert time.monotonic() < deadline, f"the application got only {len(got)} of {count} records"
            m = c.poll(0.5)
            if m is None:
                continue
            assert not m.error(), m.error()
            got.append((m.topic(), m.partition(), m.key(), m.value(), tuple(m.headers() or ())))
        c.commit(asynchronous=False)
    finally:
        c.close()
    return got


def group_offsets(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    # The client must outlive its future: a dropped AdminClient never
    # completes it.
    client = admin(bootstrap)
    res = client.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group]
    return {(tp.topic, tp.partition): tp.offset for tp in res.result(timeout=TIMEOUT_S).topic_partitions
            if tp.offset >= 0}


def dynamic_configs(bootstrap: str, topic: str) -> dict[str, str]:
    res = ConfigResource(ConfigResource.Type.TOPIC, topic)
    client = admin(bootstrap)
    entries = client.describe_configs([res])[res].result(timeout=TIMEOUT_S)
    return {n: e.value for n, e in entries.items() if e.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value}


def test_the_migration_recipe_moves_topics_configs_records_and_committed_offsets(tmp_path):
    source = start_server(tmp_path, name="source")
    target = start_server(tmp_path, name="target")
    try:
        src = source.bootstrap
        a = admin(src)
        created = a.create_topics([
            NewTopic("orders", num_partitions=3, replication_factor=1,
                     config={"retention.ms": "3600000", "retention.bytes": "104857600"}),
            NewTopic("events", num_partitions=1, replication_factor=1),
        ])
        for f in created.values():
            f.result(timeout=TIMEOUT_S)
        produce(src, [("orders", i % 3, f"customer-{i % 5}".encode(), f"order-{i}".encode(),
                       [("trace", f"t{i}".encode())]) for i in range(30)])
        # events: 5 committed in a transaction (offsets 0-4, marker 5), 3
        # aborted (6-8, marker 9), then 4 plain records (10-13).
        txn = Producer({"bootstrap.servers": src, "transactional.id": "migrate-test-txn"})
        txn.init_transactions(TIMEOUT_S)
        txn.begin_transaction()
        for i in range(5):
            txn.produce("events", key=b"e", value=f"committed-{i}".encode(), partition=0)
        txn.commit_transaction(TIMEOUT_S)
        txn.begin_transaction()
        for i in range(3):
            txn.produce("events", key=b"e", value=f"aborted-{i}".encode(), partition=0)
        txn.flush(TIMEOUT_S)
        txn.abort_transaction(TIMEOUT_S)
        produce(src, [("events", 0, None, f"plain-{i}".encode(), []) for i in range(4)])
        source_events = committed_records(src, "events", 0)
        assert [o for o, *_ in source_events] == [0, 1, 2, 3, 4, 10, 11, 12, 13], source_events

        # The application reads part of both topics on the source; a second
        # group's offsets are set by an operator, one inside the gap.
        first = consume_as_the_application(src, "billing", ["orders", "events"], 20)
        a.alter_consumer_group_offsets([ConsumerGroupTopicPartitions("audit", [
            TopicPartition("events", 0, 7), TopicPartition("orders", 1, 4)])])["audit"].result(timeout=TIMEOUT_S)
        billing_on_source = group_offsets(src, "billing")
        assert billing_on_source, "the application committed"

        # The recipe, exactly as the page shows it.
        run = subprocess.run([sys.executable, str(SCRIPT), "--source", src, "--target", target.bootstrap],
                             capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stdout + run.stderr
        assert "topic orders: created (3 partitions" in run.stdout, run.stdout
        assert "group billing: committed offsets carried over" in run.stdout, run.stdout

        # Topics and configs.
        md = admin(target.bootstrap).list_topics(timeout=TIMEOUT_S).topics  # synchronous
        assert len(md["orders"].partitions) == 3 and len(md["events"].partitions) == 1
        assert dynamic_configs(target.bootstrap, "orders") == {"retention.ms": "3600000",
                                                                 "retention.bytes": "104857600"}
        assert dynamic_configs(target.bootstrap, "events") == {}

        # Records: the same ones in each partition, in order; the target
        # has no markers or aborted records, so its offsets are dense.
        for topic, partitions in (("orders", 3), ("events", 1)):
            for p in range(partitions):
                src_recs = [r[1:] for r in committed_records(src, topic, p)]
                tgt = committed_records(target.bootstrap, topic, p)
                assert [r[1:] for r in tgt] == src_recs, (topic, p)
                assert [r[0] for r in tgt] == list(range(len(src_recs))), (topic, p)

        # Offsets: translated through the copy (audit's 7 was inside the
        # aborted transaction: the next record it would read is source
        # offset 10, the target's 5).
        assert group_offsets(target.bootstrap, "audit") == {("events", 0): 5, ("orders", 1): 4}
        billing_on_target = group_offsets(target.bootstrap, "billing")
        assert billing_on_target.keys() == billing_on_source.keys()

        # The same application code, pointed at the target, resumes where it
        # stopped on the source: exactly the records it has not read yet.
        expected = []
        for topic, partitions in (("orders", 3), ("events", 1)):
            for p in range(partitions):
                start = billing_on_source.get((topic, p), 0)
                expected += [(topic, p, k, v, h) for o, k, v, h in committed_records(src, topic, p) if o >= start]
        total = 30 + len(source_events)
        assert len(first) + len(expected) == total
        rest = consume_as_the_application(target.bootstrap, "billing", ["orders", "events"], len(expected))

        def by_partition(recs):
            out = {}
            for t, p, *r in recs:
                out.setdefault((t, p), []).append(tuple(r))
            return out

        assert by_partition(rest) == by_partition(expected)
        assert group_offsets(target.bootstrap, "billing") == {
            (t, p): len(committed_records(target.bootstrap, t, p)) for t, p in by_partition(first + rest)
        }
    finally:
        for server in (source, target):
            code = server.stop()
            assert code == 0, f"mk-server exited with {code}; log tail:\n{server.log_tail()}"
