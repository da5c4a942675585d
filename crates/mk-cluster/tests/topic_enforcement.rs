//! Topic configs that change how an append is acknowledged: a topic's own
//! `min.insync.replicas` for acks=all (NOT_ENOUGH_REPLICAS before the
//! append, NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR shrinks under a
//! waiting one), altered at run time, and the broker time a LogAppendTime
//! topic reports for an append; `unclean.leader.election.enable` (the
//! topic's, else the broker default) deciding whether an out-of-sync
//! replica leads when no in-sync one is left.

mod common;

use common::*;
use mk_cluster::*;

fn batch(value: &str) -> RecordBatch {
    RecordBatch::new(vec![Record::new(None, Some(b(value)), 1_000)]).unwrap()
}

#[tokio::test]
async fn a_topics_min_insync_replicas_decides_acks_all_and_follows_alterations() {
    // The broker's default is 1: only the topic asks for 2.
    let node = Node::new(|c| c.broker_ids = vec![1, 2]);
    let c = node.c();
    c.topics().create("strict", 1, 2).unwrap();
    c.topics().create("lenient", 1, 2).unwrap();
    alter_topic(c, "strict", &[("min.insync.replicas", "2")]);
    let (strict, lenient) = (tp("strict", 0), tp("lenient", 0));
    // With both replicas in sync, acks=all waits for the follower.
    let pending = c
        .data()
        .submit_append(&strict, batch("a"), AckMode::All, None)
        .unwrap();
    let r = replicating(c, pending.wait()).await.unwrap();
    assert_eq!(r.base_offset, Some(0));

    for t in [&strict, &lenient] {
        c.steps().remove_from_isr(t, 2).unwrap();
    }
    let e = c
        .data()
        .submit_append(&strict, batch("b"), AckMode::All, None)
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::NotEnoughReplicas, "{e}");
    assert_eq!(
        c.data().log_end_offset(&strict).unwrap(),
        1,
        "nothing written"
    );
    // acks=1 does not ask, and the other topic keeps the broker's 1.
    c.data()
        .append_batch(&strict, batch("c"), AckMode::One)
        .await
        .unwrap();
    c.data()
        .append_batch(&lenient, batch("d"), AckMode::All)
        .await
        .unwrap();
    // Lowered at run time: the next acks=all append is taken.
    alter_topic(c, "strict", &[("min.insync.replicas", "1")]);
    c.data()
        .append_batch(&strict, batch("e"), AckMode::All)
        .await
        .unwrap();
}

#[tokio::test]
async fn an_isr_that_shrinks_under_a_waiting_append_fails_it_after_the_append() {
    let node = Node::new(|c| c.broker_ids = vec![1, 2]);
    let c = node.c();
    c.topics().create("strict", 1, 2).unwrap();
    alter_topic(c, "strict", &[("min.insync.replicas", "2")]);
    let t = tp("strict", 0);
    let pending = c
        .data()
        .submit_append(&t, batch("x"), AckMode::All, None)
        .unwrap();
    let waiter = tokio::spawn(pending.wait());
    c.steps().remove_from_isr(&t, 2).unwrap();
    let e = waiter.await.unwrap().unwrap_err();
    assert_eq!(e.code(), ErrorCode::NotEnoughReplicasAfterAppend, "{e}");
    // The record was written on the leader, as in Kafka.
    assert_eq!(c.data().log_end_offset(&t).unwrap(), 1);
}

#[tokio::test]
async fn a_log_append_time_topic_reports_the_time_it_stamped() {
    let node = Node::new(|_| {});
    let c = node.c();
    c.topics().create("stamped", 1, 1).unwrap();
    c.topics().create("created", 1, 1).unwrap();
    alter_topic(c, "stamped", &[("message.timestamp.type", "LogAppendTime")]);
    let now = c.clock().now_ms();
    let stamped = c
        .data()
        .submit_append(&tp("stamped", 0), batch("s"), AckMode::One, None)
        .unwrap();
    assert_eq!(stamped.log_append_time_ms(), Some(now));
    let created = c
        .data()
        .submit_append(&tp("created", 0), batch("c"), AckMode::One, None)
        .unwrap();
    assert_eq!(created.log_append_time_ms(), None);
    // Grouped appends report it per batch too.
    let grouped = c.data().submit_append_group(
        &tp("stamped", 0),
        vec![batch("g1"), batch("g2")],
        AckMode::One,
    );
    for g in grouped {
        assert_eq!(g.unwrap().log_append_time_ms(), Some(now));
    }
}

/// Two brokers; every topic named gets "a" on both replicas, then "b" on
/// broker 1 alone (broker 2 was offline and is back, out of sync), then
/// broker 1, the leader, goes offline: no in-sync replica is left.
fn leader_lost_with_only_an_out_of_sync_replica(
    c: &BrokerCluster,
    topics: &[&str],
) -> Vec<(TopicPartition, LeaderAndEpoch)> {
    let append = |t: &str, value: &str| {
        c.data()
            .submit_append(&tp(t, 0), batch(value), AckMode::One, None)
            .unwrap();
    };
    for t in topics {
        append(t, "a");
    }
    for _ in 0..3 {
        c.steps().replicate_all_once().unwrap();
    }
    c.brokers().take_offline(2).unwrap();
    for t in topics {
        append(t, "b");
        assert_eq!(c.topics().describe(t).unwrap().partitions[0].isr, vec![1]);
    }
    assert!(c.brokers().bring_online(2).unwrap());
    c.brokers().take_offline(1).unwrap()
}

fn leader_of(c: &BrokerCluster, t: &str) -> (i32, i32) {
    let d = c.topics().describe(t).unwrap();
    (d.partitions[0].leader_id, d.partitions[0].leader_epoch)
}

#[tokio::test]
async fn unclean_election_follows_the_topics_config_and_its_alteration() {
    let node = Node::new(|c| c.broker_ids = vec![1, 2]);
    let c = node.c();
    for t in ["u", "k"] {
        c.topics().create(t, 1, 2).unwrap();
    }
    let moved = leader_lost_with_only_an_out_of_sync_replica(c, &["u", "k"]);
    // The default (false): both partitions stay offline.
    assert!(moved.is_empty(), "{moved:?}");
    for t in ["u", "k"] {
        assert_eq!(c.brokers().available_leader(&tp(t, 0)).unwrap(), None);
        let e = c.brokers().check_leader(&tp(t, 0), 2).unwrap_err();
        assert_eq!(e.code(), ErrorCode::LeaderNotAvailable, "{e}");
    }
    // Turning it on elects the out-of-sync replica at once; "b" is lost.
    alter_topic(c, "u", &[("unclean.leader.election.enable", "true")]);
    assert_eq!(leader_of(c, "u"), (2, 1));
    assert_eq!(c.brokers().available_leader(&tp("u", 0)).unwrap(), Some(2));
    assert_eq!(read_uncommitted(c, &tp("u", 0)), vec!["a"]);
    let r = c
        .data()
        .append_batch(&tp("u", 0), batch("c"), AckMode::One)
        .await
        .unwrap();
    assert_eq!(r.base_offset, Some(1), "the new leader writes at its LEO");
    // The other topic kept false: no leader until broker 1 returns.
    assert_eq!(c.brokers().available_leader(&tp("k", 0)).unwrap(), None);
    assert!(c.brokers().bring_online(1).unwrap());
    for _ in 0..3 {
        c.steps().replicate_all_once().unwrap();
    }
    // Broker 1 truncated its "b" and follows the new leader.
    let d = c.topics().describe("u").unwrap();
    assert_eq!(
        (d.partitions[0].leader_id, d.partitions[0].isr.clone()),
        (2, vec![1, 2])
    );
    assert_eq!(read_uncommitted(c, &tp("u", 0)), vec!["a", "c"]);
    assert_eq!(leader_of(c, "k"), (1, 0));
    assert_eq!(read_uncommitted(c, &tp("k", 0)), vec!["a", "b"]);
}

#[tokio::test]
async fn the_broker_default_allows_unclean_election_unless_the_topic_refuses_it() {
    let node = Node::new(|c| c.broker_ids = vec![1, 2]);
    let c = node.c();
    let on = IncrementalChange {
        key: "unclean.leader.election.enable".into(),
        op: IncrementalOp::Set("true".into()),
    };
    c.alter_broker_configs(None, &[on], false, false).unwrap();
    for t in ["open", "strict"] {
        c.topics().create(t, 1, 2).unwrap();
    }
    alter_topic(c, "strict", &[("unclean.leader.election.enable", "false")]);
    let moved = leader_lost_with_only_an_out_of_sync_replica(c, &["open", "strict"]);
    assert_eq!(
        moved,
        vec![(
            tp("open", 0),
            LeaderAndEpoch {
                leader_id: 2,
                leader_epoch: 1
            }
        )]
    );
    assert_eq!(read_uncommitted(c, &tp("open", 0)), vec!["a"]);
    assert_eq!(
        c.brokers().available_leader(&tp("strict", 0)).unwrap(),
        None
    );
    assert_eq!(leader_of(c, "strict"), (1, 0));
}

/// One enforced topic config whose broker config is dynamic, and how to
/// see it act on a partition.
struct Probe {
    config: &'static str,
    /// A broker default that makes `observe` show something else than
    /// Kafka's default does.
    altered: &'static str,
    replicas: usize,
    /// Topic configs every topic of the probe sets first.
    topic: &'static [(&'static str, &'static str)],
    /// Run on every topic of the probe before anything is observed.
    prepare: fn(&BrokerCluster, &[&str]),
    /// What the config did to a topic's partition, in words.
    observe: fn(&BrokerCluster, &str) -> String,
}

fn nothing_to_prepare(_: &BrokerCluster, _: &[&str]) {}

/// Appends `batch` with acks=1 and says how it was answered.
fn answer(c: &BrokerCluster, t: &str, batch: RecordBatch) -> String {
    match c.data().submit_append(&tp(t, 0), batch, AckMode::One, None) {
        Ok(_) => "appended".into(),
        Err(e) => format!("{:?}", e.code()),
    }
}

fn batch_at(value: &str, ts: i64) -> RecordBatch {
    RecordBatch::new(vec![Record::new(Some(b("k")), Some(b(value)), ts)]).unwrap()
}

fn segments_of(c: &BrokerCluster, t: &str) -> Vec<SegmentInfo> {
    c.views().partition_internals(&tp(t, 0)).unwrap().segments
}

/// The bytes the partition stores for a compressible producer's block sent
/// uncompressed.
fn stored_bytes(c: &BrokerCluster, t: &str) -> String {
    let records: Vec<Record> = (0..50)
        .map(|i| Record::new(Some(b(&format!("k{i}"))), Some(b(&"v".repeat(100))), 900))
        .collect();
    let block = produced_block(&records, block::Codec::None);
    answer(c, t, RecordBatch::from_block(block).unwrap());
    let bytes: u64 = segments_of(c, t).iter().map(|s| s.log_bytes).sum();
    bytes.to_string()
}

/// Whether a batch 5 s past the first one rolls the segment.
fn segments_after_5s(c: &BrokerCluster, t: &str) -> String {
    let now = c.clock().now_ms();
    answer(c, t, batch_at("a", now));
    answer(c, t, batch_at("b", now + 5_000));
    format!("{} segments", segments_of(c, t).len())
}

/// Segments after two batches `segment.ms` (1000 ms) apart: one without
/// jitter, two once a jitter takes some off the segment's age.
fn segments_after_1s(c: &BrokerCluster, t: &str) -> String {
    let now = c.clock().now_ms();
    answer(c, t, batch_at("a", now));
    answer(c, t, batch_at("b", now + 1_000));
    format!("{} segments", segments_of(c, t).len())
}

/// What compacting now removes from 40 versions of one key written now.
fn compacted_now(c: &BrokerCluster, t: &str) -> String {
    let now = c.clock().now_ms();
    for i in 0..40 {
        answer(c, t, batch_at(&format!("{i:0100}"), now));
    }
    c.steps().roll(&tp(t, 0)).unwrap();
    let r = c.steps().compact(t, Some(0)).unwrap();
    format!("{} -> {}", r.records_before, r.records_after)
}

/// What the cleaner's cycle does to a partition compacted once, after a
/// few new versions of old keys, all written 10 s ago.
fn cleaner_cycle_on_a_little_dirt(c: &BrokerCluster, t: &str) -> String {
    let ts = c.clock().now_ms() - 10_000;
    let p = tp(t, 0);
    let write = |keys: std::ops::Range<usize>| {
        for i in keys {
            let batch = RecordBatch::new(vec![Record::new(
                Some(b(&format!("k{i}"))),
                Some(b(&format!("{i:050}"))),
                ts,
            )])
            .unwrap();
            answer(c, t, batch);
        }
        c.steps().roll(&p).unwrap();
    };
    write(0..40);
    assert!(c.steps().compact_all().unwrap()[t].records_before > 0);
    write(0..3);
    let r = &c.steps().compact_all().unwrap()[t];
    format!("{} -> {}", r.records_before, r.records_after)
}

/// Whether an acks=all append is taken with the follower out of the ISR.
fn acks_all_without_the_follower(c: &BrokerCluster, t: &str) -> String {
    c.steps().remove_from_isr(&tp(t, 0), 2).unwrap();
    match c
        .data()
        .submit_append(&tp(t, 0), batch("x"), AckMode::All, None)
    {
        Ok(_) => "appended".into(),
        Err(e) => format!("{:?}", e.code()),
    }
}

fn leader_lost(c: &BrokerCluster, topics: &[&str]) {
    leader_lost_with_only_an_out_of_sync_replica(c, topics);
}

fn available_leader(c: &BrokerCluster, t: &str) -> String {
    format!("{:?}", c.brokers().available_leader(&tp(t, 0)).unwrap())
}

const COMPACTED: &[(&str, &str)] = &[("cleanup.policy", "compact"), ("segment.bytes", "1024")];

#[allow(
    clippy::too_many_lines,
    reason = "a table: one probe per enforced config with a dynamic broker default"
)]
fn probes() -> Vec<Probe> {
    let probe = |config, altered, observe| Probe {
        config,
        altered,
        replicas: 1,
        topic: &[],
        prepare: nothing_to_prepare,
        observe,
    };
    vec![
        probe("compression.type", "gzip", stored_bytes),
        Probe {
            topic: &[("compression.type", "gzip")],
            ..probe("compression.gzip.level", "1", stored_bytes)
        },
        Probe {
            topic: &[("compression.type", "lz4")],
            ..probe("compression.lz4.level", "12", stored_bytes)
        },
        Probe {
            topic: &[("compression.type", "zstd")],
            ..probe("compression.zstd.level", "19", stored_bytes)
        },
        probe("max.message.bytes", "100", |c, t| {
            answer(c, t, batch_at(&"x".repeat(500), c.clock().now_ms()))
        }),
        probe("message.timestamp.after.max.ms", "1000", |c, t| {
            answer(c, t, batch_at("x", c.clock().now_ms() + 10_000))
        }),
        probe("message.timestamp.before.max.ms", "1000", |c, t| {
            answer(c, t, batch_at("x", c.clock().now_ms() - 10_000))
        }),
        probe("message.timestamp.type", "LogAppendTime", |c, t| {
            let pending = c
                .data()
                .submit_append(&tp(t, 0), batch_at("x", 5), AckMode::One, None)
                .unwrap();
            format!("{:?}", pending.log_append_time_ms())
        }),
        probe("segment.ms", "1000", segments_after_5s),
        Probe {
            topic: &[("segment.ms", "1000")],
            ..probe("segment.jitter.ms", "999", segments_after_1s)
        },
        Probe {
            topic: &[("segment.bytes", "1024")],
            ..probe("min.compaction.lag.ms", "3600000", compacted_now)
        },
        Probe {
            topic: COMPACTED,
            ..probe(
                "max.compaction.lag.ms",
                "1000",
                cleaner_cycle_on_a_little_dirt,
            )
        },
        Probe {
            topic: COMPACTED,
            ..probe(
                "min.cleanable.dirty.ratio",
                "0.01",
                cleaner_cycle_on_a_little_dirt,
            )
        },
        Probe {
            replicas: 2,
            ..probe("min.insync.replicas", "2", acks_all_without_the_follower)
        },
        Probe {
            replicas: 2,
            prepare: leader_lost,
            ..probe("unclean.leader.election.enable", "true", available_leader)
        },
    ]
}

/// A topic that has taken appends follows the broker default once it is
/// altered, and its own value once that is set (what the topic resolves
/// for appends is never kept past a change).
#[tokio::test]
async fn a_topic_in_use_follows_alterations_of_the_broker_default_and_its_own() {
    let node = Node::new(|_| {});
    let c = node.c();
    c.topics().create("t", 1, 1).unwrap();
    let big = || batch_at(&"x".repeat(500), c.clock().now_ms());
    assert_eq!(answer(c, "t", big()), "appended");
    let set_broker = |value: &str| {
        let change = IncrementalChange {
            key: "message.max.bytes".into(),
            op: IncrementalOp::Set(value.into()),
        };
        c.alter_broker_configs(None, &[change], false, false)
            .unwrap();
    };
    set_broker("100");
    assert_eq!(answer(c, "t", big()), "MessageTooLarge");
    set_broker("100000");
    assert_eq!(answer(c, "t", big()), "appended");
    alter_topic(c, "t", &[("max.message.bytes", "100")]);
    assert_eq!(answer(c, "t", big()), "MessageTooLarge");
}

/// Every enforced topic config whose broker config can be altered at run
/// time: altering the broker default changes what a topic without its own
/// value does at once, and leaves a topic that sets its own (Kafka's
/// default) as it was.
#[test]
fn altering_a_broker_default_acts_on_every_topic_without_its_own_value() {
    let probes = probes();
    let mut probed: Vec<&str> = probes.iter().map(|p| p.config).collect();
    let mut enforced: Vec<&str> = TOPIC_CONFIGS
        .iter()
        .filter(|d| d.effect == Effect::Enforced && d.broker.is_some_and(is_dynamic_broker_config))
        .map(|d| d.name)
        .collect();
    probed.sort_unstable();
    enforced.sort_unstable();
    assert_eq!(probed, enforced, "every such config has a probe");
    for p in probes {
        let def = TOPIC_CONFIGS.iter().find(|d| d.name == p.config).unwrap();
        let broker = def.broker.unwrap();
        let node = Node::new(|c| c.broker_ids = vec![1, 2]);
        let c = node.c();
        let topics = ["before", "inherits", "own"];
        for t in topics {
            c.topics().create(t, 1, p.replicas).unwrap();
            alter_topic(c, t, p.topic);
        }
        alter_topic(c, "own", &[(p.config, def.default)]);
        (p.prepare)(c, &topics);
        let before = (p.observe)(c, "before");
        let altered = IncrementalChange {
            key: broker.into(),
            op: IncrementalOp::Set(p.altered.into()),
        };
        c.alter_broker_configs(None, &[altered], false, false)
            .unwrap();
        let inherits = (p.observe)(c, "inherits");
        let own = (p.observe)(c, "own");
        assert_ne!(
            inherits, before,
            "{broker}={} must act on a topic without its own {}",
            p.altered, p.config
        );
        assert_eq!(own, before, "a topic's own {} wins over {broker}", p.config);
    }
}
