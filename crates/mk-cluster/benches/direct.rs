//! Direct API benchmarks for `cargo xtask bench`: produce and fetch through
//! `BrokerCluster` (the acks=all latency, which needs the replication
//! driver, is mk-runtime's `acks_all`). Prints one JSON line per figure; it
//! never asserts a time.
#![allow(clippy::print_stdout)]

use bytes::Bytes;
use mk_cluster::*;
use std::time::Instant;

fn emit(figure: &str, value: f64, unit: &str, workload: &str) {
    println!(
        "{{\"figure\":\"{figure}\",\"value\":{value:.1},\"unit\":\"{unit}\",\"workload\":\"{workload}\"}}"
    );
}

fn entries(n: usize, value: &Bytes) -> Vec<ProduceEntry> {
    (0..n)
        .map(|_| ProduceEntry {
            value: Some(value.clone()),
            ..ProduceEntry::default()
        })
        .collect()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let root = tempfile::Builder::new()
        .prefix("mk-cluster-bench")
        .tempdir_in(std::env::var_os("MK_BENCH_DIR").unwrap_or_else(|| ".".into()))
        .expect("temp dir");

    // Produce and fetch on one broker.
    let cluster = BrokerCluster::open(MiniKafkaConfig::new(root.path().join("one"))).expect("open");
    cluster.topics().create("bench", 1, 1).expect("topic");
    let tp = TopicPartition::new("bench", 0);
    let value = Bytes::from(vec![7u8; 100]);
    let batches = 20_000;
    let start = Instant::now();
    for _ in 0..batches {
        cluster
            .data()
            .produce(ProduceRequest {
                tp: tp.clone(),
                records: entries(100, &value),
                acks: AckMode::One,
                producer: None,
            })
            .await
            .expect("produce");
    }
    let secs = start.elapsed().as_secs_f64();
    let records = (batches * 100) as f64;
    let workload = "cluster.data().produce, 100 records of 100 B per call, acks=1, 1 broker";
    emit(
        "direct.produce.records_per_s",
        records / secs,
        "records/s",
        workload,
    );
    emit(
        "direct.produce.mb_per_s",
        records * 100.0 / secs / 1e6,
        "MB/s",
        workload,
    );

    let start = Instant::now();
    let mut offset = 0;
    let mut fetched = 0usize;
    let end = cluster.data().visible_end(&tp).expect("hw");
    while offset < end {
        let r = cluster
            .data()
            .fetch(&FetchRequest::new(tp.clone(), offset, 1000))
            .expect("fetch");
        fetched += r.records.len();
        offset = r.next_offset;
    }
    let secs = start.elapsed().as_secs_f64();
    let workload = "cluster.data().fetch from offset 0, 1000 records per call, 100 B values";
    emit(
        "direct.fetch.records_per_s",
        fetched as f64 / secs,
        "records/s",
        workload,
    );
    emit(
        "direct.fetch.mb_per_s",
        fetched as f64 * 100.0 / secs / 1e6,
        "MB/s",
        workload,
    );
    cluster.lifecycle().close().await.expect("close");
}
