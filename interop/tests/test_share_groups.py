"""KIP-932 share groups (Kafka's queues) with the Java client's
KafkaShareConsumer (kafka-clients 4.3): several consumers share one
partition record by record, each record acquired under a time lock and
acknowledged (accept, release, reject), handed out again when its holder
dies and the lock runs out, and archived once delivered too often.

Each share consumer runs in its own JVM (the driver's `share-member`
scenario) and reports every record it got with its delivery count. The
group's configs are set through the Admin client first, as a GROUP
resource: `share.auto.offset.reset=earliest` (read what is already there)
and, where a test waits for locks, the shortest lock Kafka allows.
"""

from __future__ import annotations

from collections import Counter

from conftest import unique_topic

from mkinterop import java_client
from mkinterop.drivers import DRIVERS
from mkinterop.group import wait_until
from mkinterop.model import Rec

SHARE = {"module": "mkinterop.share_member"}
# Kafka's group.share.min.record.lock.duration.ms.
LOCK_MS = 15_000
# Kafka's group.share.delivery.count.limit default.
DELIVERY_LIMIT = 5


def share_group(bootstrap: str, tag: str, **configs: str) -> str:
    group = unique_topic("sg", tag)
    configs = {"share.auto.offset.reset": "earliest", **configs}
    done = java_client.call(
        "alter-configs",
        bootstrap=bootstrap,
        resources=[{"type": "group", "name": group, "ops": [["SET", k, v] for k, v in configs.items()]}],
    )
    assert all(r.get("error") is None for r in done.values()), done
    return group


def new_topic(bootstrap: str, tag: str) -> str:
    topic = unique_topic(tag)
    DRIVERS["java"].create_topic(bootstrap, topic, partitions=1)
    return topic


def produce(bootstrap: str, topic: str, values: list[str]) -> None:
    DRIVERS["confluent-kafka"].produce(bootstrap, topic, [Rec(key=None, value=v.encode(), partition=0) for v in values])


def deliveries(m) -> list[tuple[str, int]]:
    """(value, delivery count) of every record the member got, in order."""
    return [(v, n) for e in m.of("records") for _, _, v, n in e["recs"]]


def got(ms) -> Counter:
    return Counter(v for m in ms for v, _ in deliveries(m))


def test_share_consumers_split_one_partition_with_implicit_acknowledgement(broker, members):
    """Three share consumers on a one-partition topic (implicit mode: the
    next poll accepts the previous one's records). Between them they get
    every record exactly once, and more than one of them gets records: the
    partition is shared record by record, not owned; `mk-server group
    describe` shows the three members sharing it, then its window done."""
    bootstrap = broker.bootstrap
    topic = new_topic(bootstrap, "share-implicit")
    group = share_group(bootstrap, "implicit")
    ms = [members.start("java", bootstrap, group, topic, f"s{i}", mode="implicit", batch=20, **SHARE) for i in range(3)]
    values = [f"imp-{i:04d}" for i in range(600)]
    for chunk in range(0, 600, 100):
        produce(bootstrap, topic, values[chunk : chunk + 100])
    wait_until(lambda: (set(got(ms)) >= set(values), len(got(ms))), "every record to be delivered", members=ms)
    # The operator's view: once all three have joined (a slow JVM may join
    # after the others took every record), each is assigned the partition.
    def shared():
        view = broker.describe_group(group)
        together = all(m["assignment"] == [f"{topic}-0"] for m in view["members"])
        return (view["group_type"], len(view["members"]), together) == ("share", 3, True), view

    wait_until(shared, "mk-server group describe to show three members sharing the partition", members=ms, poll_s=0.5)
    for m in ms:
        m.stop()
    counts = got(ms)
    assert set(counts) == set(values)
    twice = {v: n for v, n in counts.items() if n > 1}
    assert not twice, f"records delivered twice without a failure: {list(twice.items())[:5]}"
    busy = [m.name for m in ms if deliveries(m)]
    assert len(busy) >= 2, f"only {busy} got records: one partition is shared record by record"
    described = java_client.call("describe-share-groups", bootstrap=bootstrap, groups=[group])[group]
    assert described["error"] is None and described["state"] == "EMPTY", described
    offsets = java_client.call("share-group-offsets", bootstrap=bootstrap, group=group)["offsets"]
    assert offsets == [[topic, 0, 600]], f"every record is done: the start offset is the end: {offsets}"
    view = broker.describe_group(group)
    assert view["partitions"] == [{"topic": topic, "partition": 0, "start_offset": 600, "end_offset": 600}], view
    text = broker.cli("group", "describe", group).stdout
    assert text.startswith(f"group {group}: share group (KIP-932), state "), text
    assert f"  {topic}-0: share start offset 600, in flight up to 600" in text.splitlines(), text


def test_explicit_acknowledgement_rejects_and_archives_a_poison_record(broker, members):
    """Explicit mode: a consumer accepts most records, rejects `reject-*`
    ones and releases `poison-*` ones every time it gets them. A rejected
    record is never delivered again; the poison record is delivered again
    and again, its delivery count growing, until the delivery limit
    archives it; everything else is delivered once."""
    bootstrap = broker.bootstrap
    topic = new_topic(bootstrap, "share-explicit")
    group = share_group(bootstrap, "explicit")
    values = [f"ok-{i:03d}" for i in range(50)] + ["reject-1", "poison-1", "reject-2"] + [f"ok-{i:03d}" for i in range(50, 100)]
    produce(bootstrap, topic, values)
    m = members.start(
        "java", bootstrap, group, topic, "x", mode="explicit", release_prefix="poison-", reject_prefix="reject-", **SHARE
    )
    wait_until(
        lambda: ((n := got([m])["poison-1"]) >= DELIVERY_LIMIT and set(got([m])) == set(values), n),
        "the poison record to reach the delivery limit",
        members=[m],
    )
    wait_until(
        lambda: ((o := java_client.call("share-group-offsets", bootstrap=bootstrap, group=group)["offsets"]) == [[topic, 0, len(values)]], o),
        "every record to be done (accepted, rejected or archived)",
        members=[m],
    )
    m.stop()
    counts = got([m])
    poison = [n for v, n in deliveries(m) if v == "poison-1"]
    assert poison == list(range(1, DELIVERY_LIMIT + 1)), f"delivery counts of the poison record: {poison}"
    assert counts["reject-1"] == 1 and counts["reject-2"] == 1, counts
    once = {v: n for v, n in counts.items() if v.startswith("ok-") and n != 1}
    assert not once, f"accepted records delivered other than once: {once}"


def test_a_killed_consumers_records_are_delivered_again_after_the_lock_timeout(broker, members):
    """A consumer acquires records and dies holding them (SIGKILL, nothing
    acknowledged). Another consumer of the group gets them once their
    acquisition lock runs out (the group's share.record.lock.duration.ms),
    each with delivery count 2; then everything is done exactly once."""
    bootstrap = broker.bootstrap
    topic = new_topic(bootstrap, "share-killed")
    group = share_group(bootstrap, "killed", **{"share.record.lock.duration.ms": str(LOCK_MS)})
    values = [f"held-{i:03d}" for i in range(40)]
    produce(bootstrap, topic, values)
    holder = members.start("java", bootstrap, group, topic, "holder", mode="explicit", hold=True, **SHARE)
    wait_until(lambda: (len(deliveries(holder)) > 0, len(deliveries(holder))), "the holder to acquire records", members=[holder])
    held = [v for v, _ in deliveries(holder)]
    holder.kill()
    taker = members.start("java", bootstrap, group, topic, "taker", mode="explicit", **SHARE)
    wait_until(lambda: (set(got([taker])) >= set(values), len(got([taker]))), "the taker to get every record", timeout_s=120, members=[taker])
    again = dict(deliveries(taker))
    assert all(again[v] == 2 for v in held), f"held records come back as second deliveries: {[(v, again[v]) for v in held][:5]}"
    fresh = [v for v in values if v not in held]
    assert all(again[v] == 1 for v in fresh), "records the holder never got are first deliveries"
    taker.stop()
    counts = got([taker])
    assert all(counts[v] == 1 for v in values), counts
