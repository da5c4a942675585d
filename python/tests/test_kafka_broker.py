"""The mk-server wheel used the way a project's own tests would use it:
nothing but `pip install mk_server-*.whl confluent-kafka kafka-python
pytest`, no conftest, no MK_SERVER_BIN; the fixtures come from the plugin's
entry point and the broker from the binary inside the wheel.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KafkaPythonPartition

import mk_server

DEADLINE_S = 30.0


def produce_confluent(bootstrap: str, topic: str, values: list[str], partition: int = 0) -> list[int]:
    """Idempotent producer (acks=all); the offsets the broker acknowledged."""
    offsets: list[int] = []

    def delivered(err, msg):
        assert err is None, err
        offsets.append(msg.offset())

    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for v in values:
        p.produce(topic, value=v.encode(), partition=partition, on_delivery=delivered)
    assert p.flush(DEADLINE_S) == 0
    return offsets


def consume_confluent(bootstrap: str, topic: str, count: int, partition: int = 0) -> list[str]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "readers", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, partition, 0)])
    got: list[str] = []
    deadline = time.monotonic() + DEADLINE_S
    while len(got) < count and time.monotonic() < deadline:
        m = c.poll(1.0)
        if m is not None and not m.error():
            got.append(m.value().decode())
    c.close()
    return got


def test_confluent_kafka_produces_and_consumes(kafka_broker):
    kafka_broker.create_topic("events", partitions=2)
    assert produce_confluent(kafka_broker.bootstrap, "events", ["a", "b", "c"], partition=1) == [0, 1, 2]
    assert consume_confluent(kafka_broker.bootstrap, "events", 3, partition=1) == ["a", "b", "c"]


def test_kafka_python_produces_and_consumes(kafka_broker):
    kafka_broker.create_topic("kp")
    producer = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap.split(","), acks="all")
    offsets = [producer.send("kp", value=f"v{i}".encode()).get(timeout=DEADLINE_S).offset for i in range(3)]
    producer.close()
    assert offsets == [0, 1, 2]
    consumer = KafkaConsumer(bootstrap_servers=kafka_broker.bootstrap.split(","), enable_auto_commit=False)
    tp = KafkaPythonPartition("kp", 0)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    got: list[bytes] = []
    deadline = time.monotonic() + DEADLINE_S
    while len(got) < 3 and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=1000).values():
            got.extend(r.value for r in records)
    consumer.close()
    assert got == [b"v0", b"v1", b"v2"]


def test_a_restart_keeps_the_addresses_and_every_acknowledged_record(kafka_broker):
    kafka_broker.create_topic("durable")
    produce_confluent(kafka_broker.bootstrap, "durable", ["before"])
    bootstrap = kafka_broker.bootstrap
    kafka_broker.restart()
    assert kafka_broker.bootstrap == bootstrap
    kafka_broker.kill()
    kafka_broker.restart()
    assert produce_confluent(kafka_broker.bootstrap, "durable", ["after"]) == [1]
    assert consume_confluent(kafka_broker.bootstrap, "durable", 2) == ["before", "after"]


@pytest.mark.kafka_broker(brokers=[1, 2, 3], args=["--min-insync-replicas", "2"])
def test_the_mark_sets_broker_ids_and_flags(kafka_broker):
    assert len(kafka_broker.kafka_addrs) == 3
    kafka_broker.create_topic("replicated", replication_factor=3)
    assert produce_confluent(kafka_broker.bootstrap, "replicated", ["x"]) == [0]
    assert consume_confluent(kafka_broker.bootstrap, "replicated", 1) == ["x"]
    # --min-insync-replicas 2 is in force: one replica cannot take acks=all.
    kafka_broker.create_topic("single", replication_factor=1)
    refused = kafka_broker.cli("produce", "single", "--acks", "all", input="y\n")
    assert refused.returncode != 0 and "NOT_ENOUGH_REPLICAS" in refused.stderr, refused.stderr


def test_the_factory_starts_brokers_with_any_flags(kafka_broker_factory):
    broker = kafka_broker_factory(args=["--num-partitions", "3"])
    # Auto-created on first use, with --num-partitions partitions.
    assert produce_confluent(broker.bootstrap, "auto", ["p2"], partition=2) == [0]
    described = broker.cli("topic", "describe", "auto", "--json")
    assert described.returncode == 0, described.stderr
    assert len(json.loads(described.stdout)["partitions"]) == 3, described.stdout
    quiet = kafka_broker_factory(kafka=False)
    with pytest.raises(mk_server.BrokerError):
        quiet.bootstrap


SESSION_BOOTSTRAPS: list[str] = []


@pytest.mark.parametrize("round", [1, 2])
def test_the_session_broker_is_one_broker_for_every_test(kafka_broker_session, round):
    SESSION_BOOTSTRAPS.append(kafka_broker_session.bootstrap)
    offsets = produce_confluent(kafka_broker_session.bootstrap, "shared", [f"round {round}"])
    assert offsets == [round - 1]
    assert len(set(SESSION_BOOTSTRAPS)) == 1


def test_the_broker_is_the_binary_the_wheel_installed():
    assert "MK_SERVER_BIN" not in os.environ
    prefix = Path(sys.prefix).resolve()
    assert prefix in mk_server.binary().resolve().parents
    assert prefix in Path(mk_server.__file__).resolve().parents
