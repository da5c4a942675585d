"""Topic and broker configs through confluent-kafka's AdminClient, Producer
and Consumer: topics created with ordinary Kafka configs, described with
their sources, altered with APPEND/SUBTRACT, bad values refused with
INVALID_CONFIG, max.message.bytes refusing a large batch,
LogAppendTime timestamps as consumers see them, and compression.type
recompressing what producers send.
"""

from __future__ import annotations

import time

import pytest
from conftest import compressible, unique_topic
from mkinterop.checks import check_in_order
from mkinterop.drivers import DRIVERS
from mkinterop.raw_kafka import FetchError, fetched_batch_codecs

pytest.importorskip("confluent_kafka")

from confluent_kafka import (  # noqa: E402
    TIMESTAMP_LOG_APPEND_TIME,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
)
from confluent_kafka.admin import (  # noqa: E402
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
)


def admin(server) -> AdminClient:
    return AdminClient({"bootstrap.servers": server.bootstrap})


# Each helper keeps its AdminClient alive until the answer is in: a client
# dropped early destroys its handle and fails its futures.


def create(server, topic: str, config: dict[str, str]) -> None:
    client = admin(server)
    futures = client.create_topics([NewTopic(topic, 1, 1, config=config)], request_timeout=30)
    futures[topic].result(timeout=60)


def described(server, kind, name: str) -> dict[str, ConfigEntry]:
    resource = ConfigResource(kind, name)
    client = admin(server)
    return client.describe_configs([resource], request_timeout=30)[resource].result(timeout=60)


def incremental(server, topic: str, entries: list[ConfigEntry]) -> None:
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=entries)
    client = admin(server)
    client.incremental_alter_configs([resource])[resource].result(timeout=60)


def produce_one(server, topic: str, value: bytes, timestamp: int = 0) -> KafkaError | None:
    producer = Producer(
        {"bootstrap.servers": server.bootstrap, "compression.type": "none", "linger.ms": 0, "retries": 0}
    )
    outcome: list[KafkaError | None] = []
    producer.produce(topic, value=value, timestamp=timestamp, on_delivery=lambda err, _msg: outcome.append(err))
    producer.flush(30)
    assert len(outcome) == 1, outcome
    return outcome[0]


def test_ordinary_kafka_configs_are_created_described_and_altered(broker):
    t = unique_topic("cfg")
    create(
        broker,
        t,
        {
            "compression.type": "zstd",
            "segment.ms": "3600000",
            "flush.ms": "1000",
            "min.compaction.lag.ms": "10",
            "max.message.bytes": "2000000",
            "cleanup.policy": "delete",
        },
    )
    got = described(broker, ConfigResource.Type.TOPIC, t)
    assert got["compression.type"].value == "zstd"
    assert got["segment.ms"].value == "3600000"
    assert got["max.message.bytes"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert got["preallocate"].value == "false"
    assert got["preallocate"].source == ConfigSource.DEFAULT_CONFIG.value

    incremental(broker, t, [ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND)])
    policy = described(broker, ConfigResource.Type.TOPIC, t)["cleanup.policy"].value
    assert sorted(policy.split(",")) == ["compact", "delete"], policy
    incremental(broker, t, [ConfigEntry("cleanup.policy", "delete", incremental_operation=AlterConfigOpType.SUBTRACT)])
    assert described(broker, ConfigResource.Type.TOPIC, t)["cleanup.policy"].value == "compact"

    with pytest.raises(KafkaException) as bad:
        incremental(broker, t, [ConfigEntry("max.message.bytes", "-5", incremental_operation=AlterConfigOpType.SET)])
    assert bad.value.args[0].code() == KafkaError.INVALID_CONFIG, bad.value
    assert "max.message.bytes" in str(bad.value)
    with pytest.raises(KafkaException) as bad:
        create(broker, unique_topic("cfg-bad"), {"retention.weeks": "2"})
    assert bad.value.args[0].code() == KafkaError.INVALID_CONFIG, bad.value


def test_broker_configs_are_described_under_kafkas_names(broker):
    got = described(broker, ConfigResource.Type.BROKER, "1")
    assert got["num.partitions"].is_read_only
    assert got["message.max.bytes"].value == "1048588"
    assert not got["message.max.bytes"].is_read_only
    # The interop harness starts mk-server with no initial delay.
    assert got["group.initial.rebalance.delay.ms"].value == "0"


def test_max_message_bytes_refuses_a_larger_batch(broker):
    t = unique_topic("cfg-small")
    create(broker, t, {"max.message.bytes": "2000"})
    assert produce_one(broker, t, b"x" * 500) is None
    err = produce_one(broker, t, b"x" * 3000)
    assert err is not None and err.code() == KafkaError.MSG_SIZE_TOO_LARGE, err


def test_log_append_time_is_what_consumers_see(broker):
    t = unique_topic("cfg-lat")
    create(broker, t, {"message.timestamp.type": "LogAppendTime"})
    before = int(time.time() * 1000)
    assert produce_one(broker, t, b"stamped", timestamp=1_000) is None
    after = int(time.time() * 1000)
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": unique_topic("cfg-lat-group"),
            "auto.offset.reset": "earliest",
        }
    )
    try:
        consumer.subscribe([t])
        msg = None
        deadline = time.time() + 60
        while msg is None and time.time() < deadline:
            m = consumer.poll(1.0)
            if m is not None and m.error() is None:
                msg = m
        assert msg is not None, "no record within 60 s"
        kind, ts = msg.timestamp()
        assert kind == TIMESTAMP_LOG_APPEND_TIME, (kind, ts)
        assert before - 1_000 <= ts <= after + 1_000, (before, ts, after)
    finally:
        consumer.close()


CODEC_IDS = {"uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


@pytest.mark.parametrize("topic_codec,sent_as", [("zstd", "none"), ("uncompressed", "gzip"), ("lz4", "snappy")])
def test_a_topics_compression_type_recompresses_what_producers_send(broker, topic_codec, sent_as):
    """A topic with compression.type set stores and serves every batch in
    its codec, whatever the producer chose, as Kafka does: confluent-kafka
    produces with another codec (or none), a raw Fetch shows the codec of
    each batch served (a Fetch below v10 of the zstd topic is refused with
    UNSUPPORTED_COMPRESSION_TYPE), and confluent-kafka and kafka-python
    read every record back."""
    t = unique_topic("recompress", topic_codec)
    create(broker, t, {"compression.type": topic_codec})
    sent = compressible(f"rc-{topic_codec}", 300)
    acks = DRIVERS["confluent-kafka"].produce(broker.bootstrap, t, sent, compression=sent_as)
    assert [a.offset for a in acks] == list(range(len(sent)))
    codecs = fetched_batch_codecs(broker.bootstrap, t)
    assert codecs, "the fetch returned batches"
    assert set(codecs) == {CODEC_IDS[topic_codec]}, codecs
    if topic_codec == "zstd":
        # Below v10 a Fetch cannot carry zstd: Kafka answers the partition
        # UNSUPPORTED_COMPRESSION_TYPE (76).
        with pytest.raises(FetchError) as refused:
            fetched_batch_codecs(broker.bootstrap, t, version=4)
        assert refused.value.code == 76, refused.value
    else:
        assert set(fetched_batch_codecs(broker.bootstrap, t, version=4)) == {CODEC_IDS[topic_codec]}
    for reader in ("confluent-kafka", "kafka-python"):
        check_in_order(sent, DRIVERS[reader].read_all(broker.bootstrap, t))


@pytest.mark.parametrize("level", ["1", "12", "17"])
def test_lz4_levels_other_than_the_default_store_lz4_hc_frames_every_client_reads(broker, level):
    """compression.lz4.level other than Kafka's default 9 makes the broker
    compress with LZ4 HC (KIP-390; 1 and 2 are the LZ4 library's fast mode):
    still LZ4 frames of independent blocks, which confluent-kafka and
    kafka-python read as they read Kafka's."""
    t = unique_topic("lz4-level", level)
    create(broker, t, {"compression.type": "lz4", "compression.lz4.level": level})
    sent = compressible(f"lz4-{level}", 300)
    acks = DRIVERS["confluent-kafka"].produce(broker.bootstrap, t, sent, compression="none")
    assert [a.offset for a in acks] == list(range(len(sent)))
    assert set(fetched_batch_codecs(broker.bootstrap, t)) == {CODEC_IDS["lz4"]}
    for reader in ("confluent-kafka", "kafka-python"):
        check_in_order(sent, DRIVERS[reader].read_all(broker.bootstrap, t))
