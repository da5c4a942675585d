//! Faults stay local, bounded and loud (issue 12), tested in the core:
//! every fetch answer is bounded, damage found while reading stays with its
//! partition, a full disk fails writes typed while reads go on, lost or
//! damaged stores are refused or rebuilt safely, and nothing of a topic is
//! left half-created.

use bytes::Bytes;
use mk_cluster::*;
use std::sync::Arc;

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

fn tp(t: &str, p: u32) -> TopicPartition {
    TopicPartition::new(t, p)
}

fn open_with(
    dir: &std::path::Path,
    clock: &ManualClock,
    f: impl FnOnce(MiniKafkaConfig) -> MiniKafkaConfig,
) -> Arc<BrokerCluster> {
    BrokerCluster::open_with_clock(f(MiniKafkaConfig::new(dir)), Arc::new(clock.clone())).unwrap()
}

fn open(dir: &std::path::Path, clock: &ManualClock) -> Arc<BrokerCluster> {
    open_with(dir, clock, |c| c)
}

async fn put(c: &BrokerCluster, tp: &TopicPartition, value: &str) -> i64 {
    c.append_batch(
        tp,
        RecordBatch::new(vec![Record::new(None, Some(b(value)), 1)]).unwrap(),
        AckMode::One,
    )
    .await
    .unwrap()
    .base_offset
    .unwrap()
}

#[tokio::test]
async fn a_json_fetch_is_capped_by_fetch_max_bytes_whatever_it_asks() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(1_000);
    let c = open_with(dir.path(), &clock, |mut c| {
        c.fetch_max_bytes = 2_000;
        c
    });
    c.create_topic("cap", 1, 1).unwrap();
    let p = tp("cap", 0);
    let v = "v".repeat(600);
    for _ in 0..20 {
        put(&c, &p, &v).await;
    }
    for isolation in [Isolation::ReadUncommitted, Isolation::ReadCommitted] {
        for asked in [None, Some(1 << 30)] {
            let mut req = FetchRequest::new(p.clone(), 0, i64::MAX).with_isolation(isolation);
            req.max_bytes = asked;
            let got = c.fetch(&req).unwrap();
            assert_eq!(
                got.records.len(),
                3,
                "{isolation:?} {asked:?}: 3 x 600 <= 2000"
            );
            assert_eq!(got.next_offset, 3, "the reader resumes after the cut");
        }
        // A client limit below the cap still wins, and a record larger than
        // every limit still goes out alone.
        let mut req = FetchRequest::new(p.clone(), 5, i64::MAX).with_isolation(isolation);
        req.max_bytes = Some(10);
        let got = c.fetch(&req).unwrap();
        assert_eq!(got.records.len(), 1);
        assert_eq!(got.records[0].offset, 5);
    }
    // Reading the whole partition in capped answers loses nothing.
    let mut offset = 0;
    let mut seen = 0;
    while offset < 20 {
        let got = c
            .fetch(&FetchRequest::new(p.clone(), offset, i64::MAX))
            .unwrap();
        seen += got.records.len();
        offset = got.next_offset;
    }
    assert_eq!(seen, 20);
    c.close().await.unwrap();
}
