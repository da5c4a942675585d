"""One driver per Kafka client library, all with the same five operations,
so every scenario runs unchanged against every client:

- `create_topic`: through the client's admin API, then wait until the
  client's own metadata shows every partition with a leader;
- `produce`: acks=all, idempotence on, optionally compressed; returns where
  each record was acknowledged, in send order;
- `read_all`: a plain consumer without consumer group (manual assignment from
  the beginning) reading up to the end offsets it lists first;
- `offsets_for_times`: ListOffsets by timestamp;
- `partition_count`: what the client's metadata says.

Each call opens its own client and closes it, so scenarios do not share
state. Set MK_INTEROP_DEBUG=1 for the clients' protocol-level debug logs.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import time
from pathlib import Path

from .model import Ack, Got, Rec, got_from

DEBUG = os.environ.get("MK_INTEROP_DEBUG") == "1"
TIMEOUT_S = 60.0
JS_DIR = Path(__file__).resolve().parent.parent / "js"


class ClientFailure(AssertionError):
    """A client call failed or returned an error (a test failure)."""


def _deadline(timeout_s: float = TIMEOUT_S) -> float:
    return time.monotonic() + timeout_s


def _sorted(assignment: dict[str, list[int]]) -> dict[str, list[int]]:
    return {t: sorted(ps) for t, ps in sorted(assignment.items())}


def decode_assignment(data: bytes) -> dict[str, list[int]]:
    """Kafka's consumer-protocol assignment (version, [topic, [partition]],
    user data) as {topic: [partitions]}."""
    import struct

    if not data:
        return {}
    pos = 2  # version
    (n,) = struct.unpack_from(">i", data, pos)
    pos += 4
    out: dict[str, list[int]] = {}
    for _ in range(n):
        (ln,) = struct.unpack_from(">h", data, pos)
        pos += 2
        topic = data[pos : pos + ln].decode()
        pos += ln
        (k,) = struct.unpack_from(">i", data, pos)
        pos += 4
        out[topic] = list(struct.unpack_from(f">{k}i", data, pos))
        pos += 4 * k
    return _sorted(out)


# --------------------------------------------------------------------------
# confluent-kafka (librdkafka)


class ConfluentKafka:
    name = "confluent-kafka"
    codecs = ("gzip", "snappy", "lz4", "zstd")
    # librdkafka answers "no offset at or after this time" with OFFSET_END (-1).
    past_end_offset_is_end = False

    def _conf(self, bootstrap: str, **extra) -> dict:
        conf = {"bootstrap.servers": bootstrap, "broker.address.family": "v4"}
        if DEBUG:
            conf["debug"] = "protocol,broker,msg,topic,metadata"
        conf.update(extra)
        return conf

    def create_topic(self, bootstrap: str, topic: str, partitions: int, replication_factor: int = 1) -> None:
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient(self._conf(bootstrap))
        futures = admin.create_topics(
            [NewTopic(topic, num_partitions=partitions, replication_factor=replication_factor)],
            operation_timeout=30,
            request_timeout=30,
        )
        futures[topic].result(timeout=TIMEOUT_S)
        self._wait_for_partitions(admin, topic, partitions)

    def _wait_for_partitions(self, admin, topic: str, partitions: int) -> None:
        deadline = _deadline()
        seen = None
        while time.monotonic() < deadline:
            md = admin.list_topics(topic, timeout=10).topics.get(topic)
            if md is not None and md.error is None:
                seen = {p: pm.leader for p, pm in md.partitions.items()}
                if len(seen) == partitions and all(leader >= 0 for leader in seen.values()):
                    return
            time.sleep(0.05)
        raise ClientFailure(f"metadata of {topic}: {seen}, expected {partitions} partitions with leaders")

    def partition_count(self, bootstrap: str, topic: str) -> int:
        from confluent_kafka.admin import AdminClient

        md = AdminClient(self._conf(bootstrap)).list_topics(topic, timeout=10).topics[topic]
        if md.error is not None:
            raise ClientFailure(f"metadata of {topic}: {md.error}")
        return len(md.partitions)

    def leaders(self, bootstrap: str, topic: str) -> dict[int, int]:
        from confluent_kafka.admin import AdminClient

        md = AdminClient(self._conf(bootstrap)).list_topics(topic, timeout=10).topics[topic]
        return {p: pm.leader for p, pm in md.partitions.items()}

    def produce(self, bootstrap: str, topic: str, records: list[Rec], compression: str | None = None) -> list[Ack]:
        from confluent_kafka import Producer

        producer = Producer(
            self._conf(
                bootstrap,
                **{
                    "acks": "all",
                    "enable.idempotence": True,
                    "compression.type": compression or "none",
                    "linger.ms": 5,
                },
            )
        )
        results: list = [None] * len(records)

        def on_delivery(i, err, msg):
            results[i] = (err, msg.partition(), msg.offset())

        for i, r in enumerate(records):
            kwargs = {"value": r.value, "key": r.key, "on_delivery": lambda err, msg, i=i: on_delivery(i, err, msg)}
            if r.partition is not None:
                kwargs["partition"] = r.partition
            if r.timestamp_ms is not None:
                kwargs["timestamp"] = r.timestamp_ms
            if r.headers:
                kwargs["headers"] = list(r.headers)
            while True:
                try:
                    producer.produce(topic, **kwargs)
                    break
                except BufferError:
                    producer.poll(0.1)
            producer.poll(0)
        left = producer.flush(TIMEOUT_S)
        if left:
            raise ClientFailure(f"{left} records still undelivered after {TIMEOUT_S}s")
        errors = [(i, res[0]) for i, res in enumerate(results) if res is None or res[0] is not None]
        if errors:
            raise ClientFailure(f"{len(errors)} deliveries failed, first: {errors[:5]}")
        return [Ack(r.value, p, o) for r, (_, p, o) in zip(records, results)]

    def read_all(self, bootstrap: str, topic: str, max_fetch_bytes: int | None = None) -> list[Got]:
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

        limits = {}
        if max_fetch_bytes is not None:
            # librdkafka insists on fetch.max.bytes >= message.max.bytes.
            limits = {
                "max.partition.fetch.bytes": max_fetch_bytes,
                "fetch.max.bytes": max_fetch_bytes,
                "message.max.bytes": max_fetch_bytes,
            }

        # confluent-kafka refuses a consumer without group.id; with assign()
        # and no commits the group is never joined.
        consumer = Consumer(
            self._conf(
                bootstrap,
                **{"group.id": "mk-interop-unused", "enable.auto.commit": False, "auto.offset.reset": "error"},
                **limits,
            )
        )
        try:
            md = consumer.list_topics(topic, timeout=10).topics[topic]
            if md.error is not None:
                raise ClientFailure(f"metadata of {topic}: {md.error}")
            parts = sorted(md.partitions)
            ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in parts}
            consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in parts])
            got: list[Got] = []
            pos = {p: 0 for p in parts}
            deadline = _deadline()
            while any(pos[p] < ends[p] for p in parts):
                if time.monotonic() > deadline:
                    raise ClientFailure(f"read timed out at positions {pos}, end offsets {ends}")
                for m in consumer.consume(num_messages=1000, timeout=0.5):
                    if m.error():
                        raise ClientFailure(f"consume error: {m.error()}")
                    got.append(
                        Got(m.partition(), m.offset(), m.key(), m.value(), m.timestamp()[1], tuple(m.headers() or ()))
                    )
                    pos[m.partition()] = m.offset() + 1
            return got
        finally:
            consumer.close()

    def read_isolated(self, bootstrap: str, topic: str, isolation: str) -> list[Got]:
        """Reads a topic that holds transactions with isolation.level
        `isolation`, to the end of every partition. Markers (and, for
        read_committed, aborted records) are never returned, so the end is
        librdkafka's partition EOF: the fetch position reached the high
        watermark (read_uncommitted) or the last stable offset."""
        from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

        consumer = Consumer(
            self._conf(
                bootstrap,
                **{
                    "group.id": "mk-interop-unused",
                    "enable.auto.commit": False,
                    "auto.offset.reset": "error",
                    "isolation.level": isolation,
                    "enable.partition.eof": True,
                },
            )
        )
        try:
            md = consumer.list_topics(topic, timeout=10).topics[topic]
            if md.error is not None:
                raise ClientFailure(f"metadata of {topic}: {md.error}")
            parts = sorted(md.partitions)
            consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in parts])
            got: list[Got] = []
            at_end: set[int] = set()
            deadline = _deadline()
            while at_end != set(parts):
                if time.monotonic() > deadline:
                    raise ClientFailure(f"{isolation} read timed out; at the end of {sorted(at_end)} of {parts}")
                for m in consumer.consume(num_messages=1000, timeout=0.5):
                    if m.error():
                        if m.error().code() == KafkaError._PARTITION_EOF:
                            at_end.add(m.partition())
                            continue
                        raise ClientFailure(f"consume error: {m.error()}")
                    at_end.discard(m.partition())
                    got.append(
                        Got(m.partition(), m.offset(), m.key(), m.value(), m.timestamp()[1], tuple(m.headers() or ()))
                    )
            return got
        finally:
            consumer.close()

    # How alter_topic_config changes a config: IncrementalAlterConfigs (API
    # 44, the other keys stay) or AlterConfigs (API 33, which replaces the
    # whole set: every key not named goes back to its default).
    alter_configs_api = "IncrementalAlterConfigs"

    def describe_topic_config(self, bootstrap: str, topic: str) -> dict[str, str | None]:
        from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

        admin = AdminClient(self._conf(bootstrap))
        res = ConfigResource(ResourceType.TOPIC, topic)
        entries = admin.describe_configs([res], request_timeout=30)[res].result(timeout=TIMEOUT_S)
        return {name: e.value for name, e in entries.items()}

    def alter_topic_config(self, bootstrap: str, topic: str, key: str, value: str) -> None:
        from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

        admin = AdminClient(self._conf(bootstrap))
        res = ConfigResource(
            ResourceType.TOPIC,
            topic,
            incremental_configs=[ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)],
        )
        admin.incremental_alter_configs([res], request_timeout=30)[res].result(timeout=TIMEOUT_S)

    def create_partitions(self, bootstrap: str, topic: str, total: int) -> None:
        from confluent_kafka.admin import AdminClient, NewPartitions

        admin = AdminClient(self._conf(bootstrap))
        admin.create_partitions([NewPartitions(topic, total)], request_timeout=30)[topic].result(timeout=TIMEOUT_S)

    def delete_topic(self, bootstrap: str, topic: str) -> None:
        from confluent_kafka.admin import AdminClient

        admin = AdminClient(self._conf(bootstrap))
        admin.delete_topics([topic], request_timeout=30)[topic].result(timeout=TIMEOUT_S)

    def topic_names(self, bootstrap: str) -> set[str]:
        """Every topic, from a Metadata request for all topics (which never
        auto-creates one)."""
        from confluent_kafka.admin import AdminClient

        return set(AdminClient(self._conf(bootstrap)).list_topics(timeout=10).topics)

    # ---- consumer-group administration (ListGroups, DescribeGroups,
    # OffsetFetch, DeleteGroups, OffsetCommit from the admin client)

    def list_groups(self, bootstrap: str) -> dict[str, str | None]:
        from confluent_kafka.admin import AdminClient

        admin = AdminClient(self._conf(bootstrap))  # must outlive its futures
        res = admin.list_consumer_groups(request_timeout=30).result(timeout=TIMEOUT_S)
        if res.errors:
            raise ClientFailure(f"ListGroups errors: {res.errors}")
        return {g.group_id: g.state.name.lower() for g in res.valid}

    def describe_group(self, bootstrap: str, group: str) -> dict:
        from confluent_kafka.admin import AdminClient

        admin = AdminClient(self._conf(bootstrap))
        d = admin.describe_consumer_groups([group], request_timeout=30)[group].result(timeout=TIMEOUT_S)
        members = []
        for m in d.members:
            assignment: dict[str, list[int]] = {}
            for tp in m.assignment.topic_partitions:
                assignment.setdefault(tp.topic, []).append(tp.partition)
            members.append({"member_id": m.member_id, "client_id": m.client_id, "assignment": _sorted(assignment)})
        return {"state": d.state.name.lower(), "protocol": d.partition_assignor or None, "members": members}

    def group_offsets(self, bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
        from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
        from confluent_kafka.admin import AdminClient

        req = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in range(partitions)])
        admin = AdminClient(self._conf(bootstrap))
        res = admin.list_consumer_group_offsets([req], request_timeout=30)[group].result(timeout=TIMEOUT_S)
        return {tp.partition: (tp.offset if tp.offset >= 0 else -1) for tp in res.topic_partitions}

    def delete_group(self, bootstrap: str, group: str) -> str | None:
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient

        admin = AdminClient(self._conf(bootstrap))
        try:
            admin.delete_consumer_groups([group], request_timeout=30)[group].result(timeout=TIMEOUT_S)
        except KafkaException as e:
            return e.args[0].name()
        return None

    def set_group_offsets(self, bootstrap: str, group: str, topic: str, offsets: dict[int, int]) -> None:
        from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
        from confluent_kafka.admin import AdminClient

        req = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p, o) for p, o in offsets.items()])
        admin = AdminClient(self._conf(bootstrap))
        res = admin.alter_consumer_group_offsets([req], request_timeout=30)[group].result(timeout=TIMEOUT_S)
        errors = [tp for tp in res.topic_partitions if tp.error is not None]
        if errors:
            raise ClientFailure(f"AlterConsumerGroupOffsets {group}: {errors}")

    def offsets_for_times(self, bootstrap: str, topic: str, partitions: int, timestamp_ms: int) -> dict[int, int | None]:
        from confluent_kafka import Consumer, TopicPartition

        consumer = Consumer(self._conf(bootstrap, **{"group.id": "mk-interop-unused", "enable.auto.commit": False}))
        try:
            res = consumer.offsets_for_times([TopicPartition(topic, p, timestamp_ms) for p in range(partitions)], timeout=10)
            out = {}
            for tp in res:
                if tp.error is not None:
                    raise ClientFailure(f"offsets_for_times {topic}[{tp.partition}]: {tp.error}")
                out[tp.partition] = None if tp.offset == -1 else tp.offset
            return out
        finally:
            consumer.close()


# --------------------------------------------------------------------------
# kafka-python


class _PythonClient:
    """What kafka-python and aiokafka share: every codec, Kafka's answer
    past the end, the settings of their producers and readers, and the
    library's logger (`logger`) at DEBUG under MK_INTEROP_DEBUG=1."""

    codecs = ("gzip", "snappy", "lz4", "zstd")
    past_end_offset_is_end = False
    logger = ""

    def __init__(self):
        if DEBUG:
            logging.getLogger(self.logger).setLevel(logging.DEBUG)

    @staticmethod
    def _producer_settings(compression: str | None) -> dict:
        """Kafka 3.0+'s defaults (acks=all, idempotence), batches lingering 5 ms."""
        return {"acks": "all", "enable_idempotence": True, "compression_type": compression, "linger_ms": 5}

    @staticmethod
    def _send_args(r: Rec) -> dict:
        return {
            "value": r.value,
            "key": r.key,
            "partition": r.partition,
            "timestamp_ms": r.timestamp_ms,
            "headers": list(r.headers) or None,
        }

    @staticmethod
    def _reader_settings(isolation: str, max_fetch_bytes: int | None) -> dict:
        """A reader without a group that fails rather than reset a position."""
        settings = {
            "group_id": None,
            "enable_auto_commit": False,
            "auto_offset_reset": "none",
            "isolation_level": isolation,
        }
        if max_fetch_bytes is not None:
            settings.update(max_partition_fetch_bytes=max_fetch_bytes, fetch_max_bytes=max_fetch_bytes)
        return settings


class KafkaPython(_PythonClient):
    name = "kafka-python"
    logger = "kafka"

    def create_topic(self, bootstrap: str, topic: str, partitions: int, replication_factor: int = 1) -> None:
        from kafka.admin import KafkaAdminClient, NewTopic

        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            admin.create_topics([NewTopic(topic, partitions, replication_factor)], timeout_ms=30000)
        finally:
            admin.close()
        deadline = _deadline()
        seen = None
        while time.monotonic() < deadline:
            seen = self.partition_count(bootstrap, topic)
            if seen == partitions:
                return
            time.sleep(0.05)
        raise ClientFailure(f"metadata of {topic}: {seen} partitions, expected {partitions}")

    def partition_count(self, bootstrap: str, topic: str) -> int:
        from kafka import KafkaConsumer

        consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None)
        try:
            return len(consumer.partitions_for_topic(topic) or ())
        finally:
            consumer.close()

    def produce(self, bootstrap: str, topic: str, records: list[Rec], compression: str | None = None) -> list[Ack]:
        from kafka import KafkaProducer

        producer = KafkaProducer(bootstrap_servers=bootstrap, **self._producer_settings(compression))
        try:
            futures = [producer.send(topic, **self._send_args(r)) for r in records]
            producer.flush(timeout=TIMEOUT_S)
            acks = []
            for r, f in zip(records, futures):
                md = f.get(timeout=TIMEOUT_S)
                acks.append(Ack(r.value, md.partition, md.offset))
            return acks
        finally:
            producer.close(timeout=10)

    def read_all(self, bootstrap: str, topic: str, max_fetch_bytes: int | None = None) -> list[Got]:
        return self._read(bootstrap, topic, "read_uncommitted", max_fetch_bytes)

    def read_isolated(self, bootstrap: str, topic: str, isolation: str) -> list[Got]:
        """Reads a topic that holds transactions with `isolation`, until the
        consumer's position (which moves past markers and aborted batches)
        reaches each partition's end offset (the last stable offset for
        read_committed)."""
        return self._read(bootstrap, topic, isolation, None)

    def _read(self, bootstrap, topic, isolation, max_fetch_bytes):
        from kafka import KafkaConsumer, TopicPartition

        consumer = KafkaConsumer(bootstrap_servers=bootstrap, **self._reader_settings(isolation, max_fetch_bytes))
        try:
            parts = sorted(consumer.partitions_for_topic(topic) or ())
            if not parts:
                raise ClientFailure(f"no partitions of {topic} in metadata")
            tps = [TopicPartition(topic, p) for p in parts]
            consumer.assign(tps)
            consumer.seek_to_beginning(*tps)
            ends = consumer.end_offsets(tps)
            got: list[Got] = []
            deadline = _deadline()
            while any(consumer.position(tp) < ends[tp] for tp in tps):
                if time.monotonic() > deadline:
                    raise ClientFailure(
                        f"{isolation} read timed out at positions {[consumer.position(tp) for tp in tps]}, "
                        f"end offsets {ends}"
                    )
                for tp, msgs in consumer.poll(timeout_ms=500, max_records=1000).items():
                    for m in msgs:
                        got.append(Got(tp.partition, m.offset, m.key, m.value, m.timestamp, tuple(m.headers or ())))
            return got
        finally:
            consumer.close()

    alter_configs_api = "IncrementalAlterConfigs"

    def _admin(self, bootstrap: str, f):
        from kafka.admin import KafkaAdminClient

        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            return f(admin)
        finally:
            admin.close()

    def describe_topic_config(self, bootstrap: str, topic: str) -> dict[str, str | None]:
        from kafka.admin import ConfigResource, ConfigResourceType

        res = self._admin(
            bootstrap,
            lambda a: a.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)], config_filter="all"),
        )
        return {k: v["value"] for k, v in res["topic"][topic].items()}

    def alter_topic_config(self, bootstrap: str, topic: str, key: str, value: str) -> None:
        from kafka.admin import ConfigResource, ConfigResourceType

        res = self._admin(
            bootstrap,
            lambda a: a.alter_configs(
                [ConfigResource(ConfigResourceType.TOPIC, topic, configs={key: value})], incremental=True
            ),
        )
        outcome = res["topic"][topic]
        if outcome is not None and getattr(outcome, "errno", 0) not in (0, None):
            raise ClientFailure(f"alter_configs {topic}: {outcome!r}")

    def create_partitions(self, bootstrap: str, topic: str, total: int) -> None:
        self._admin(bootstrap, lambda a: a.create_partitions({topic: total}))

    def delete_topic(self, bootstrap: str, topic: str) -> None:
        self._admin(bootstrap, lambda a: a.delete_topics([topic]))

    def topic_names(self, bootstrap: str) -> set[str]:
        return set(self._admin(bootstrap, lambda a: a.list_topics()))

    # ---- consumer-group administration; kafka-python 3.0's admin client
    # also has multi-group OffsetFetch (v8) and OffsetDelete.

    def list_groups(self, bootstrap: str) -> dict[str, str | None]:
        return {g["group_id"]: (g.get("group_state") or "").lower() or None for g in self._admin(bootstrap, lambda a: a.list_groups())}

    def describe_group(self, bootstrap: str, group: str) -> dict:
        d = self._admin(bootstrap, lambda a: a.describe_groups([group]))[group]
        if d["error"]:
            raise ClientFailure(f"DescribeGroups {group}: {d['error']}")
        members = []
        for m in d["members"]:
            assignment = {a["topic"]: a["partitions"] for a in (m["member_assignment"] or {}).get("assigned_partitions", [])}
            members.append({"member_id": m["member_id"], "client_id": m["client_id"], "assignment": _sorted(assignment)})
        return {"state": d["group_state"].lower(), "protocol": d["protocol_data"] or None, "members": members}

    def group_offsets(self, bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
        return self.groups_offsets(bootstrap, [group], topic, partitions)[group]

    def groups_offsets(self, bootstrap: str, groups: list[str], topic: str, partitions: int) -> dict[str, dict[int, int]]:
        """Several groups' offsets in one OffsetFetch (v8) per coordinator."""
        from kafka import TopicPartition

        tps = [TopicPartition(topic, p) for p in range(partitions)]
        res = self._admin(bootstrap, lambda a: a.list_group_offsets({g: tps for g in groups}))
        return {g: {tp.partition: om.offset for tp, om in res[g].items()} for g in groups}

    def delete_group(self, bootstrap: str, group: str) -> str | None:
        outcome = self._admin(bootstrap, lambda a: a.delete_groups([group]))[group]
        return None if outcome == "OK" else outcome

    def set_group_offsets(self, bootstrap: str, group: str, topic: str, offsets: dict[int, int]) -> None:
        from kafka import OffsetAndMetadata, TopicPartition

        self._admin(
            bootstrap,
            lambda a: a.alter_group_offsets(
                group, {TopicPartition(topic, p): OffsetAndMetadata(o, "", -1) for p, o in offsets.items()}
            ),
        )

    def delete_group_offsets(self, bootstrap: str, group: str, topic: str, partitions: list[int]):
        """OffsetDelete; returns the client's per-partition outcome."""
        from kafka import TopicPartition

        return self._admin(bootstrap, lambda a: a.delete_group_offsets(group, [TopicPartition(topic, p) for p in partitions]))

    def offsets_for_times(self, bootstrap: str, topic: str, partitions: int, timestamp_ms: int) -> dict[int, int | None]:
        from kafka import KafkaConsumer, TopicPartition

        consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None)
        try:
            res = consumer.offsets_for_times({TopicPartition(topic, p): timestamp_ms for p in range(partitions)})
            return {tp.partition: (None if v is None else v.offset) for tp, v in res.items()}
        finally:
            consumer.close()


# --------------------------------------------------------------------------
# aiokafka


class AioKafka(_PythonClient):
    name = "aiokafka"
    logger = "aiokafka"

    def create_topic(self, bootstrap: str, topic: str, partitions: int, replication_factor: int = 1) -> None:
        asyncio.run(self._create_topic(bootstrap, topic, partitions, replication_factor))

    async def _create_topic(self, bootstrap, topic, partitions, replication_factor):
        from aiokafka.admin import AIOKafkaAdminClient, NewTopic

        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            resp = await admin.create_topics([NewTopic(topic, partitions, replication_factor)], timeout_ms=30000)
        finally:
            await admin.close()
        errors = [e for e in resp.topic_errors if e[1] != 0]
        if errors:
            raise ClientFailure(f"CreateTopics answered errors: {errors}")
        deadline = _deadline()
        seen = None
        while time.monotonic() < deadline:
            seen = await self._partition_count(bootstrap, topic)
            if seen == partitions:
                return
            await asyncio.sleep(0.05)
        raise ClientFailure(f"metadata of {topic}: {seen} partitions, expected {partitions}")

    def partition_count(self, bootstrap: str, topic: str) -> int:
        return asyncio.run(self._partition_count(bootstrap, topic))

    async def _partition_count(self, bootstrap, topic):
        return len(await self._partitions(bootstrap, topic))

    async def _partitions(self, bootstrap, topic) -> list[int]:
        """Partitions with a leader, from a Metadata request of the admin
        client (the consumer's partitions_for_topic only knows topics it
        already fetches)."""
        from aiokafka.admin import AIOKafkaAdminClient

        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            [md] = await admin.describe_topics([topic])
        finally:
            await admin.close()
        if md["error_code"] != 0:
            return []
        return sorted(p["partition"] for p in md["partitions"] if p["error_code"] == 0 and p["leader"] >= 0)

    def produce(self, bootstrap: str, topic: str, records: list[Rec], compression: str | None = None) -> list[Ack]:
        return asyncio.run(self._produce(bootstrap, topic, records, compression))

    async def _produce(self, bootstrap, topic, records, compression):
        from aiokafka import AIOKafkaProducer

        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, **self._producer_settings(compression))
        await producer.start()
        try:
            futures = [await producer.send(topic, **self._send_args(r)) for r in records]
            mds = await asyncio.wait_for(asyncio.gather(*futures), TIMEOUT_S)
            return [Ack(r.value, md.partition, md.offset) for r, md in zip(records, mds)]
        finally:
            await producer.stop()

    def read_all(self, bootstrap: str, topic: str, max_fetch_bytes: int | None = None) -> list[Got]:
        return asyncio.run(self._read(bootstrap, topic, "read_uncommitted", max_fetch_bytes))

    def read_isolated(self, bootstrap: str, topic: str, isolation: str) -> list[Got]:
        """Like kafka-python's: until each position reaches the end offset."""
        return asyncio.run(self._read(bootstrap, topic, isolation, None))

    async def _read(self, bootstrap, topic, isolation, max_fetch_bytes):
        from aiokafka import AIOKafkaConsumer, TopicPartition

        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, **self._reader_settings(isolation, max_fetch_bytes))
        parts = await self._partitions(bootstrap, topic)
        await consumer.start()
        try:
            if not parts:
                raise ClientFailure(f"no partitions of {topic} in metadata")
            tps = [TopicPartition(topic, p) for p in parts]
            consumer.assign(tps)
            await consumer.seek_to_beginning(*tps)
            ends = await consumer.end_offsets(tps)
            got: list[Got] = []
            deadline = _deadline()

            async def behind():
                return [tp for tp in tps if await consumer.position(tp) < ends[tp]]

            while await behind():
                if time.monotonic() > deadline:
                    raise ClientFailure(f"{isolation} read timed out; end offsets {ends}")
                batches = await consumer.getmany(timeout_ms=500, max_records=1000)
                for tp, msgs in batches.items():
                    for m in msgs:
                        got.append(Got(tp.partition, m.offset, m.key, m.value, m.timestamp, tuple(m.headers or ())))
            return got
        finally:
            await consumer.stop()

    # aiokafka's admin client has alter_configs (AlterConfigs, API 33) only.
    alter_configs_api = "AlterConfigs"

    def alter_topic_config(self, bootstrap: str, topic: str, key: str, value: str) -> None:
        from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

        responses = asyncio.run(
            self._with_admin(
                bootstrap,
                lambda a: a.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs={key: value})]),
            )
        )
        for resp in responses:
            for res in resp.to_object()["resources"]:
                if res["error_code"] != 0:
                    raise ClientFailure(f"AlterConfigs {topic}: {res}")

    async def _with_admin(self, bootstrap, f):
        from aiokafka.admin import AIOKafkaAdminClient

        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            return await f(admin)
        finally:
            await admin.close()

    def describe_topic_config(self, bootstrap: str, topic: str) -> dict[str, str | None]:
        from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

        [resp] = asyncio.run(
            self._with_admin(bootstrap, lambda a: a.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)]))
        )
        obj = resp.to_object()
        [res] = obj["resources"]
        if res["error_code"] != 0:
            raise ClientFailure(f"DescribeConfigs {topic}: {res}")
        return {e["config_names"]: e["config_value"] for e in res["config_entries"]}

    def create_partitions(self, bootstrap: str, topic: str, total: int) -> None:
        from aiokafka.admin import NewPartitions

        resp = asyncio.run(self._with_admin(bootstrap, lambda a: a.create_partitions({topic: NewPartitions(total)})))
        errors = [r for r in resp.to_object()["topic_errors"] if r["error_code"] != 0]
        if errors:
            raise ClientFailure(f"CreatePartitions {topic}: {errors}")

    def delete_topic(self, bootstrap: str, topic: str) -> None:
        resp = asyncio.run(self._with_admin(bootstrap, lambda a: a.delete_topics([topic])))
        errors = [r for r in resp.to_object()["topic_error_codes"] if r["error_code"] != 0]
        if errors:
            raise ClientFailure(f"DeleteTopics {topic}: {errors}")

    def topic_names(self, bootstrap: str) -> set[str]:
        return set(asyncio.run(self._with_admin(bootstrap, lambda a: a.list_topics())))

    # ---- consumer-group administration (aiokafka's admin client has no
    # DeleteGroups and no way to set a group's offsets)

    def list_groups(self, bootstrap: str) -> dict[str, str | None]:
        return {g[0]: None for g in asyncio.run(self._with_admin(bootstrap, lambda a: a.list_consumer_groups()))}

    def describe_group(self, bootstrap: str, group: str) -> dict:
        [resp] = asyncio.run(self._with_admin(bootstrap, lambda a: a.describe_consumer_groups([group])))
        [g] = resp.to_object()["groups"]
        if g["error_code"] != 0:
            raise ClientFailure(f"DescribeGroups {group}: {g}")
        members = [
            {"member_id": m["member_id"], "client_id": m["client_id"], "assignment": decode_assignment(m["member_assignment"])}
            for m in g["members"]
        ]
        return {"state": g["state"].lower(), "protocol": g["protocol"] or None, "members": members}

    def group_offsets(self, bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
        from aiokafka import TopicPartition

        tps = [TopicPartition(topic, p) for p in range(partitions)]
        res = asyncio.run(self._with_admin(bootstrap, lambda a: a.list_consumer_group_offsets(group, partitions=tps)))
        return {tp.partition: om.offset for tp, om in res.items()}

    delete_group = None
    set_group_offsets = None

    def offsets_for_times(self, bootstrap: str, topic: str, partitions: int, timestamp_ms: int) -> dict[int, int | None]:
        return asyncio.run(self._offsets_for_times(bootstrap, topic, partitions, timestamp_ms))

    async def _offsets_for_times(self, bootstrap, topic, partitions, timestamp_ms):
        from aiokafka import AIOKafkaConsumer, TopicPartition

        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None)
        await consumer.start()
        try:
            res = await consumer.offsets_for_times({TopicPartition(topic, p): timestamp_ms for p in range(partitions)})
            return {tp.partition: (None if v is None else v.offset) for tp, v in res.items()}
        finally:
            await consumer.stop()


# --------------------------------------------------------------------------
# kafkajs (through interop/js/mk_interop.js)


def _s(b: bytes | None) -> str | None:
    return None if b is None else b.decode()


def _b(s: str | None) -> bytes | None:
    return None if s is None else s.encode()


class KafkaJs:
    name = "kafkajs"
    # kafkajs ships gzip; snappy comes from kafkajs-snappy (pure JS). Its lz4
    # and zstd codecs need native builds, so kafkajs neither produces nor
    # reads those: the broker returns batches as they were produced, as
    # Kafka does, and kafkajs fails on them with its own error.
    codecs = ("gzip", "snappy")
    reads_codecs = ("gzip", "snappy")
    # kafkajs's fetchTopicOffsetsByTimestamp answers the end offset when no
    # record is at or after the time.
    past_end_offset_is_end = True

    def _run(self, command: str, args: dict) -> dict:
        script = JS_DIR / "mk_interop.js"
        env = dict(os.environ, KAFKAJS_NO_PARTITIONER_WARNING="1")
        proc = subprocess.run(
            ["node", str(script), command],
            input=json.dumps(args),
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S + 30,
            env=env,
            cwd=JS_DIR,
            check=False,
        )
        if proc.stderr:
            # Shown by pytest on failure, with the client's log.
            print(f"--- kafkajs {command} stderr ---\n{proc.stderr[-20000:]}")
        if proc.returncode != 0:
            raise ClientFailure(f"kafkajs {command} failed (exit {proc.returncode}): {proc.stderr[-4000:]}")
        lines = proc.stdout.strip().splitlines()
        if not lines:
            raise ClientFailure(f"kafkajs {command} printed no result")
        return json.loads(lines[-1])

    def create_topic(self, bootstrap: str, topic: str, partitions: int, replication_factor: int = 1) -> None:
        self._run(
            "create-topic",
            {"bootstrap": bootstrap, "topic": topic, "partitions": partitions, "replicationFactor": replication_factor},
        )

    def partition_count(self, bootstrap: str, topic: str) -> int:
        return self._run("partition-count", {"bootstrap": bootstrap, "topic": topic})["partitions"]

    def produce(self, bootstrap: str, topic: str, records: list[Rec], compression: str | None = None) -> list[Ack]:
        res = self._run(
            "produce",
            {
                "bootstrap": bootstrap,
                "topic": topic,
                "compression": compression,
                "records": [
                    {
                        "key": _s(r.key),
                        "value": _s(r.value),
                        "timestamp": r.timestamp_ms,
                        "partition": r.partition,
                        "headers": [[k, _s(v)] for k, v in r.headers],
                    }
                    for r in records
                ],
            },
        )
        acks = res["acks"]
        if len(acks) != len(records):
            raise ClientFailure(f"kafkajs acknowledged {len(acks)} of {len(records)} records")
        return [Ack(r.value, a["partition"], a["offset"]) for r, a in zip(records, acks)]

    def read_isolated(self, bootstrap: str, topic: str, isolation: str) -> list[Got]:
        """read-all with the isolation level given: its positions follow
        the last offset of every batch, control batches included."""
        return self.read_all(bootstrap, topic, isolation=isolation)

    def read_all(
        self, bootstrap: str, topic: str, max_fetch_bytes: int | None = None, isolation: str = "read_committed"
    ) -> list[Got]:
        res = self._run(
            "read-all", {"bootstrap": bootstrap, "topic": topic, "maxBytes": max_fetch_bytes, "isolation": isolation}
        )
        return [got_from(g, _b) for g in res["records"]]

    # ---- consumer-group administration

    def list_groups(self, bootstrap: str) -> dict[str, str | None]:
        return {g["groupId"]: None for g in self._run("list-groups", {"bootstrap": bootstrap})["groups"]}

    def describe_group(self, bootstrap: str, group: str) -> dict:
        return self._run("describe-group", {"bootstrap": bootstrap, "group": group})

    def group_offsets(self, bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
        res = self._run("group-offsets", {"bootstrap": bootstrap, "group": group, "topic": topic})
        return {int(p): o for p, o in res["offsets"].items()}

    def delete_group(self, bootstrap: str, group: str) -> str | None:
        return self._run("delete-group", {"bootstrap": bootstrap, "group": group})["error"]

    def set_group_offsets(self, bootstrap: str, group: str, topic: str, offsets: dict[int, int]) -> None:
        self._run("set-group-offsets", {"bootstrap": bootstrap, "group": group, "topic": topic, "offsets": offsets})

    def offsets_for_times(self, bootstrap: str, topic: str, partitions: int, timestamp_ms: int) -> dict[int, int | None]:
        res = self._run("offsets-for-times", {"bootstrap": bootstrap, "topic": topic, "timestamp": timestamp_ms})
        return {int(p): o for p, o in res["offsets"].items()}

    # kafkajs's admin has alterConfigs (AlterConfigs, API 33) only.
    alter_configs_api = "AlterConfigs"

    def alter_topic_config(self, bootstrap: str, topic: str, key: str, value: str) -> None:
        self._run("alter-topic-config", {"bootstrap": bootstrap, "topic": topic, "key": key, "value": value})

    def describe_topic_config(self, bootstrap: str, topic: str) -> dict[str, str | None]:
        return self._run("describe-topic-config", {"bootstrap": bootstrap, "topic": topic})["configs"]

    def create_partitions(self, bootstrap: str, topic: str, total: int) -> None:
        self._run("create-partitions", {"bootstrap": bootstrap, "topic": topic, "count": total})

    def delete_topic(self, bootstrap: str, topic: str) -> None:
        self._run("delete-topic", {"bootstrap": bootstrap, "topic": topic})

    def topic_names(self, bootstrap: str) -> set[str]:
        return set(self._run("list-topics", {"bootstrap": bootstrap})["topics"])

    def end_offsets(self, bootstrap: str, topic: str) -> dict[int, int]:
        res = self._run("end-offsets", {"bootstrap": bootstrap, "topic": topic})
        return {int(p): o for p, o in res["offsets"].items()}


# The Java client (kafka-clients) through our Java driver: mkinterop/java_client.py.
from .java_client import JavaKafka  # noqa: E402

DRIVERS = {d.name: d for d in (ConfluentKafka(), KafkaPython(), AioKafka(), KafkaJs(), JavaKafka())}
