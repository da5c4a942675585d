"""The partition logs' admin APIs through unmodified clients on three
hosted brokers: DeleteRecords (Java Admin.deleteRecords and
confluent-kafka AdminClient.delete_records, the effect checked through
consumers), DescribeLogDirs (Java Admin.describeLogDirs) and
DescribeProducers (Java Admin.describeProducers).
"""

from __future__ import annotations

from conftest import unique_topic

from mkinterop import java_client
from mkinterop.drivers import DRIVERS
from mkinterop.model import Rec


def java(scenario: str, server, **args):
    return java_client.call(scenario, bootstrap=server.bootstrap, **args)


# The records' timestamps: partition 0 from T0, partition 1 from T0 + 100.
T0 = 1_700_000_000_000


def filled_topic(server) -> str:
    """A topic with two partitions on all three brokers: five records in
    partition 0, three in partition 1, all acknowledged by every replica."""
    t = unique_topic("logadmin")
    confluent = DRIVERS["confluent-kafka"]
    confluent.create_topic(server.bootstrap, t, 2, replication_factor=3)
    records = [Rec(None, f"p0-{i}".encode(), T0 + i, partition=0) for i in range(5)]
    records += [Rec(None, f"p1-{i}".encode(), T0 + 100 + i, partition=1) for i in range(3)]
    confluent.produce(server.bootstrap, t, records)
    return t


def test_delete_records_moves_the_low_watermark_and_consumers_start_there(three_broker_cluster):
    server = three_broker_cluster
    t = filled_topic(server)
    answer = java("delete-records", server, before=[[t, 0, 2], [t, 1, -1]])
    assert answer[f"{t}:0"] == {"error": None, "low_watermark": 2}, answer
    assert answer[f"{t}:1"] == {"error": None, "low_watermark": 3}, answer
    # A partition emptied whole gets a record again (a consumer's position
    # only moves with records), at the offset after the deleted ones.
    DRIVERS["confluent-kafka"].produce(server.bootstrap, t, [Rec(None, b"p1-3", partition=1)])
    got = DRIVERS["kafka-python"].read_all(server.bootstrap, t)
    assert sorted((g.partition, g.offset) for g in got) == [(0, 2), (0, 3), (0, 4), (1, 3)], got
    beyond = java("delete-records", server, before=[[t, 0, 99]])[f"{t}:0"]
    assert beyond["code"] == "OFFSET_OUT_OF_RANGE", beyond

    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": server.bootstrap})
    futures = admin.delete_records([TopicPartition(t, 0, 4)], request_timeout=30)
    deleted = futures[TopicPartition(t, 0, 4)].result(timeout=60)
    assert deleted.low_watermark == 4, deleted
    got = DRIVERS["confluent-kafka"].read_all(server.bootstrap, t)
    assert sorted((g.partition, g.offset, g.value) for g in got) == [(0, 4, b"p0-4"), (1, 3, b"p1-3")], got


def test_describe_log_dirs_names_each_brokers_dir_and_its_replicas(three_broker_cluster):
    server = three_broker_cluster
    t = filled_topic(server)
    answer = java("describe-log-dirs", server, brokers=[1, 2, 3])
    for b in (1, 2, 3):
        dirs = answer[str(b)]["dirs"]
        assert len(dirs) == 1, answer[str(b)]
        (path, d), = dirs.items()
        assert path.endswith(f"broker-{b}") and d["error"] is None, dirs
        sizes = {k: v for k, v in d["partitions"].items() if k.startswith(f"{t}:")}
        assert set(sizes) == {f"{t}:0", f"{t}:1"} and all(v > 0 for v in sizes.values()), d


def test_describe_producers_shows_the_idempotent_producer_at_each_leader(three_broker_cluster):
    """confluent-kafka's idempotent producer wrote both partitions: Java's
    describeProducers finds it at each partition's leader with its last
    sequence and last timestamp there and no open transaction."""
    server = three_broker_cluster
    t = filled_topic(server)
    answer = java("describe-producers", server, partitions=[[t, 0], [t, 1]])
    p0, p1 = answer[f"{t}:0"], answer[f"{t}:1"]
    assert p0["error"] is None and p1["error"] is None, answer
    assert len(p0["producers"]) == 1 and len(p1["producers"]) == 1, answer
    assert p0["producers"][0]["id"] == p1["producers"][0]["id"] >= 0, answer
    got = [(p["last_sequence"], p["last_timestamp"], p["txn_start"]) for p in (p0["producers"][0], p1["producers"][0])]
    assert got == [(4, T0 + 4, -1), (2, T0 + 102, -1)], answer
