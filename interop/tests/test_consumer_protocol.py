"""KIP-848 consumer groups (`group.protocol=consumer`) with real clients:
the Java client (kafka-clients 4.3) and confluent-kafka (librdkafka 2.16).
The coordinator assigns the partitions (server-side assignors) and moves
members incrementally: a partition is revoked from its owner before it is
handed to another, and members that keep a partition never give it up.

Members process a poll's records, then commit exactly the offsets after
them before polling again, so across graceful rebalances every record is
processed exactly once. Heartbeats are the coordinator's (5 s, Kafka's
default): a group settles within a few heartbeats.
"""

from __future__ import annotations

import time

import pytest
from conftest import unique_topic

from mkinterop import java_client, raw_kafka
from mkinterop.drivers import DRIVERS
from mkinterop.group import PacedProducer, check_exactly_once, read_everything, settled, wait_until

PARTITIONS = 3
CONSUMER_PROTOCOL_CLIENTS = ["java", "confluent-kafka"]
# A KIP-848 group needs a few heartbeats (5 s each) to settle.
SETTLE_S = 120.0


def protocol(client: str) -> dict:
    """The member config that makes `client` a KIP-848 member."""
    if client == "java":
        return {"props": {"group.protocol": "consumer"}}
    return {"group_protocol": "consumer"}


def new_topic(bootstrap: str, tag: str, partitions: int = PARTITIONS) -> str:
    topic = unique_topic(tag)
    DRIVERS["java"].create_topic(bootstrap, topic, partitions=partitions)
    return topic


def describe(bootstrap: str, group: str) -> dict:
    """The group as the Java Admin describes it (ConsumerGroupDescribe)."""
    d = java_client.call("describe-groups", bootstrap=bootstrap, groups=[group])[group]
    assert d["error"] is None, d
    return d


def produce(bootstrap: str, topic: str, n: int, tag: str, partitions: int = PARTITIONS) -> dict[str, tuple[int, int]]:
    from mkinterop.model import Rec

    sent = [Rec(key=None, value=f"{tag}-{i:05d}".encode(), partition=i % partitions) for i in range(n)]
    acks = DRIVERS["confluent-kafka"].produce(bootstrap, topic, sent)
    return {a.value.decode(): (a.partition, a.offset) for a in acks}


@pytest.mark.parametrize("client", CONSUMER_PROTOCOL_CLIENTS)
def test_consumer_protocol_members_join_and_leave_mid_stream(broker, members, client):
    """While a producer keeps writing, a second and a third KIP-848 member
    join one that holds every partition, then the first leaves. After each
    change the group settles with the partitions split; a member never
    revokes a partition it keeps; every record is processed exactly once;
    the Admin describes a CONSUMER group whose epoch grew with each
    change and whose members all reached the assignment epoch, and
    `mk-server group describe/list` show it as a consumer group."""
    bootstrap = broker.bootstrap
    topic = new_topic(bootstrap, f"kip848-{client}")
    group = unique_topic("g-kip848", client)
    cfg = protocol(client)
    m1 = members.start(client, bootstrap, group, topic, "m1", **cfg)
    wait_until(settled([m1], PARTITIONS), "m1 to hold every partition", timeout_s=SETTLE_S, members=[m1])
    epoch_alone = describe(bootstrap, group)["group_epoch"]
    producer = PacedProducer(bootstrap, topic, rounds=None, tag=f"kip848-{client}")
    producer.thread.start()
    wait_until(lambda: ((n := len(m1.records)) >= 100, n), "m1 to read 100 records", members=[m1])
    m2 = members.start(client, bootstrap, group, topic, "m2", **cfg)
    wait_until(settled([m1, m2], PARTITIONS), "m1 and m2 to split the partitions", timeout_s=SETTLE_S, members=[m1, m2])
    m3 = members.start(client, bootstrap, group, topic, "m3", **cfg)
    ms = [m1, m2, m3]
    wait_until(settled(ms, PARTITIONS), "three members to hold one partition each", timeout_s=SETTLE_S, members=ms)
    # The operator's view: the CLI describes the KIP-848 group, each member
    # with its epoch and partitions, none of them held twice.
    view = broker.describe_group(group)
    assert (view["group_type"], len(view["members"])) == ("consumer", 3), view
    owned = [p for m in view["members"] for p in m["assignment"] + m["revoking"]]
    assert len(owned) == len(set(owned)), f"a partition held twice: {view}"
    text = broker.cli("group", "describe", group).stdout
    assert text.startswith(f"group {group}: consumer group (KIP-848), state "), text
    assert sum(line.startswith("  member ") for line in text.splitlines()) == 3, text
    listed = broker.cli("group", "list").stdout
    assert any(line.split()[0] == group and line.split()[-1] == "consumer" for line in listed.splitlines()), listed
    held = {m.name: set(m.assignment) for m in (m2, m3)}
    left_at = time.time()
    m1.stop()
    wait_until(settled([m2, m3], PARTITIONS), "m2 and m3 to take over m1's partition", timeout_s=SETTLE_S, members=[m2, m3])
    for m in (m2, m3):
        assert held[m.name] <= set(m.assignment), f"{m.name} held {held[m.name]}, now {m.assignment}"
        revoked = [e["partitions"] for e in m.rebalance_events(left_at) if e["ev"] == "revoked" and e["partitions"]]
        assert not revoked, f"{m.name} revoked {revoked} when m1 left: KIP-848 members keep what they hold"
    d = describe(bootstrap, group)
    assert d["type"] == "CONSUMER", d
    assert d["group_epoch"] >= epoch_alone + 3, f"joins and the leave each grow the epoch: {d}"
    producer.join()
    wait_until(read_everything([m1, m2, m3], producer.acked), "every record to be read", members=[m2, m3])
    wait_until(
        lambda: ((x := describe(bootstrap, group))["state"] == "STABLE", x),
        "the group to be Stable",
        timeout_s=SETTLE_S,
    )
    d = describe(bootstrap, group)
    assert all(m["member_epoch"] == d["assignment_epoch"] for m in d["members"]), d
    m2.stop()
    m3.stop()
    check_exactly_once([m1, m2, m3], producer.acked)
    assert describe(bootstrap, group)["state"] == "EMPTY"


def test_java_regex_subscription_follows_new_topics(broker, members):
    """A Java member subscribes with a SubscriptionPattern, which the broker
    resolves (KIP-848's server-side regular expressions): it is assigned the
    matching topic that exists, then, without rejoining, a matching topic
    created later; a topic that does not match stays out."""
    bootstrap = broker.bootstrap
    base = unique_topic("rx")
    first = f"{base}-orders"
    DRIVERS["java"].create_topic(bootstrap, first, partitions=1)
    DRIVERS["java"].create_topic(bootstrap, f"{base}-other", partitions=1)
    group = unique_topic("g-regex")
    m = members.start("java", bootstrap, group, first, "rx", pattern=f"{base}-(orders|payments)", **protocol("java"))

    def held() -> set[str]:
        current: set[str] = set()
        for e in m.rebalance_events():
            tps = set(e.get("topic_partitions", []))
            current = current | tps if e["ev"] == "assigned" else current - tps
        return current

    wait_until(lambda: (held() == {f"{first}:0"}, held()), "the member to hold the matching topic", timeout_s=SETTLE_S, members=[m])
    second = f"{base}-payments"
    DRIVERS["java"].create_topic(bootstrap, second, partitions=1)
    wait_until(
        lambda: (held() == {f"{first}:0", f"{second}:0"}, held()),
        "the member to be assigned the new matching topic",
        timeout_s=SETTLE_S,
        members=[m],
    )
    sent = produce(bootstrap, second, 10, "rx-pay", partitions=1)
    wait_until(read_everything([m], sent), "the member to read the new topic's records", members=[m])
    topics = {t for e in m.of("records") for t in e["topics"]}
    assert topics == {second}, topics
    assert describe(bootstrap, group)["members"][0]["assignment"] == {first: [0], second: [0]}
    m.stop()


def test_java_static_member_returns_with_its_partitions_and_no_new_epoch(broker, members):
    """Two static KIP-848 members; one closes (a static member's leave, epoch
    -2, keeps its place) and starts again with the same group.instance.id:
    it gets the same partitions back under its new member id, the group
    epoch does not move, the other member's assignment is untouched, and
    it resumes at its committed offsets."""
    bootstrap = broker.bootstrap
    topic = new_topic(bootstrap, "kip848-static")
    group = unique_topic("g-kip848-static")
    cfg = protocol("java")
    a = members.start("java", bootstrap, group, topic, "a", instance_id="inst-a", **cfg)
    b = members.start("java", bootstrap, group, topic, "b", instance_id="inst-b", **cfg)
    wait_until(settled([a, b], PARTITIONS), "two static members to split the partitions", timeout_s=SETTLE_S, members=[a, b])
    sent = produce(bootstrap, topic, 90, "static848")
    wait_until(read_everything([a, b], sent), "both members to read", members=[a, b])
    before = describe(bootstrap, group)
    b_partitions = b.assignment
    b.stop()
    b2 = members.start("java", bootstrap, group, topic, "b2", instance_id="inst-b", **cfg)
    wait_until(lambda: (b2.assignment == b_partitions, b2.assignment), f"b2 to get {b_partitions}", timeout_s=SETTLE_S, members=[a, b2])
    after = describe(bootstrap, group)
    assert after["group_epoch"] == before["group_epoch"], f"a static return is no rebalance: {before} -> {after}"
    more = produce(bootstrap, topic, 90, "static848-after")
    wait_until(read_everything([a, b2], more), "both members to read the new records", members=[a, b2])
    a.stop()
    b2.stop()
    check_exactly_once([a, b, b2], {**sent, **more})


def test_commits_with_a_stale_member_epoch_are_refused(broker, members):
    """With a Java KIP-848 member in the group, an OffsetCommit v9 naming it
    with another member epoch is refused with STALE_MEMBER_EPOCH (113), an
    unknown member with UNKNOWN_MEMBER_ID (25), and the Admin's commit
    without membership with UNKNOWN_MEMBER_ID while the member is there;
    the member's own epoch is accepted."""
    bootstrap = broker.bootstrap
    topic = new_topic(bootstrap, "kip848-stale", partitions=1)
    group = unique_topic("g-kip848-stale")
    m = members.start("java", bootstrap, group, topic, "m", **protocol("java"))
    wait_until(settled([m], 1), "the member to hold the partition", timeout_s=SETTLE_S, members=[m])
    member = describe(bootstrap, group)["members"][0]
    member_id, epoch = member["member_id"], member["member_epoch"]
    assert epoch > 0, member
    assert raw_kafka.commit_with_epoch(bootstrap, group, member_id, epoch - 1, topic, 0, 5) == 113
    assert raw_kafka.commit_with_epoch(bootstrap, group, member_id, epoch + 1, topic, 0, 5) == 113
    assert raw_kafka.commit_with_epoch(bootstrap, group, "nobody", epoch, topic, 0, 5) == 25
    refused = java_client.call("alter-group-offsets", bootstrap=bootstrap, group=group, offsets=[[topic, 0, 5]])
    assert "UNKNOWN_MEMBER_ID" in str(refused), refused
    assert raw_kafka.commit_with_epoch(bootstrap, group, member_id, epoch, topic, 0, 5) == 0
    m.stop()
