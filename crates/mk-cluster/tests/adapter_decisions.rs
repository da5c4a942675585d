//! Decisions every adapter needs and none may make on its own: which
//! transaction handle a (transactional id, epoch) speaks with, what a topic's
//! configuration is when only some settings are given, and what an offset
//! fetch answers. They live in the core so the Direct and JSON-TCP adapters
//! (and the parity suite that compares them) cannot disagree.
#![allow(
    clippy::too_many_lines,
    reason = "a test scenario reads top to bottom as one story; split, its steps would scatter"
)]

use mk_cluster::*;
use std::collections::BTreeMap;
use std::sync::Arc;

fn open(dir: &std::path::Path) -> Arc<BrokerCluster> {
    BrokerCluster::open_with_clock(MiniKafkaConfig::new(dir), Arc::new(ManualClock::new(1_000)))
        .unwrap()
}

/// A cluster on a temporary directory (kept while the cluster is used)
/// with topic `t` of `partitions`.
fn with_t(partitions: u32) -> (tempfile::TempDir, Arc<BrokerCluster>) {
    let dir = tempfile::tempdir().unwrap();
    let c = open(dir.path());
    c.topics().create("t", partitions, 1).unwrap();
    (dir, c)
}

/// Creating `name` with a `segment.bytes` override of `bytes` is refused
/// as an invalid config.
fn assert_segment_bytes_refused(c: &BrokerCluster, name: &str, bytes: u64) {
    let overrides = TopicConfigOverrides {
        segment_bytes: Some(Some(bytes)),
        ..TopicConfigOverrides::default()
    };
    assert_eq!(
        c.topics()
            .create_with_overrides(name, 1, 1, &overrides)
            .unwrap_err()
            .code(),
        ErrorCode::InvalidConfig
    );
}

#[tokio::test]
async fn a_transaction_handle_is_the_ids_producer_at_the_claimed_epoch() {
    let dir = tempfile::tempdir().unwrap();
    let c = open(dir.path());
    let unknown = c.transactions().handle_at("nobody", 3).unwrap();
    assert_eq!(
        unknown,
        TxnHandle {
            transactional_id: "nobody".into(),
            producer_id: -1,
            producer_epoch: 3,
        }
    );
    let first = c.transactions().begin("tx").await.unwrap();
    c.transactions().abort(&first).await.unwrap();
    let second = c.transactions().begin("tx").await.unwrap();
    assert!(second.producer_epoch > first.producer_epoch);
    assert_eq!(
        c.transactions()
            .handle_at("tx", second.producer_epoch)
            .unwrap(),
        second
    );
    // The old epoch gets the current producer id, and the core fences it.
    let stale = c
        .transactions()
        .handle_at("tx", first.producer_epoch)
        .unwrap();
    assert_eq!(stale.producer_id, second.producer_id);
    assert_eq!(
        c.transactions().commit(&stale).await.unwrap_err().code(),
        ErrorCode::ProducerFenced
    );
    c.lifecycle().close().await.unwrap();
    assert_eq!(
        c.transactions().handle_at("tx", 0).unwrap_err().code(),
        ErrorCode::ClusterClosed,
        "a closed cluster is an error, not an unknown id"
    );
}

#[tokio::test]
async fn topic_overrides_are_merged_with_the_cluster_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = MiniKafkaConfig::new(dir.path());
    config.default_topic_config.retention_bytes = Some(1_000_000);
    let c = BrokerCluster::open_with_clock(config, Arc::new(ManualClock::new(0))).unwrap();
    let overrides = TopicConfigOverrides {
        cleanup_policy: Some(CleanupPolicy::Compact),
        retention_ms: Some(None),
        ..TopicConfigOverrides::default()
    };
    c.topics()
        .create_with_overrides("t", 1, 1, &overrides)
        .unwrap();
    c.topics()
        .create_with_overrides("plain", 1, 1, &TopicConfigOverrides::default())
        .unwrap();
    let defaults = c.config().default_topic_config.clone();
    assert_eq!(
        c.topics().describe("t").unwrap().config,
        TopicConfig {
            cleanup_policy: CleanupPolicy::Compact,
            retention_ms: None,
            ..defaults.clone()
        }
    );
    assert_eq!(c.topics().describe("plain").unwrap().config, defaults);
    assert_segment_bytes_refused(&c, "bad", 0);
    c.lifecycle().close().await.unwrap();
}

#[tokio::test]
async fn an_offset_fetch_answers_every_commit_or_the_partitions_asked_for() {
    let (_dir, c) = with_t(3);
    let tp = |p| TopicPartition::new("t", p);
    c.groups()
        .commit_direct("g", &BTreeMap::from([(tp(0), 5)]))
        .unwrap();
    let seven = OffsetAndMetadata::from_wire(7, 4, Some("checkpoint".into()));
    let answers = c
        .groups()
        .commit_with_metadata("g", -1, "", None, &BTreeMap::from([(tp(2), seven.clone())]))
        .unwrap();
    assert!(answers[0].1.is_ok());
    let five = OffsetAndMetadata::new(5);
    assert_eq!(
        c.groups().committed_for("g", None).unwrap(),
        vec![(tp(0), Some(five)), (tp(2), Some(seven.clone()))]
    );
    assert_eq!(
        c.groups()
            .committed_for("g", Some(&[tp(2), tp(1)]))
            .unwrap(),
        vec![(tp(2), Some(seven)), (tp(1), None)],
        "in the order asked, with epoch and metadata, None where nothing is committed"
    );
    assert_eq!(c.groups().committed_for("other", None).unwrap(), vec![]);
    c.lifecycle().close().await.unwrap();
}

fn codes(answers: &[Result<()>]) -> Vec<Option<ErrorCode>> {
    answers
        .iter()
        .map(|r| r.as_ref().err().map(ClusterError::code))
        .collect()
}

#[tokio::test]
async fn a_commit_answers_each_partition_as_named_and_commits_the_ones_that_exist() {
    let (_dir, c) = with_t(2);
    let simple = CommitRequest {
        group: "g",
        generation: -1,
        member: "",
        instance: None,
        version: Some(8),
    };
    let o = |n| OffsetAndMetadata::new(n);
    let named = [
        ("t", 1, o(10)),
        ("t", 2, o(11)),
        ("t", -1, o(12)),
        ("nope", 0, o(13)),
        ("t", 0, o(14)),
    ];
    let answers = c.groups().commit_each(&simple, &named);
    assert!(answers.request.is_ok());
    use ErrorCode::{UnknownPartition, UnknownTopic};
    assert_eq!(
        codes(&answers.partitions),
        vec![
            None,
            Some(UnknownPartition),
            Some(UnknownPartition),
            Some(UnknownTopic),
            None
        ]
    );
    let tp = |p| TopicPartition::new("t", p);
    assert_eq!(
        c.groups().committed_for("g", None).unwrap(),
        vec![(tp(0), Some(o(14))), (tp(1), Some(o(10)))]
    );
    // Refused whole (a stale generation of a group that has members): the
    // refusal on each existing partition, the others still on their own.
    let member = c.groups().join("live", "m1", &["t".to_string()]).unwrap();
    let stale = CommitRequest {
        group: "live",
        generation: member.generation + 7,
        member: "m1",
        instance: None,
        version: Some(8),
    };
    let refused = c.groups().commit_each(&stale, &named);
    let code = refused.request.as_ref().unwrap_err().code();
    assert_eq!(
        codes(&refused.partitions),
        vec![
            Some(code),
            Some(UnknownPartition),
            Some(UnknownPartition),
            Some(UnknownTopic),
            Some(code)
        ]
    );
    // Nothing that exists named: nothing asked of the group, nothing stored.
    let none = c.groups().commit_each(&stale, &named[1..4]);
    assert!(none.request.is_ok());
    assert_eq!(c.groups().committed_for("live", None).unwrap(), vec![]);
    // OffsetDelete answers the same way.
    let deleted = c
        .groups()
        .delete_offsets_each("g", &[("t", 0), ("t", 9), ("nope", 0)]);
    assert!(deleted.request.is_ok());
    assert_eq!(
        codes(&deleted.partitions),
        vec![None, Some(UnknownPartition), Some(UnknownTopic)]
    );
    assert_eq!(
        c.groups().committed_for("g", None).unwrap(),
        vec![(tp(1), Some(o(10)))]
    );
    // A fetch names partitions by index, in the order asked.
    let asked: [(&str, &[i32]); 2] = [("t", &[1, -3, 0]), ("nope", &[0])];
    let fetched = c.groups().fetch_offsets("g", None, Some(&asked)).unwrap();
    assert_eq!(fetched.len(), 2);
    assert_eq!(fetched[0].name, "t");
    let t: Vec<_> = fetched[0]
        .partitions
        .iter()
        .map(|(i, r)| (*i, r.as_ref().map_err(ClusterError::code).cloned()))
        .collect();
    assert_eq!(
        t,
        vec![
            (1, Ok(Some(o(10)))),
            (-3, Err(UnknownPartition)),
            (0, Ok(None))
        ]
    );
    assert!(matches!(fetched[1].partitions[..], [(0, Ok(None))]));
    let all = c.groups().fetch_offsets("g", None, None).unwrap();
    assert_eq!(all.len(), 1);
    assert!(matches!(&all[0].partitions[..], [(1, Ok(Some(x)))] if x.offset == 10));
    c.lifecycle().close().await.unwrap();
}

#[tokio::test]
async fn a_produce_without_a_partition_goes_where_its_keys_map() {
    let (_dir, c) = with_t(4);
    let keyed = |k: &str| ProduceEntry {
        key: Some(Bytes::copy_from_slice(k.as_bytes())),
        value: Some(Bytes::from_static(b"v")),
        ..ProduceEntry::default()
    };
    let expected = partitioner::partition_for_key(b"user-1", 4);
    assert_eq!(
        c.data()
            .route_produce("t", None, &[keyed("user-1"), ProduceEntry::default()])
            .unwrap(),
        TopicPartition::new("t", expected),
        "keyless records travel with the keyed ones"
    );
    assert_eq!(
        c.data()
            .route_produce("t", Some(3), &[keyed("user-1")])
            .unwrap(),
        TopicPartition::new("t", 3),
        "an explicit partition wins"
    );
    assert_eq!(
        c.data()
            .route_produce("t", None, &[ProduceEntry::default()])
            .unwrap(),
        TopicPartition::new("t", 0)
    );
    // Find a key that maps elsewhere: a batch never splits silently.
    let other = (0..100)
        .map(|i| format!("k{i}"))
        .find(|k| partitioner::partition_for_key(k.as_bytes(), 4) != expected)
        .unwrap();
    let e = c
        .data()
        .route_produce("t", None, &[keyed("user-1"), keyed(&other)])
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidRequest, "{e}");
    assert!(e.to_string().contains("name a partition"), "{e}");
    assert_eq!(
        c.data()
            .route_produce("missing", None, &[keyed("a")])
            .unwrap_err()
            .code(),
        ErrorCode::UnknownTopic
    );
    // The transactional path asks the same function.
    let h = c.transactions().begin("tx").await.unwrap();
    let (p, _) = c
        .transactions()
        .send(&h, "t", Some(Bytes::from_static(b"user-1")), None, None)
        .await
        .unwrap();
    assert_eq!(p, expected);
    c.transactions().abort(&h).await.unwrap();
    c.lifecycle().close().await.unwrap();
}

#[tokio::test]
async fn topic_config_entries_show_the_values_in_force() {
    let (_dir, c) = with_t(1);
    let entries = c.topics().describe_config("t").unwrap();
    let segment = entries.iter().find(|e| e.name == "segment.bytes").unwrap();
    assert_eq!(segment.value, c.config().segment_max_bytes.to_string());
    assert!(entries.iter().all(|e| e.is_default));
    assert_segment_bytes_refused(&c, "small", MIN_SEGMENT_BYTES - 1);
    assert_eq!(
        c.topics().describe_config("missing").unwrap_err().code(),
        ErrorCode::UnknownTopic
    );
    c.lifecycle().close().await.unwrap();
}
