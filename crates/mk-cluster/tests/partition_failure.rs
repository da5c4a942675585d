//! A failure of the code, not of the disk, stays with its partition
//! (issue 22, item 2): a failed invariant under a partition's lock, or a
//! lock poisoned by a panic, takes that partition offline as FAILED —
//! typed, reported by describe, stats and health like a damaged one — while
//! every other partition keeps serving; close still flushes and
//! checkpoints the healthy partitions and releases the directory, and the
//! next open recovers the failed one as after a crash.

mod common;

use common::{append_value, fresh_cluster, open, tp};
use mk_cluster::*;

async fn put(c: &BrokerCluster, p: &TopicPartition, value: &str) -> Result<i64> {
    let r = append_value(c, p, value, 1).await?;
    Ok(r.base_offset.unwrap())
}

fn values(c: &BrokerCluster, p: &TopicPartition) -> Result<Vec<String>> {
    let got = c.data().fetch(&FetchRequest::new(p.clone(), 0, 1_000))?;
    Ok(got
        .records
        .iter()
        .map(|r| String::from_utf8_lossy(r.value.as_deref().unwrap_or_default()).into_owned())
        .collect())
}

fn is_failed(e: &ClusterError, p: &TopicPartition) -> bool {
    matches!(e, ClusterError::PartitionFailed { partition, .. } if partition == p)
        && e.code() == ErrorCode::StorageError
}

/// What every view says while `failed` is offline and `healthy` serves.
fn assert_reported(c: &BrokerCluster, failed: &TopicPartition, healthy: &[TopicPartition]) {
    assert_eq!(c.lifecycle().state(), LifecycleState::Running);
    let described = c.topics().describe(&failed.topic).unwrap();
    let cause = described.partitions[failed.partition as usize]
        .damaged
        .clone()
        .unwrap_or_default();
    assert!(cause.contains("FAILED"), "{described:?}");
    for h in healthy {
        let d = c.topics().describe(&h.topic).unwrap();
        assert_eq!(d.partitions[h.partition as usize].damaged, None, "{h}");
    }
    let cluster = c.views().describe_cluster().unwrap();
    let offline: Vec<_> = cluster
        .partitions
        .iter()
        .filter(|p| p.damaged.is_some())
        .map(|p| TopicPartition::new(&p.topic, p.partition))
        .collect();
    assert_eq!(offline, vec![failed.clone()]);
    assert_eq!(c.views().stats().unwrap().damaged_partitions, 1);
    let health = c.lifecycle().health();
    assert_eq!(health.damaged.len(), 1);
    assert_eq!(&health.damaged[0].0, failed);
    assert!(!health.is_healthy());
}

#[tokio::test]
async fn a_failed_invariant_under_a_partition_lock_fails_only_that_partition() {
    let (dir, clock, c) = fresh_cluster();
    c.topics().create("a", 2, 1).unwrap();
    c.topics().create("b", 1, 1).unwrap();
    let (a0, a1, b0) = (tp("a", 0), tp("a", 1), tp("b", 0));
    for p in [&a0, &a1, &b0] {
        put(&c, p, &format!("{p} first")).await.unwrap();
    }
    // The next write into a-1's directory fails an invariant (a panic deep
    // in the log, under the partition's write lock).
    c.failure_injector().fail_invariant_at_write_under(&format!(
        "{}a-1{}",
        std::path::MAIN_SEPARATOR,
        std::path::MAIN_SEPARATOR
    ));
    let e = put(&c, &a1, "a-1 second").await.unwrap_err();
    assert!(is_failed(&e, &a1), "{e:?}");
    assert!(e.to_string().contains("injected invariant failure"), "{e}");
    // From now on a-1 answers the typed error, without panicking again.
    let again = put(&c, &a1, "a-1 third").await.unwrap_err();
    assert!(is_failed(&again, &a1), "{again:?}");
    assert!(is_failed(&values(&c, &a1).unwrap_err(), &a1));
    // Everything else serves, reads and writes.
    put(&c, &a0, "a-0 second").await.unwrap();
    put(&c, &b0, "b-0 second").await.unwrap();
    assert_eq!(values(&c, &a0).unwrap(), ["a-0 first", "a-0 second"]);
    assert_eq!(values(&c, &b0).unwrap(), ["b-0 first", "b-0 second"]);
    c.topics().create("c", 1, 1).unwrap();
    assert_reported(&c, &a1, &[a0.clone(), b0.clone()]);
    // The steps over every partition go on for the others.
    c.steps().run_flush_cycle().unwrap();
    c.steps().replicate_all_once().unwrap();
    c.steps().apply_retention_all().unwrap();
    c.lifecycle().close().await.unwrap();
    assert_eq!(c.lifecycle().state(), LifecycleState::Closed);
    // The healthy partitions were closed cleanly (their clean-shutdown
    // checkpoint is written), the failed one was not.
    let checkpoint = |p: &str| {
        dir.path()
            .join("broker-1")
            .join(p)
            .join("clean-shutdown")
            .exists()
    };
    assert!(checkpoint("a-0") && checkpoint("b-0"));
    assert!(!checkpoint("a-1"));
    drop(c);
    // The directory was released: it opens again, and the failed partition
    // is recovered as after a crash with what it had acknowledged.
    let c = open(dir.path(), &clock);
    assert!(c.lifecycle().health().is_healthy());
    assert_eq!(values(&c, &a1).unwrap()[0], "a-1 first");
    assert_eq!(values(&c, &a0).unwrap(), ["a-0 first", "a-0 second"]);
    put(&c, &a1, "a-1 after the restart").await.unwrap();
    c.lifecycle().close().await.unwrap();
}

#[tokio::test]
async fn a_poisoned_partition_lock_fails_only_that_partition_and_close_still_works() {
    let (dir, clock, c) = fresh_cluster();
    c.topics().create("a", 2, 1).unwrap();
    let (a0, a1) = (tp("a", 0), tp("a", 1));
    put(&c, &a0, "zero").await.unwrap();
    put(&c, &a1, "one").await.unwrap();
    c.poison_partition_lock(&a1).unwrap();
    // Before anyone touched it, describe already finds it offline.
    assert_reported(&c, &a1, std::slice::from_ref(&a0));
    assert!(is_failed(&values(&c, &a1).unwrap_err(), &a1));
    assert!(is_failed(&put(&c, &a1, "x").await.unwrap_err(), &a1));
    assert_eq!(c.data().log_end_offset(&a0).unwrap(), 1);
    put(&c, &a0, "zero again").await.unwrap();
    c.steps().run_flush_cycle().unwrap();
    c.lifecycle().close().await.unwrap();
    let clean = |p: &str| {
        dir.path()
            .join("broker-1")
            .join(p)
            .join("clean-shutdown")
            .exists()
    };
    assert!(clean("a-0"));
    assert!(!clean("a-1"));
    drop(c);
    let c = open(dir.path(), &clock);
    assert_eq!(values(&c, &a0).unwrap(), ["zero", "zero again"]);
    assert_eq!(values(&c, &a1).unwrap(), ["one"]);
    c.lifecycle().close().await.unwrap();
}

#[tokio::test]
async fn a_failed_invariant_in_a_broker_wide_store_fails_the_broker_loudly_not_every_caller() {
    let (_dir, _, c) = fresh_cluster();
    c.topics().create("a", 1, 1).unwrap();
    // The metadata store writes metadata.json: a failed invariant there
    // leaves the store in an unknown state, so the broker fails (and a
    // supervisor restarts it), and every later call answers that, typed.
    c.failure_injector()
        .fail_invariant_at_write_under("metadata.json");
    let created = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        c.topics().create("b", 1, 1)
    }));
    assert!(created.is_err(), "the panic reaches the caller once");
    let e = c.topics().create("c", 1, 1).unwrap_err();
    assert_eq!(e.code(), ErrorCode::ClusterFailed, "{e}");
    assert!(e.to_string().contains("metadata store"), "{e}");
    assert!(matches!(c.lifecycle().state(), LifecycleState::Failed(_)));
}
