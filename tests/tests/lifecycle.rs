//! Graceful close, crash and terminal failure of the cluster, and the data
//! directory lock.

mod common;

use common::*;
use mk_adapter_direct::mk_cluster::*;
use mk_client::*;

#[tokio::test]
async fn e2e_graceful_close_checkpoints_and_refuses_later_calls() {
    let mut env = Env::new(vec![1, 2], 1);
    env.admin.create_topic("c", 2, 2).unwrap();
    env.produce("c", 0, &["a", "b", "c"], AckMode::One)
        .await
        .unwrap();
    env.admin.replicate_once().unwrap();
    let p = env.lingering_producer();
    let queued = p
        .send(ProducerRecord::new("c", None, Some(b("queued"))).with_partition(1))
        .unwrap();
    let consumer = env
        .cluster
        .consumer("g", ConsumerOptions::default())
        .unwrap();
    consumer.subscribe(&["c"]).unwrap();
    env.cluster.lifecycle().close().await.unwrap();
    assert_eq!(env.cluster.lifecycle().state(), LifecycleState::Closed);
    assert_eq!(
        queued.await.unwrap().offset,
        Some(0),
        "close flushes producers"
    );
    assert_eq!(
        env.cluster.lifecycle().owned_tasks(),
        0,
        "no task outlives close()"
    );
    for code in [
        env.admin.list_topics().unwrap_err().code(),
        env.produce("c", 0, &["x"], AckMode::One)
            .await
            .unwrap_err()
            .code(),
        env.admin.replicate_once().unwrap_err().code(),
        env.client
            .join_group("g", "m", &["c".to_string()])
            .unwrap_err()
            .code(),
    ] {
        assert_eq!(code, ErrorCode::ClusterClosed);
    }
    env.cluster.lifecycle().close().await.unwrap(); // idempotent
    env.crash_restart();
    let info = env.partition("c", 0);
    assert_eq!(
        info.high_watermark, 3,
        "the HW checkpoint survives a restart"
    );
    assert_eq!(info.isr, vec![1, 2]);
    assert_eq!(env.values("c", 1), vec![(0, "queued".to_string())]);
    let g = env.cluster.groups().describe("g").unwrap().unwrap();
    assert!(
        g.members.is_empty(),
        "close made the consumer leave its group"
    );
}

#[tokio::test]
async fn e2e_crash_drops_queued_work_and_reopen_recovers_acknowledged_writes() {
    let mut env = Env::with_topic("c", 1);
    env.produce_each("c", 0, "v", 0..20).await;
    let p = env.lingering_producer();
    let queued = p
        .send(ProducerRecord::new("c", None, Some(b("never"))))
        .unwrap();
    env.crash_restart();
    assert_eq!(
        queued.await.unwrap_err().code(),
        ErrorCode::ClusterClosed,
        "queued work is cancelled"
    );
    let values = env.values("c", 0);
    assert_eq!(values.len(), 20, "every acknowledged write is recovered");
    assert_eq!(values[19], (19, "v19".to_string()));
}

#[tokio::test]
async fn e2e_io_failure_is_terminal_and_keeps_its_cause() {
    let env = Env::with_topic("f", 1);
    env.produce("f", 0, &["ok"], AckMode::One).await.unwrap();
    env.cluster.failure_injector().fail_syncs(true);
    let err = env.admin.flush_cycle().unwrap_err();
    assert_eq!(err.code(), ErrorCode::ClusterFailed);
    assert!(err.to_string().contains("injected fsync failure"), "{err}");
    env.cluster.failure_injector().clear();
    assert!(matches!(
        env.cluster.lifecycle().state(),
        LifecycleState::Failed(_)
    ));
    let later = env
        .produce("f", 0, &["after"], AckMode::One)
        .await
        .unwrap_err();
    assert_eq!(later.code(), ErrorCode::ClusterFailed);
    assert!(
        later.to_string().contains("injected fsync failure"),
        "the original cause is kept: {later}"
    );
    assert_eq!(
        env.cluster.lifecycle().close().await.unwrap_err().code(),
        ErrorCode::ClusterFailed
    );
}

#[tokio::test]
async fn e2e_failed_append_write_makes_the_cluster_failed() {
    let env = Env::with_topic("f", 1);
    env.cluster.failure_injector().fail_writes_after(0);
    let err = env.produce("f", 0, &["x"], AckMode::One).await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::ClusterFailed);
    env.cluster.failure_injector().clear();
    assert_eq!(
        env.admin.list_topics().unwrap_err().code(),
        ErrorCode::ClusterFailed
    );
}

#[tokio::test]
async fn e2e_a_second_opener_of_the_data_dir_fails_fast() {
    let env = Env::new(vec![1], 1);
    let err = env.try_reopen().unwrap_err();
    assert_eq!(err.code(), ErrorCode::StorageError);
    assert!(
        err.to_string().contains("in use by another process"),
        "{err}"
    );
    env.cluster.lifecycle().close().await.unwrap();
    env.try_reopen().unwrap();
}

#[tokio::test]
async fn e2e_unparsable_metadata_is_storage_error_never_reset() {
    let env = Env::with_topic("m", 1);
    env.cluster.lifecycle().close().await.unwrap();
    std::fs::write(
        env.dir.path().join("metadata.json"),
        b"{\"version\":1,\"topics\":",
    )
    .unwrap();
    let err = env.try_reopen().unwrap_err();
    assert_eq!(err.code(), ErrorCode::StorageError);
    assert_eq!(
        std::fs::read(env.dir.path().join("metadata.json")).unwrap(),
        b"{\"version\":1,\"topics\":",
        "the broken store is left for the operator"
    );
}

#[tokio::test]
async fn e2e_topic_validation_and_internal_topics() {
    let env = Env::new(vec![1, 2], 1);
    // The core reports which argument is invalid (the codes Kafka clients
    // expect); the JSON protocol reports all of them as INVALID_REQUEST.
    for (name, parts, rf, code) in [
        ("", 1, 1, ErrorCode::InvalidTopic),
        ("bad/name", 1, 1, ErrorCode::InvalidTopic),
        ("ok", 0, 1, ErrorCode::InvalidPartitions),
        ("ok", 1, 3, ErrorCode::InvalidReplicationFactor),
        ("ok", 1, 0, ErrorCode::InvalidReplicationFactor),
    ] {
        assert_eq!(
            env.admin.create_topic(name, parts, rf).unwrap_err().code(),
            code,
            "{name} {parts} {rf}"
        );
    }
    assert_eq!(
        env.admin
            .create_topic(OFFSETS_TOPIC, 1, 1)
            .unwrap_err()
            .code(),
        ErrorCode::InvalidTopic
    );
    env.admin.create_topic("ok", 3, 2).unwrap();
    let d = env.admin.describe_topic("ok").unwrap();
    let placement: Vec<Vec<i32>> = d.partitions.iter().map(|p| p.replicas.clone()).collect();
    assert_eq!(
        placement,
        vec![vec![1, 2], vec![2, 1], vec![1, 2]],
        "replicas = B[(p + i) % len]"
    );
    assert_eq!(
        env.admin.create_topic("ok", 1, 1).unwrap_err().code(),
        ErrorCode::TopicAlreadyExists
    );
    // Committed offsets exist, yet the internal topic is never listed.
    env.client
        .join_group("g", "m", &["ok".to_string()])
        .unwrap();
    assert_eq!(env.admin.list_topics().unwrap(), vec!["ok".to_string()]);
    assert_eq!(
        env.admin.describe_topic("missing").unwrap_err().code(),
        ErrorCode::UnknownTopic
    );
    let err = env
        .client
        .fetch(&FetchRequest::new(tp("ok", 9), 0, 1))
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::UnknownPartition);
    assert_eq!(
        env.client
            .fetch(&FetchRequest::new(tp("ok", 0), 0, -1))
            .unwrap_err()
            .code(),
        ErrorCode::InvalidRequest
    );
    assert_eq!(
        env.client
            .fetch(&FetchRequest::new(tp("ok", 0), 1, 1))
            .unwrap_err()
            .code(),
        ErrorCode::OffsetOutOfRange
    );
}

#[tokio::test]
async fn e2e_flush_policy_fsyncs_after_every_n_messages() {
    let env = Env::with(|c| {
        c.flush = FlushPolicy {
            messages: Some(3),
            interval_ms: None,
        }
    });
    env.admin.create_topic("fp", 1, 1).unwrap();
    env.produce("fp", 0, &["a", "b"], AckMode::One)
        .await
        .unwrap();
    // The next append crosses 3 messages and must fsync: a failing fsync
    // proves the flush happens on the append path and fails loudly.
    env.cluster.failure_injector().fail_syncs(true);
    let err = env
        .produce("fp", 0, &["c"], AckMode::One)
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::ClusterFailed, "{err}");
    env.cluster.failure_injector().clear();
}

#[tokio::test]
async fn e2e_without_a_flush_policy_appends_do_not_fsync() {
    let env = Env::with_topic("fp", 1);
    env.cluster.failure_injector().fail_syncs(true);
    env.produce_each("fp", 0, "v", 0..10).await;
    assert_eq!(
        env.admin.flush_cycle().unwrap_err().code(),
        ErrorCode::ClusterFailed,
        "fsync happens on the flush cycle"
    );
    env.cluster.failure_injector().clear();
}
