//! First end-to-end checks of the core through its Rust API.

mod common;

use common::{b, open_with};
use mk_cluster::*;
use std::sync::Arc;

fn open(dir: &std::path::Path, brokers: Vec<i32>, clock: &ManualClock) -> Arc<BrokerCluster> {
    open_with(dir, clock, |c| c.with_brokers(brokers))
}

/// Broker 1 alone on a temporary directory, with `topic` (`partitions`)
/// created.
fn one_broker(
    topic: &str,
    partitions: u32,
) -> (tempfile::TempDir, ManualClock, Arc<BrokerCluster>) {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(1_000);
    let c = open(dir.path(), vec![1], &clock);
    c.topics().create(topic, partitions, 1).unwrap();
    (dir, clock, c)
}

fn batch(values: &[&str]) -> RecordBatch {
    RecordBatch::new(
        values
            .iter()
            .map(|v| Record::new(None, Some(b(v)), 1))
            .collect(),
    )
    .unwrap()
}

#[tokio::test]
async fn produce_fetch_close_reopen() {
    let (dir, clock, c) = one_broker("events", 2);
    let tp = TopicPartition::new("events", 0);
    let r = c
        .data()
        .append_batch(&tp, batch(&["a", "b"]), AckMode::One)
        .await
        .unwrap();
    assert_eq!(r.base_offset, Some(0));
    let got = c
        .data()
        .fetch(&FetchRequest::new(tp.clone(), 0, 10))
        .unwrap();
    assert_eq!(got.records.len(), 2);
    assert_eq!(got.high_watermark, 2);
    c.lifecycle().close().await.unwrap();
    assert_eq!(
        c.data()
            .fetch(&FetchRequest::new(tp.clone(), 0, 10))
            .unwrap_err()
            .code(),
        ErrorCode::ClusterClosed
    );
    assert_eq!(c.lifecycle().owned_tasks(), 0);
    drop(c);
    let c = open(dir.path(), vec![1], &clock);
    assert_eq!(
        c.data()
            .fetch(&FetchRequest::new(tp, 0, 10))
            .unwrap()
            .records
            .len(),
        2
    );
    assert_eq!(c.topics().list().unwrap(), vec!["events".to_string()]);
}

#[tokio::test]
async fn acks_all_waits_for_replication() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(1_000);
    let c = open_with(dir.path(), &clock, |c| {
        let mut c = c.with_brokers(vec![1, 2, 3]);
        c.min_insync_replicas = 2;
        c
    });
    c.topics().create("t", 1, 3).unwrap();
    let tp = TopicPartition::new("t", 0);
    let pending = c
        .data()
        .submit_append(&tp, batch(&["x"]), AckMode::All, None)
        .unwrap();
    let waiter = tokio::spawn(pending.wait());
    tokio::task::yield_now().await;
    assert!(!waiter.is_finished());
    c.steps().replicate_all_once().unwrap();
    let r = waiter.await.unwrap().unwrap();
    assert_eq!(r.base_offset, Some(0));
    assert_eq!(c.data().visible_end(&tp).unwrap(), 1);
}

#[tokio::test]
async fn transactions_commit_and_abort() {
    let (_dir, _, c) = one_broker("out", 1);
    let tp = TopicPartition::new("out", 0);
    let h = c.transactions().begin("tx").await.unwrap();
    c.transactions()
        .send(&h, "out", None, Some(b("one")), None)
        .await
        .unwrap();
    let rc = FetchRequest::new(tp.clone(), 0, 10).with_isolation(Isolation::ReadCommitted);
    assert!(c.data().fetch(&rc).unwrap().records.is_empty());
    c.transactions().commit(&h).await.unwrap();
    assert_eq!(c.data().fetch(&rc).unwrap().records.len(), 1);
    let h = c.transactions().begin("tx").await.unwrap();
    c.transactions()
        .send(&h, "out", None, Some(b("two")), None)
        .await
        .unwrap();
    c.transactions().abort(&h).await.unwrap();
    let all = c.data().fetch(&rc).unwrap();
    assert_eq!(all.records.len(), 1);
    assert_eq!(all.next_offset, c.data().visible_end(&tp).unwrap());
    c.lifecycle().close().await.unwrap();
}
