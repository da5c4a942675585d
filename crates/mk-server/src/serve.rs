//! The serve command: reserve the ports, open the data directory, listen,
//! start the background drivers, the JSON-TCP server and the Kafka
//! listeners (one per hosted broker), then wait for SIGINT/SIGTERM and shut
//! down gracefully. Every check that can refuse a start runs before anything
//! is started, so a refused start leaves nothing running.

use crate::settings::Settings;
use crate::supervise::{Verdict, until_unhealthy};
use mk_adapter_jsontcp::JsonTcpServer;
use mk_adapter_kafka::KafkaServer;
use mk_cluster::{BrokerCluster, DriverConfig};
use std::process::ExitCode;

pub async fn run(settings: Settings) -> ExitCode {
    match serve(settings).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(Stop::Error(e)) => {
            eprintln!("mk-server: {e}");
            ExitCode::FAILURE
        }
        Err(Stop::Unhealthy(v)) => {
            eprintln!("mk-server: {}", v.message());
            ExitCode::from(v.exit_code())
        }
    }
}

/// Why serving ended other than by a signal.
enum Stop {
    /// Refused to start, or failed to close: exit code 1.
    Error(String),
    /// The supervision rule stopped the broker (`supervise.rs`).
    Unhealthy(Verdict),
}

impl From<String> for Stop {
    fn from(e: String) -> Self {
        Stop::Error(e)
    }
}

async fn serve(settings: Settings) -> Result<(), Stop> {
    raise_open_file_limit();
    // The ports are taken first, so a taken port fails before the data dir
    // is touched; but they only listen once the cluster is open, so no
    // client connects to a broker that cannot answer yet (its connection is
    // refused and it retries, instead of hanging through a long open).
    let json_addr = tokio::net::lookup_host(&settings.listen)
        .await
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| format!("cannot start: cannot resolve {}", settings.listen))?;
    let json_socket = mk_adapter_kafka::reserve(json_addr)
        .map_err(|e| format!("cannot start: cannot listen on {}: {e}", settings.listen))?;
    let data_dir = settings.cluster.data_dir.clone();
    let brokers = settings.cluster.broker_ids.clone();
    // The metrics port is taken early too, so a taken one refuses the start;
    // it is only served once the cluster is open.
    let metrics_listener = match settings.metrics_listen {
        None => None,
        Some(addr) => Some(
            tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|e| format!("cannot start: cannot listen on {addr} for metrics: {e}"))?,
        ),
    };
    let kafka_sockets = match settings.kafka_listen {
        None => None,
        Some(addr) => Some(
            mk_adapter_kafka::reserve_consecutive(addr, &brokers)
                .map_err(|e| format!("cannot start: {e}"))?,
        ),
    };
    // Opening fails with STORAGE_ERROR when another process holds the data
    // directory's lock or a metadata store is unreadable.
    let cluster = BrokerCluster::open(settings.cluster)
        .map_err(|e| format!("cannot start: cannot open {}: {e}", data_dir.display()))?;
    let listening = kafka_sockets
        .map(|sockets| {
            sockets
                .into_iter()
                .map(|(b, s)| Ok((b, mk_adapter_kafka::listen(s)?)))
                .collect::<std::io::Result<Vec<_>>>()
        })
        .transpose()
        .and_then(|kafka| Ok((mk_adapter_kafka::listen(json_socket)?, kafka)));
    let (listener, kafka_listeners) = match listening {
        Ok(l) => l,
        Err(e) => {
            let _ = cluster.close().await;
            return Err(format!("cannot start: cannot listen: {e}").into());
        }
    };
    let lab = settings.server.lab;
    if !lab && let Err(e) = cluster.start_drivers(DriverConfig::default()) {
        let _ = cluster.close().await;
        return Err(format!("cannot start the background drivers: {e}").into());
    }
    let kafka = match kafka_listeners
        .map(|l| KafkaServer::start_on(cluster.clone(), l, settings.kafka))
        .transpose()
    {
        Ok(k) => k,
        Err(e) => {
            let _ = cluster.close().await;
            return Err(format!("cannot start the Kafka listeners: {e}").into());
        }
    };
    let server = match JsonTcpServer::start_on(cluster.clone(), listener, settings.server) {
        Ok(s) => s,
        Err(e) => {
            if let Some(k) = kafka {
                k.shutdown().await;
            }
            let _ = cluster.close().await;
            return Err(format!("cannot start: {e}").into());
        }
    };
    let metrics = match metrics_listener {
        None => None,
        Some(listener) => {
            let addr = listener
                .local_addr()
                .map_err(|e| format!("cannot start: {e}"))?;
            match crate::metrics::install() {
                Ok(handle) => Some((
                    addr,
                    crate::metrics::start(listener, handle, cluster.clone()),
                )),
                Err(e) => {
                    if let Some(k) = kafka {
                        k.shutdown().await;
                    }
                    server.shutdown().await;
                    let _ = cluster.close().await;
                    return Err(format!("cannot start: {e}").into());
                }
            }
        }
    };
    // One line: "listening on <kafka> (Kafka) and <json> (JSON-TCP), ...".
    let listening = match &kafka {
        None => format!("{} (JSON-TCP; Kafka protocol off)", server.local_addr()),
        Some(k) => {
            let addrs: Vec<String> = k
                .endpoints()
                .iter()
                .map(|e| format!("{}:{}", e.host, e.port))
                .collect();
            format!(
                "{} (Kafka) and {} (JSON-TCP)",
                addrs.join(", "),
                server.local_addr()
            )
        }
    };
    println!(
        "mk-server listening on {listening}, data in {}, brokers {:?}{}{}",
        data_dir.display(),
        brokers,
        if lab {
            ", lab mode (background drivers paused)"
        } else {
            ""
        },
        metrics.as_ref().map_or(String::new(), |(addr, _)| format!(
            ", metrics on http://{addr}/metrics"
        ))
    );
    let unhealthy = tokio::select! {
        signal = wait_for_signal() => {
            tracing::info!(signal, "shutting down");
            None
        }
        verdict = until_unhealthy(&cluster, settings.disk_full_exit_after) => {
            tracing::error!(reason = %verdict.message(), "stopping");
            Some(verdict)
        }
    };
    drop(metrics);
    if let Some(k) = kafka {
        k.shutdown().await;
    }
    server.shutdown().await;
    let closed = cluster.close().await;
    if let Some(v) = unhealthy {
        return Err(Stop::Unhealthy(v));
    }
    closed.map_err(|e| format!("closing the data directory failed: {e}"))?;
    tracing::info!("stopped cleanly");
    Ok(())
}

/// Raises the soft limit on open files to the hard limit, as Kafka's
/// packaging asks operators to: every replica keeps a segment open and
/// every connection is a descriptor, and the default soft limit (often
/// 1024) is far below what the hard limit allows. Topic creation then
/// refuses, before touching the disk, what would not fit under it.
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

/// Resolves on SIGINT (Ctrl-C) or SIGTERM.
async fn wait_for_signal() -> &'static str {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => tokio::select! {
                _ = tokio::signal::ctrl_c() => "SIGINT",
                _ = term.recv() => "SIGTERM",
            },
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
                "SIGINT"
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
        "Ctrl-C"
    }
}
