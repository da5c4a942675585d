"""Transactional producers of confluent-kafka, kafka-python and the Java
client (mkinterop/java_client.py) behind one interface, for the
transaction scenarios (tests/test_transactions.py) and the
consume-transform-produce processor (mkinterop/txn_processor.py; the Java
client's is the Java driver's `eos-processor` scenario).

Every call that waits is bounded (TIMEOUT_S), so a broker that does not
serve transactions fails the scenario quickly instead of hanging it.
"""

from __future__ import annotations

import logging
import os

DEBUG = os.environ.get("MK_INTEROP_DEBUG") == "1"
TIMEOUT_S = 30.0


class TxnFailure(AssertionError):
    """A transactional call failed (a test failure unless expected)."""


class ConfluentTxnProducer:
    client = "confluent-kafka"

    def __init__(self, bootstrap: str, transactional_id: str, transaction_timeout_ms: int | None = None):
        from confluent_kafka import Producer

        conf = {
            "bootstrap.servers": bootstrap,
            "broker.address.family": "v4",
            "transactional.id": transactional_id,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
        }
        if transaction_timeout_ms is not None:
            conf["transaction.timeout.ms"] = transaction_timeout_ms
            # librdkafka requires message.timeout.ms <= transaction.timeout.ms.
            conf["message.timeout.ms"] = transaction_timeout_ms
        if DEBUG:
            conf["debug"] = "eos,protocol,broker,msg"
        self.acked: dict[bytes, tuple[int, int]] = {}
        self.failed: dict[bytes, str] = {}
        self.producer = Producer(conf)

    def _delivered(self, err, msg):
        if err is None:
            self.acked[msg.value()] = (msg.partition(), msg.offset())
        else:
            self.failed[msg.value()] = str(err)

    def init(self):
        self.producer.init_transactions(TIMEOUT_S)

    def begin(self):
        self.producer.begin_transaction()

    def send(self, topic: str, value: bytes, partition: int, key: bytes | None = None):
        while True:
            try:
                self.producer.produce(topic, value=value, key=key, partition=partition, on_delivery=self._delivered)
                break
            except BufferError:
                self.producer.poll(0.05)
        self.producer.poll(0)

    def flush(self):
        left = self.producer.flush(TIMEOUT_S)
        if left:
            raise TxnFailure(f"{left} records undelivered after {TIMEOUT_S}s")
        if self.failed:
            raise TxnFailure(f"{len(self.failed)} deliveries failed: {list(self.failed.items())[:3]}")

    def send_offsets(self, topic: str, offsets: dict[int, int], consumer):
        from confluent_kafka import TopicPartition

        self.producer.send_offsets_to_transaction(
            [TopicPartition(topic, p, o) for p, o in offsets.items()], consumer.consumer_group_metadata(), TIMEOUT_S
        )

    def commit(self):
        self.producer.commit_transaction(TIMEOUT_S)

    def abort(self):
        self.producer.abort_transaction(TIMEOUT_S)

    def close(self):
        # confluent-kafka producers close when garbage-collected; flush what
        # is left so nothing is pending. A producer that hit a fatal error
        # (fenced) raises it again from flush(): the scenario has already
        # checked that error.
        from confluent_kafka import KafkaException

        try:
            self.producer.flush(5)
        except KafkaException as e:
            if not e.args[0].fatal():
                raise


class KafkaPythonTxnProducer:
    client = "kafka-python"

    def __init__(self, bootstrap: str, transactional_id: str, transaction_timeout_ms: int | None = None):
        from kafka import KafkaProducer

        if DEBUG:
            logging.getLogger("kafka").setLevel(logging.DEBUG)
        kwargs = {}
        if transaction_timeout_ms is not None:
            kwargs["transaction_timeout_ms"] = transaction_timeout_ms
        self.acked: dict[bytes, tuple[int, int]] = {}
        self.failed: dict[bytes, str] = {}
        self.futures = []
        self.producer = KafkaProducer(
            bootstrap_servers=bootstrap,
            transactional_id=transactional_id,
            enable_idempotence=True,
            acks="all",
            linger_ms=5,
            max_block_ms=int(TIMEOUT_S * 1000),
            **kwargs,
        )

    def init(self):
        self.producer.init_transactions()

    def begin(self):
        self.producer.begin_transaction()

    def send(self, topic: str, value: bytes, partition: int, key: bytes | None = None):
        self.futures.append((value, self.producer.send(topic, value=value, key=key, partition=partition)))

    def flush(self):
        self.producer.flush(timeout=TIMEOUT_S)
        for value, f in self.futures:
            try:
                md = f.get(timeout=TIMEOUT_S)
                self.acked[value] = (md.partition, md.offset)
            except Exception as e:  # noqa: BLE001 - reported below
                self.failed[value] = repr(e)
        self.futures = []
        if self.failed:
            raise TxnFailure(f"{len(self.failed)} deliveries failed: {list(self.failed.items())[:3]}")

    def send_offsets(self, topic: str, offsets: dict[int, int], consumer):
        from kafka import OffsetAndMetadata, TopicPartition

        self.producer.send_offsets_to_transaction(
            {TopicPartition(topic, p): OffsetAndMetadata(o, "", -1) for p, o in offsets.items()},
            consumer.group_metadata(),
        )

    def commit(self):
        self.producer.commit_transaction()

    def abort(self):
        self.producer.abort_transaction()

    def close(self):
        self.producer.close(timeout=10)


# The Java client's transactional producer (held by the Java driver).
from .java_client import JavaTxnProducer  # noqa: E402

TXN_PRODUCERS = {"confluent-kafka": ConfluentTxnProducer, "kafka-python": KafkaPythonTxnProducer, "java": JavaTxnProducer}


def open_transaction(producer, topic: str, values: list[bytes], partition: int = 0) -> list[bytes]:
    """Initializes `producer`, begins a transaction, sends `values` to
    `partition` of `topic` and flushes, leaving the transaction open;
    returns `values`."""
    producer.init()
    producer.begin()
    for v in values:
        producer.send(topic, v, partition)
    producer.flush()
    return values
