//! The console's HTTP/1.1 server: an accept loop with a bound on open
//! connections, one hyper connection per client with a header-read
//! timeout, and a graceful shutdown that lets requests in flight finish
//! within a grace period (idle keep-alive connections close at once).

use crate::api;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use mk_cluster::BrokerCluster;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Limits of the console's server.
#[derive(Debug, Clone)]
pub struct ConsoleOptions {
    /// Connections served at once; more wait in the listen backlog.
    pub max_connections: usize,
    /// The largest request body (a produced record with its headers, a
    /// topic's configs).
    pub max_body_bytes: usize,
    /// A client that has not sent a whole request head within this is
    /// disconnected.
    pub header_read_timeout: Duration,
    /// How long shutting down waits for requests in flight.
    pub shutdown_grace: Duration,
}

impl Default for ConsoleOptions {
    fn default() -> Self {
        Self {
            max_connections: 64,
            max_body_bytes: 1024 * 1024,
            header_read_timeout: Duration::from_secs(10),
            shutdown_grace: Duration::from_secs(5),
        }
    }
}

/// What every request handler needs.
#[derive(Debug)]
pub(crate) struct Context {
    pub cluster: Arc<BrokerCluster>,
    pub options: ConsoleOptions,
    /// The listener is on a loopback address: requests must name a
    /// loopback host (see `api::check_host`).
    pub loopback: bool,
}

/// A running console; dropping it stops accepting (`shutdown` also waits
/// for the connections).
#[derive(Debug)]
pub struct ConsoleServer {
    local_addr: SocketAddr,
    shutdown: CancellationToken,
    tasks: TaskTracker,
}

impl ConsoleServer {
    /// Serves the console on `listener` (already bound) until shut down.
    /// Must be called inside a tokio runtime.
    pub fn start_on(
        cluster: Arc<BrokerCluster>,
        listener: TcpListener,
        options: ConsoleOptions,
    ) -> std::io::Result<ConsoleServer> {
        let local_addr = listener.local_addr()?;
        let ctx = Arc::new(Context {
            cluster,
            loopback: local_addr.ip().is_loopback(),
            options,
        });
        let shutdown = CancellationToken::new();
        let tasks = TaskTracker::new();
        tasks.spawn(accept_loop(listener, ctx, shutdown.clone(), tasks.clone()));
        tracing::info!(%local_addr, "console listening");
        Ok(ConsoleServer {
            local_addr,
            shutdown,
            tasks,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Stops accepting, lets requests in flight finish within the grace
    /// period, and returns once every connection is closed.
    pub async fn shutdown(self) {
        self.shutdown.cancel();
        self.tasks.close();
        self.tasks.wait().await;
    }
}

impl Drop for ConsoleServer {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

async fn accept_loop(
    listener: TcpListener,
    ctx: Arc<Context>,
    shutdown: CancellationToken,
    tasks: TaskTracker,
) {
    let permits = Arc::new(Semaphore::new(ctx.options.max_connections.max(1)));
    loop {
        let permit = tokio::select! {
            p = permits.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => return,
            },
            () = shutdown.cancelled() => return,
        };
        let accepted = tokio::select! {
            r = listener.accept() => r,
            () = shutdown.cancelled() => return,
        };
        match accepted {
            Ok((stream, _peer)) => {
                tasks.spawn(serve_connection(
                    stream,
                    ctx.clone(),
                    shutdown.clone(),
                    permit,
                ));
            }
            Err(e) => {
                // Out of descriptors or a connection reset before accept:
                // back off briefly instead of spinning on the error.
                tracing::warn!(error = %e, "console: accept failed");
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(100)) => {}
                    () = shutdown.cancelled() => return,
                }
            }
        }
    }
}

async fn serve_connection(
    stream: TcpStream,
    ctx: Arc<Context>,
    shutdown: CancellationToken,
    _permit: OwnedSemaphorePermit,
) {
    let grace = ctx.options.shutdown_grace;
    let header_timeout = ctx.options.header_read_timeout;
    let service = service_fn(move |req| {
        let ctx = ctx.clone();
        async move { Ok::<_, Infallible>(api::handle(&ctx, req).await) }
    });
    let conn = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout)
        .serve_connection(TokioIo::new(stream), service);
    tokio::pin!(conn);
    tokio::select! {
        r = conn.as_mut() => {
            if let Err(e) = r {
                tracing::debug!(error = %e, "console: connection ended with an error");
            }
        }
        () = shutdown.cancelled() => {
            conn.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(grace, conn).await;
        }
    }
}
