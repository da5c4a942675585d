#!/usr/bin/env python3
"""Move topics, their records and consumer groups' committed offsets from
one Kafka-compatible cluster to another with the Kafka Admin API, e.g. from
mk-server to Apache Kafka (docs/migrating-to-kafka.md explains when and
how).

    python3 tools/migrate-to-kafka.py --source 127.0.0.1:9092 --target kafka1:9092

Run it with producers stopped and consumers stopped (after they committed):
it copies what the source holds at that moment.

1. Topics: every topic of the source not starting with "__" (or those
   given with --topic) is created on the target with the same partition
   count and the configs the source reports as set on the topic
   (DescribeConfigs entries whose source is DYNAMIC_TOPIC_CONFIG), by
   CreateTopics. A topic that already exists on the target is used as it
   is if it has the same partition count, refused otherwise.
2. Records (unless --no-records): each partition is read from its start
   (read_committed: aborted transactions and transaction markers are left
   behind) to the high watermark it had when the copy began, and produced
   to the same partition of the target with the same key, value, headers
   and timestamp, by an idempotent producer (acks=all), in order.
3. Committed offsets: every consumer group of the source (or those given
   with --group) has its committed offsets read (OffsetFetch, the Admin
   API's list_consumer_group_offsets), translated to the target's offsets,
   and stored on the target (OffsetCommit, alter_consumer_group_offsets).
   A committed offset c becomes the target offset of the first copied
   record whose source offset is >= c, or the target's end when none is:
   so a consumer resumes at the same record even where the source log has
   gaps (transaction markers, compaction, records removed by retention).
   Without --no-records the target's offsets are assumed equal (only right
   if the target already holds the same records at the same offsets).

Needs confluent-kafka (pip install confluent-kafka). Prints what it did;
exits 1 with a message on the first error.
"""

from __future__ import annotations

import argparse
import bisect
import sys
import time
from dataclasses import dataclass, field

from confluent_kafka import (
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, NewTopic

TIMEOUT_S = 60.0


class MigrationError(Exception):
    pass


@dataclass
class CopiedPartition:
    """Source offsets of the copied records, and their target offsets, in
    order (both ascending)."""

    source: list[int] = field(default_factory=list)
    target: list[int] = field(default_factory=list)
    # The target's end offset after the copy.
    target_end: int = 0

    def translate(self, committed: int) -> int:
        i = bisect.bisect_left(self.source, committed)
        return self.target[i] if i < len(self.target) else self.target_end


def admin(bootstrap: str, extra: dict) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap, **extra})


def topics_to_move(source: AdminClient, wanted: list[str]) -> dict[str, int]:
    """Topic name -> partition count."""
    md = source.list_topics(timeout=TIMEOUT_S)
    found = {name: len(t.partitions) for name, t in md.topics.items() if t.error is None}
    if wanted:
        missing = [t for t in wanted if t not in found]
        if missing:
            raise MigrationError(f"the source has no topic {', '.join(missing)}")
        return {t: found[t] for t in wanted}
    return {t: n for t, n in sorted(found.items()) if not t.startswith("__")}


def topic_configs(source: AdminClient, topic: str) -> dict[str, str]:
    """The configs set on the topic itself (not the broker's defaults)."""
    res = ConfigResource(ConfigResource.Type.TOPIC, topic)
    entries = source.describe_configs([res], request_timeout=TIMEOUT_S)[res].result(timeout=TIMEOUT_S)
    return {
        name: e.value
        for name, e in sorted(entries.items())
        if e.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value and e.value is not None
    }


def create_topics(
    target: AdminClient, topics: dict[str, int], configs: dict[str, dict[str, str]], replication: int, log
) -> None:
    existing = target.list_topics(timeout=TIMEOUT_S).topics
    new = []
    for topic, partitions in topics.items():
        if topic in existing:
            have = len(existing[topic].partitions)
            if have != partitions:
                raise MigrationError(
                    f"topic {topic} exists on the target with {have} partitions, the source has {partitions}"
                )
            log(f"topic {topic}: exists on the target ({partitions} partitions), kept as it is")
            continue
        new.append(NewTopic(topic, num_partitions=partitions, replication_factor=replication, config=configs[topic]))
    if not new:
        return
    for topic, future in target.create_topics(new, request_timeout=TIMEOUT_S).items():
        try:
            future.result(timeout=TIMEOUT_S)
        except KafkaException as e:
            raise MigrationError(f"creating topic {topic} on the target failed: {e}") from e
        log(f"topic {topic}: created ({topics[topic]} partitions, configs {configs[topic] or 'none'})")


def copy_partition(source_bootstrap: str, producer: Producer, topic: str, partition: int, extra: dict) -> CopiedPartition:
    consumer = Consumer(
        {
            "bootstrap.servers": source_bootstrap,
            "group.id": "migrate-to-kafka-copier",  # never committed: offsets come from assign()
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
            "enable.partition.eof": True,
            **extra,
        }
    )
    copied = CopiedPartition()
    failures: list[str] = []
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=TIMEOUT_S)
        if high <= low:
            return copied
        consumer.assign([TopicPartition(topic, partition, low)])
        # read_committed reads up to the last stable offset: the end of the
        # partition once producers are stopped (an open transaction on the
        # source ends the copy early, and is reported).
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            msg = consumer.poll(0.5)
            if msg is None:
                if time.monotonic() > deadline:
                    raise MigrationError(f"reading {topic}-{partition} from the source stalled")
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    if msg.offset() < high:
                        print(
                            f"migrate-to-kafka: {topic}-{partition}: copied up to {msg.offset()} of {high} "
                            "(a transaction is still open on the source)",
                            file=sys.stderr,
                        )
                    break
                raise MigrationError(f"reading {topic}-{partition} from the source: {msg.error()}")
            deadline = time.monotonic() + TIMEOUT_S
            if msg.offset() >= high:
                break
            source_offset = msg.offset()
            copied.source.append(source_offset)
            copied.target.append(-1)
            slot = len(copied.target) - 1

            def delivered(err, m, slot=slot):
                if err is not None:
                    failures.append(str(err))
                else:
                    copied.target[slot] = m.offset()

            _, ts = msg.timestamp()
            producer.produce(
                topic,
                key=msg.key(),
                value=msg.value(),
                headers=msg.headers() or None,
                partition=partition,
                timestamp=ts if ts > 0 else 0,
                on_delivery=delivered,
            )
            producer.poll(0)
    finally:
        consumer.close()
    if producer.flush(TIMEOUT_S) != 0:
        raise MigrationError(f"the target did not acknowledge every record of {topic}-{partition}")
    if failures:
        raise MigrationError(f"producing {topic}-{partition} to the target failed: {failures[0]}")
    copied.target_end = copied.target[-1] + 1 if copied.target else 0
    return copied


def groups_to_move(source: AdminClient, wanted: list[str]) -> list[str]:
    if wanted:
        return wanted
    listed = source.list_consumer_groups(request_timeout=TIMEOUT_S).result(timeout=TIMEOUT_S)
    names = []
    for g in listed.valid:
        kind = getattr(g, "type", None)
        # Share groups keep no committed offsets to carry over.
        if kind is not None and str(getattr(kind, "name", kind)).upper() == "SHARE":
            continue
        names.append(g.group_id)
    return sorted(names)


def move_offsets(
    source: AdminClient,
    target: AdminClient,
    group: str,
    topics: dict[str, int],
    copied: dict[tuple[str, int], CopiedPartition] | None,
    log,
) -> dict[tuple[str, int], int]:
    req = ConsumerGroupTopicPartitions(group)
    res = source.list_consumer_group_offsets([req], request_timeout=TIMEOUT_S)[group].result(timeout=TIMEOUT_S)
    moved: dict[tuple[str, int], int] = {}
    for tp in res.topic_partitions:
        if tp.topic not in topics or tp.offset < 0:
            continue
        key = (tp.topic, tp.partition)
        moved[key] = copied[key].translate(tp.offset) if copied is not None else tp.offset
    if not moved:
        log(f"group {group}: no committed offsets on the moved topics")
        return moved
    tps = [TopicPartition(t, p, o) for (t, p), o in sorted(moved.items())]
    out = target.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, tps)], request_timeout=TIMEOUT_S)
    result = out[group].result(timeout=TIMEOUT_S)
    errors = [f"{tp.topic}-{tp.partition}: {tp.error}" for tp in result.topic_partitions if tp.error is not None]
    if errors:
        raise MigrationError(f"group {group}: the target refused offsets ({'; '.join(errors)})")
    shown = ", ".join(f"{t}-{p}@{o}" for (t, p), o in sorted(moved.items()))
    log(f"group {group}: committed offsets carried over ({shown})")
    return moved


def migrate(
    source_bootstrap: str,
    target_bootstrap: str,
    topics: list[str] | None = None,
    groups: list[str] | None = None,
    replication_factor: int = 1,
    records: bool = True,
    source_config: dict | None = None,
    target_config: dict | None = None,
    log=print,
) -> dict:
    """Runs the three steps; returns what was moved (for tests)."""
    source_config = source_config or {}
    target_config = target_config or {}
    source = admin(source_bootstrap, source_config)
    target = admin(target_bootstrap, target_config)
    moving = topics_to_move(source, topics or [])
    configs = {t: topic_configs(source, t) for t in moving}
    create_topics(target, moving, configs, replication_factor, log)
    copied = None
    if records:
        copied = {}
        producer = Producer(
            {"bootstrap.servers": target_bootstrap, "enable.idempotence": True, "acks": "all", **target_config}
        )
        for topic, partitions in moving.items():
            for p in range(partitions):
                copied[(topic, p)] = copy_partition(source_bootstrap, producer, topic, p, source_config)
            n = sum(len(copied[(topic, p)].source) for p in range(partitions))
            log(f"topic {topic}: {n} record(s) copied")
    offsets = {}
    for group in groups_to_move(source, groups or []):
        offsets[group] = move_offsets(source, target, group, moving, copied, log)
    return {"topics": moving, "configs": configs, "offsets": offsets}


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--source", required=True, help="bootstrap servers of the cluster to move from")
    p.add_argument("--target", required=True, help="bootstrap servers of the cluster to move to")
    p.add_argument("--topic", action="append", default=[], help="a topic to move (repeat; default: every topic not starting with __)")
    p.add_argument("--group", action="append", default=[], help="a consumer group to move (repeat; default: every consumer group)")
    p.add_argument("--replication-factor", type=int, default=1, help="replication factor of the created topics (default 1)")
    p.add_argument("--no-records", action="store_true", help="create topics and carry offsets over, copy no record")
    args = p.parse_args(argv)
    try:
        migrate(
            args.source,
            args.target,
            topics=args.topic,
            groups=args.group,
            replication_factor=args.replication_factor,
            records=not args.no_records,
        )
    except (MigrationError, KafkaException) as e:
        print(f"migrate-to-kafka: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
