"""The same scenarios for every client library: confluent-kafka, kafka-python,
aiokafka, kafkajs and the Java client (see mkinterop/drivers.py and
mkinterop/java_client.py for how each is driven)."""

from __future__ import annotations

import time

import pytest
from conftest import CODECS, compressible, unique_topic

from mkinterop.checks import check_in_order, check_keyed_round_trip, expected_offsets_for_time
from mkinterop.drivers import DRIVERS, ClientFailure
from mkinterop.model import Rec, edge_records

KEYED_RECORDS = 3000
KEYS = 50


@pytest.fixture(params=list(DRIVERS))
def client(request):
    return DRIVERS[request.param]


def test_create_topic_with_three_partitions(broker, client):
    topic = unique_topic("create", client.name)
    client.create_topic(broker.bootstrap, topic, partitions=3)
    assert client.partition_count(broker.bootstrap, topic) == 3
    # An independent client sees the same topic.
    assert DRIVERS["confluent-kafka"].partition_count(broker.bootstrap, topic) == 3


def test_list_all_topics(broker, client):
    """Metadata for all topics (a null topic list) names a new topic."""
    topic = unique_topic("listed", client.name)
    client.create_topic(broker.bootstrap, topic, partitions=1)
    assert topic in client.topic_names(broker.bootstrap)


def test_keyed_produce_acks_all_idempotent_then_plain_read(broker, client):
    topic = unique_topic("keyed", client.name)
    client.create_topic(broker.bootstrap, topic, partitions=3)
    sent = [
        Rec(
            key=f"key-{i % KEYS}".encode(),
            value=f"{client.name}-{i:05d}".encode(),
            headers=(("seq", str(i).encode()),),
        )
        for i in range(KEYED_RECORDS)
    ]
    acks = client.produce(broker.bootstrap, topic, sent)
    got = client.read_all(broker.bootstrap, topic)
    check_keyed_round_trip(sent, acks, got, partitions=3)


def test_list_offsets_by_timestamp(broker, client):
    topic = unique_topic("times", client.name)
    client.create_topic(broker.bootstrap, topic, partitions=3)
    # Explicit CreateTime timestamps an hour ago, 10 ms apart, round robin
    # over the partitions: each partition's timestamps rise with its offsets.
    base_ms = int(time.time() * 1000) - 3_600_000
    sent = [
        Rec(key=None, value=f"t-{i:04d}".encode(), timestamp_ms=base_ms + 10 * i, partition=i % 3)
        for i in range(300)
    ]
    acks = client.produce(broker.bootstrap, topic, sent)
    assert [a.partition for a in acks] == [i % 3 for i in range(300)]
    for query_ms in (base_ms - 1000, base_ms + 1505, base_ms + 2990, base_ms + 10_000):
        expected = expected_offsets_for_time(acks, sent, 3, query_ms)
        if client.past_end_offset_is_end:
            expected = {p: (100 if o is None else o) for p, o in expected.items()}
        answered = client.offsets_for_times(broker.bootstrap, topic, 3, query_ms)
        assert answered == expected, f"ListOffsets at {query_ms - base_ms:+d} ms from the first record"




def check_read_compressed(broker, client, codec, topic, sent):
    """Batches are served as produced (compressed), as Kafka serves them. A
    client without the codec (kafkajs without its native lz4/zstd packages)
    sees what it sees from Kafka: its own error naming the codec, unless the
    producer sent those batches uncompressed (librdkafka does when
    compressing does not pay), and then every record."""
    if codec in getattr(client, "reads_codecs", CODECS):
        check_in_order(sent, client.read_all(broker.bootstrap, topic))
        return
    try:
        got = client.read_all(broker.bootstrap, topic)
    except ClientFailure as e:
        assert f"{codec.upper()} compression not implemented" in str(e), e
        return
    check_in_order(sent, got)


@pytest.mark.parametrize("codec", CODECS)
def test_read_topic_produced_compressed_by_confluent_kafka(broker, client, codec, compressed_by_confluent):
    topic, sent = compressed_by_confluent[codec]
    check_read_compressed(broker, client, codec, topic, sent)


@pytest.mark.parametrize("codec", CODECS)
def test_read_topic_produced_compressed_by_kcat(broker, client, codec, compressed_by_kcat):
    topic, sent = compressed_by_kcat[codec]
    check_read_compressed(broker, client, codec, topic, sent)


@pytest.mark.parametrize(
    "client_name,codec",
    [(name, codec) for name, d in DRIVERS.items() for codec in d.codecs],
)
def test_produce_compressed_then_read(broker, client_name, codec):
    client = DRIVERS[client_name]
    topic = unique_topic("z", client.name, codec)
    client.create_topic(broker.bootstrap, topic, partitions=1)
    sent = compressible(f"{client.name}-{codec}", 500)
    acks = client.produce(broker.bootstrap, topic, sent, compression=codec)
    assert [(a.partition, a.offset) for a in acks] == [(0, i) for i in range(len(sent))]
    check_in_order(sent, client.read_all(broker.bootstrap, topic))


def test_null_and_empty_keys_values_duplicate_headers_and_timestamps(broker, client):
    """Nullness, emptiness, repeated header keys and CreateTime timestamps
    survive produce, storage and fetch."""
    topic = unique_topic("edge", client.name)
    client.create_topic(broker.bootstrap, topic, partitions=1)
    base_ms = int(time.time() * 1000) - 60_000
    sent = edge_records(base_ms)
    acks = client.produce(broker.bootstrap, topic, sent)
    assert [(a.partition, a.offset) for a in acks] == [(0, i) for i in range(len(sent))]
    got = client.read_all(broker.bootstrap, topic)
    expected = [(i, r.key, r.value, r.headers, r.timestamp_ms) for i, r in enumerate(sent)]
    assert [(g.offset, g.key, g.value, g.headers, g.timestamp_ms) for g in got] == expected


def test_records_larger_than_the_fetch_limits_are_still_read(broker, client):
    """Kafka answers a fetch with at least the first batch even when it is
    larger than max_bytes and partition_max_bytes (KIP-74), so a consumer
    with small fetch limits still makes progress."""
    topic = unique_topic("large", client.name)
    client.create_topic(broker.bootstrap, topic, partitions=1)
    # Each record is far over the fetch limits, and the four together stay
    # under max.message.bytes (1048588, Kafka's default), since a client
    # such as kafkajs sends them as one batch, which Kafka would refuse
    # whole above it.
    sent = [Rec(key=f"big-{i}".encode(), value=bytes([65 + i]) * 200_000, partition=0) for i in range(4)]
    acks = client.produce(broker.bootstrap, topic, sent)
    assert [a.offset for a in acks] == [0, 1, 2, 3]
    check_in_order(sent, client.read_all(broker.bootstrap, topic, max_fetch_bytes=65_536))


def test_keyed_produce_and_plain_read_on_three_brokers(three_broker_cluster, client):
    """The keyed scenario on three brokers with replication factor 3: the
    client must send each partition's requests to that partition's leader."""
    server = three_broker_cluster
    bootstrap = ",".join(server.kafka_addrs)
    topic = unique_topic("rf3", client.name)
    client.create_topic(bootstrap, topic, partitions=3, replication_factor=3)
    leaders = DRIVERS["confluent-kafka"].leaders(bootstrap, topic)
    assert sorted(leaders.values()) == [1, 2, 3], f"leaders {leaders}: the scenario needs one per broker"
    sent = [Rec(key=f"key-{i % KEYS}".encode(), value=f"{client.name}-rf3-{i:05d}".encode()) for i in range(1000)]
    acks = client.produce(bootstrap, topic, sent)
    check_keyed_round_trip(sent, acks, client.read_all(bootstrap, topic), partitions=3)


def _wait_until(condition, what: str, timeout_s: float = 30.0):
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        ok, last = condition()
        if ok:
            return
        time.sleep(0.05)
    raise AssertionError(f"{what} within {timeout_s}s; last seen: {last}")


def test_admin_describe_and_alter_configs_add_partitions_delete_topic(broker, client):
    """DescribeConfigs, IncrementalAlterConfigs or AlterConfigs (whichever
    the client's admin API has), CreatePartitions and DeleteTopics."""
    topic = unique_topic("admin", client.name)
    client.create_topic(broker.bootstrap, topic, partitions=1)
    configs = client.describe_topic_config(broker.bootstrap, topic)
    assert configs.get("cleanup.policy") == "delete", configs
    assert configs.get("retention.ms") == "604800000", configs

    client.alter_topic_config(broker.bootstrap, topic, "retention.ms", "3600000")
    configs = client.describe_topic_config(broker.bootstrap, topic)
    assert configs.get("retention.ms") == "3600000", configs
    # An independent client sees the change.
    assert DRIVERS["confluent-kafka"].describe_topic_config(broker.bootstrap, topic)["retention.ms"] == "3600000"

    client.alter_topic_config(broker.bootstrap, topic, "retention.bytes", "1048576")
    configs = client.describe_topic_config(broker.bootstrap, topic)
    assert configs.get("retention.bytes") == "1048576", configs
    if client.alter_configs_api == "AlterConfigs":
        # AlterConfigs replaces the topic's whole config set.
        assert configs.get("retention.ms") == "604800000", configs
    else:
        assert configs.get("retention.ms") == "3600000", configs

    client.create_partitions(broker.bootstrap, topic, 3)
    _wait_until(lambda: ((n := client.partition_count(broker.bootstrap, topic)) == 3, n), "3 partitions in metadata")

    client.delete_topic(broker.bootstrap, topic)
    _wait_until(
        lambda: (topic not in (names := client.topic_names(broker.bootstrap)), sorted(names)),
        f"{topic} to disappear from the topic list",
    )
    assert topic not in DRIVERS["confluent-kafka"].topic_names(broker.bootstrap)


def test_producing_to_a_missing_topic_creates_it(broker, client):
    """Kafka's default auto.create.topics.enable: the producer's Metadata
    request creates the topic with --num-partitions (1) partitions."""
    topic = unique_topic("auto", client.name)
    assert topic not in client.topic_names(broker.bootstrap)
    sent = [Rec(key=f"k{i}".encode(), value=f"auto-{i}".encode()) for i in range(20)]
    acks = client.produce(broker.bootstrap, topic, sent)
    assert [(a.partition, a.offset) for a in acks] == [(0, i) for i in range(20)]
    assert client.partition_count(broker.bootstrap, topic) == 1
    check_in_order(sent, client.read_all(broker.bootstrap, topic))
