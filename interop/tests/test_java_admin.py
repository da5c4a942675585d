"""The Java Admin client (kafka-clients 4.3.0) against mk-server: every
Admin call the broker serves today, each checked against what the broker
must answer (values, ids, sources, per-item errors by their Kafka names),
and where another client can see the effect, checked through that client
too. The calls themselves live in interop/java/src/mkinterop/*Admin*.java;
`java_client.call` runs them in the worker's long-lived Java driver.
"""

from __future__ import annotations

import time

from conftest import unique_topic

from mkinterop import java_client
from mkinterop.drivers import DRIVERS
from mkinterop.group import read_everything, settled, wait_until
from mkinterop.java_client import JavaTxnProducer, checked
from mkinterop.model import Rec
from mkinterop.txn import open_transaction

ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"


def java(scenario: str, server, **args):
    return java_client.call(scenario, bootstrap=server.bootstrap, **args)


def create(server, *specs: dict, validate_only: bool = False) -> dict:
    return java("create-topics", server, topics=list(specs), validate_only=validate_only)


def test_java_create_topics_answers_what_it_created_and_refuses_per_topic(broker):
    """createTopics with configs, defaults, validate_only and refusals: the
    created topic's answer (partitions, replication factor, topic id,
    configs) matches what describeTopics and confluent-kafka then see; each
    bad topic of the same request gets its own Kafka error."""
    t = unique_topic("jadmin-create")
    answer = create(
        broker,
        {"name": t, "partitions": 3, "replication_factor": 1, "configs": {"cleanup.policy": "compact", "retention.ms": "123456"}},
        {"name": f"{t}-default"},
        {"name": f"{t}-zero", "partitions": 0},
        {"name": f"{t}-rf", "partitions": 1, "replication_factor": 3},
        {"name": f"{t}-config", "partitions": 1, "configs": {"no.such.config": "1"}},
    )
    made = answer[t]
    assert made["error"] is None, made
    assert (made["partitions"], made["replication_factor"]) == (3, 1), made
    assert made["topic_id"] != ZERO_UUID, made
    assert made["configs"]["cleanup.policy"] == "compact" and made["configs"]["retention.ms"] == "123456", made
    # No partitions or replication factor: the broker's defaults (--num-partitions 1, one broker).
    assert (answer[f"{t}-default"]["partitions"], answer[f"{t}-default"]["replication_factor"]) == (1, 1), answer
    assert answer[f"{t}-zero"]["code"] == "INVALID_PARTITIONS", answer[f"{t}-zero"]
    assert answer[f"{t}-rf"]["code"] == "INVALID_REPLICATION_FACTOR", answer[f"{t}-rf"]
    assert answer[f"{t}-config"]["code"] == "INVALID_CONFIG", answer[f"{t}-config"]

    described = java("describe-topics", broker, topics=[t])[t]
    assert described["topic_id"] == made["topic_id"], described
    assert [(p["partition"], p["leader"], p["replicas"], p["isr"]) for p in described["partitions"]] == [
        (p, 1, [1], [1]) for p in range(3)
    ], described
    assert DRIVERS["confluent-kafka"].partition_count(broker.bootstrap, t) == 3
    names = java("list-topics", broker)["names"]
    assert t in names and f"{t}-default" in names
    assert not {f"{t}-zero", f"{t}-rf", f"{t}-config"} & set(names), names

    again = create(broker, {"name": t, "partitions": 3})[t]
    assert again["code"] == "TOPIC_ALREADY_EXISTS", again


def test_java_create_topics_validate_only_creates_nothing(broker):
    t = unique_topic("jadmin-validate")
    answer = create(broker, {"name": t, "partitions": 2}, validate_only=True)[t]
    assert answer["error"] is None and answer["partitions"] == 2, answer
    assert t not in java("list-topics", broker)["names"]
    assert t not in DRIVERS["confluent-kafka"].topic_names(broker.bootstrap)


def test_java_list_and_describe_topics_agree_on_the_topic_id(broker):
    """listTopics and describeTopics name the id createTopics answered, and
    describeTopics by that id (a Metadata request by topic id) finds the
    topic; an id no topic has is UNKNOWN_TOPIC_ID."""
    t = unique_topic("jadmin-ids")
    topic_id = checked(create(broker, {"name": t, "partitions": 2}), "createTopics")[t]["topic_id"]
    listing = java("list-topics", broker)["listings"][t]
    assert listing == {"topic_id": topic_id, "internal": False}, listing
    described = java("describe-topics", broker, topics=[t])[t]
    assert described["topic_id"] == topic_id and len(described["partitions"]) == 2, described
    missing = java("describe-topics", broker, topics=[f"{t}-missing"])[f"{t}-missing"]
    assert missing["code"] == "UNKNOWN_TOPIC_OR_PARTITION", missing
    by_id = java("describe-topics", broker, ids=[topic_id])[topic_id]
    assert by_id == described, by_id
    unknown_id = "3q2-796tW3GZsWvoxDY3zA"
    unknown = java("describe-topics", broker, ids=[unknown_id])[unknown_id]
    assert unknown["code"] == "UNKNOWN_TOPIC_ID", unknown


def test_java_describe_cluster_names_every_broker_at_its_listener(three_broker_cluster):
    """describeCluster on three hosted brokers: one stable cluster id (the
    same for every call and through every broker), each broker at the
    address of its own listener, and a controller among them."""
    server = three_broker_cluster
    first = java("describe-cluster", server)
    nodes = sorted((n["id"], f"{n['host']}:{n['port']}") for n in first["nodes"])
    assert nodes == [(b, server.kafka_addr_of(b)) for b in (1, 2, 3)], first
    assert first["controller"] in (1, 2, 3), first
    assert first["cluster_id"] and len(first["cluster_id"]) == 22, first
    for addr in server.kafka_addrs:
        assert java_client.call("describe-cluster", bootstrap=addr)["cluster_id"] == first["cluster_id"]


def test_java_describe_and_incrementally_alter_topic_configs(broker):
    """describeConfigs gives each config its value and source (set at
    creation: DYNAMIC_TOPIC_CONFIG; otherwise DEFAULT_CONFIG);
    incrementalAlterConfigs SET and DELETE change exactly the keys named,
    validate_only changes nothing, and confluent-kafka sees the result."""
    t = unique_topic("jadmin-configs")
    checked(create(broker, {"name": t, "partitions": 1, "configs": {"retention.ms": "3600000"}}), "createTopics")

    def configs():
        return checked(java("describe-configs", broker, resources=[{"type": "topic", "name": t}]), "describeConfigs")[t]["configs"]

    c = configs()
    assert (c["retention.ms"]["value"], c["retention.ms"]["source"], c["retention.ms"]["default"]) == (
        "3600000", "DYNAMIC_TOPIC_CONFIG", False), c["retention.ms"]
    assert (c["cleanup.policy"]["value"], c["cleanup.policy"]["source"], c["cleanup.policy"]["default"]) == (
        "delete", "DEFAULT_CONFIG", True), c["cleanup.policy"]

    def alter(*ops, validate_only=False):
        resources = [{"type": "topic", "name": t, "ops": [list(op) for op in ops]}]
        return checked(java("alter-configs", broker, resources=resources, validate_only=validate_only), "incrementalAlterConfigs")

    alter(("SET", "retention.bytes", "1048576"), ("SET", "cleanup.policy", "compact"))
    c = configs()
    assert {k: c[k]["value"] for k in ("retention.ms", "retention.bytes", "cleanup.policy")} == {
        "retention.ms": "3600000", "retention.bytes": "1048576", "cleanup.policy": "compact"}, c
    assert DRIVERS["confluent-kafka"].describe_topic_config(broker.bootstrap, t)["cleanup.policy"] == "compact"

    alter(("DELETE", "retention.ms", None))
    c = configs()
    assert (c["retention.ms"]["value"], c["retention.ms"]["source"]) == ("604800000", "DEFAULT_CONFIG"), c["retention.ms"]
    assert c["retention.bytes"]["value"] == "1048576", c

    alter(("SET", "retention.bytes", "5"), validate_only=True)
    assert configs()["retention.bytes"]["value"] == "1048576"

    refused = java("alter-configs", broker, resources=[{"type": "topic", "name": t, "ops": [["SET", "no.such.config", "1"]]}])
    assert refused[t]["code"] == "INVALID_CONFIG", refused


def test_java_describe_broker_configs(broker):
    """A broker resource answers the broker's settings under Kafka's names
    (those of the command line: --num-partitions, --auto-create-topics, one
    broker's replication factor)."""
    answer = checked(java("describe-configs", broker, resources=[{"type": "broker", "name": "1"}]), "describeConfigs")["1"]
    values = {k: e["value"] for k, e in answer["configs"].items()}
    assert values.get("num.partitions") == "1", values
    assert values.get("auto.create.topics.enable") == "true", values
    assert values.get("default.replication.factor") == "1", values


def test_java_create_partitions_grows_and_never_shrinks(broker):
    t = unique_topic("jadmin-parts")
    checked(create(broker, {"name": t, "partitions": 2}), "createTopics")
    assert java("create-partitions", broker, partitions={t: 5})[t]["error"] is None
    wait_until(lambda: ((n := DRIVERS["confluent-kafka"].partition_count(broker.bootstrap, t)) == 5, n), "5 partitions")
    assert len(java("describe-topics", broker, topics=[t])[t]["partitions"]) == 5
    shrink = java("create-partitions", broker, partitions={t: 3})[t]
    assert shrink["code"] == "INVALID_PARTITIONS", shrink
    # A record produced to a new partition lands there.
    acks = DRIVERS["java"].produce(broker.bootstrap, t, [Rec(key=None, value=b"p4", partition=4)])
    assert [(a.partition, a.offset) for a in acks] == [(4, 0)]


def test_java_delete_topics_by_name_and_by_id(broker):
    """deleteTopics by name and by topic id: both topics disappear for every
    client, their records with them (a topic created again under the same
    name is empty and has a new id); an unknown topic is refused."""
    by_name, by_id = unique_topic("jadmin-del-name"), unique_topic("jadmin-del-id")
    made = checked(create(broker, {"name": by_name, "partitions": 1}, {"name": by_id, "partitions": 1}), "createTopics")
    DRIVERS["java"].produce(broker.bootstrap, by_name, [Rec(key=None, value=b"gone")])
    assert java("delete-topics", broker, topics=[by_name])[by_name]["error"] is None
    old_id = made[by_id]["topic_id"]
    assert java("delete-topics", broker, ids=[old_id])[old_id]["error"] is None

    def gone():
        names = set(java("list-topics", broker)["names"]) | DRIVERS["confluent-kafka"].topic_names(broker.bootstrap)
        return not {by_name, by_id} & names, sorted({by_name, by_id} & names)

    wait_until(gone, "both topics to disappear")
    unknown = java("delete-topics", broker, topics=[by_name])[by_name]
    assert unknown["code"] == "UNKNOWN_TOPIC_OR_PARTITION", unknown
    again = checked(create(broker, {"name": by_name, "partitions": 1}), "createTopics")[by_name]
    assert again["topic_id"] != made[by_name]["topic_id"]
    assert DRIVERS["java"].read_all(broker.bootstrap, by_name) == []


def test_java_list_offsets_earliest_latest_by_time_and_max_timestamp(broker):
    """listOffsets with every spec: earliest 0, latest the record count, a
    timestamp the first record at or after it, max-timestamp the record
    with the largest timestamp (not the last one)."""
    t = unique_topic("jadmin-offsets")
    checked(create(broker, {"name": t, "partitions": 2}), "createTopics")
    base = int(time.time() * 1000) - 60_000
    # Partition 0: timestamps rise except the largest, which sits at offset 2.
    stamps = [base, base + 10, base + 500, base + 20, base + 30]
    sent = [Rec(key=None, value=f"o{i}".encode(), timestamp_ms=ts, partition=0) for i, ts in enumerate(stamps)]
    DRIVERS["java"].produce(broker.bootstrap, t, sent)

    def offsets(spec):
        return {int(p): (v["offset"], v["timestamp"]) for p, v in checked(
            java("list-offsets", broker, topic=t, partitions=[0, 1], spec=spec), "listOffsets").items()}

    assert {p: o for p, (o, _) in offsets("earliest").items()} == {0: 0, 1: 0}
    assert {p: o for p, (o, _) in offsets("latest").items()} == {0: 5, 1: 0}
    assert offsets(str(base + 15))[0] == (2, base + 500)
    assert offsets(str(base + 25))[0] == (2, base + 500)  # the first at or after, in offset order
    assert offsets(str(base + 501))[0][0] == -1
    assert offsets("max-timestamp")[0] == (2, base + 500)
    assert offsets("max-timestamp")[1][0] == -1  # an empty partition has none


def test_java_list_offsets_latest_read_committed_is_the_last_stable_offset(broker):
    """With a transaction open, latest under read_committed is the last
    stable offset (before the open transaction's first record) and under
    read_uncommitted the high watermark; once it commits both move past
    the commit marker."""
    t = unique_topic("jadmin-lso")
    checked(create(broker, {"name": t, "partitions": 1}), "createTopics")
    DRIVERS["java"].produce(broker.bootstrap, t, [Rec(key=None, value=f"plain-{i}".encode()) for i in range(3)])
    producer = JavaTxnProducer(broker.bootstrap, unique_topic("tid-jlso"))
    try:
        open_transaction(producer, t, [f"txn-{i}".encode() for i in range(4)])

        def latest(isolation):
            return java("list-offsets", broker, topic=t, partitions=[0], spec="latest", isolation=isolation)["0"]["offset"]

        assert (latest("read_committed"), latest("read_uncommitted")) == (3, 7)
        producer.commit()
        wait_until(lambda: ((c := latest("read_committed")) == 8, c), "the LSO to pass the commit marker")
        assert latest("read_uncommitted") == 8
    finally:
        producer.close()


def _member_with_commits(members, server, topic: str, group: str, n: int):
    produced = {a.value.decode(): (a.partition, a.offset) for a in DRIVERS["java"].produce(
        server.bootstrap, topic, [Rec(key=None, value=f"g-{i:04d}".encode(), partition=i % 3) for i in range(n)])}
    [m] = [members.start("java", server.bootstrap, group, topic, "m1")]
    wait_until(settled([m], 3), "the member to hold every partition", members=[m])
    wait_until(read_everything([m], produced), "the member to read every record", members=[m])
    ends = {p: n // 3 for p in range(3)}
    wait_until(lambda: ((c := m.committed) == ends, c), f"the member to commit {ends}", members=[m])
    return m, ends


def test_java_group_admin_lists_describes_and_manages_offsets(broker, members):
    """The Java Admin on a group of a Java consumer: listGroups and the
    older listConsumerGroups name it (type CLASSIC, Stable, consumer
    protocol), describeConsumerGroups shows its member with its assignment
    and the range assignor, listConsumerGroupOffsets answers the commits
    for two groups in one call; deleteConsumerGroupOffsets is refused
    while the member subscribes to the topic (GROUP_SUBSCRIBED_TO_TOPIC),
    deleteConsumerGroups too (NON_EMPTY_GROUP). Once the member has left:
    alterConsumerGroupOffsets sets offsets (metadata string included),
    deleteConsumerGroupOffsets removes exactly the partitions named, and
    deleteConsumerGroups removes the group, after which describing it
    answers GROUP_ID_NOT_FOUND."""
    topic = unique_topic("jadmin-group")
    checked(create(broker, {"name": topic, "partitions": 3}), "createTopics")
    group, other = unique_topic("g-jadmin"), unique_topic("g-jadmin-other")
    checked(java("alter-group-offsets", broker, group=other, offsets=[[topic, 0, 1], [topic, 2, 3]]), "alterConsumerGroupOffsets")
    m, ends = _member_with_commits(members, broker, topic, group, 300)

    listed = java("list-groups", broker)[group]
    # ListGroups v5 carries the group type: a group joined through
    # JoinGroup is CLASSIC, as Kafka 4.1 says.
    assert listed["type"] == "CLASSIC", listed
    assert (listed["state"], listed["protocol"]) == ("STABLE", "consumer"), listed
    assert java("list-consumer-groups", broker)[group]["state"] == "STABLE"
    described = checked(java("describe-groups", broker, groups=[group]), "describeConsumerGroups")[group]
    assert (described["state"], described["assignor"], described["simple"]) == ("STABLE", "range", False), described
    [member] = described["members"]
    assert member["assignment"] == {topic: [0, 1, 2]} and member["client_id"], member

    both = checked(java("group-offsets", broker, groups=[group, other]), "listConsumerGroupOffsets")
    assert {(p, o) for t, p, o, _, _ in both[group]["offsets"] if t == topic} == set(ends.items()), both
    assert [(p, o) for t, p, o, _, _ in both[other]["offsets"]] == [(0, 1), (2, 3)], both

    subscribed = java("delete-group-offsets", broker, group=group, partitions=[[topic, 0]])
    assert subscribed["partitions"][f"{topic}:0"]["code"] == "GROUP_SUBSCRIBED_TO_TOPIC", subscribed
    assert java("delete-groups", broker, groups=[group])[group]["code"] == "NON_EMPTY_GROUP"

    m.stop()
    assert checked(java("describe-groups", broker, groups=[group]), "describe")[group]["state"] == "EMPTY"
    checked(java("alter-group-offsets", broker, group=group, offsets=[[topic, 1, 42, "from-java"]]), "alterConsumerGroupOffsets")
    deleted = java("delete-group-offsets", broker, group=group, partitions=[[topic, 0], [topic, 2]])
    assert deleted["all"]["error"] is None, deleted
    after = {p: o for t, p, o, _, _ in checked(java("group-offsets", broker, groups=[group]), "offsets")[group]["offsets"]}
    assert after == {1: 42}, after
    assert DRIVERS["confluent-kafka"].group_offsets(broker.bootstrap, group, topic, 3) == {0: -1, 1: 42, 2: -1}

    assert java("delete-groups", broker, groups=[group])[group]["error"] is None
    assert group not in java("list-groups", broker)
    assert java("delete-groups", broker, groups=[group])[group]["code"] == "GROUP_ID_NOT_FOUND"
    # The Admin client asks ConsumerGroupDescribe first and falls back to
    # DescribeGroups; from v6 that answers GROUP_ID_NOT_FOUND for a group
    # that does not exist (before v6 it was a DEAD group without members).
    assert java("describe-groups", broker, groups=[group])[group]["code"] == "GROUP_ID_NOT_FOUND"


def test_java_fence_producers_fences_an_open_transaction(broker):
    """Admin.fenceProducers (InitProducerId through the transaction
    coordinator) fences a live transactional producer: its open
    transaction is aborted and its commit fails as fenced, so
    read_committed readers never see its records."""
    t = unique_topic("jadmin-fence")
    checked(create(broker, {"name": t, "partitions": 1}), "createTopics")
    tid = unique_topic("tid-jfence")
    producer = JavaTxnProducer(broker.bootstrap, tid)
    try:
        open_transaction(producer, t, [f"fenced-{i}".encode() for i in range(5)])
        assert java("fence-producers", broker, ids=[tid])[tid]["error"] is None
        try:
            producer.commit()
        except java_client.JavaFailure as e:
            assert e.type == "ProducerFencedException" or e.code == "PRODUCER_FENCED", e
        else:
            raise AssertionError("the fenced producer committed")
    finally:
        producer.close()
    assert DRIVERS["java"].read_isolated(broker.bootstrap, t, "read_committed") == []
    assert [g.value for g in DRIVERS["confluent-kafka"].read_isolated(broker.bootstrap, t, "read_uncommitted")] == [
        f"fenced-{i}".encode() for i in range(5)
    ]


def test_java_configs_with_kafkas_names_list_operations_and_a_dynamic_broker_config(three_brokers):
    """createTopics with ordinary Kafka configs (compression.type,
    max.message.bytes, segment.ms, min.compaction.lag.ms) succeeds and
    describeConfigs reports them as DYNAMIC_TOPIC_CONFIG; APPEND and
    SUBTRACT edit the list config cleanup.policy; a dynamic broker config
    altered on broker 1 is described with its new value there."""
    server = three_brokers
    t = unique_topic("jadmin-kconfigs")
    given = {"compression.type": "zstd", "max.message.bytes": "2097152", "segment.ms": "3600000",
             "min.compaction.lag.ms": "1000"}
    checked(create(server, {"name": t, "partitions": 1, "configs": given}), "createTopics")

    def configs(kind="topic", name=t):
        return checked(java("describe-configs", server, resources=[{"type": kind, "name": name}]),
                       "describeConfigs")[name]["configs"]

    c = configs()
    for k, v in given.items():
        assert (c[k]["value"], c[k]["source"]) == (v, "DYNAMIC_TOPIC_CONFIG"), (k, c[k])

    def alter(kind, name, *ops):
        resources = [{"type": kind, "name": name, "ops": [list(op) for op in ops]}]
        return checked(java("alter-configs", server, resources=resources), "incrementalAlterConfigs")

    alter("topic", t, ("APPEND", "cleanup.policy", "compact"))
    assert set(configs()["cleanup.policy"]["value"].split(",")) == {"delete", "compact"}
    alter("topic", t, ("SUBTRACT", "cleanup.policy", "delete"))
    assert configs()["cleanup.policy"]["value"] == "compact"

    alter("broker", "1", ("SET", "log.message.timestamp.after.max.ms", "7200000"))
    b = configs("broker", "1")["log.message.timestamp.after.max.ms"]
    assert (b["value"], b["source"]) == ("7200000", "DYNAMIC_BROKER_CONFIG"), b
