//! The in-process clients against a real cluster: a producer's records
//! reach a group consumer, which commits what it read.

use bytes::Bytes;
use mk_client::*;
use mk_cluster::*;
use std::collections::BTreeMap;
use std::sync::Arc;

#[tokio::test]
async fn producer_and_group_consumer() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_000));
    let c = BrokerCluster::open_with_clock(MiniKafkaConfig::new(dir.path()), clock).unwrap();
    c.topics().create("orders", 3, 1).unwrap();
    let p = c.producer(ProducerOptions::default()).unwrap();
    let mut futs = Vec::new();
    for i in 0..30 {
        futs.push(
            p.send(ProducerRecord::new(
                "orders",
                Some(Bytes::from(format!("k{i}"))),
                Some(Bytes::from_static(b"v")),
            ))
            .unwrap(),
        );
    }
    p.flush().await.unwrap();
    for f in futs {
        f.await.unwrap();
    }
    let consumer = c.consumer("g", ConsumerOptions::default()).unwrap();
    let assigned = consumer.subscribe(&["orders"]).unwrap();
    assert_eq!(assigned.len(), 3);
    let polled = consumer.poll(100).unwrap();
    assert_eq!(polled.len(), 30);
    consumer.commit().unwrap();
    let committed: BTreeMap<_, _> = c.groups().committed("g").unwrap();
    assert_eq!(committed.values().sum::<i64>(), 30);
    c.lifecycle().close().await.unwrap();
}
