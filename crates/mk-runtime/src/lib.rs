//! The runtime of a broker that runs on its own: tokio tasks that run the
//! core's explicit steps from timers and events (replication woken by every
//! append, group and transaction expiry, flush cycles, retention and
//! compaction, the disk-space probe). Each is owned by the cluster and
//! stops on its `close()`. No behavior lives only here: every driver calls a
//! public step that tests and labs call by hand. mk-server's broker (the
//! binary and the embedded one) starts them; tests that want a running
//! broker without the server start them too.

use mk_cluster::{BrokerCluster, ErrorCode, Result};
use std::sync::Arc;
use std::time::Duration;

/// Intervals of the background drivers.
#[derive(Debug, Clone)]
pub struct DriverConfig {
    /// Replication runs on every append (event-driven) and at least this
    /// often, which also refreshes the ISR by the time rule.
    pub replication_tick: Duration,
    /// The group coordinator's time step: session expiry, and the end of
    /// rebalance barriers whose timeout passed. It runs often because a
    /// JoinGroup waiting at a barrier is answered by it.
    pub group_expiry_interval: Duration,
    pub transaction_expiry_interval: Duration,
    /// `None` leaves fsync to the flush policy and to close.
    pub flush_interval: Option<Duration>,
    /// Retention of every topic and offset expiry.
    pub cleanup_interval: Duration,
    /// How often the cleaner compacts the partitions due for it (Kafka's
    /// `log.cleaner.backoff.ms`).
    pub cleaner_backoff: Duration,
    /// While the disk is marked full, how often a small write probes
    /// whether space is back (`probe_disk_space`).
    pub storage_probe_interval: Duration,
}

impl Default for DriverConfig {
    fn default() -> Self {
        Self {
            replication_tick: Duration::from_millis(200),
            group_expiry_interval: Duration::from_millis(100),
            transaction_expiry_interval: Duration::from_millis(1_000),
            flush_interval: Some(Duration::from_millis(1_000)),
            cleanup_interval: Duration::from_secs(60),
            cleaner_backoff: Duration::from_secs(15),
            storage_probe_interval: Duration::from_millis(1_000),
        }
    }
}

/// Starts every background driver on `cluster` (needs a tokio runtime).
pub fn start_drivers(cluster: &Arc<BrokerCluster>, config: DriverConfig) -> Result<()> {
    let c = cluster.clone();
    cluster.lifecycle().spawn_owned(async move {
        loop {
            tokio::select! {
                _ = c.data().until_appended() => {}
                _ = tokio::time::sleep(config.replication_tick) => {}
            }
            if !step_ok("replication", c.steps().replicate_all_once()) {
                break;
            }
        }
    })?;
    run_every(cluster, config.group_expiry_interval, |c| async move {
        step_ok("group expiry", c.groups().expire_members())
    })?;
    run_every(
        cluster,
        config.transaction_expiry_interval,
        |c| async move { step_ok("transaction expiry", c.transactions().expire().await) },
    )?;
    if let Some(every) = config.flush_interval {
        run_every(cluster, every, flush_cycle)?;
    }
    run_every(cluster, config.storage_probe_interval, |c| async move {
        if c.lifecycle().check_running().is_err() {
            return false;
        }
        c.lifecycle().probe_disk_space();
        true
    })?;
    run_every(cluster, config.cleaner_backoff, |c| {
        blocking_step("compaction", c, |c| c.steps().compact_all())
    })?;
    run_every(cluster, config.cleanup_interval, |c| async move {
        blocking_step("retention", c.clone(), |c| c.steps().apply_retention_all()).await
            && blocking_step("offset expiry", c, |c| c.groups().expire_offsets()).await
    })
}

/// Runs `step` every `every`, owned by the cluster, until the step says
/// the cluster can no longer run (`false`).
fn run_every<F, Fut>(cluster: &Arc<BrokerCluster>, every: Duration, step: F) -> Result<()>
where
    F: Fn(Arc<BrokerCluster>) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = bool> + Send,
{
    let c = cluster.clone();
    cluster.lifecycle().spawn_owned(async move {
        let mut tick = interval(every);
        loop {
            tick.tick().await;
            if !step(c.clone()).await {
                break;
            }
        }
    })
}

/// One flush cycle (see [`blocking_step`]).
async fn flush_cycle(c: Arc<BrokerCluster>) -> bool {
    blocking_step("flush cycle", c, |c| c.steps().run_flush_cycle()).await
}

/// Runs a step that blocks on files (fsync, rewriting or deleting
/// segments: flush, compaction, retention, the offsets log) on the
/// blocking pool, never on a runtime thread that serves connections; a
/// compaction of a large log would otherwise stall every connection on
/// that thread for as long as it takes.
async fn blocking_step<T: Send + 'static>(
    name: &'static str,
    c: Arc<BrokerCluster>,
    step: impl FnOnce(&BrokerCluster) -> Result<T> + Send + 'static,
) -> bool {
    match tokio::task::spawn_blocking(move || step(&c)).await {
        Ok(r) => step_ok(name, r),
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(_) => false, // the runtime is shutting down
    }
}

fn interval(every: Duration) -> tokio::time::Interval {
    let mut i = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    i.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    i
}

/// Logs a failed step; returns false when the cluster can no longer run
/// (closed or failed), which ends the driver.
fn step_ok<T>(name: &str, r: Result<T>) -> bool {
    match r {
        Ok(_) => true,
        Err(e) => {
            let code = e.code();
            if matches!(code, ErrorCode::ClusterClosed | ErrorCode::ClusterFailed) {
                return false;
            }
            tracing::warn!(step = name, error = %e, "background step failed");
            true
        }
    }
}
