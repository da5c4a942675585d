"""The newer client-facing APIs of issue 21 through unmodified clients:
client telemetry (KIP-714) with the Java client's defaults, and topics
described a page at a time (DescribeTopicPartitions, which the Java Admin
client's describeTopics uses), client quotas (stored and described),
preferred leader election and partition reassignments (Java and
kafka-python) on three hosted brokers.
"""

from __future__ import annotations

import functools

from conftest import unique_topic

from mkinterop import java_client
from mkinterop.drivers import DRIVERS
from mkinterop.group import wait_until
from mkinterop.model import Rec


def java(scenario: str, server, **args):
    return java_client.call(scenario, bootstrap=server.bootstrap, **args)


def test_java_clients_get_their_telemetry_instance_ids(broker):
    """Java 4.x producers and consumers (and an Admin client that enables
    it) ask GetTelemetrySubscriptions first: each gets its own instance id,
    no metrics to push, and then works as usual."""
    t = unique_topic("telemetry")
    DRIVERS["confluent-kafka"].create_topic(broker.bootstrap, t, 1)
    answer = java("client-instance-ids", broker, topic=t)
    ids = [answer[c] for c in ("admin", "producer", "consumer")]
    # Kafka's Uuid prints as 22 characters of URL-safe base64.
    assert all(len(i) == 22 for i in ids), answer
    assert len(set(ids)) == 3 and "AAAAAAAAAAAAAAAAAAAAAA" not in ids, answer
    assert answer["offset"] == 0 and answer["read"] == 1, answer


def test_java_describe_topics_follows_the_cursor_across_pages(three_broker_cluster):
    """describeTopics with two partitions per DescribeTopicPartitions answer:
    the Java client follows the cursor through both topics and gets every
    partition with its leader, replicas and ISR; a missing topic is
    UNKNOWN_TOPIC_OR_PARTITION."""
    server = three_broker_cluster
    a, b = unique_topic("pages-a"), unique_topic("pages-b")
    confluent = DRIVERS["confluent-kafka"]
    confluent.create_topic(server.bootstrap, a, 5, replication_factor=2)
    confluent.create_topic(server.bootstrap, b, 3, replication_factor=3)
    missing = unique_topic("pages-missing")
    answer = java("describe-topics", server, topics=[b, a, missing], page_size=2)
    assert answer[missing]["code"] == "UNKNOWN_TOPIC_OR_PARTITION", answer
    for t, n, rf in ((a, 5, 2), (b, 3, 3)):
        d = answer[t]
        assert d["error"] is None and [p["partition"] for p in d["partitions"]] == list(range(n)), d
        for p in d["partitions"]:
            assert len(p["replicas"]) == rf and p["leader"] == p["replicas"][0], d
            assert sorted(p["isr"]) == sorted(p["replicas"]), d


def test_java_alters_and_describes_client_quotas_and_they_survive_a_restart(three_brokers):
    """alterClientQuotas per entity (Kafka's refusals per entity, validate
    only changing nothing), describeClientQuotas with contains and
    containsOnly filters, removal of a key, and the quotas after a restart.
    Stored and described only: nothing is throttled."""
    server = three_brokers
    alice = {"user": "alice"}
    answer = java("alter-client-quotas", server, entries=[
        {"entity": alice, "ops": {"producer_byte_rate": 1048576, "request_percentage": 25.5}},
        {"entity": {"user": None, "client-id": "app"}, "ops": {"consumer_byte_rate": 2048}},
        {"entity": {"ip": "127.0.0.1"}, "ops": {"connection_creation_rate": 5}},
        {"entity": {"user": "bob"}, "ops": {"producer_byte_rate": 1.5}},
        {"entity": {"ip": "not-an-address"}, "ops": {"connection_creation_rate": 5}},
    ])
    assert {k: v["error"] for k, v in answer.items()} == {
        "user=alice": None,
        "client-id=app,user=<default>": None,
        "ip=127.0.0.1": None,
        "user=bob": "InvalidRequestException",
        "ip=not-an-address": "InvalidRequestException",
    }, answer
    checked = java("alter-client-quotas", server, validate_only=True,
                   entries=[{"entity": {"user": "carol"}, "ops": {"producer_byte_rate": 1}}])
    assert checked["user=carol"]["error"] is None, checked

    def entities(components, strict=False):
        got = java("describe-client-quotas", server, components=components, strict=strict)
        assert got["error"] is None, got
        return got["entities"]

    assert entities([]) == {
        "user=alice": {"producer_byte_rate": 1048576.0, "request_percentage": 25.5},
        "client-id=app,user=<default>": {"consumer_byte_rate": 2048.0},
        "ip=127.0.0.1": {"connection_creation_rate": 5.0},
    }
    assert set(entities([["user", "specified", None]])) == {"user=alice", "client-id=app,user=<default>"}
    assert set(entities([["user", "specified", None]], strict=True)) == {"user=alice"}
    assert set(entities([["user", "default", None]])) == {"client-id=app,user=<default>"}
    assert set(entities([["user", "exact", "alice"]])) == {"user=alice"}

    removed = java("alter-client-quotas", server,
                   entries=[{"entity": alice, "ops": {"request_percentage": None}}])
    assert removed["user=alice"]["error"] is None, removed
    server.restart()
    assert entities([["user", "exact", "alice"]]) == {"user=alice": {"producer_byte_rate": 1048576.0}}
    assert len(entities([])) == 3


def everywhere(scenario: str, server, **args):
    """A Java call bootstrapped from every broker (one may be offline)."""
    return java_client.call(scenario, bootstrap=",".join(server.kafka_addrs), **args)


def _leaders(server, t: str) -> dict[int, tuple[int, list[int], list[int]]]:
    described = everywhere("describe-topics", server, topics=[t])[t]
    assert described["error"] is None, described
    return {p["partition"]: (p["leader"], p["replicas"], sorted(p["isr"])) for p in described["partitions"]}




def _seeded(server, prefix: str, partitions: int, replication_factor: int, count: int) -> tuple[str, list[Rec]]:
    """A new topic with `count` records spread over its partitions, written
    by confluent-kafka: (topic, records)."""
    t = unique_topic(prefix)
    confluent = DRIVERS["confluent-kafka"]
    confluent.create_topic(server.bootstrap, t, partitions, replication_factor=replication_factor)
    records = [Rec(None, f"v{i}".encode(), partition=i % partitions) for i in range(count)]
    confluent.produce(server.bootstrap, t, records)
    return t, records


def _assert_all_there(server, t: str, records: list[Rec]) -> None:
    """kafka-python reads every record of `t` back."""
    got = DRIVERS["kafka-python"].read_all(",".join(server.kafka_addrs), t)
    assert sorted(g.value for g in got) == sorted(r.value for r in records), got


def _broker(server, state: str, broker: int) -> None:
    """`mk-server broker offline|online <broker>`, which must succeed."""
    done = server.cli("broker", state, str(broker))
    assert done.returncode == 0, done.stdout + done.stderr


# Leadership and reassignment polls: every 0.2 s, for up to a minute.
_wait_for = functools.partial(wait_until, timeout_s=60.0, poll_s=0.2)


def test_java_preferred_election_brings_leadership_back_after_a_broker_returns(three_brokers):
    """Broker 1 goes offline (its partition's leadership moves), comes back
    and catches up; Java's electLeaders(PREFERRED) moves leadership back to
    it, a second election is ELECTION_NOT_NEEDED, UNCLEAN elects nothing
    while every leader is online, and the records are all still there."""
    server = three_brokers
    t, records = _seeded(server, "elect", 3, 3, 9)
    before = _leaders(server, t)
    assert all(leader == replicas[0] for leader, replicas, _ in before.values()), before
    led_by_1 = [p for p, (leader, _, _) in before.items() if leader == 1]
    assert led_by_1, before

    _broker(server, "offline", 1)
    moved = _wait_for(lambda: (all(_leaders(server, t)[p][0] != 1 for p in led_by_1), _leaders(server, t)),
                      "leadership to leave broker 1")
    tps = [[t, p] for p in led_by_1]
    refused = everywhere("elect-leaders", server, type="preferred", partitions=tps)
    assert all(refused[f"{t}:{p}"]["code"] == "PREFERRED_LEADER_NOT_AVAILABLE" for p in led_by_1), (refused, moved)

    _broker(server, "online", 1)
    _wait_for(lambda: (all(1 in isr for _, _, isr in _leaders(server, t).values()), _leaders(server, t)),
              "broker 1 to rejoin every ISR")
    unclean = everywhere("elect-leaders", server, type="unclean", partitions=tps)
    assert all(unclean[f"{t}:{p}"]["code"] == "ELECTION_NOT_NEEDED" for p in led_by_1), unclean
    elected = everywhere("elect-leaders", server, type="preferred", partitions=tps)
    assert all(elected[f"{t}:{p}"]["error"] is None for p in led_by_1), elected
    after = _leaders(server, t)
    assert all(after[p][0] == 1 for p in led_by_1), after
    again = everywhere("elect-leaders", server, type="preferred", partitions=tps)
    assert all(again[f"{t}:{p}"]["code"] == "ELECTION_NOT_NEEDED" for p in led_by_1), again
    _assert_all_there(server, t, records)


def _moves(server, **args) -> dict:
    listed = everywhere("list-partition-reassignments", server, **args)
    assert listed["error"] is None, listed
    return listed["reassignments"]


def test_java_and_kafka_python_move_replicas_between_brokers(three_brokers):
    """Java's alterPartitionReassignments moves partition 0 from brokers
    [1, 2] to [3, 2] while broker 3 is offline: both clients list the move
    (the set during the move [3, 2, 1], adding 3, removing 1) until broker 3
    is back and caught up; then the replicas are [3, 2], the removed leader
    handed over to 3 and broker 1's copy is deleted. kafka-python moves
    partition 1 and cancels nothing (NO_REASSIGNMENT_IN_PROGRESS); Kafka's
    refusals per partition; every record is still there."""
    from kafka import KafkaAdminClient, TopicPartition
    from kafka.errors import NoReassignmentInProgressError

    server = three_brokers
    t, records = _seeded(server, "reassign", 2, 2, 10)
    before = _leaders(server, t)
    assert before[0][:2] == (1, [1, 2]) and before[1][:2] == (2, [2, 3]), before

    _broker(server, "offline", 3)
    answer = everywhere("alter-partition-reassignments", server, moves=[
        [t, 0, [3, 2]],
        [t, 1, [2, 9]],
        [t, 5, [1, 2]],
    ])
    assert answer[f"{t}:0"]["error"] is None, answer
    assert answer[f"{t}:1"]["code"] == "INVALID_REPLICA_ASSIGNMENT", answer
    assert answer[f"{t}:5"]["code"] == "UNKNOWN_TOPIC_OR_PARTITION", answer
    refused = everywhere("alter-partition-reassignments", server, allow_rf_change=False,
                         moves=[[t, 1, [1, 2, 3]]])
    assert refused[f"{t}:1"]["code"] == "INVALID_REPLICATION_FACTOR", refused
    moving = {"replicas": [3, 2, 1], "adding": [3], "removing": [1]}
    assert _moves(server) == {f"{t}:0": moving}
    assert _moves(server, partitions=[[t, 0], [t, 1]]) == {f"{t}:0": moving}
    admin = KafkaAdminClient(bootstrap_servers=[a for a in server.kafka_addrs if a != server.kafka_addr_of(3)])
    try:
        listed = admin.list_partition_reassignments()
        assert listed == {TopicPartition(t, 0): {"replicas": [3, 2, 1], "adding_replicas": [3],
                                                 "removing_replicas": [1]}}, listed
        assert _leaders(server, t)[0][:2] == (1, [3, 2, 1]), "Metadata shows the set during the move"

        _broker(server, "online", 3)
        _wait_for(lambda: (not _moves(server), _moves(server)), "the move to complete")
        after = _leaders(server, t)
        assert after[0][:2] == (3, [3, 2]), after
        assert not (server.data_dir / "broker-1" / f"{t}-0").exists()

        # kafka-python: partition 1 from [2, 3] to [3, 1], then a cancel of nothing.
        moved = admin.alter_partition_reassignments({TopicPartition(t, 1): [3, 1]})
        assert moved == {TopicPartition(t, 1): None}, moved
        _wait_for(lambda: (not admin.list_partition_reassignments(), admin.list_partition_reassignments()),
                  "kafka-python's move to complete")
        cancelled = admin.alter_partition_reassignments({TopicPartition(t, 1): None})
        assert cancelled == {TopicPartition(t, 1): NoReassignmentInProgressError}, cancelled
    finally:
        admin.close()
    # The removed leader 2 handed over to the first in-sync target replica
    # (3, unless it had not yet re-entered this partition's ISR).
    leader, replicas, _ = _leaders(server, t)[1]
    assert replicas == [3, 1] and leader in (3, 1), (leader, replicas)
    _assert_all_there(server, t, records)


def test_unclean_election_gives_a_leaderless_partition_a_leader_through_java_and_the_topic_config(tmp_path):
    """Brokers 1, 2, 3; two topics on [1, 2]. Broker 2 goes offline, "b" is
    written to leader 1 alone, then broker 1 goes offline: no replica can
    take over cleanly, so both partitions have no leader. confluent-kafka
    turns `unclean.leader.election.enable` on for one topic; when broker 2
    returns that topic's partition elects it at once. The other stays
    leaderless until Java's electLeaders(UNCLEAN) elects broker 2. Both
    then take new records from confluent-kafka, which kafka-python reads
    back ("b" may be lost: that is the unclean trade-off)."""
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

    from mkinterop.server import start_server

    server = start_server(tmp_path, brokers=[1, 2, 3], min_insync_replicas=1, name="unclean")
    try:
        confluent = DRIVERS["confluent-kafka"]
        by_java, by_config = unique_topic("unclean-java"), unique_topic("unclean-config")
        for t in (by_java, by_config):
            confluent.create_topic(server.bootstrap, t, 1, replication_factor=2)
            assert _leaders(server, t)[0][:2] == (1, [1, 2])
            confluent.produce(server.bootstrap, t, [Rec(None, b"a", partition=0)])
        _broker(server, "offline", 2)
        for t in (by_java, by_config):
            confluent.produce(server.bootstrap, t, [Rec(None, b"b", partition=0)])
        _broker(server, "offline", 1)
        for t in (by_java, by_config):
            leader, replicas, _ = _leaders(server, t)[0]
            assert leader in (None, -1) and replicas == [1, 2], (t, leader, replicas)

        admin = AdminClient({"bootstrap.servers": server.kafka_addr_of(3)})
        on = ConfigResource(ConfigResource.Type.TOPIC, by_config, incremental_configs=[
            ConfigEntry("unclean.leader.election.enable", "true", incremental_operation=AlterConfigOpType.SET)])
        admin.incremental_alter_configs([on])[on].result(timeout=60)
        _broker(server, "online", 2)
        _wait_for(lambda: (_leaders(server, by_config)[0][0] == 2, _leaders(server, by_config)),
                  "the topic allowing unclean elections to elect broker 2")
        leader = _leaders(server, by_java)[0][0]
        assert leader in (None, -1), f"{by_java} kept unclean elections off, yet has leader {leader}"

        elected = everywhere("elect-leaders", server, type="unclean", partitions=[[by_java, 0]])
        assert elected[f"{by_java}:0"]["error"] is None, elected
        for t in (by_java, by_config):
            assert _leaders(server, t)[0][0] == 2
            confluent.produce(server.kafka_addr_of(2), t, [Rec(None, b"c", partition=0)])
            got = [g.value for g in DRIVERS["kafka-python"].read_all(server.kafka_addr_of(2), t)]
            assert got[0] == b"a" and got[-1] == b"c" and set(got) <= {b"a", b"b", b"c"}, (t, got)
    finally:
        code = server.stop()
        assert code == 0, f"mk-server exited with {code}; log tail:\n{server.log_tail()}"
