//! The serve command: bind, open the data directory, start the background
//! drivers, the JSON-TCP server and the Kafka listeners (one per hosted
//! broker), then wait for SIGINT/SIGTERM and shut down gracefully. Every check that can refuse a start runs before anything
//! is started, so a refused start leaves nothing running.

use crate::settings::Settings;
use mk_adapter_jsontcp::JsonTcpServer;
use mk_adapter_kafka::KafkaServer;
use mk_cluster::{BrokerCluster, DriverConfig};
use std::process::ExitCode;

pub async fn run(settings: Settings) -> ExitCode {
    match serve(settings).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mk-server: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(settings: Settings) -> Result<(), String> {
    // The port is checked first: a taken port must not touch the data dir.
    let listener = tokio::net::TcpListener::bind(&settings.listen)
        .await
        .map_err(|e| format!("cannot start: cannot listen on {}: {e}", settings.listen))?;
    let data_dir = settings.cluster.data_dir.clone();
    let brokers = settings.cluster.broker_ids.clone();
    let metrics_listener = match settings.metrics_listen {
        None => None,
        Some(addr) => Some(
            tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|e| format!("cannot start: cannot listen on {addr} for metrics: {e}"))?,
        ),
    };
    let kafka_listeners = match settings.kafka_listen {
        None => None,
        Some(addr) => Some(
            mk_adapter_kafka::bind_consecutive(addr, &brokers)
                .await
                .map_err(|e| format!("cannot start: {e}"))?,
        ),
    };
    // Opening fails with STORAGE_ERROR when another process holds the data
    // directory's lock or a metadata store is unreadable.
    let cluster = BrokerCluster::open(settings.cluster)
        .map_err(|e| format!("cannot start: cannot open {}: {e}", data_dir.display()))?;
    let lab = settings.server.lab;
    if !lab && let Err(e) = cluster.start_drivers(DriverConfig::default()) {
        let _ = cluster.close().await;
        return Err(format!("cannot start the background drivers: {e}"));
    }
    let kafka = match kafka_listeners
        .map(|l| KafkaServer::start_on(cluster.clone(), l, settings.kafka))
        .transpose()
    {
        Ok(k) => k,
        Err(e) => {
            let _ = cluster.close().await;
            return Err(format!("cannot start the Kafka listeners: {e}"));
        }
    };
    let server = match JsonTcpServer::start_on(cluster.clone(), listener, settings.server) {
        Ok(s) => s,
        Err(e) => {
            if let Some(k) = kafka {
                k.shutdown().await;
            }
            let _ = cluster.close().await;
            return Err(format!("cannot start: {e}"));
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
                    return Err(format!("cannot start: {e}"));
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
    let signal = wait_for_signal().await;
    tracing::info!(signal, "shutting down");
    drop(metrics);
    if let Some(k) = kafka {
        k.shutdown().await;
    }
    server.shutdown().await;
    cluster
        .close()
        .await
        .map_err(|e| format!("closing the data directory failed: {e}"))?;
    tracing::info!("stopped cleanly");
    Ok(())
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
