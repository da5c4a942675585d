//! The Prometheus endpoint (`--metrics-listen`, off by default) and the
//! health probes on the same port:
//!
//! - `GET /metrics`: the text exposition format (`exposition.rs`) with
//!   every family of `catalog.rs` — what the listeners count per request
//!   through the `metrics` facade (`recorder.rs`: counters and latency
//!   histograms), the process (`process.rs`, from /proc) and the cluster's
//!   state read from mk-cluster at that moment (`cluster.rs`).
//! - `GET /healthz`: 200 while the process serves HTTP at all.
//! - `GET /readyz`: 200 once the data directory is recovered and every
//!   listener accepts, while the broker runs; 503 before (recovery), after
//!   a failure, and while shutting down.
//!
//! The endpoint starts before the data directory is opened, so probes get
//! an answer during a long recovery. It is a minimal HTTP/1.1 responder,
//! one request per connection, reading at most a small bounded request
//! head with a timeout, so a slow or hostile client costs one task.
//!
//! The exposition is written here rather than by an exporter crate: the
//! order of families and series must not change between scrapes (the
//! exporter crate the broker used renders from hash maps), and the
//! cluster's series are computed per scrape, so a deleted topic's series
//! disappear instead of lingering in a recorder.

mod catalog;
mod cluster;
mod exposition;
mod process;
mod recorder;

use exposition::{Exposition, labels};
use mk_cluster::{BrokerCluster, LifecycleState};
use recorder::Store;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The longest request head the endpoint reads.
const MAX_HEAD_BYTES: usize = 8 * 1024;
/// How long a client may take to send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(5);

/// What the probes answer from: the cluster once it is open and every
/// listener accepts, nothing before and after.
#[derive(Debug, Default)]
struct Readiness {
    cluster: Mutex<Option<Arc<BrokerCluster>>>,
}

impl Readiness {
    fn cluster(&self) -> Option<Arc<BrokerCluster>> {
        self.cluster
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// `None` when ready, else why not.
    fn not_ready(&self) -> Option<String> {
        match self.cluster() {
            None => Some("starting (recovering the data directory) or stopping".to_string()),
            Some(c) => match c.lifecycle().state() {
                LifecycleState::Running => None,
                LifecycleState::Failed(cause) => Some(format!("the broker failed: {cause}")),
                LifecycleState::Closing | LifecycleState::Closed => {
                    Some("shutting down".to_string())
                }
            },
        }
    }
}

/// The running endpoint; dropping it stops accepting.
pub struct Endpoint {
    task: tokio::task::JoinHandle<()>,
    readiness: Arc<Readiness>,
    addr: SocketAddr,
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Endpoint {
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The broker is open and every listener accepts: `/readyz` answers
    /// 200 (while it runs) and scrapes include the cluster's state.
    pub fn ready(&self, cluster: Arc<BrokerCluster>) {
        *self
            .readiness
            .cluster
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(cluster);
    }

    /// Stops accepting and waits until the listener is closed, so a
    /// restart can bind the same address at once.
    pub async fn stop(mut self) {
        self.task.abort();
        let _ = (&mut self.task).await;
    }

    /// Shutdown began: `/readyz` answers 503 from now on.
    pub fn not_ready(&self) {
        *self
            .readiness
            .cluster
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = None;
    }
}

/// Serves scrapes and probes on `listener` until the endpoint is dropped;
/// installs the process's recorder first (refused only if another one is
/// installed in this process).
pub fn start(listener: TcpListener) -> Result<Endpoint, String> {
    let store = recorder::store()?;
    let addr = listener
        .local_addr()
        .map_err(|e| format!("cannot start: {e}"))?;
    let readiness = Arc::new(Readiness::default());
    let shared = readiness.clone();
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
            let (store, readiness) = (store.clone(), shared.clone());
            tokio::spawn(async move {
                if let Err(e) = answer(stream, &store, &readiness).await {
                    tracing::debug!(error = %e, "metrics scrape failed");
                }
            });
        }
    });
    Ok(Endpoint {
        task,
        readiness,
        addr,
    })
}

async fn answer(
    mut stream: TcpStream,
    store: &Arc<Store>,
    readiness: &Readiness,
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
    // A query string does not change the answer (probes sometimes add one).
    let path = path.map(|p| p.split(|b| *b == b'?').next().unwrap_or_default());
    let (status, content_type, body) = match (method, path) {
        (Some(b"GET"), Some(b"/metrics")) => {
            let store = store.clone();
            let cluster = readiness.cluster();
            let ready = readiness.not_ready().is_none();
            // Reading the cluster's state takes its locks and may touch the
            // disk (sizes): off the reactor threads.
            let text =
                tokio::task::spawn_blocking(move || scrape(&store, cluster.as_deref(), ready))
                    .await
                    .unwrap_or_default();
            ("200 OK", "text/plain; version=0.0.4; charset=utf-8", text)
        }
        (Some(b"GET"), Some(b"/healthz")) => {
            ("200 OK", "text/plain; charset=utf-8", "ok\n".to_string())
        }
        (Some(b"GET"), Some(b"/readyz")) => match readiness.not_ready() {
            None => ("200 OK", "text/plain; charset=utf-8", "ready\n".to_string()),
            Some(why) => (
                "503 Service Unavailable",
                "text/plain; charset=utf-8",
                format!("not ready: {why}\n"),
            ),
        },
        _ => (
            "404 Not Found",
            "text/plain; charset=utf-8",
            "GET /metrics, /healthz or /readyz\n".to_string(),
        ),
    };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}

/// One scrape's text.
fn scrape(store: &Store, cluster: Option<&BrokerCluster>, ready: bool) -> String {
    let mut e = Exposition::default();
    catalog::declare(&mut e);
    e.sample(
        "mk_build_info",
        labels([("version", env!("CARGO_PKG_VERSION"))]),
        1.0,
    );
    e.sample("mk_ready", Vec::new(), f64::from(u8::from(ready)));
    process::write(&mut e);
    store.write(&mut e);
    if let Some(c) = cluster {
        cluster::write(&mut e, c);
    }
    e.render()
}

#[cfg(test)]
mod tests {
    use super::*;
    use mk_cluster::MiniKafkaConfig;

    async fn get(addr: SocketAddr, path: &str) -> String {
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        out
    }

    #[tokio::test]
    async fn readyz_is_503_until_the_cluster_is_open_and_again_once_it_closes() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let endpoint = start(listener).unwrap();
        let addr = endpoint.local_addr();
        assert!(get(addr, "/healthz").await.starts_with("HTTP/1.1 200"));
        let before = get(addr, "/readyz").await;
        assert!(before.starts_with("HTTP/1.1 503"), "{before}");
        assert!(before.contains("recovering"), "{before}");
        let scrape = get(addr, "/metrics").await;
        assert!(scrape.contains("\nmk_ready 0\n"), "{scrape}");
        assert!(!scrape.contains("\nmk_topics "), "no cluster yet: {scrape}");

        let dir = tempfile::tempdir().unwrap();
        let cluster = BrokerCluster::open(MiniKafkaConfig::new(dir.path())).unwrap();
        endpoint.ready(cluster.clone());
        assert!(
            get(addr, "/readyz?verbose")
                .await
                .starts_with("HTTP/1.1 200")
        );
        let scrape = get(addr, "/metrics").await;
        assert!(scrape.contains("\nmk_ready 1\n"), "{scrape}");
        assert!(scrape.contains("\nmk_topics "), "{scrape}");

        cluster.lifecycle().close().await.unwrap();
        let closed = get(addr, "/readyz").await;
        assert!(closed.starts_with("HTTP/1.1 503"), "{closed}");
        assert!(closed.contains("shutting down"), "{closed}");
        endpoint.not_ready();
        assert!(get(addr, "/readyz").await.starts_with("HTTP/1.1 503"));
        assert!(get(addr, "/nothing").await.starts_with("HTTP/1.1 404"));
    }
}
