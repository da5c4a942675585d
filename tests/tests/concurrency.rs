//! Many tokio tasks producing and fetching on many partitions at once, with
//! acks=all and the background replication driver: every acknowledged
//! record is read back exactly once, in order.
#![allow(
    clippy::too_many_lines,
    reason = "a test scenario reads top to bottom as one story; split, its steps would scatter"
)]

use bytes::Bytes;
use mk_adapter_direct::mk_cluster::*;
use mk_runtime::{DriverConfig, start_drivers};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

const PARTITIONS: u32 = 8;
const PRODUCERS: usize = 8;
const PER_PRODUCER: usize = 150;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn e2e_concurrent_producers_and_fetchers_with_acks_all_and_a_replication_driver() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = MiniKafkaConfig::new(dir.path())
        .with_brokers(vec![1, 2, 3])
        .with_min_insync_replicas(2);
    config.segment_max_bytes = 16 * 1024;
    let cluster = BrokerCluster::open(config).unwrap();
    cluster.topics().create("load", PARTITIONS, 3).unwrap();
    start_drivers(
        &cluster,
        DriverConfig {
            flush_interval: Some(Duration::from_millis(50)),
            ..DriverConfig::default()
        },
    )
    .unwrap();
    assert!(
        cluster.lifecycle().owned_tasks() >= 4,
        "the drivers run as owned tasks"
    );

    // Producers: each writes its own sequence of values to every partition
    // in turn, acks=all, waiting for each acknowledgement.
    let mut producers = Vec::new();
    for p in 0..PRODUCERS {
        let c = cluster.clone();
        producers.push(tokio::spawn(async move {
            let mut acked = Vec::new();
            for i in 0..PER_PRODUCER {
                let partition = u32::try_from(p + i).unwrap() % PARTITIONS;
                let tp = TopicPartition::new("load", partition);
                let value = format!("p{p}-{i}");
                let batch =
                    RecordBatch::new(vec![Record::new(None, Some(Bytes::from(value.clone())), 0)])
                        .unwrap();
                let r = c
                    .data()
                    .append_batch(&tp, batch, AckMode::All)
                    .await
                    .unwrap();
                acked.push((partition, r.base_offset.unwrap(), value));
            }
            acked
        }));
    }
    // Fetchers: follow every partition with long polls while producers run.
    let mut fetchers = Vec::new();
    for partition in 0..PARTITIONS {
        let c = cluster.clone();
        fetchers.push(tokio::spawn(async move {
            let tp = TopicPartition::new("load", partition);
            let mut seen: Vec<(i64, String)> = Vec::new();
            let mut offset = 0;
            let expected = (PRODUCERS * PER_PRODUCER) as i64 / i64::from(PARTITIONS);
            while (seen.len() as i64) < expected {
                let r = c
                    .data()
                    .fetch_wait(
                        &FetchRequest::new(tp.clone(), offset, 50),
                        Duration::from_millis(500),
                    )
                    .await
                    .unwrap();
                for rec in r.records {
                    seen.push((
                        rec.offset,
                        String::from_utf8(rec.value.unwrap().to_vec()).unwrap(),
                    ));
                }
                offset = r.next_offset;
            }
            seen
        }));
    }
    let mut acked: BTreeMap<u32, Vec<(i64, String)>> = BTreeMap::new();
    for p in producers {
        for (partition, offset, value) in p.await.unwrap() {
            acked.entry(partition).or_default().push((offset, value));
        }
    }
    for (partition, f) in fetchers.into_iter().enumerate() {
        let seen = tokio::time::timeout(Duration::from_secs(60), f)
            .await
            .unwrap()
            .unwrap();
        let mut expected = acked.remove(&u32::try_from(partition).unwrap()).unwrap();
        expected.sort();
        assert_eq!(
            seen.len(),
            expected.len(),
            "partition {partition}: every acknowledged record once"
        );
        assert_eq!(
            seen, expected,
            "partition {partition}: same offsets, same values, in order"
        );
        let offsets: Vec<i64> = seen.iter().map(|(o, _)| *o).collect();
        assert_eq!(
            offsets,
            (0..offsets.len() as i64).collect::<Vec<_>>(),
            "contiguous offsets"
        );
    }
    // Replicas agree below the HW.
    for part in cluster.views().describe_cluster().unwrap().partitions {
        assert!(part.isr.len() >= 2, "{part:?}");
    }
    let cluster = Arc::clone(&cluster);
    cluster.lifecycle().close().await.unwrap();
    assert_eq!(
        cluster.lifecycle().owned_tasks(),
        0,
        "no task outlives close()"
    );
}
