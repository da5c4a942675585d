"""The Java producer and consumer (kafka-clients 4.3.0) beyond the shared
scenarios of test_clients.py (which run for the Java client too): its
defaults, records crossing between Java and every other client in both
directions with every codec, and the consumer's seeks and offset resets.
"""

from __future__ import annotations

import time

import pytest
from conftest import CODECS, unique_topic

from mkinterop import java_client
from mkinterop.drivers import DRIVERS, ClientFailure
from mkinterop.model import Rec, edge_records

OTHERS = [name for name in DRIVERS if name != "java"]


def test_java_producer_defaults_to_acks_all_and_idempotence_and_takes_props(broker):
    """Kafka 3.0+ producers default to acks=all with idempotence; the
    driver keeps those defaults and applies a test's `props` over them."""
    topic = unique_topic("jprops")
    DRIVERS["java"].create_topic(broker.bootstrap, topic, partitions=1)
    records = [{"key": None, "value": java_client.b64(f"d{i}".encode())} for i in range(5)]
    default = java_client.call("produce", bootstrap=broker.bootstrap, topic=topic, records=records)
    # The client spells acks=all as -1 once parsed.
    assert (default["acks_config"], default["idempotence"]) == ("-1", True), default
    assert [a[:2] for a in default["acks"]] == [[0, i] for i in range(5)]
    plain = java_client.call(
        "produce", bootstrap=broker.bootstrap, topic=topic, records=records,
        props={"acks": "1", "enable.idempotence": "false", "compression.type": "lz4"},
    )
    assert (plain["acks_config"], plain["idempotence"], plain["compression"]) == ("1", False, "lz4"), plain
    assert [a[:2] for a in plain["acks"]] == [[0, i] for i in range(5, 10)]


def shapes(tag: str, base_ms: int) -> list[Rec]:
    """Nulls, empties, repeated and empty header values, explicit
    timestamps, and repetitive values so that every codec compresses."""
    # Then multi-byte UTF-8 and control characters (the kafkajs bridge
    # carries strings, so nothing that is not UTF-8).
    recs = edge_records(base_ms, extra=(("ключ-\u00e9".encode(), "\x00\x01\t\x7f \u00ff \u20ac \U0001f600".encode()),))
    recs += [
        Rec(key=f"k{i % 7}".encode(), value=f"{tag}-{i:04d}-".encode() + b"x" * 200, timestamp_ms=base_ms + 100 + i,
            partition=0, headers=(("seq", str(i).encode()),))
        for i in range(200)
    ]
    return recs


def as_read(recs: list[Rec]) -> list[tuple]:
    return [(i, r.key, r.value, r.headers, r.timestamp_ms) for i, r in enumerate(recs)]


@pytest.mark.parametrize("codec", ("none", *CODECS))
def test_java_produced_records_read_by_every_client(broker, codec):
    """Records produced by Java (each codec) come back byte for byte, with
    their nulls, headers and timestamps, through confluent-kafka,
    kafka-python, aiokafka and kafkajs."""
    topic = unique_topic("j2all", codec)
    DRIVERS["java"].create_topic(broker.bootstrap, topic, partitions=1)
    sent = shapes(f"java-{codec}", int(time.time() * 1000) - 60_000)
    acks = DRIVERS["java"].produce(broker.bootstrap, topic, sent, compression=None if codec == "none" else codec)
    assert [(a.partition, a.offset) for a in acks] == [(0, i) for i in range(len(sent))]
    for name in OTHERS:
        if codec != "none" and codec not in getattr(DRIVERS[name], "reads_codecs", CODECS):
            # Batches are served as Java compressed them, as Kafka serves
            # them: a client without the codec (kafkajs without its native
            # lz4/zstd packages) fails with its own error naming it.
            with pytest.raises(ClientFailure, match=f"{codec.upper()} compression not implemented"):
                DRIVERS[name].read_all(broker.bootstrap, topic)
            continue
        got = DRIVERS[name].read_all(broker.bootstrap, topic)
        assert [(g.offset, g.key, g.value, g.headers, g.timestamp_ms) for g in got] == as_read(sent), name


@pytest.mark.parametrize("producer", OTHERS)
def test_records_of_every_client_read_by_java(broker, producer):
    """Records produced by every other client (with its first codec it
    compresses with, and uncompressed) come back through Java byte for
    byte, nulls, headers and timestamps included."""
    for codec in (None, DRIVERS[producer].codecs[0]):
        topic = unique_topic("all2j", producer, codec or "none")
        DRIVERS["confluent-kafka"].create_topic(broker.bootstrap, topic, partitions=1)
        sent = shapes(f"{producer}-{codec}", int(time.time() * 1000) - 60_000)
        DRIVERS[producer].produce(broker.bootstrap, topic, sent, compression=codec)
        got = DRIVERS["java"].read_all(broker.bootstrap, topic)
        assert [(g.offset, g.key, g.value, g.headers, g.timestamp_ms) for g in got] == as_read(sent), codec


def test_java_consumer_seeks_and_resets(broker):
    """seek(), seekToEnd(), seekToBeginning() and offsetsForTimes() move the
    consumer where Kafka's would be; a position past the end is reset to
    the beginning under auto.offset.reset=earliest, and with none the
    poll fails with OffsetOutOfRangeException (the broker's
    OFFSET_OUT_OF_RANGE)."""
    topic = unique_topic("jseek")
    DRIVERS["java"].create_topic(broker.bootstrap, topic, partitions=1)
    base = int(time.time() * 1000) - 60_000
    sent = [Rec(key=None, value=f"s{i:02d}".encode(), timestamp_ms=base + 10 * i, partition=0) for i in range(50)]
    DRIVERS["java"].produce(broker.bootstrap, topic, sent)
    seen = java_client.call("seek", bootstrap=broker.bootstrap, topic=topic, offset=10, count=5, timestamp=base + 195)
    assert seen["read_after_seek"] == [10, 11, 12, 13, 14], seen
    assert seen["position_after_read"] == 15, seen
    assert (seen["end"], seen["beginning"]) == (50, 0), seen
    assert (seen["offset_for_time"], seen["read_at_time"]) == (20, [20]), seen
    assert seen["read_past_end_reset_earliest"] == [0], seen
    assert seen["past_end_reset_none"] == "OffsetOutOfRangeException", seen
