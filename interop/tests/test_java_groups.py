"""Java consumer-group members (the driver's `member` scenario, one JVM per
member) beyond the shared scenarios of test_groups.py, which run for the
Java client too: members joining and leaving while records arrive, with
the eager range assignor and the cooperative-sticky one, and a
read_committed member next to transactions.
"""

from __future__ import annotations

import json
import time

import pytest
from conftest import unique_topic

from mkinterop.drivers import DRIVERS
from mkinterop.group import PacedProducer, check_exactly_once, committed_offsets, read_everything, settled, wait_until
from mkinterop.java_client import JavaTxnProducer

PARTITIONS = 3


def new_topic(server, tag: str) -> str:
    topic = unique_topic(tag)
    DRIVERS["java"].create_topic(server.bootstrap, topic, partitions=PARTITIONS)
    return topic


def broker_view(server, group: str) -> dict:
    proc = server.cli("group", "describe", group, "--json")
    assert proc.returncode == 0, f"mk-server group describe {group}: {proc.stdout}{proc.stderr}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def read_so_far(ms) -> int:
    return sum(len(m.records) for m in ms)


@pytest.mark.parametrize("assignor", ["range", "cooperative-sticky"])
def test_java_members_join_and_leave_mid_stream(broker, members, assignor):
    """While a producer keeps writing, a second and a third Java member join
    one that holds every partition, then the first leaves gracefully
    (LeaveGroup). After each change the group settles with the partitions
    split between the members present; every record is processed exactly
    once by the member that owned its partition; the committed offsets end
    at the end offsets and the group is Empty once everyone left. With
    cooperative-sticky a member never revokes a partition it keeps: the
    members that stay revoke nothing when the first one leaves."""
    bootstrap = broker.bootstrap
    topic = new_topic(broker, f"jgroup-{assignor}")
    group = unique_topic("g-jgroup", assignor)
    cfg = {"assignor": assignor}
    m1 = members.start("java", bootstrap, group, topic, "m1", **cfg)
    wait_until(settled([m1], PARTITIONS), "m1 to hold every partition", members=[m1])
    producer = PacedProducer(bootstrap, topic, rounds=None, tag=f"jgroup-{assignor}")
    producer.thread.start()

    wait_until(lambda: ((n := read_so_far([m1])) >= 150, n), "m1 to read 150 records", members=[m1])
    m2 = members.start("java", bootstrap, group, topic, "m2", **cfg)
    wait_until(settled([m1, m2], PARTITIONS), "m1 and m2 to split the partitions", members=[m1, m2])
    wait_until(lambda: ((n := len(m2.records)) >= 50, n), "m2 to read 50 records", members=[m1, m2])
    m3 = members.start("java", bootstrap, group, topic, "m3", **cfg)
    ms = [m1, m2, m3]
    wait_until(settled(ms, PARTITIONS), "three members to hold one partition each", members=ms)
    wait_until(lambda: ((n := len(m3.records)) >= 50, n), "m3 to read 50 records", members=ms)

    held = {m.name: set(m.assignment) for m in (m2, m3)}
    left_at = time.time()
    m1.stop()
    wait_until(settled([m2, m3], PARTITIONS), "m2 and m3 to take over m1's partition", members=[m2, m3])
    for m in (m2, m3):
        assert held[m.name] <= set(m.assignment), f"{m.name} held {held[m.name]}, now {m.assignment}"
        revoked = [e["partitions"] for e in m.rebalance_events(left_at) if e["ev"] == "revoked" and e["partitions"]]
        if assignor == "cooperative-sticky":
            assert not revoked, f"{m.name} revoked {revoked} when m1 left; cooperative members keep what they hold"
        else:
            assert revoked, f"{m.name}: the eager protocol revokes everything before the rejoin: {m.describe()}"

    wait_until(lambda: ((n := len(m2.records) + len(m3.records)) >= 300, n), "m2 and m3 to read 300 records after m1 left",
               members=[m2, m3])
    producer.join()
    wait_until(read_everything(ms, producer.acked), "the members to read every record", members=[m2, m3])
    view = broker_view(broker, group)
    assert view["state"] == "Stable" and len(view["members"]) == 2, view
    m2.stop()
    m3.stop()
    check_exactly_once(ms, producer.acked)
    ends = {p: 0 for p in range(PARTITIONS)}
    for p, o in producer.acked.values():
        ends[p] = max(ends[p], o + 1)
    assert committed_offsets(bootstrap, group, topic) == ends
    assert broker_view(broker, group)["state"] == "Empty"


def test_java_read_committed_member_sees_only_committed_transactions(broker, members):
    """A read_committed Java member (and a read_uncommitted one in another
    group) next to a Java transactional producer: committed records are
    read, aborted ones never, and an open transaction's records only once
    it commits; read_uncommitted reads all of them as they are written."""
    bootstrap = broker.bootstrap
    topic = new_topic(broker, "jgroup-rc")
    committed = members.start("java", bootstrap, unique_topic("g-jrc"), topic, "rc", isolation_level="read_committed")
    everything = members.start("java", bootstrap, unique_topic("g-jru"), topic, "ru", isolation_level="read_uncommitted")
    wait_until(settled([committed], PARTITIONS), "the read_committed member to hold every partition", members=[committed])
    wait_until(settled([everything], PARTITIONS), "the read_uncommitted member to hold every partition", members=[everything])

    producer = JavaTxnProducer(bootstrap, unique_topic("tid-jrc"))

    def transaction(tag: str, end: str | None) -> list[str]:
        values = [f"{tag}-{i:02d}" for i in range(30)]
        producer.begin()
        for i, v in enumerate(values):
            producer.send(topic, v.encode(), i % PARTITIONS)
        producer.flush()
        if end == "commit":
            producer.commit()
        elif end == "abort":
            producer.abort()
        return values

    def values(m) -> list[str]:
        return [v for _, _, v in m.records]

    try:
        producer.init()
        first = transaction("first", "commit")
        aborted = transaction("aborted", "abort")
        held = transaction("held", None)
        wait_until(lambda: (set(values(everything)) == set(first + aborted + held), len(values(everything))),
                   "read_uncommitted to read every record written", members=[everything])
        wait_until(lambda: (set(values(committed)) == set(first), len(values(committed))),
                   "read_committed to read the first transaction", members=[committed])
        producer.commit()
        wait_until(lambda: (set(values(committed)) == set(first + held), len(values(committed))),
                   "read_committed to read the held transaction once committed", members=[committed])
    finally:
        producer.close()
    committed.stop()
    everything.stop()
    assert sorted(values(committed)) == sorted(first + held), "read_committed read a record twice or an aborted one"
    assert sorted(values(everything)) == sorted(first + aborted + held)
