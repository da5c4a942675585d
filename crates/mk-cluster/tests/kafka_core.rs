//! The core semantics added for Kafka clients, tested in the core (every
//! adapter gets them): topic and cluster ids, real deletion (crash-safe),
//! growing partitions, altering configs, auto-creation, brokers going
//! offline and back, batch fetches with Kafka's rules, offsets by time and
//! epoch.
#![allow(
    clippy::too_many_lines,
    reason = "a test scenario reads top to bottom as one story; split, its steps would scatter"
)]

use mk_cluster::metadata::MetadataStore;
mod common;

use common::{
    alter_topic, append_block, b, commit_value, configured_topic, fresh_cluster,
    fresh_cluster_with, fresh_topic, kept_block, open, open_with, produced_block, restart_with,
    send_value, set, tp,
};
use mk_cluster::*;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

fn batch_at(values: &[&str], ts: i64) -> RecordBatch {
    RecordBatch::new(
        values
            .iter()
            .enumerate()
            .map(|(i, v)| Record::new(Some(b(v)), Some(b(v)), ts + i as i64))
            .collect(),
    )
    .unwrap()
}

async fn put(c: &BrokerCluster, tp: &TopicPartition, values: &[&str], ts: i64) -> i64 {
    c.data()
        .append_batch(tp, batch_at(values, ts), AckMode::One)
        .await
        .unwrap()
        .base_offset
        .unwrap()
}

/// Brokers 1, 2 and 3.
fn brokers_1_to_3(c: MiniKafkaConfig) -> MiniKafkaConfig {
    c.with_brokers(vec![1, 2, 3])
}

#[tokio::test]
async fn topic_and_cluster_ids_are_stable_across_restarts_and_unique() {
    let (dir, clock, c) = fresh_cluster();
    c.topics().create("a", 1, 1).unwrap();
    c.topics().create("b", 1, 1).unwrap();
    let (ida, idb, cluster) = (
        c.topics().id("a").unwrap(),
        c.topics().id("b").unwrap(),
        c.cluster_id(),
    );
    assert_ne!(ida, idb);
    assert_eq!(c.topics().name_by_id(idb).unwrap(), "b");
    let c = restart_with(c, dir.path(), &clock, |c| c).await;
    assert_eq!(c.topics().id("a").unwrap(), ida);
    assert_eq!(c.cluster_id(), cluster);
    let unknown = TopicId([1; 16]);
    assert_eq!(
        c.topics().name_by_id(unknown).unwrap_err().code(),
        ErrorCode::UnknownTopicId
    );
    c.lifecycle().close().await.unwrap();
}

#[tokio::test]
async fn deleting_a_topic_removes_its_files_offsets_and_name_for_good() {
    let (dir, clock, c) = fresh_cluster_with(|c| c.with_brokers(vec![1, 2]));
    c.topics().create("gone", 2, 2).unwrap();
    c.topics().create("kept", 1, 1).unwrap();
    put(&c, &tp("gone", 0), &["x", "y"], 1).await;
    put(&c, &tp("kept", 0), &["z"], 1).await;
    let offsets = BTreeMap::from([(tp("gone", 0), 2), (tp("kept", 0), 1)]);
    c.groups().commit_direct("g", &offsets).unwrap();
    let old_id = c.topics().id("gone").unwrap();
    c.topics().delete("gone").unwrap();
    assert_eq!(c.topics().list().unwrap(), vec!["kept".to_string()]);
    assert_eq!(
        c.data()
            .fetch(&FetchRequest::new(tp("gone", 0), 0, 10))
            .unwrap_err()
            .code(),
        ErrorCode::UnknownTopic
    );
    for broker in [1, 2] {
        let d = dir.path().join(format!("broker-{broker}")).join("gone-0");
        assert!(!d.exists(), "{} is left", d.display());
    }
    assert_eq!(
        c.groups().committed("g").unwrap(),
        BTreeMap::from([(tp("kept", 0), 1)])
    );
    assert_eq!(
        c.topics().delete("gone").unwrap_err().code(),
        ErrorCode::UnknownTopic
    );
    assert_eq!(
        c.topics().delete(OFFSETS_TOPIC).unwrap_err().code(),
        ErrorCode::InvalidTopic
    );
    // The name is free again and starts empty, with a new id.
    c.topics().create("gone", 1, 1).unwrap();
    assert_ne!(c.topics().id("gone").unwrap(), old_id);
    assert_eq!(c.data().log_end_offset(&tp("gone", 0)).unwrap(), 0);
    let c = restart_with(c, dir.path(), &clock, |c| c.with_brokers(vec![1, 2])).await;
    assert_eq!(c.data().log_end_offset(&tp("gone", 0)).unwrap(), 0);
    assert_eq!(c.data().log_end_offset(&tp("kept", 0)).unwrap(), 1);
    c.lifecycle().close().await.unwrap();
}

#[tokio::test]
async fn a_deletion_interrupted_by_a_crash_is_finished_on_open() {
    let (dir, clock, c, half) = fresh_topic("half");
    put(&c, &half, &["x"], 1).await;
    c.lifecycle().close().await.unwrap();
    drop(c);
    // The deletion decided (metadata written) but the files not yet
    // removed: exactly where a crash inside delete_topic can leave it.
    let mut store = MetadataStore::load(dir.path()).unwrap();
    store.begin_delete("half").unwrap();
    assert!(dir.path().join("broker-1").join("half-0").exists());
    let c = open(dir.path(), &clock);
    assert!(c.topics().list().unwrap().is_empty());
    assert!(!dir.path().join("broker-1").join("half-0").exists());
    assert!(
        MetadataStore::load(dir.path())
            .unwrap()
            .pending_deletions()
            .is_empty()
    );
    c.topics().create("half", 1, 1).unwrap();
    assert_eq!(c.data().log_end_offset(&half).unwrap(), 0);
    c.lifecycle().close().await.unwrap();
}

#[tokio::test]
async fn partitions_only_grow_keep_their_data_and_survive_a_restart() {
    let (dir, clock, c) = fresh_cluster_with(brokers_1_to_3);
    c.topics().create("g", 2, 2).unwrap();
    put(&c, &tp("g", 1), &["old"], 1).await;
    assert_eq!(
        c.topics().create_partitions("g", 2).unwrap_err().code(),
        ErrorCode::InvalidPartitions
    );
    assert_eq!(
        c.topics().create_partitions("nope", 3).unwrap_err().code(),
        ErrorCode::UnknownTopic
    );
    c.topics().validate_create_partitions("g", 5).unwrap();
    assert_eq!(
        c.topics().partition_count("g").unwrap(),
        2,
        "validation changes nothing"
    );
    c.topics().create_partitions("g", 5).unwrap();
    let d = c.topics().describe("g").unwrap();
    assert_eq!(d.partitions.len(), 5);
    // Placement rule of spec 00 and the topic's replication factor.
    assert_eq!(d.partitions[4].replicas, vec![2, 3]);
    put(&c, &tp("g", 4), &["new"], 1).await;
    assert_eq!(c.data().log_end_offset(&tp("g", 1)).unwrap(), 1);
    let c = restart_with(c, dir.path(), &clock, brokers_1_to_3).await;
    assert_eq!(c.topics().partition_count("g").unwrap(), 5);
    assert_eq!(c.data().log_end_offset(&tp("g", 4)).unwrap(), 1);
    c.lifecycle().close().await.unwrap();
}

#[tokio::test]
async fn altered_configs_are_validated_all_or_nothing_persisted_and_in_force() {
    let (dir, clock, c) = fresh_cluster();
    c.topics().create("cfg", 1, 1).unwrap();
    let before = c.topics().describe("cfg").unwrap().config;
    let e = c
        .topics()
        .alter_config("cfg", &[set("retention.ms", "5"), set("bogus", "1")], false)
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidConfig);
    assert_eq!(
        c.topics().describe("cfg").unwrap().config,
        before,
        "all or nothing"
    );
    let preview = c
        .topics()
        .alter_config("cfg", &[set("retention.ms", "-1")], true)
        .unwrap();
    assert_eq!(preview.retention_ms, None);
    assert_eq!(
        c.topics().describe("cfg").unwrap().config,
        before,
        "validate_only"
    );
    alter_topic(
        &c,
        "cfg",
        &[("segment.bytes", "2048"), ("retention.ms", "-1")],
    );
    // The new segment size is in force for rolls: small appends now roll.
    for i in 0..20 {
        put(&c, &tp("cfg", 0), &[&format!("value-{i:0400}")], 1).await;
    }
    let files = log_files(dir.path(), "cfg-0");
    assert!(
        files >= 3,
        "segments rolled at 2048 bytes: {files} log files"
    );
    let c = restart_with(c, dir.path(), &clock, |c| c).await;
    let after = c.topics().describe("cfg").unwrap().config;
    assert_eq!(
        (after.retention_ms, after.segment_bytes),
        (None, Some(2048))
    );
    c.topics()
        .alter_config(
            "cfg",
            &[ConfigChange::Delete {
                key: "retention.ms".into(),
            }],
            false,
        )
        .unwrap();
    assert_eq!(
        c.topics().describe("cfg").unwrap().config.retention_ms,
        TopicConfig::default().retention_ms
    );
    c.lifecycle().close().await.unwrap();
}

/// The `.log` files of broker 1's replica of `dir_name`.
fn log_files(data: &std::path::Path, dir_name: &str) -> usize {
    std::fs::read_dir(data.join("broker-1").join(dir_name))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "log")
        })
        .count()
}

#[tokio::test]
async fn segment_ms_rolls_by_batch_timestamps_and_alter_config_changes_it() {
    let (dir, clock, c, t) = fresh_topic("aged");
    // Producers stamp their clock's time; the broker's clock moves with it.
    let put_now = |value: &'static str| {
        let (c, t, clock) = (&c, &t, &clock);
        async move { put(c, t, &[value], clock.now_ms()).await }
    };
    put_now("a").await;
    clock.advance(3_600_000);
    put_now("b").await;
    assert_eq!(log_files(dir.path(), "aged-0"), 1, "default is 7 days");
    alter_topic(&c, "aged", &[("segment.ms", "1000")]);
    // The segment's first batch is an hour older: the next append rolls.
    put_now("c").await;
    assert_eq!(log_files(dir.path(), "aged-0"), 2);
    clock.advance(1_000);
    put_now("d").await;
    assert_eq!(log_files(dir.path(), "aged-0"), 2, "not more than 1000 ms");
    clock.advance(1);
    put_now("e").await;
    assert_eq!(log_files(dir.path(), "aged-0"), 3);
    // A batch stamped long ago does not roll, whatever the broker's clock.
    clock.advance(60_000);
    put(&c, &t, &["old"], 1).await;
    assert_eq!(log_files(dir.path(), "aged-0"), 3, "timestamps count");
    let delete = ConfigChange::Delete {
        key: "segment.ms".into(),
    };
    c.topics().alter_config("aged", &[delete], false).unwrap();
    put_now("f").await;
    assert_eq!(log_files(dir.path(), "aged-0"), 3, "back to 7 days");
    c.lifecycle().close().await.unwrap();
}

/// The write and fsync sites one append of a value to `p` passes.
async fn sites_of_an_append(
    c: &BrokerCluster,
    faults: &FaultInjector,
    p: &TopicPartition,
    ts: i64,
) -> u64 {
    let before = faults.sites_passed();
    put(c, p, &["v"], ts).await;
    faults.sites_passed() - before
}

#[tokio::test]
async fn a_topics_flush_messages_and_flush_ms_fsync_its_partition_over_the_brokers_flags() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(1_000);
    let faults = Arc::new(FaultInjector::new());
    // The broker's --flush-messages 2 is the default of every topic.
    let mut config = MiniKafkaConfig::new(dir.path());
    config.flush = FlushPolicy {
        messages: Some(2),
        interval_ms: None,
    };
    let c =
        BrokerCluster::open_with_faults(config, Arc::new(clock.clone()), faults.clone()).unwrap();
    for t in ["broker", "every3", "timed"] {
        c.topics().create(t, 1, 1).unwrap();
    }
    alter_topic(&c, "every3", &[("flush.messages", "3")]);
    alter_topic(
        &c,
        "timed",
        &[
            ("flush.messages", "9223372036854775807"),
            ("flush.ms", "1000"),
        ],
    );
    let now = clock.now_ms();
    let (broker, every3, timed) = (tp("broker", 0), tp("every3", 0), tp("timed", 0));
    // Warm up: the first append of a partition may pass sites of its own.
    for p in [&broker, &every3, &timed] {
        sites_of_an_append(&c, &faults, p, now).await;
    }
    let write = sites_of_an_append(&c, &faults, &timed, now).await;
    // The broker's default: the second append since the last fsync
    // fsyncs (the warm-up was the first).
    assert!(sites_of_an_append(&c, &faults, &broker, now).await > write);
    assert_eq!(sites_of_an_append(&c, &faults, &broker, now).await, write);
    // The topic's 3: the third.
    assert_eq!(sites_of_an_append(&c, &faults, &every3, now).await, write);
    assert!(sites_of_an_append(&c, &faults, &every3, now).await > write);
    assert_eq!(sites_of_an_append(&c, &faults, &every3, now).await, write);
    // The topic's flush.ms: an append 1000 ms after the last fsync.
    clock.advance(999);
    assert_eq!(
        sites_of_an_append(&c, &faults, &timed, clock.now_ms()).await,
        write
    );
    clock.advance(1);
    assert!(sites_of_an_append(&c, &faults, &timed, clock.now_ms()).await > write);
    assert_eq!(
        sites_of_an_append(&c, &faults, &timed, clock.now_ms()).await,
        write
    );
    c.lifecycle().close().await.unwrap();
}

#[tokio::test]
async fn a_topics_index_interval_bytes_decides_its_sparse_index() {
    let (_dir, clock, c) = fresh_cluster();
    for t in ["dense", "sparse"] {
        c.topics().create(t, 1, 1).unwrap();
    }
    // 0 in Kafka: an entry for every batch.
    alter_topic(&c, "dense", &[("index.interval.bytes", "0")]);
    let index_bytes = |t: &str| {
        let internals = c.views().partition_internals(&tp(t, 0)).unwrap();
        let active = internals.segments.last().unwrap();
        active.size_bytes - active.log_bytes
    };
    let now = clock.now_ms();
    let mut grew = (0, 0);
    for i in 0..10 {
        let before = (index_bytes("dense"), index_bytes("sparse"));
        put(&c, &tp("dense", 0), &[&format!("v{i}")], now).await;
        put(&c, &tp("sparse", 0), &[&format!("v{i}")], now).await;
        grew.0 += u64::from(index_bytes("dense") > before.0);
        grew.1 += u64::from(index_bytes("sparse") > before.1);
    }
    // Every batch is indexed in the dense topic; the sparse one (4096
    // bytes between entries) indexes at most its first of these small
    // batches.
    assert_eq!(grew.0, 10, "{grew:?}");
    assert!(grew.1 <= 1, "{grew:?}");
    // Altered at run time: the next appends follow.
    alter_topic(&c, "sparse", &[("index.interval.bytes", "1")]);
    let before = index_bytes("sparse");
    put(&c, &tp("sparse", 0), &["after"], now).await;
    assert!(index_bytes("sparse") > before);
    c.lifecycle().close().await.unwrap();
}

#[tokio::test]
async fn segment_jitter_ms_rolls_each_partition_up_to_that_much_early() {
    // segment.ms 1000, segment.jitter.ms 900: every partition's first
    // segment rolls once a batch is more than 1000 - j ms past its first,
    // with j below 900, decided per partition (and segment).
    let (dir, clock, c) = fresh_cluster();
    c.topics().create("jit", 8, 1).unwrap();
    alter_topic(
        &c,
        "jit",
        &[("segment.ms", "1000"), ("segment.jitter.ms", "900")],
    );
    let start = clock.now_ms();
    let mut rolled_after = Vec::new();
    for p in 0..8 {
        let tp = tp("jit", p);
        put(&c, &tp, &["first"], start).await;
        // The first 25 ms step at which the partition rolled.
        let mut step = 0;
        while log_files(dir.path(), &format!("jit-{p}")) == 1 {
            step += 25;
            assert!(step <= 1_025, "partition {p} never rolled");
            put(&c, &tp, &["next"], start + step).await;
        }
        rolled_after.push(step);
    }
    // Within the jitter: never later than segment.ms, never before
    // segment.ms - jitter.
    assert!(
        rolled_after.iter().all(|&s| s > 100 && s <= 1_025),
        "{rolled_after:?}"
    );
    // Spread: the partitions do not all roll together, and at least one
    // rolls well before segment.ms.
    assert!(rolled_after.iter().any(|&s| s <= 900), "{rolled_after:?}");
    let mut distinct = rolled_after.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert!(distinct.len() >= 3, "{rolled_after:?}");
    c.lifecycle().close().await.unwrap();
}

#[tokio::test]
async fn every_kafka_topic_config_and_dynamic_broker_config_survives_a_restart() {
    let (dir, clock, c) = fresh_cluster();
    c.topics().create("kc", 1, 1).unwrap();
    let inc = |k: &str, op: IncrementalOp| IncrementalChange { key: k.into(), op };
    c.topics()
        .alter_config_incremental(
            "kc",
            &[
                inc("max.message.bytes", IncrementalOp::Set("4096".into())),
                inc("cleanup.policy", IncrementalOp::Append("compact".into())),
                inc(
                    "leader.replication.throttled.replicas",
                    IncrementalOp::Set("0:1".into()),
                ),
            ],
            false,
        )
        .unwrap();
    let preview = c
        .topics()
        .alter_config_incremental(
            "kc",
            &[inc("min.insync.replicas", IncrementalOp::Set("2".into()))],
            true,
        )
        .unwrap();
    assert_eq!(
        preview
            .others
            .get("min.insync.replicas")
            .map(String::as_str),
        Some("2")
    );
    // Read only here, then a value the key does not take.
    for (key, value, refused) in [
        ("log.retention.ms", "5", ErrorCode::InvalidRequest),
        ("compression.type", "brotli", ErrorCode::InvalidConfig),
    ] {
        let e = c
            .alter_broker_configs(
                None,
                &[inc(key, IncrementalOp::Set(value.into()))],
                false,
                false,
            )
            .unwrap_err();
        assert_eq!(e.code(), refused, "{key}={value}: {e}");
    }
    c.alter_broker_configs(
        None,
        &[inc("compression.type", IncrementalOp::Set("zstd".into()))],
        false,
        false,
    )
    .unwrap();
    let c = restart_with(c, dir.path(), &clock, |c| c).await;
    let described = c.topics().described_configs("kc").unwrap();
    let find = |n: &str| described.iter().find(|d| d.name == n).unwrap().clone();
    assert_eq!(described.len(), TOPIC_CONFIGS.len());
    let mmb = find("max.message.bytes");
    assert_eq!(
        (mmb.value.as_str(), mmb.source),
        ("4096", ConfigSource::DynamicTopic)
    );
    assert_eq!(find("cleanup.policy").value, "compact,delete");
    assert_eq!(
        find("min.insync.replicas").source,
        ConfigSource::Default,
        "validate_only kept nothing"
    );
    let ct = find("compression.type");
    assert_eq!(
        (ct.value.as_str(), ct.source),
        ("zstd", ConfigSource::DynamicDefaultBroker)
    );
    let broker = c.describe_broker_configs(Some(1)).unwrap();
    let ct = broker
        .iter()
        .find(|d| d.name == "compression.type")
        .unwrap();
    assert_eq!((ct.value.as_str(), ct.read_only), ("zstd", false));
    let np = broker.iter().find(|d| d.name == "num.partitions").unwrap();
    assert!(np.read_only);
    c.lifecycle().close().await.unwrap();
}

#[tokio::test]
async fn metadata_auto_creates_only_when_allowed_and_enabled() {
    let (_dir, clock, c) = fresh_cluster_with(|mut c| {
        c.auto_create_partitions = 3;
        c
    });
    assert_eq!(
        c.topics()
            .describe_or_auto_create("new", false)
            .unwrap_err()
            .code(),
        ErrorCode::UnknownTopic
    );
    let d = c.topics().describe_or_auto_create("new", true).unwrap();
    assert_eq!(d.partitions.len(), 3);
    assert_eq!(
        c.topics()
            .describe_or_auto_create("bad name!", true)
            .unwrap_err()
            .code(),
        ErrorCode::InvalidTopic
    );
    c.lifecycle().close().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let c = open_with(dir.path(), &clock, |mut c| {
        c.auto_create_topics = false;
        c
    });
    assert_eq!(
        c.topics()
            .describe_or_auto_create("new", true)
            .unwrap_err()
            .code(),
        ErrorCode::UnknownTopic
    );
    c.lifecycle().close().await.unwrap();
}

#[tokio::test]
async fn a_broker_taken_offline_hands_leadership_to_an_in_sync_replica_and_rejoins() {
    let (_dir, _, c) =
        fresh_cluster_with(|c| c.with_brokers(vec![1, 2, 3]).with_min_insync_replicas(2));
    c.topics().create("f", 3, 3).unwrap();
    c.topics().create("single", 1, 1).unwrap();
    let p0 = tp("f", 0);
    let pending = c
        .data()
        .submit_append(&p0, batch_at(&["a"], 1), AckMode::All, None)
        .unwrap();
    c.steps().replicate_all_once().unwrap();
    pending.wait().await.unwrap();
    c.brokers().check_leader(&p0, 1).unwrap();
    assert_eq!(
        c.brokers().check_leader(&p0, 2).unwrap_err().code(),
        ErrorCode::NotLeaderOrFollower
    );
    let moved = c.brokers().take_offline(1).unwrap();
    // Broker 1 led f-0 (and "single", which has no other replica).
    assert_eq!(moved.len(), 1);
    assert_eq!((moved[0].1.leader_id, moved[0].1.leader_epoch), (2, 1));
    assert_eq!(c.brokers().online(), vec![2, 3]);
    assert_eq!(
        c.brokers().check_leader(&p0, 1).unwrap_err().code(),
        ErrorCode::NotLeaderOrFollower
    );
    c.brokers().check_leader(&p0, 2).unwrap();
    assert!(!c.topics().describe_partition(&p0).unwrap().isr.contains(&1));
    assert_eq!(
        c.brokers()
            .check_leader(&tp("single", 0), 1)
            .unwrap_err()
            .code(),
        ErrorCode::LeaderNotAvailable
    );
    assert_eq!(
        c.brokers().available_leader(&tp("single", 0)).unwrap(),
        None
    );
    // The acknowledged write survived the move.
    assert_eq!(
        c.data()
            .fetch(&FetchRequest::new(p0.clone(), 0, 10))
            .unwrap()
            .records
            .len(),
        1
    );
    c.brokers().take_offline(2).unwrap();
    assert_eq!(
        c.brokers().take_offline(3).unwrap_err().code(),
        ErrorCode::InvalidRequest,
        "the last online broker stays"
    );
    assert!(c.brokers().bring_online(2).unwrap(), "broker 2 was offline");
    assert!(c.brokers().bring_online(1).unwrap());
    assert!(
        !c.brokers().bring_online(1).unwrap(),
        "an online broker was not offline"
    );
    assert_eq!(c.brokers().online(), vec![1, 2, 3]);
    c.steps().replicate_all_once().unwrap();
    let isr = c.topics().describe_partition(&p0).unwrap().isr;
    assert!(
        isr.contains(&1),
        "the returning replica caught up and is in sync: {isr:?}"
    );
    assert_eq!(
        c.brokers().take_offline(9).unwrap_err().code(),
        ErrorCode::InvalidRequest
    );
    c.lifecycle().close().await.unwrap();
}

fn fetch_one(
    t: &TopicPartition,
    offset: i64,
    max_bytes: usize,
    isolation: Isolation,
) -> BatchFetch {
    BatchFetch {
        partitions: vec![PartitionFetch {
            tp: t.clone(),
            offset,
            max_bytes,
            current_leader_epoch: None,
        }],
        isolation,
        max_bytes: 1 << 20,
        min_bytes: 1,
        max_wait: Duration::ZERO,
        broker: None,
    }
}

#[tokio::test]
async fn batch_fetches_follow_kafkas_size_rules() {
    let (_dir, _, c) = fresh_cluster();
    c.topics().create("s", 2, 1).unwrap();
    let big = "x".repeat(5_000);
    put(&c, &tp("s", 0), &[&big], 1).await;
    put(&c, &tp("s", 0), &["small"], 1).await;
    put(&c, &tp("s", 1), &["other"], 1).await;
    // The first batch of the answer goes out even above every limit.
    let mut req = fetch_one(&tp("s", 0), 0, 100, Isolation::ReadUncommitted);
    req.partitions.push(PartitionFetch {
        tp: tp("s", 1),
        offset: 0,
        max_bytes: 100,
        current_leader_epoch: None,
    });
    req.max_bytes = 1_000;
    let got = c.data().fetch_batches(&req).await.unwrap();
    assert_eq!(
        got[0].batches.len(),
        1,
        "one oversized first batch, then the limit"
    );
    assert!(got[0].bytes > 1_000);
    assert!(got[1].batches.is_empty(), "the answer's budget is spent");
    // A fetch starting inside a batch gets the whole batch.
    let put_many = c
        .data()
        .append_batch(&tp("s", 1), batch_at(&["a", "b", "c"], 1), AckMode::One)
        .await
        .unwrap();
    let got = c
        .data()
        .fetch_batches(&fetch_one(
            &tp("s", 1),
            2,
            1 << 20,
            Isolation::ReadUncommitted,
        ))
        .await
        .unwrap();
    assert_eq!(Some(got[0].batches[0].base_offset()), put_many.base_offset);
    // An error answers at once and is per partition.
    let got = c
        .data()
        .fetch_batches(&fetch_one(
            &tp("s", 0),
            99,
            1 << 20,
            Isolation::ReadUncommitted,
        ))
        .await
        .unwrap();
    assert_eq!(
        got[0].error.as_ref().unwrap().code(),
        ErrorCode::OffsetOutOfRange
    );
    assert_eq!(got[0].log_start_offset, 0);
    c.lifecycle().close().await.unwrap();
}

#[tokio::test]
async fn the_cluster_caps_every_fetch_answer() {
    let (_dir, _, c) = fresh_cluster_with(|mut c| {
        c.fetch_max_bytes = 2_000;
        c
    });
    c.topics().create("cap", 1, 1).unwrap();
    // Key and value are 300 bytes each: about 660 bytes per stored batch.
    let v = "v".repeat(300);
    for _ in 0..20 {
        put(&c, &tp("cap", 0), &[&v], 1).await;
    }
    let mut req = fetch_one(&tp("cap", 0), 0, 1 << 30, Isolation::ReadUncommitted);
    req.max_bytes = 1 << 30;
    let got = c.data().fetch_batches(&req).await.unwrap();
    assert!(got[0].bytes <= 2_000, "{} bytes", got[0].bytes);
    assert!(got[0].batches.len() >= 2);
    c.lifecycle().close().await.unwrap();
}

#[tokio::test]
async fn read_committed_batches_skip_aborted_data_but_keep_markers_so_readers_advance() {
    let (_dir, _, c, p) = fresh_topic("t");
    let h = c.transactions().begin("tx").await.unwrap();
    for i in 0..3 {
        send_value(&c, &h, "t", &format!("aborted-{i}")).await;
    }
    // While open, read_committed sees nothing and the LSO holds.
    let got = c
        .data()
        .fetch_batches(&fetch_one(&p, 0, 1 << 20, Isolation::ReadCommitted))
        .await
        .unwrap();
    assert!(got[0].batches.is_empty());
    assert_eq!(got[0].last_stable_offset, 0);
    c.transactions().abort(&h).await.unwrap();
    commit_value(&c, "t", "committed").await;
    // Even with a limit that fits one batch, reading goes past the aborted
    // ones to what is visible.
    let got = c
        .data()
        .fetch_batches(&fetch_one(&p, 0, 10, Isolation::ReadCommitted))
        .await
        .unwrap();
    let batches = &got[0].batches;
    assert_eq!(batches.len(), 1);
    assert_eq!(batches[0].control(), Some(ControlType::Abort));
    let mut offset = batches[0].next_offset();
    let mut seen = Vec::new();
    while offset < c.data().visible_end(&p).unwrap() {
        let got = c
            .data()
            .fetch_batches(&fetch_one(&p, offset, 1 << 20, Isolation::ReadCommitted))
            .await
            .unwrap();
        let last = got[0].batches.last().expect("progress");
        offset = last.next_offset();
        for batch in &got[0].batches {
            let records = batch.records().unwrap();
            seen.extend(records.records().iter().map(|r| r.value.clone().unwrap()));
        }
    }
    assert_eq!(seen, vec![b("committed")]);
    // read_uncommitted sees all four data records and both markers.
    let all = c
        .data()
        .fetch_batches(&fetch_one(&p, 0, 1 << 20, Isolation::ReadUncommitted))
        .await
        .unwrap();
    let data: usize = all[0]
        .batches
        .iter()
        .map(|b| b.records().unwrap().records().len())
        .sum();
    let markers = all[0].batches.iter().filter(|b| b.is_control()).count();
    assert_eq!((data, markers), (4, 2));
    c.lifecycle().close().await.unwrap();
}

#[tokio::test]
async fn a_batch_long_poll_waits_for_min_bytes_and_is_woken_by_an_append() {
    let (_dir, _, c) = fresh_cluster();
    c.topics().create("w", 2, 1).unwrap();
    let mut req = fetch_one(&tp("w", 0), 0, 1 << 20, Isolation::ReadUncommitted);
    req.partitions.push(PartitionFetch {
        tp: tp("w", 1),
        offset: 0,
        max_bytes: 1 << 20,
        current_leader_epoch: None,
    });
    req.max_wait = Duration::from_secs(30);
    let waiter = {
        let c = c.clone();
        tokio::spawn(async move { c.data().fetch_batches(&req).await })
    };
    tokio::task::yield_now().await;
    assert!(!waiter.is_finished());
    put(&c, &tp("w", 1), &["wake"], 1).await;
    let got = tokio::time::timeout(Duration::from_secs(10), waiter)
        .await
        .expect("woken by the append on the second partition")
        .unwrap()
        .unwrap();
    assert_eq!(got[1].batches.len(), 1);
    c.lifecycle().close().await.unwrap();
}

#[tokio::test]
async fn offsets_by_time_max_timestamp_and_the_lso_for_read_committed() {
    let (_dir, _, c, p) = fresh_topic("ts");
    put(&c, &p, &["a", "b"], 100).await; // offsets 0, 1 at 100, 101
    put(&c, &p, &["c"], 500).await; // offset 2 at 500
    put(&c, &p, &["d"], 300).await; // offset 3 at 300
    let at = |spec| {
        c.data()
            .list_offset(&p, spec, Isolation::ReadUncommitted)
            .unwrap()
    };
    assert_eq!(at(OffsetSpec::Earliest).unwrap().offset, 0);
    assert_eq!(at(OffsetSpec::Latest).unwrap().offset, 4);
    let t = at(OffsetSpec::Timestamp(101)).unwrap();
    assert_eq!((t.offset, t.timestamp_ms), (1, 101));
    let t = at(OffsetSpec::Timestamp(301)).unwrap();
    assert_eq!((t.offset, t.timestamp_ms), (2, 500));
    assert!(at(OffsetSpec::Timestamp(501)).is_none());
    let m = at(OffsetSpec::MaxTimestamp).unwrap();
    assert_eq!((m.offset, m.timestamp_ms), (2, 500));
    assert_eq!(m.leader_epoch, 0);
    // An open transaction: latest for read_committed is the LSO.
    let h = c.transactions().begin("tx").await.unwrap();
    send_value(&c, &h, "ts", "open").await;
    assert_eq!(
        c.data()
            .list_offset(&p, OffsetSpec::Latest, Isolation::ReadCommitted)
            .unwrap()
            .unwrap()
            .offset,
        4
    );
    assert_eq!(at(OffsetSpec::Latest).unwrap().offset, 5);
    c.transactions().abort(&h).await.unwrap();
    c.lifecycle().close().await.unwrap();
}

#[tokio::test]
async fn epochs_answer_kip_279_and_stale_or_future_epochs_are_refused() {
    let (_dir, _, c) = fresh_cluster_with(|c| c.with_brokers(vec![1, 2]));
    c.topics().create("e", 1, 2).unwrap();
    let p = tp("e", 0);
    put(&c, &p, &["a", "b"], 1).await;
    c.steps().replicate_all_once().unwrap();
    c.steps().promote(&p, 2).unwrap();
    put(&c, &p, &["c"], 1).await;
    let e0 = c.data().end_offset_for_epoch(&p, 0, None).unwrap().unwrap();
    assert_eq!((e0.epoch, e0.end_offset), (0, 2));
    let e1 = c
        .data()
        .end_offset_for_epoch(&p, 1, Some(1))
        .unwrap()
        .unwrap();
    assert_eq!((e1.epoch, e1.end_offset), (1, 3));
    assert_eq!(
        c.data()
            .end_offset_for_epoch(&p, 0, Some(0))
            .unwrap_err()
            .code(),
        ErrorCode::FencedLeaderEpoch
    );
    assert_eq!(
        c.data()
            .end_offset_for_epoch(&p, 0, Some(7))
            .unwrap_err()
            .code(),
        ErrorCode::UnknownLeaderEpoch
    );
    let mut req = fetch_one(&p, 0, 1 << 20, Isolation::ReadUncommitted);
    req.partitions[0].current_leader_epoch = Some(0);
    let got = c.data().fetch_batches(&req).await.unwrap();
    assert_eq!(
        got[0].error.as_ref().unwrap().code(),
        ErrorCode::FencedLeaderEpoch
    );
    let l = c
        .data()
        .list_offset(&p, OffsetSpec::Timestamp(0), Isolation::ReadUncommitted)
        .unwrap()
        .unwrap();
    assert_eq!((l.offset, l.leader_epoch), (0, 0));
    c.lifecycle().close().await.unwrap();
}

/// The flush cycle fsyncs and stages files without the partition lock; a
/// topic deleted meanwhile must neither fail the broker ("Directory not
/// empty" when a staged file lands while the directory is removed) nor
/// make the cycle report an error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_topics_while_flush_cycles_run_fails_nothing() {
    let (_dir, _, c) = fresh_cluster_with(|mut c| {
        c.segment_max_bytes = 1024;
        c
    });
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flusher = {
        let (c, stop) = (c.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut cycles = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                c.steps().run_flush_cycle().unwrap();
                cycles += 1;
            }
            cycles
        })
    };
    let value = "v".repeat(300);
    for i in 0..150 {
        let name = format!("t{i}");
        c.topics().create(&name, 4, 1).unwrap();
        for p in 0..4 {
            for _ in 0..6 {
                put(&c, &tp(&name, p), &[value.as_str()], 1).await;
            }
        }
        c.topics().delete(&name).unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let cycles = flusher.join().unwrap();
    assert!(cycles > 0);
    assert_eq!(c.lifecycle().state(), LifecycleState::Running);
    assert!(c.topics().list().unwrap().is_empty());
}

fn compacted(c: &BrokerCluster, name: &str) {
    let overrides = TopicConfigOverrides {
        cleanup_policy: Some(CleanupPolicy::Compact),
        ..TopicConfigOverrides::default()
    };
    c.topics()
        .create_with_overrides(name, 1, 1, &overrides)
        .unwrap();
}

fn keyed(keys: &[Option<&str>]) -> RecordBatch {
    RecordBatch::new(
        keys.iter()
            .map(|k| Record::new(k.map(b), Some(b("v")), 1_000))
            .collect(),
    )
    .unwrap()
}

#[tokio::test]
async fn a_compacted_topic_refuses_a_batch_with_keyless_records_naming_each_of_them() {
    let (_dir, _, c) = fresh_cluster();
    compacted(&c, "kv");
    c.topics().create("plain", 1, 1).unwrap();
    let kv = tp("kv", 0);
    let e = c
        .data()
        .submit_append(
            &kv,
            keyed(&[Some("a"), None, Some("c"), None]),
            AckMode::One,
            None,
        )
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidRecord);
    let named: Vec<(u32, String)> = e
        .record_errors()
        .iter()
        .map(|r| (r.batch_index, r.message.clone()))
        .collect();
    let why = "Compacted topic cannot accept message without key in topic partition kv-0.";
    assert_eq!(named, vec![(1, why.to_string()), (3, why.to_string())]);
    assert!(
        e.to_string()
            .starts_with("One or more records have been rejected due to 2 record errors"),
        "{e}"
    );
    assert_eq!(
        c.data().log_end_offset(&kv).unwrap(),
        0,
        "nothing of the batch is appended"
    );
    // Keyed records are accepted; a topic that is not compacted takes keyless ones.
    c.data()
        .append_batch(&kv, keyed(&[Some("a"), Some("b")]), AckMode::One)
        .await
        .unwrap();
    c.data()
        .append_batch(&tp("plain", 0), keyed(&[None]), AckMode::One)
        .await
        .unwrap();
    // In a group of pipelined produces the refused batch is refused alone.
    let answers = c.data().submit_append_group(
        &kv,
        vec![keyed(&[Some("x")]), keyed(&[None]), keyed(&[Some("y")])],
        AckMode::One,
    );
    let codes: Vec<Option<ErrorCode>> = answers
        .iter()
        .map(|a| a.as_ref().err().map(ClusterError::code))
        .collect();
    assert_eq!(codes, vec![None, Some(ErrorCode::InvalidRecord), None]);
    assert_eq!(c.data().log_end_offset(&kv).unwrap(), 4);
    // The same rule through the produce operation JSON-TCP uses.
    let e = c
        .data()
        .produce(ProduceRequest {
            tp: kv.clone(),
            records: vec![ProduceEntry {
                key: None,
                value: Some(b("v")),
                headers: Vec::new(),
                timestamp_ms: None,
            }],
            acks: AckMode::One,
            producer: None,
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidRecord);
    assert_eq!(e.record_errors().len(), 1);
    c.lifecycle().close().await.unwrap();
}

#[test]
fn coordinator_partitions_are_kafkas_hash_of_the_key() {
    // Values from `java`: String.hashCode and Utils.abs(h) % 50.
    let expected = [
        ("", 0, 0),
        ("a", 97, 47),
        ("abc", 96_354, 4),
        ("polygenelubricants", i32::MIN, 0),
        ("my-group", -1_906_497_762, 12),
        ("tx-1", 3_572_520, 20),
        ("console-consumer-12345", 158_455_506, 6),
        ("ünïcödé", -609_221_899, 49),
        ("😀-group", -1_198_440_043, 43),
        ("GROUP", 68_091_487, 37),
    ];
    for (key, hash, partition) in expected {
        assert_eq!(java_string_hash(key), hash, "{key}");
        assert_eq!(coordinator_partition(key), partition, "{key}");
    }
}

#[tokio::test]
async fn every_broker_names_one_coordinator_per_key_and_it_moves_when_its_broker_goes() {
    let (_dir, _, c) = fresh_cluster_with(brokers_1_to_3);
    // Partition p's replicas are B[p % 3], B[(p + 1) % 3], B[(p + 2) % 3].
    let a = CoordinatorKey::Group("a"); // partition 47: brokers 3, 1, 2
    let abc = CoordinatorKey::Transaction("abc"); // partition 4: brokers 2, 3, 1
    let my_group = CoordinatorKey::Group("my-group"); // partition 12: brokers 1, 2, 3
    assert_eq!(c.brokers().coordinator(a).unwrap(), 3);
    assert_eq!(c.brokers().coordinator(abc).unwrap(), 2);
    assert_eq!(c.brokers().coordinator(my_group).unwrap(), 1);
    // The same key as a group or a transactional id lands alike.
    assert_eq!(
        c.brokers()
            .coordinator(CoordinatorKey::Transaction("a"))
            .unwrap(),
        3
    );
    c.brokers().check_coordinator(a, 3).unwrap();
    let e = c.brokers().check_coordinator(a, 1).unwrap_err();
    assert_eq!(e.code(), ErrorCode::NotCoordinator);
    assert!(
        e.to_string()
            .contains("broker 1 does not coordinate group \"a\"; broker 3 does"),
        "{e}"
    );
    // Offline: the next replica of the virtual partition takes over, and
    // the coordinator comes back with its broker.
    c.brokers().take_offline(3).unwrap();
    assert_eq!(c.brokers().coordinator(a).unwrap(), 1);
    assert_eq!(c.brokers().coordinator(abc).unwrap(), 2);
    c.brokers().take_offline(1).unwrap();
    assert_eq!(c.brokers().coordinator(a).unwrap(), 2);
    assert_eq!(c.brokers().coordinator(my_group).unwrap(), 2);
    c.brokers().bring_online(3).unwrap();
    assert_eq!(c.brokers().coordinator(a).unwrap(), 3);
    assert_eq!(c.brokers().coordinator(my_group).unwrap(), 2);
    c.lifecycle().close().await.unwrap();
}

#[tokio::test]
async fn with_more_brokers_than_replicas_a_coordinator_can_be_unavailable() {
    let (_dir, _, c) = fresh_cluster_with(|cfg| cfg.with_brokers(vec![1, 2, 3, 4]));
    // "my-group" is partition 12: replicas B[0], B[1], B[2] = 1, 2, 3.
    let key = CoordinatorKey::Group("my-group");
    for b in [1, 2, 3] {
        assert_eq!(c.brokers().coordinator(key).unwrap(), b);
        c.brokers().take_offline(b).unwrap();
    }
    let e = c.brokers().coordinator(key).unwrap_err();
    assert_eq!(e.code(), ErrorCode::CoordinatorNotAvailable);
    assert_eq!(
        c.brokers().check_coordinator(key, 4).unwrap_err().code(),
        ErrorCode::CoordinatorNotAvailable
    );
    c.lifecycle().close().await.unwrap();
}

#[tokio::test]
async fn delete_records_moves_the_log_start_on_every_replica_and_survives_a_restart() {
    let (dir, clock, c) = fresh_cluster_with(brokers_1_to_3);
    c.topics().create("d", 1, 3).unwrap();
    let p = tp("d", 0);
    put(&c, &p, &["a", "b", "c"], 1).await;
    put(&c, &p, &["d", "e"], 1).await;
    c.steps().replicate_all_once().unwrap();
    c.steps().replicate_all_once().unwrap();
    assert_eq!(c.data().visible_end(&p).unwrap(), 5);
    assert_eq!(
        c.data().delete_records(&p, 6).unwrap_err().code(),
        ErrorCode::OffsetOutOfRange,
        "beyond the high watermark"
    );
    assert_eq!(c.data().delete_records(&p, 2).unwrap(), 2);
    assert_eq!(c.data().log_start_offset(&p).unwrap(), 2);
    let e = c
        .data()
        .fetch(&FetchRequest::new(p.clone(), 1, 10))
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::OffsetOutOfRange);
    let first = c
        .data()
        .fetch(&FetchRequest::new(p.clone(), 2, 10))
        .unwrap();
    assert_eq!(first.records[0].offset, 2);
    assert_eq!(
        c.data().list_offsets(&p, OffsetSpec::Earliest).unwrap(),
        Some(2)
    );
    // -1 is the high watermark; leadership moving keeps the start.
    assert_eq!(c.data().delete_records(&p, -1).unwrap(), 5);
    c.brokers().take_offline(1).unwrap();
    assert_eq!(c.data().log_start_offset(&p).unwrap(), 5);
    assert_eq!(
        c.data()
            .delete_records(&tp("nope", 0), 0)
            .unwrap_err()
            .code(),
        ErrorCode::UnknownTopic
    );
    c.lifecycle().close().await.unwrap();
    let c = open_with(dir.path(), &clock, brokers_1_to_3);
    assert_eq!(c.data().log_start_offset(&p).unwrap(), 5);
    c.lifecycle().close().await.unwrap();
}

#[tokio::test]
async fn a_brokers_log_dir_lists_its_replicas_with_sizes_and_lag() {
    let (dir, _, c) = fresh_cluster_with(brokers_1_to_3);
    // "a" has one replica per partition: a-0 on broker 1, a-1 on broker 2.
    c.topics().create("a", 2, 1).unwrap();
    c.topics().create("b", 1, 3).unwrap();
    let b0 = tp("b", 0);
    put(&c, &b0, &["x", "y"], 1).await;
    c.steps().replicate_all_once().unwrap();
    c.steps().replicate_all_once().unwrap();
    c.brokers().take_offline(3).unwrap();
    put(&c, &b0, &["z"], 1).await;
    c.steps().replicate_all_once().unwrap();
    let d1 = c.views().log_dir(1, None).unwrap();
    assert_eq!(d1.path, dir.path().join("broker-1"));
    let names: Vec<String> = d1.replicas.iter().map(|(tp, _)| tp.to_string()).collect();
    assert_eq!(names, vec!["a-0", "b-0"]);
    let (_, b_on_1) = d1.replicas[1];
    assert!(b_on_1.size_bytes > 0);
    assert_eq!(b_on_1.offset_lag, 0);
    assert!(d1.disk.is_some_and(|d| d.total_bytes > 0));
    // Broker 3 missed the third record: one behind the high watermark.
    let d3 = c.views().log_dir(3, None).unwrap();
    assert_eq!(d3.replicas.len(), 1);
    assert_eq!(d3.replicas[0].1.offset_lag, 1);
    assert!(d3.replicas[0].1.size_bytes < b_on_1.size_bytes);
    let only: std::collections::BTreeSet<TopicPartition> = [tp("a", 1)].into();
    let d2 = c.views().log_dir(2, Some(&only)).unwrap();
    assert_eq!(d2.replicas.len(), 1);
    assert_eq!(d2.replicas[0].0, tp("a", 1));
    assert_eq!(
        c.views().log_dir(9, None).unwrap_err().code(),
        ErrorCode::InvalidRequest
    );
    c.lifecycle().close().await.unwrap();
}

#[tokio::test]
async fn a_fetch_sends_a_producers_block_as_stored_without_decoding_a_record() {
    let (_dir, _, c, p) = fresh_topic("pass");
    put(&c, &p, &["built-by-the-broker"], 1).await;
    // A block no record decoder accepts (its "zstd" bytes are not zstd):
    // only a fetch that never decodes records can send it.
    let opaque = bytes::Bytes::from_static(b"\x28\xb5\x2f\xfd not really zstd");
    let block = block::BlockBatch::new(block::BlockParts {
        base_offset: 0,
        leader_epoch: 0,
        producer: ProducerInfo::NONE,
        transactional_id: None,
        control: None,
        last_offset_delta: 1,
        record_count: 2,
        codec: block::Codec::Zstd,
        timestamp_type: block::TimestampType::CreateTime,
        first_timestamp: 5,
        max_timestamp: 6,
        block: opaque.clone(),
    })
    .unwrap();
    let batch = RecordBatch::from_block(block.clone()).unwrap();
    c.data()
        .append_batch(&p, batch, AckMode::One)
        .await
        .unwrap();
    let got = c
        .data()
        .fetch_batches(&fetch_one(&p, 0, 1 << 20, Isolation::ReadUncommitted))
        .await
        .unwrap();
    let batches = &got[0].batches;
    assert_eq!(batches.len(), 2, "{:?}", got[0].error);
    // The broker's own batch (version 1) comes decoded ...
    assert!(
        matches!(&batches[0], FetchedBatch::Records { batch, .. } if batch.records().len() == 1)
    );
    // ... the producer's as its block, byte for byte, at its offset.
    let FetchedBatch::Block(sent) = &batches[1] else {
        panic!("the producer's batch comes as its block: {:?}", batches[1]);
    };
    assert_eq!(sent.block(), &opaque);
    assert_eq!(sent.header().base_offset, 1);
    assert_eq!(sent.kafka_crc(), block.kafka_crc());
    assert_eq!(batches[1].data_records(), 2);
    // Decoding it, which a fetch never does, finds the damage.
    assert_eq!(
        batches[1].records().unwrap_err().code(),
        ErrorCode::CorruptBatch
    );
    c.lifecycle().close().await.unwrap();
}

/// An opaque kept block (records never decoded) with these timestamps.
fn opaque_block(first_timestamp: i64, max_timestamp: i64, len: usize) -> block::BlockBatch {
    let block = bytes::Bytes::from(vec![7u8; len]);
    kept_block(
        block::Codec::Zstd,
        1,
        (first_timestamp, max_timestamp),
        block,
    )
}

#[tokio::test]
async fn topic_configs_refuse_large_batches_and_bad_timestamps_and_stamp_log_append_time() {
    let (_dir, _, c, p) = configured_topic(
        "limits",
        &[
            ("max.message.bytes", "200"),
            ("message.timestamp.before.max.ms", "1000"),
        ],
    );
    let now = 10_000_000;
    let append = |b: block::BlockBatch| {
        let c = c.clone();
        let p = p.clone();
        async move { append_block(&c, &p, b).await }
    };
    // 61 header bytes + 139 of records is exactly the limit; one more is not.
    append(opaque_block(now, now, 139)).await.unwrap();
    let e = append(opaque_block(now, now, 140)).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::MessageTooLarge, "{e}");
    assert!(e.to_string().contains("201 bytes"), "{e}");
    // Decoded records are measured too.
    let big = RecordBatch::new(vec![Record::new(None, Some(b(&"x".repeat(300))), now)]).unwrap();
    let e = c
        .data()
        .append_batch(&p, big, AckMode::One)
        .await
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::MessageTooLarge);
    // CreateTime bounds: 1 s in the past at most here, 1 h in the future
    // (Kafka's default).
    let e = append(opaque_block(now - 1_001, now, 10))
        .await
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidTimestamp, "{e}");
    let e = append(opaque_block(now, now + 3_600_001, 10))
        .await
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidTimestamp, "{e}");
    append(opaque_block(now - 1_000, now + 3_600_000, 10))
        .await
        .unwrap();

    // LogAppendTime: the kept block gets the broker's time and the
    // attribute, its records section stays byte for byte, the CRC follows.
    c.topics().create("stamped", 1, 1).unwrap();
    alter_topic(
        &c,
        "stamped",
        &[("message.timestamp.type", "LogAppendTime")],
    );
    let s = tp("stamped", 0);
    let sent = opaque_block(5, 6, 10);
    append_block(&c, &s, sent.clone()).await.unwrap();
    c.data()
        .append_batch(
            &s,
            RecordBatch::new(vec![Record::new(None, Some(b("v")), 7)]).unwrap(),
            AckMode::One,
        )
        .await
        .unwrap();
    let kept = first_fetched_block(&c, &s).await;
    assert_eq!(kept.timestamp_type(), block::TimestampType::LogAppendTime);
    assert_eq!(kept.max_timestamp(), now);
    assert_eq!(kept.block(), sent.block());
    assert_ne!(kept.kafka_crc(), sent.kafka_crc());
    let fetched = c
        .data()
        .fetch(&FetchRequest::new(s.clone(), 1, 10))
        .unwrap();
    assert_eq!(fetched.records[0].timestamp_ms, now, "decoded records too");
    c.lifecycle().close().await.unwrap();
}

/// The first batch a fetch from offset 0 of `p` returns, which must be a
/// producer's block kept as produced.
async fn first_fetched_block(c: &BrokerCluster, p: &TopicPartition) -> block::BlockBatch {
    let got = c
        .data()
        .fetch_batches(&fetch_one(p, 0, 1 << 20, Isolation::ReadUncommitted))
        .await
        .unwrap();
    match &got[0].batches[0] {
        FetchedBatch::Block(kept) => kept.clone(),
        other => panic!("a kept block: {other:?}"),
    }
}

#[tokio::test]
async fn a_topics_compression_type_recompresses_produced_batches_of_another_codec() {
    let (_dir, _, c) = fresh_cluster();
    let records: Vec<Record> = (0..50)
        .map(|i| {
            Record::new(
                Some(b(&format!("k{i}"))),
                Some(b(&"v".repeat(100))),
                900 + i,
            )
        })
        .collect();
    let mut stored = Vec::new();
    for (topic, setting, sent) in [
        ("as-produced", None, block::Codec::Lz4),
        ("to-zstd", Some("zstd"), block::Codec::None),
        ("to-gzip", Some("gzip"), block::Codec::Snappy),
        ("to-none", Some("uncompressed"), block::Codec::Gzip),
    ] {
        c.topics().create(topic, 1, 1).unwrap();
        if let Some(v) = setting {
            alter_topic(&c, topic, &[("compression.type", v)]);
        }
        let p = tp(topic, 0);
        let produced = produced_block(&records, sent);
        append_block(&c, &p, produced.clone()).await.unwrap();
        let kept = first_fetched_block(&c, &p).await;
        let decoded = kept.records(1 << 20).unwrap();
        assert_eq!(decoded.records(), &records[..], "{topic}");
        assert_eq!(kept.max_timestamp(), 949, "{topic}");
        if setting.is_none() {
            assert_eq!(kept.block(), produced.block(), "producer: byte for byte");
        }
        stored.push(kept.codec());
    }
    let want = [
        block::Codec::Lz4,
        block::Codec::Zstd,
        block::Codec::Gzip,
        block::Codec::None,
    ];
    assert_eq!(stored, want);

    // The batch as stored must fit max.message.bytes: compressed it does,
    // recompressed to nothing it does not (Kafka checks both).
    alter_topic(&c, "to-none", &[("max.message.bytes", "2000")]);
    let small = produced_block(&records, block::Codec::Zstd);
    assert!(small.block().len() + 61 < 2000);
    let e = append_block(&c, &tp("to-none", 0), small)
        .await
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::MessageTooLarge, "{e}");
    c.lifecycle().close().await.unwrap();
}

/// The records a JSON-TCP producer sends in one request: compressible
/// values, a tombstone, headers, timestamps out of order.
fn json_entries() -> Vec<ProduceEntry> {
    (0..40)
        .map(|i| ProduceEntry {
            key: Some(b(&format!("k{}", i % 7))),
            value: (i != 5).then(|| b(&format!("{i}-{}", "abc".repeat(40)))),
            headers: vec![Header::new("h", Some(b("x"))), Header::new("n", None)],
            timestamp_ms: Some(5_000 + (i * 37) % 11),
        })
        .collect()
}

#[tokio::test]
async fn a_json_produce_to_a_topic_with_a_codec_is_stored_in_it_and_reads_back_unchanged() {
    let (_dir, _, c) = fresh_cluster();
    let mut read = Vec::new();
    for (topic, settings, want) in [
        ("as-sent", &[][..], None),
        ("none", &[("compression.type", "uncompressed")][..], None),
        (
            "zstd",
            &[("compression.type", "zstd")][..],
            Some(block::Codec::Zstd),
        ),
        (
            "lz4",
            &[("compression.type", "lz4")][..],
            Some(block::Codec::Lz4),
        ),
        (
            "gzip-append-time",
            &[
                ("compression.type", "gzip"),
                ("message.timestamp.type", "LogAppendTime"),
            ][..],
            Some(block::Codec::Gzip),
        ),
        (
            "append-time",
            &[("message.timestamp.type", "LogAppendTime")][..],
            None,
        ),
    ] {
        c.topics().create(topic, 1, 1).unwrap();
        alter_topic(&c, topic, settings);
        let p = tp(topic, 0);
        for _ in 0..2 {
            let req = ProduceRequest {
                tp: p.clone(),
                records: json_entries(),
                acks: AckMode::One,
                producer: None,
            };
            let answer = c.data().produce(req).await.unwrap();
            assert_eq!(answer.count, 40, "{topic}");
        }
        // The core decided how the batch is stored: in the topic's codec
        // as Kafka stores an uncompressed producer batch, or (no codec) as
        // the broker's own version 1 batch.
        let got = c
            .data()
            .fetch_batches(&fetch_one(&p, 0, 1 << 20, Isolation::ReadUncommitted))
            .await
            .unwrap();
        assert_eq!(got[0].batches.len(), 2, "{topic}");
        for batch in &got[0].batches {
            match (batch, want) {
                (FetchedBatch::Block(kept), Some(codec)) => assert_eq!(kept.codec(), codec),
                (FetchedBatch::Records { .. }, None) => {}
                (other, _) => panic!("{topic}: {other:?}"),
            }
        }
        let bytes: u64 = c
            .views()
            .partition_internals(&p)
            .unwrap()
            .segments
            .iter()
            .map(|s| s.log_bytes)
            .sum();
        // What a JSON-TCP consumer reads is the same whatever the codec.
        let fetched = c.data().fetch(&FetchRequest::new(p, 0, 100)).unwrap();
        assert_eq!(fetched.records.len(), 80, "{topic}");
        read.push((bytes, fetched.records));
    }
    let (plain_bytes, plain) = &read[0];
    assert_eq!(&read[1].1, plain);
    for (bytes, records) in &read[2..4] {
        assert_eq!(records, plain);
        assert!(bytes * 3 < *plain_bytes, "{bytes} vs {plain_bytes}");
    }
    // LogAppendTime: the broker's time, whether compressed or not.
    assert_eq!(read[4].1, read[5].1);
    assert!(read[4].0 * 3 < read[5].0);
    assert!(
        read[4]
            .1
            .iter()
            .all(|r| r.timestamp_ms == c.clock().now_ms())
    );
    c.lifecycle().close().await.unwrap();
}

#[tokio::test]
async fn min_compaction_lag_ms_altered_decides_what_compaction_cleans() {
    let (_dir, clock, c, t) = configured_topic(
        "lagged",
        &[
            ("segment.bytes", "1024"),
            ("min.compaction.lag.ms", "3600000"),
        ],
    );
    // Records an hour minus a second old: within the lag.
    let ts = clock.now_ms() - 3_599_000;
    for _ in 0..40 {
        put(&c, &t, &[&format!("same-key-{:0200}", 0)], ts).await;
    }
    let r = c.steps().compact("lagged", Some(0)).unwrap();
    assert_eq!(r.records_before, r.records_after, "nothing is past the lag");
    alter_topic(&c, "lagged", &[("min.compaction.lag.ms", "0")]);
    let r = c.steps().compact("lagged", Some(0)).unwrap();
    assert!(r.records_after < r.records_before, "{r:?}");
    c.lifecycle().close().await.unwrap();
}

/// The cleaner's cycle on topic `kv`, opened anew on `dir` (a restart).
fn cycle_after_restart(dir: &std::path::Path, clock: &ManualClock) -> CompactionSummary {
    let c = open(dir, clock);
    let r = c.steps().compact_all().unwrap()["kv"];
    c.lifecycle().crash();
    r
}

#[tokio::test]
async fn the_cleaner_cycle_after_a_restart_does_not_compact_a_clean_partition_again() {
    let (dir, clock, c) = fresh_cluster();
    c.topics().create("kv", 1, 1).unwrap();
    alter_topic(
        &c,
        "kv",
        &[("cleanup.policy", "compact"), ("segment.bytes", "1024")],
    );
    let t = tp("kv", 0);
    for i in 0..40 {
        put(&c, &t, &[&format!("key-{:0100}", i % 4)], clock.now_ms()).await;
    }
    c.steps().roll(&t).unwrap();
    let first = c.steps().compact_all().unwrap()["kv"];
    assert!(first.records_after < first.records_before, "{first:?}");
    assert_eq!(c.steps().compact_all().unwrap()["kv"].records_before, 0);
    c.lifecycle().close().await.unwrap();
    drop(c);
    // After a clean close and after a crash alike, the stored first dirty
    // offset says the partition is clean: the cycle leaves it alone.
    let none = CompactionSummary::default();
    assert_eq!(cycle_after_restart(dir.path(), &clock), none);
    assert_eq!(cycle_after_restart(dir.path(), &clock), none);
    // Without the checkpoint the same restart costs a pass (which removes
    // nothing more): what the checkpoint saves.
    let checkpoint = dir
        .path()
        .join("broker-1")
        .join(t.dir_name())
        .join(mk_log::CLEANER_CHECKPOINT_FILE);
    std::fs::remove_file(checkpoint).unwrap();
    let extra = cycle_after_restart(dir.path(), &clock);
    assert_eq!(extra.records_before, first.records_after, "{extra:?}");
    assert_eq!(extra.records_after, first.records_after);
    assert_eq!(cycle_after_restart(dir.path(), &clock), none);
}
