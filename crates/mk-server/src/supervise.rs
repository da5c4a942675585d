//! The supervision rule of a standalone broker: when it must stop serving
//! and exit non-zero so that whoever supervises the process (systemd,
//! Kubernetes, a shell loop) notices and acts.
//!
//! - The cluster is FAILED (a write or fsync the disk refused, a broken
//!   broker-wide store): exit at once with [`EXIT_STORAGE_FAILED`]. A FAILED
//!   broker answers every request CLUSTER_FAILED, so staying up would only
//!   look healthy; a restart recovers everything that was acknowledged.
//! - The disk is full: stay up — reads are served, writes answer
//!   STORAGE_ERROR, stats and describe say so — because space often comes
//!   back (retention, an operator). If it stays full longer than
//!   `disk_full_exit_after`, exit with [`EXIT_DISK_FULL`]: a condition that
//!   lasts needs someone, and a supervisor that only watches the process
//!   would otherwise never see it.
//! - A damaged partition does not stop the broker: it is reported (log,
//!   describe, stats, Kafka metadata) while the rest serves.

use mk_cluster::BrokerCluster;
use std::time::Duration;

/// Exit code after the cluster became FAILED.
pub const EXIT_STORAGE_FAILED: u8 = 3;
/// Exit code after the disk stayed full longer than allowed.
pub const EXIT_DISK_FULL: u8 = 4;

/// How often the disk-full rule is checked.
const CHECK_EVERY: Duration = Duration::from_millis(250);

/// Why the broker must stop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Failed(String),
    DiskFull { for_ms: i64, error: String },
}

impl Verdict {
    pub fn exit_code(&self) -> u8 {
        match self {
            Verdict::Failed(_) => EXIT_STORAGE_FAILED,
            Verdict::DiskFull { .. } => EXIT_DISK_FULL,
        }
    }

    pub fn message(&self) -> String {
        match self {
            Verdict::Failed(cause) => format!(
                "the broker failed: {cause}; exiting with code {EXIT_STORAGE_FAILED} so that it is \
                 restarted (a restart recovers every acknowledged record)"
            ),
            Verdict::DiskFull { for_ms, error } => format!(
                "the disk has been full for {} s ({error}); exiting with code {EXIT_DISK_FULL}: \
                 free space, then restart (nothing acknowledged is lost)",
                for_ms / 1000
            ),
        }
    }
}

/// Resolves when the rule above says the broker must stop;
/// `disk_full_exit_after` of `None` never stops for a full disk.
pub async fn until_unhealthy(
    cluster: &BrokerCluster,
    disk_full_exit_after: Option<Duration>,
) -> Verdict {
    let failed = cluster.lifecycle().until_failed();
    tokio::pin!(failed);
    let mut tick = tokio::time::interval(CHECK_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            cause = &mut failed => return Verdict::Failed(cause),
            _ = tick.tick() => {
                let (Some(limit), Some(full)) = (disk_full_exit_after, cluster.lifecycle().health().disk_full) else {
                    continue;
                };
                let for_ms = cluster.clock().now_ms() - full.since_ms;
                if for_ms >= i64::try_from(limit.as_millis()).unwrap_or(i64::MAX) {
                    return Verdict::DiskFull { for_ms, error: full.error };
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mk_cluster::{
        AckMode, Bytes, FaultInjector, ManualClock, MiniKafkaConfig, Record, RecordBatch,
        TopicPartition,
    };
    use std::sync::Arc;

    fn open(
        dir: &std::path::Path,
        clock: &ManualClock,
    ) -> (Arc<BrokerCluster>, Arc<FaultInjector>) {
        let faults = Arc::new(FaultInjector::new());
        let c = BrokerCluster::open_with_faults(
            MiniKafkaConfig::new(dir),
            Arc::new(clock.clone()),
            faults.clone(),
        )
        .unwrap();
        c.topics().create("t", 1, 1).unwrap();
        (c, faults)
    }

    async fn produce(c: &BrokerCluster) -> mk_cluster::Result<()> {
        let batch = RecordBatch::new(vec![Record::new(None, Some(Bytes::from("v")), 1)])?;
        c.data()
            .append_batch(&TopicPartition::new("t", 0), batch, AckMode::One)
            .await
            .map(|_| ())
    }

    #[tokio::test(start_paused = true)]
    async fn a_failed_cluster_stops_the_broker_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let clock = ManualClock::new(0);
        let (c, faults) = open(dir.path(), &clock);
        let verdict = {
            let c = c.clone();
            tokio::spawn(async move { until_unhealthy(&c, None).await })
        };
        produce(&c).await.unwrap();
        faults.fail_syncs(true);
        assert!(c.steps().run_flush_cycle().is_err());
        let v = verdict.await.unwrap();
        assert!(
            matches!(&v, Verdict::Failed(cause) if cause.contains("fsync")),
            "{v:?}"
        );
        assert_eq!(v.exit_code(), EXIT_STORAGE_FAILED);
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_disk_stops_the_broker_only_after_the_limit_and_only_if_it_lasts() {
        let dir = tempfile::tempdir().unwrap();
        let clock = ManualClock::new(0);
        let (c, faults) = open(dir.path(), &clock);
        let limit = Duration::from_secs(60);
        faults.disk_full(true);
        assert!(produce(&c).await.is_err());
        // Full, but not for long enough: still serving.
        clock.advance(59_000);
        let early =
            tokio::time::timeout(Duration::from_secs(1), until_unhealthy(&c, Some(limit))).await;
        assert!(early.is_err(), "stays up below the limit");
        // Space came back in time: the condition is over.
        faults.disk_full(false);
        produce(&c).await.unwrap();
        clock.advance(120_000);
        let over =
            tokio::time::timeout(Duration::from_secs(1), until_unhealthy(&c, Some(limit))).await;
        assert!(over.is_err(), "a resolved disk-full is no reason to stop");
        // Full again and for longer than the limit: stop.
        faults.disk_full(true);
        assert!(produce(&c).await.is_err());
        clock.advance(61_000);
        let v = until_unhealthy(&c, Some(limit)).await;
        assert!(
            matches!(v, Verdict::DiskFull { for_ms: 61_000, .. }),
            "{v:?}"
        );
        assert_eq!(v.exit_code(), EXIT_DISK_FULL);
        // Without a limit a full disk never stops the broker.
        let never =
            tokio::time::timeout(Duration::from_secs(3600), until_unhealthy(&c, None)).await;
        assert!(never.is_err());
    }
}
