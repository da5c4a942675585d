//! The Prometheus endpoint (`--metrics-listen`, off by default): the
//! `metrics` facade's recorder (metrics-exporter-prometheus) collects what
//! both servers count per request — requests, errors, latency per JSON-TCP
//! operation and per Kafka API, bytes in and out — and every scrape adds
//! the cluster's state as gauges read at that moment: per partition the
//! leader log's size, high watermark, log start and end, last stable
//! offset, replica and ISR counts; per group and partition the lag.
//!
//! The endpoint is a minimal HTTP/1.1 responder on its own listener:
//! `GET /metrics` answers the text exposition format, anything else 404,
//! one request per connection. It reads at most a small bounded request
//! head with a timeout, so a slow or hostile client costs one task.

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use mk_cluster::BrokerCluster;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The longest request head the endpoint reads.
const MAX_HEAD_BYTES: usize = 8 * 1024;
/// How long a client may take to send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(5);

/// Installs the process-wide recorder. Only the serve command calls it,
/// and only with `--metrics-listen`, so without the flag every counter of
/// the servers is a no-op.
pub fn install() -> Result<PrometheusHandle, String> {
    PrometheusBuilder::new()
        .install_recorder()
        .map_err(|e| format!("cannot install the metrics recorder: {e}"))
}

/// The running endpoint; dropping it stops accepting.
pub struct Endpoint {
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Serves scrapes on `listener` until the endpoint is dropped.
pub fn start(
    listener: TcpListener,
    handle: PrometheusHandle,
    cluster: Arc<BrokerCluster>,
) -> Endpoint {
    let task = tokio::spawn(async move {
        loop {
            let stream = match listener.accept().await {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of descriptors, say: back off instead of spinning.
                    tracing::warn!(error = %e, "the metrics endpoint cannot accept");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            let (handle, cluster) = (handle.clone(), cluster.clone());
            tokio::spawn(async move {
                if let Err(e) = answer(stream, &handle, &cluster).await {
                    tracing::debug!(error = %e, "metrics scrape failed");
                }
            });
        }
    });
    Endpoint { task }
}

async fn answer(
    mut stream: TcpStream,
    handle: &PrometheusHandle,
    cluster: &BrokerCluster,
) -> std::io::Result<()> {
    let mut head = Vec::with_capacity(512);
    let mut chunk = [0u8; 1024];
    let read_head = async {
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_HEAD_BYTES {
            let n = stream.read(&mut chunk).await?;
            if n == 0 {
                break;
            }
            head.extend_from_slice(&chunk[..n]);
        }
        Ok::<_, std::io::Error>(())
    };
    if tokio::time::timeout(HEAD_TIMEOUT, read_head).await.is_err() {
        return Ok(());
    }
    let first = head.split(|b| *b == b'\n').next().unwrap_or_default();
    let mut words = first.split(|b| *b == b' ');
    let (method, path) = (words.next(), words.next());
    let (status, body) = match (method, path) {
        (Some(b"GET"), Some(b"/metrics")) => {
            record_cluster_state(cluster);
            ("200 OK", handle.render())
        }
        _ => (
            "404 Not Found",
            "only GET /metrics is served here\n".to_string(),
        ),
    };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}

/// Sets the gauges of the cluster's state as it is now. A closed or failed
/// cluster has no state to show; the counters still render.
fn record_cluster_state(cluster: &BrokerCluster) {
    if let Ok(d) = cluster.views().describe_cluster() {
        for p in &d.partitions {
            let labels = [
                ("topic", p.topic.clone()),
                ("partition", p.partition.to_string()),
            ];
            let set = |name: &'static str, v: f64| metrics::gauge!(name, &labels).set(v);
            set("mk_partition_high_watermark", p.high_watermark as f64);
            set("mk_partition_log_end_offset", p.log_end_offset as f64);
            set("mk_partition_log_start_offset", p.log_start_offset as f64);
            set(
                "mk_partition_last_stable_offset",
                p.last_stable_offset as f64,
            );
            set("mk_partition_replicas", p.replicas.len() as f64);
            set("mk_partition_isr_size", p.isr.len() as f64);
            set("mk_partition_leader", f64::from(p.leader_id));
        }
    }
    if let Ok(sizes) = cluster.views().partition_log_bytes() {
        for (tp, bytes) in sizes {
            metrics::gauge!("mk_partition_size_bytes", "topic" => tp.topic, "partition" => tp.partition.to_string())
                .set(bytes as f64);
        }
    }
    if let Ok(lags) = cluster.groups().lags() {
        for (group, tp, lag) in lags {
            metrics::gauge!("mk_group_lag", "group" => group, "topic" => tp.topic, "partition" => tp.partition.to_string())
                .set(lag as f64);
        }
    }
}
