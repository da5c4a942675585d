//! The serve command: reserve the ports, open the data directory, listen,
//! start the background drivers, the JSON-TCP server, the Kafka listeners
//! (one per hosted broker) and the console, report where it listens, then wait
//! for the shutdown signal (SIGINT/SIGTERM for the binary, a dropped handle
//! for an embedded broker) and shut down gracefully. Every check that can
//! refuse a start runs before anything is started, so a refused start
//! leaves nothing running.

use crate::listening::Listening;
use crate::settings::Settings;
use crate::supervise::{Verdict, until_unhealthy};
use mk_adapter_console::{ConsoleOptions, ConsoleServer};
use mk_adapter_jsontcp::JsonTcpServer;
use mk_adapter_kafka::{KafkaListener, KafkaServer, SecurityProtocol};
use mk_cluster::BrokerCluster;
use mk_runtime::start_drivers;
use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use tokio::net::{TcpListener, TcpSocket};

/// The binary's serve command: raises the open-file limit, serves until
/// SIGINT or SIGTERM, prints the startup line on stdout once every
/// listener accepts, and turns how serving ended into the exit code
/// (docs/operations.md lists them).
#[allow(clippy::print_stdout, clippy::print_stderr)] // The binary's own output.
pub async fn run(settings: Settings) -> ExitCode {
    raise_open_file_limit();
    match serve(settings, None, wait_for_signal(), |l| println!("{l}")).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mk-server: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

/// Why serving ended other than by the shutdown signal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServeError {
    /// Refused to start, or failed to close: exit code 1.
    Failed(String),
    /// The supervision rule stopped the broker (`supervise.rs`): exit code
    /// 3 or 4.
    Unhealthy(Verdict),
}

impl ServeError {
    /// The binary's exit code for this ending.
    pub fn exit_code(&self) -> u8 {
        match self {
            ServeError::Failed(_) => 1,
            ServeError::Unhealthy(v) => v.exit_code(),
        }
    }
}

impl fmt::Display for ServeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServeError::Failed(e) => f.write_str(e),
            ServeError::Unhealthy(v) => f.write_str(&v.message()),
        }
    }
}

impl std::error::Error for ServeError {}

impl From<String> for ServeError {
    fn from(e: String) -> Self {
        ServeError::Failed(e)
    }
}

/// Serves `settings` until `shutdown` resolves (with the reason, for the
/// log) or the supervision rule stops the broker; `ready` is called once,
/// when every listener accepts. `kafka_ports` pins each broker's Kafka port
/// (in broker order, on the `--kafka-listen` IP): an embedded broker's
/// restart keeps its addresses even when they are not consecutive.
pub(crate) async fn serve(
    settings: Settings,
    kafka_ports: Option<Vec<u16>>,
    shutdown: impl Future<Output = &'static str>,
    ready: impl FnOnce(&Listening),
) -> Result<(), ServeError> {
    let mut reserved = reserve(&settings, kafka_ports.as_deref()).await?;
    // The probes answer (not ready) while the data directory recovers.
    let metrics = match reserved.metrics.take() {
        None => None,
        Some(listener) => Some(crate::metrics::start(listener)?),
    };
    let disk_full_exit_after = settings.disk_full_exit_after;
    let running = Running::start(settings, reserved, metrics).await?;
    ready(&running.listening);
    let unhealthy = tokio::select! {
        reason = shutdown => {
            tracing::info!(reason, "shutting down");
            None
        }
        verdict = until_unhealthy(&running.cluster, disk_full_exit_after) => {
            tracing::error!(reason = %verdict.message(), "stopping");
            Some(verdict)
        }
    };
    let closed = running.stop().await;
    if let Some(v) = unhealthy {
        return Err(ServeError::Unhealthy(v));
    }
    closed.map_err(|e| format!("closing the data directory failed: {e}"))?;
    tracing::info!("stopped cleanly");
    Ok(())
}

/// One reserved socket per hosted broker.
type BrokerSockets = Vec<(i32, TcpSocket)>;

/// The ports, taken before the data directory is touched (a taken port
/// refuses the start with nothing left behind) but not yet listening, so
/// no client connects to a broker that cannot answer yet: its connection is
/// refused and it retries, instead of hanging through a long open.
struct Reserved {
    json: TcpSocket,
    /// Per Kafka listener, one socket per hosted broker.
    kafka: Option<Vec<(SecurityProtocol, BrokerSockets)>>,
    /// The metrics port is taken early too, and served from before the
    /// data directory is opened (its probes say "not ready" until then).
    metrics: Option<TcpListener>,
    /// The console's port, like the JSON-TCP one.
    console: Option<TcpSocket>,
}

async fn reserve(settings: &Settings, kafka_ports: Option<&[u16]>) -> Result<Reserved, String> {
    let json_addr = tokio::net::lookup_host(&settings.listen)
        .await
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| format!("cannot start: cannot resolve {}", settings.listen))?;
    let json = mk_adapter_kafka::reserve(json_addr)
        .map_err(|e| format!("cannot start: cannot listen on {}: {e}", settings.listen))?;
    let metrics = match settings.metrics_listen {
        None => None,
        Some(addr) => Some(
            TcpListener::bind(addr)
                .await
                .map_err(|e| format!("cannot start: cannot listen on {addr} for metrics: {e}"))?,
        ),
    };
    let console =
        match settings.console_listen {
            None => None,
            Some(addr) => Some(mk_adapter_kafka::reserve(addr).map_err(|e| {
                format!("cannot start: cannot listen on {addr} for the console: {e}")
            })?),
        };
    let brokers = &settings.cluster.broker_ids;
    let kafka = match &settings.kafka_listen {
        None => None,
        Some(specs) => Some(
            specs
                .iter()
                .enumerate()
                .map(|(i, spec)| {
                    // Pinned ports (an embedded broker's restart) are the
                    // first listener's, the one its startup line names.
                    let sockets = match kafka_ports {
                        Some(ports) if i == 0 => reserve_pinned(spec.addr, brokers, ports)?,
                        _ => mk_adapter_kafka::reserve_consecutive(spec.addr, brokers)
                            .map_err(|e| format!("cannot start: {spec}: {e}"))?,
                    };
                    Ok((spec.protocol, sockets))
                })
                .collect::<Result<Vec<_>, String>>()?,
        ),
    };
    Ok(Reserved {
        json,
        kafka,
        metrics,
        console,
    })
}

/// One listener per broker on exactly the given ports.
fn reserve_pinned(
    addr: SocketAddr,
    brokers: &[i32],
    ports: &[u16],
) -> Result<Vec<(i32, TcpSocket)>, String> {
    if ports.len() != brokers.len() {
        return Err(format!(
            "cannot start: {} Kafka ports for {} brokers",
            ports.len(),
            brokers.len()
        ));
    }
    brokers
        .iter()
        .zip(ports)
        .map(|(b, port)| {
            let a = SocketAddr::new(addr.ip(), *port);
            mk_adapter_kafka::reserve(a)
                .map(|s| (*b, s))
                .map_err(|e| format!("cannot start: cannot listen on {a} for broker {b}: {e}"))
        })
        .collect()
}

/// A serving broker: the cluster and everything started over it.
struct Running {
    cluster: Arc<BrokerCluster>,
    kafka: Option<KafkaServer>,
    console: Option<ConsoleServer>,
    server: JsonTcpServer,
    metrics: Option<crate::metrics::Endpoint>,
    listening: Listening,
}

impl Running {
    /// Opens the data directory (refused with STORAGE_ERROR when another
    /// process holds its lock or a metadata store is unreadable), then
    /// starts everything; a failure closes what was started.
    async fn start(
        settings: Settings,
        reserved: Reserved,
        metrics: Option<crate::metrics::Endpoint>,
    ) -> Result<Running, String> {
        let data_dir = settings.cluster.data_dir.clone();
        let config = settings.cluster.clone();
        // Recovery can take a while: off the reactor threads, so the
        // metrics endpoint answers its probes meanwhile.
        let cluster = tokio::task::spawn_blocking(move || BrokerCluster::open(config))
            .await
            .map_err(|e| format!("cannot start: opening the data directory panicked: {e}"))?
            .map_err(|e| format!("cannot start: cannot open {}: {e}", data_dir.display()))?;
        let mut started = Started {
            metrics,
            ..Started::default()
        };
        match started.start(&cluster, &settings, reserved).await {
            Ok(listening) => Ok(Running {
                cluster,
                kafka: started.kafka,
                console: started.console,
                server: started.server.ok_or("the JSON-TCP server did not start")?,
                metrics: started.metrics,
                listening,
            }),
            Err(e) => {
                started.stop().await;
                let _ = cluster.lifecycle().close().await;
                Err(e)
            }
        }
    }

    /// Stops accepting, lets the connections finish within their grace
    /// period, then checkpoints and closes the data directory.
    async fn stop(self) -> mk_cluster::Result<()> {
        if let Some(m) = &self.metrics {
            m.not_ready();
        }
        if let Some(c) = self.console {
            c.shutdown().await;
        }
        if let Some(k) = self.kafka {
            k.shutdown().await;
        }
        self.server.shutdown().await;
        let closed = self.cluster.lifecycle().close().await;
        if let Some(m) = self.metrics {
            m.stop().await;
        }
        closed
    }
}

/// What has been started so far, so that a failed start stops it.
#[derive(Default)]
struct Started {
    kafka: Option<KafkaServer>,
    console: Option<ConsoleServer>,
    server: Option<JsonTcpServer>,
    metrics: Option<crate::metrics::Endpoint>,
}

impl Started {
    async fn start(
        &mut self,
        cluster: &Arc<BrokerCluster>,
        settings: &Settings,
        reserved: Reserved,
    ) -> Result<Listening, String> {
        let listen = |s: TcpSocket| {
            mk_adapter_kafka::listen(s).map_err(|e| format!("cannot start: cannot listen: {e}"))
        };
        let json_listener = listen(reserved.json)?;
        let kafka_listeners = match reserved.kafka {
            None => None,
            Some(listeners) => Some(
                listeners
                    .into_iter()
                    .map(|(protocol, sockets)| {
                        let sockets = sockets
                            .into_iter()
                            .map(|(b, s)| Ok((b, listen(s)?)))
                            .collect::<Result<Vec<_>, String>>()?;
                        Ok(KafkaListener { protocol, sockets })
                    })
                    .collect::<Result<Vec<_>, String>>()?,
            ),
        };
        let lab = settings.server.lab;
        if !lab {
            start_drivers(cluster, settings.drivers.clone())
                .map_err(|e| format!("cannot start the background drivers: {e}"))?;
        }
        if let Some(listeners) = kafka_listeners {
            let kafka =
                KafkaServer::start_listeners(cluster.clone(), listeners, settings.kafka.clone())
                    .map_err(|e| format!("cannot start the Kafka listeners: {e}"))?;
            self.kafka = Some(kafka);
        }
        let server =
            JsonTcpServer::start_on(cluster.clone(), json_listener, settings.server.clone())
                .map_err(|e| format!("cannot start: {e}"))?;
        let json = server.local_addr();
        self.server = Some(server);
        let console = match reserved.console {
            None => None,
            Some(socket) => Some(self.start_console(cluster, socket)?),
        };
        let metrics_addr = self.metrics.as_ref().map(|m| {
            m.ready(cluster.clone());
            m.local_addr()
        });
        Ok(Listening {
            kafka: self.kafka.as_ref().map_or_else(Vec::new, |k| {
                k.endpoints()
                    .iter()
                    .map(|e| format!("{}:{}", e.host, e.port))
                    .collect()
            }),
            other_listeners: self.kafka.as_ref().map_or_else(Vec::new, |k| {
                k.listeners()
                    .iter()
                    .skip(1)
                    .flat_map(|l| {
                        l.endpoints
                            .iter()
                            .map(move |e| format!("{}://{}:{}", l.protocol, e.host, e.port))
                    })
                    .collect()
            }),
            json,
            data_dir: settings.cluster.data_dir.clone(),
            brokers: settings.cluster.broker_ids.clone(),
            lab,
            metrics: metrics_addr,
            console,
        })
    }

    /// Serves the console on its reserved port; returns its address.
    fn start_console(
        &mut self,
        cluster: &Arc<BrokerCluster>,
        socket: TcpSocket,
    ) -> Result<SocketAddr, String> {
        let listener = mk_adapter_kafka::listen(socket)
            .map_err(|e| format!("cannot start: cannot listen for the console: {e}"))?;
        let console = ConsoleServer::start_on(cluster.clone(), listener, ConsoleOptions::default())
            .map_err(|e| format!("cannot start the console: {e}"))?;
        let addr = console.local_addr();
        self.console = Some(console);
        Ok(addr)
    }

    async fn stop(&mut self) {
        if let Some(m) = self.metrics.take() {
            m.stop().await;
        }
        if let Some(c) = self.console.take() {
            c.shutdown().await;
        }
        if let Some(k) = self.kafka.take() {
            k.shutdown().await;
        }
        if let Some(s) = self.server.take() {
            s.shutdown().await;
        }
    }
}

/// Raises the soft limit on open files to the hard limit, as Kafka's
/// packaging asks operators to: every replica keeps a segment open and
/// every connection is a descriptor, and the default soft limit (often
/// 1024) is far below what the hard limit allows. Topic creation then
/// refuses, before touching the disk, what would not fit under it. Only
/// the binary does this: an embedded broker leaves its host process's
/// limits alone.
fn raise_open_file_limit() {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    if limit.current == limit.maximum {
        return;
    }
    let raised = Rlimit {
        current: limit.maximum,
        maximum: limit.maximum,
    };
    match setrlimit(Resource::Nofile, raised) {
        Ok(()) => tracing::info!(
            from = ?limit.current,
            to = ?limit.maximum,
            "raised the open-file limit to the hard limit"
        ),
        Err(e) => tracing::warn!(
            limit = ?limit.current,
            error = %e,
            "cannot raise the open-file limit; topic creation is bounded by the current one"
        ),
    }
}

/// Installs the SIGINT and SIGTERM handlers now and returns what resolves
/// on the first of them. Installing happens before the startup line is
/// printed: a supervisor (or a test) that sends SIGTERM the moment it reads
/// that line must meet the handler, not the default action that kills the
/// process without closing the data directory.
fn wait_for_signal() -> impl Future<Output = &'static str> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let interrupt = signal(SignalKind::interrupt());
        let terminate = signal(SignalKind::terminate());
        async move {
            match (interrupt, terminate) {
                (Ok(mut int), Ok(mut term)) => tokio::select! {
                    _ = int.recv() => "SIGINT",
                    _ = term.recv() => "SIGTERM",
                },
                (Ok(mut int), Err(_)) => {
                    int.recv().await;
                    "SIGINT"
                }
                (Err(_), Ok(mut term)) => {
                    term.recv().await;
                    "SIGTERM"
                }
                (Err(_), Err(_)) => {
                    let _ = tokio::signal::ctrl_c().await;
                    "SIGINT"
                }
            }
        }
    }
    #[cfg(not(unix))]
    {
        async {
            let _ = tokio::signal::ctrl_c().await;
            "Ctrl-C"
        }
    }
}
