//! The acks=all latency benchmark for `cargo xtask bench`: three brokers,
//! min ISR 2 and the real replication driver, woken by each append. Prints
//! one JSON line per figure; it never asserts a time.
#![allow(clippy::print_stdout)]

use bytes::Bytes;
use mk_cluster::*;
use mk_runtime::{DriverConfig, start_drivers};
use std::time::{Duration, Instant};

fn emit(figure: &str, value: f64, unit: &str, workload: &str) {
    println!(
        "{{\"figure\":\"{figure}\",\"value\":{value:.1},\"unit\":\"{unit}\",\"workload\":\"{workload}\"}}"
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let root = tempfile::Builder::new()
        .prefix("mk-runtime-bench")
        .tempdir_in(std::env::var_os("MK_BENCH_DIR").unwrap_or_else(|| ".".into()))
        .expect("temp dir");
    let value = Bytes::from(vec![7u8; 100]);
    // acks=all latency: 3 brokers, min ISR 2, event-driven replication driver.
    let config = MiniKafkaConfig::new(root.path().join("three"))
        .with_brokers(vec![1, 2, 3])
        .with_min_insync_replicas(2);
    let cluster = BrokerCluster::open(config).expect("open");
    cluster.topics().create("acks", 1, 3).expect("topic");
    start_drivers(
        &cluster,
        DriverConfig {
            flush_interval: Some(Duration::from_secs(1)),
            ..DriverConfig::default()
        },
    )
    .expect("drivers");
    let tp = TopicPartition::new("acks", 0);
    let mut latencies = Vec::new();
    for i in 0..5_000 {
        let batch =
            RecordBatch::new(vec![Record::new(None, Some(value.clone()), i)]).expect("batch");
        let t = Instant::now();
        cluster
            .data()
            .append_batch(&tp, batch, AckMode::All)
            .await
            .expect("acks=all");
        latencies.push(t.elapsed().as_secs_f64() * 1e6);
    }
    latencies.sort_by(f64::total_cmp);
    #[allow(
        clippy::cast_possible_truncation,
        reason = "a rank from a fraction in [0, 1] of the sample count, clamped to the last sample"
    )]
    let pct = |p: f64| latencies[((latencies.len() as f64 * p) as usize).min(latencies.len() - 1)];
    let workload = "one 100 B record per append, sequential, 3 brokers, min ISR 2, replication driver woken by the append";
    emit("direct.acks_all.p50_us", pct(0.50), "µs", workload);
    emit("direct.acks_all.p99_us", pct(0.99), "µs", workload);
    cluster.lifecycle().close().await.expect("close");
}
