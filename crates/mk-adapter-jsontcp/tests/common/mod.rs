//! Shared harness of the adapter's integration tests: a cluster on a temp
//! dir with a manual clock, served by a live JsonTcpServer on loopback, and a
//! transcript helper that records raw request and response lines.

#![allow(dead_code)]

use mk_adapter_jsontcp::mk_cluster::{BrokerCluster, ManualClock, MiniKafkaConfig};
use mk_adapter_jsontcp::{JsonTcpClient, JsonTcpServer, ServerOptions};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};

/// A bound on awaits that must complete; never a synchronization device.
pub const PATIENCE: Duration = Duration::from_secs(20);

pub struct Harness {
    pub dir: tempfile::TempDir,
    pub clock: ManualClock,
    pub cluster: Arc<BrokerCluster>,
    pub server: JsonTcpServer,
}

impl Harness {
    pub async fn start(brokers: Vec<i32>, min_isr: usize, options: ServerOptions) -> Harness {
        let dir = tempfile::tempdir().unwrap();
        let clock = ManualClock::new(1_700_000_000_000);
        let config = MiniKafkaConfig::new(dir.path())
            .with_brokers(brokers)
            .with_min_insync_replicas(min_isr);
        let cluster = BrokerCluster::open_with_clock(config, Arc::new(clock.clone())).unwrap();
        let server = JsonTcpServer::start(cluster.clone(), "127.0.0.1:0", options)
            .await
            .unwrap();
        Harness {
            dir,
            clock,
            cluster,
            server,
        }
    }

    /// One broker with `options`.
    pub async fn single(options: ServerOptions) -> Harness {
        Harness::start(vec![1], 1, options).await
    }

    /// One broker with the default options as `tune` changes them.
    pub async fn tuned(tune: impl FnOnce(&mut ServerOptions)) -> Harness {
        let mut options = ServerOptions::default();
        tune(&mut options);
        Harness::single(options).await
    }

    pub async fn lab() -> Harness {
        Harness::start(
            vec![1, 2, 3],
            2,
            ServerOptions {
                lab: true,
                ..ServerOptions::default()
            },
        )
        .await
    }

    pub async fn client(&self) -> JsonTcpClient {
        JsonTcpClient::connect(self.server.local_addr())
            .await
            .unwrap()
    }

    /// A raw connection, split, for tests that speak bytes, not requests.
    pub async fn raw(&self) -> (OwnedReadHalf, OwnedWriteHalf) {
        TcpStream::connect(self.server.local_addr())
            .await
            .unwrap()
            .into_split()
    }

    pub async fn stop(self) {
        within(self.server.shutdown()).await;
        self.cluster.lifecycle().close().await.unwrap();
    }
}

/// Awaits `fut`, failing the test if it takes longer than `PATIENCE`.
pub async fn within<T>(fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(PATIENCE, fut)
        .await
        .expect("an operation that must complete did not")
}

/// The transcript (see `transcript`) of `lines` sent by a new client of
/// `h`, which is stopped afterwards.
pub async fn fresh_transcript(h: Harness, lines: &[&str]) -> String {
    let mut c = h.client().await;
    let t = transcript(&h, &mut c, lines).await;
    h.stop().await;
    t
}

/// Sends each line and records `> request` / `< response` pairs. A line
/// starting with `# advance N` moves the manual clock by N ms instead.
pub async fn transcript(h: &Harness, client: &mut JsonTcpClient, lines: &[&str]) -> String {
    let mut out = String::new();
    for line in lines {
        if let Some(ms) = line.strip_prefix("# advance ") {
            h.clock.advance(ms.parse().unwrap());
            out.push_str(line);
            out.push('\n');
            continue;
        }
        let answer = within(client.call_raw(line.as_bytes())).await.unwrap();
        out.push_str("> ");
        out.push_str(line);
        out.push_str("\n< ");
        out.push_str(std::str::from_utf8(&answer).unwrap());
        out.push('\n');
    }
    out
}
