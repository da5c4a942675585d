//! One partition slot of the cluster (its replica set behind its own lock,
//! the signal long polls wait on, its flush-policy state, whether damage
//! took it offline and its traffic counters) and one topic (its metadata
//! and slots).
//!
//! A partition goes offline in one of two ways, and both are reported the
//! same way (describe, stats, Metadata, health): damage found on its disk
//! (`health.rs`), or a failure of the code itself — a failed invariant (a
//! panic) while its lock was held, or a lock another thread poisoned that
//! way. Its in-memory state is then unknown, so nothing reads or writes it
//! again; the other partitions keep serving, and the next open recovers
//! its files as after a crash.

use crate::config::FlushPolicy;
use crate::data::AppendSettings;
use crate::error::ClusterError;
use crate::metadata::TopicMeta;
use crate::topic_configs::BrokerDefaults;
use crate::traffic::PartitionTraffic;
use mk_core::TopicPartition;
use mk_replication::PartitionReplicaSet;
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use tokio::sync::Notify;

/// One partition: its replica set and the signal fired when its high
/// watermark may have moved (long-poll fetches wait on it).
#[derive(Debug)]
pub(crate) struct PartitionSlot {
    pub tp: TopicPartition,
    /// `None` once the cluster is closed or crashed. Reads (fetch,
    /// metadata) share the lock; appends and steps take it exclusively.
    pub set: RwLock<Option<PartitionReplicaSet>>,
    pub hw_moved: Notify,
    /// More than one replica: only such a partition has followers to copy
    /// to, so only its appends wake the replication driver, and the driver
    /// visits only such partitions (a single-replica partition's high
    /// watermark moves with the append itself). A reassignment changes it.
    pub replicated: std::sync::atomic::AtomicBool,
    /// What the flush policy needs to know since the last fsync.
    pub unflushed: Mutex<Unflushed>,
    /// Held by the flush cycle while it works on the partition's files
    /// without the partition lock (steps.rs `flush_slot`); whoever removes
    /// the partition's directory takes it first, so no staged file lands in
    /// a directory being removed.
    pub flushing: Mutex<()>,
    /// Set once when damage or a failure takes the partition offline.
    pub damaged: std::sync::OnceLock<Offline>,
    /// Records produced and fetched by clients (`traffic.rs`).
    pub traffic: PartitionTraffic,
}

/// Appends since a partition's last fsync, for the flush policy (Kafka's
/// `flush.messages` / `flush.ms`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Unflushed {
    /// Records appended since the last fsync.
    pub records: u64,
    /// When the last fsync happened, by the cluster clock.
    pub synced_at_ms: i64,
}

impl Unflushed {
    /// Nothing unflushed: an fsync just happened at `now_ms`.
    pub fn synced(now_ms: i64) -> Self {
        Self {
            records: 0,
            synced_at_ms: now_ms,
        }
    }

    /// Counts `records` just appended; true when `policy` wants an fsync
    /// now, in which case the count restarts as if it already happened.
    pub fn note_appended(&mut self, records: u64, now_ms: i64, policy: FlushPolicy) -> bool {
        self.records += records;
        let due = policy.messages.is_some_and(|n| self.records >= n)
            || policy
                .interval_ms
                .is_some_and(|ms| now_ms - self.synced_at_ms >= ms);
        if due {
            *self = Self::synced(now_ms);
        }
        due
    }
}

/// Why a partition is offline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Offline {
    /// Its files are damaged (`health.rs`).
    Damaged(String),
    /// An invariant failed (a panic) while its lock was held, or its lock
    /// was found poisoned: its state in memory cannot be trusted.
    Failed(String),
}

impl Offline {
    /// The cause as operators read it (describe, health): a failed
    /// partition's says FAILED.
    pub fn cause(&self) -> &str {
        match self {
            Offline::Damaged(c) | Offline::Failed(c) => c,
        }
    }
}

/// One topic: its metadata and partitions.
#[derive(Debug)]
pub(crate) struct Topic {
    pub meta: TopicMeta,
    pub partitions: Vec<Arc<PartitionSlot>>,
    /// The settings appends act on, resolved from `meta.config` over the
    /// broker defaults they were resolved with (`DataPath` resolves them
    /// again when the defaults change; a config change makes a new
    /// `Topic`).
    pub append_settings: Mutex<Option<(Arc<BrokerDefaults>, AppendSettings)>>,
}

impl Topic {
    pub(crate) fn new(meta: TopicMeta, partitions: Vec<Arc<PartitionSlot>>) -> Self {
        Self {
            meta,
            partitions,
            append_settings: Mutex::new(None),
        }
    }

    /// How many partitions the topic has: created and grown from a u32
    /// count, so the length always fits one.
    pub(crate) fn partition_count(&self) -> u32 {
        u32::try_from(self.partitions.len()).expect("partition counts are u32")
    }
}

impl PartitionSlot {
    pub(crate) fn new(tp: TopicPartition, set: PartitionReplicaSet, now_ms: i64) -> Self {
        Self {
            tp,
            replicated: std::sync::atomic::AtomicBool::new(set.replicas().len() > 1),
            set: RwLock::new(Some(set)),
            hw_moved: Notify::new(),
            unflushed: Mutex::new(Unflushed::synced(now_ms)),
            flushing: Mutex::new(()),
            damaged: std::sync::OnceLock::new(),
            traffic: PartitionTraffic::default(),
        }
    }

    /// A partition whose replicas could not be opened: offline from the
    /// start, with `cause`.
    pub(crate) fn damaged_at_open(tp: TopicPartition, cause: String, now_ms: i64) -> Self {
        let slot = Self {
            tp,
            set: RwLock::new(None),
            hw_moved: Notify::new(),
            replicated: std::sync::atomic::AtomicBool::new(false),
            unflushed: Mutex::new(Unflushed::synced(now_ms)),
            flushing: Mutex::new(()),
            damaged: std::sync::OnceLock::new(),
            traffic: PartitionTraffic::default(),
        };
        let _ = slot.damaged.set(Offline::Damaged(cause));
        slot
    }
}

impl PartitionSlot {
    /// Whether the partition has followers (see `replicated`).
    pub(crate) fn is_replicated(&self) -> bool {
        self.replicated.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Records the replica count after a reassignment changed it.
    pub(crate) fn note_replicas(&self, count: usize) {
        self.replicated
            .store(count > 1, std::sync::atomic::Ordering::Relaxed);
    }

    /// Why this partition is offline, if it is.
    pub(crate) fn damage(&self) -> Option<&str> {
        self.damaged.get().map(Offline::cause)
    }

    /// The error every operation on an offline partition answers.
    pub(crate) fn damaged_error(&self) -> ClusterError {
        match self.damaged.get() {
            Some(Offline::Failed(cause)) => ClusterError::PartitionFailed {
                partition: self.tp.clone(),
                cause: cause.clone(),
            },
            other => ClusterError::PartitionDamaged {
                partition: self.tp.to_string(),
                cause: other.map_or("unknown", Offline::cause).to_string(),
            },
        }
    }

    /// Takes the partition offline as FAILED because of `what` (once; a
    /// partition already offline keeps its first cause) and returns the
    /// error its callers get from now on. Long polls waiting on it wake.
    pub(crate) fn mark_failed(&self, what: &str) -> ClusterError {
        let cause = format!("partition FAILED: {what}");
        if self.damaged.set(Offline::Failed(cause.clone())).is_ok() {
            tracing::error!(
                partition = %self.tp,
                cause = %cause,
                "partition failed: it answers STORAGE_ERROR from now on; every other partition keeps serving"
            );
        }
        self.hw_moved.notify_waiters();
        self.damaged_error()
    }

    /// Marks the partition FAILED for a poisoned lock (a panic while another
    /// caller held it); the error to answer.
    fn poisoned(&self) -> ClusterError {
        self.mark_failed("its lock was poisoned by a panic under it")
    }

    /// The replica set for reading. A poisoned lock (a panic while another
    /// caller held it) takes the partition offline as FAILED.
    pub(crate) fn read_set(
        &self,
    ) -> Result<RwLockReadGuard<'_, Option<PartitionReplicaSet>>, ClusterError> {
        self.set.read().map_err(|_| self.poisoned())
    }

    /// The replica set for writing; a poisoned lock as in `read_set`.
    pub(crate) fn write_set(
        &self,
    ) -> Result<RwLockWriteGuard<'_, Option<PartitionReplicaSet>>, ClusterError> {
        self.set.write().map_err(|_| self.poisoned())
    }

    /// Takes the replica set out (close, crash, deletion), poisoned or not:
    /// the caller decides by `damage()` what it may still do with it.
    pub(crate) fn take_set(&self) -> Option<PartitionReplicaSet> {
        self.lock_for_removal().take()
    }

    /// The replica set's lock for taking it out later (deletion holds
    /// every partition's before the metadata lock), poisoned or not.
    pub(crate) fn lock_for_removal(&self) -> RwLockWriteGuard<'_, Option<PartitionReplicaSet>> {
        self.set.write().unwrap_or_else(|poisoned| {
            self.poisoned();
            poisoned.into_inner()
        })
    }

    /// Whether the slot still holds its replica set (false once closed or
    /// deleted); a poisoned lock counts as holding it.
    pub(crate) fn has_set(&self) -> bool {
        match self.set.read() {
            Ok(guard) => guard.is_some(),
            Err(poisoned) => poisoned.into_inner().is_some(),
        }
    }

    /// Flush-policy state. Each update is one assignment, so a panic
    /// elsewhere cannot have left it half-done: poison is ignored.
    pub(crate) fn unflushed(&self) -> std::sync::MutexGuard<'_, Unflushed> {
        self.unflushed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The flush cycle's hold on the partition's files (no data behind it:
    /// poison is ignored).
    pub(crate) fn hold_files(&self) -> std::sync::MutexGuard<'_, ()> {
        self.flushing
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The text of a panic's payload (what `panic!` or a failed `assert!` said).
pub(crate) fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flush_policy_fires_on_count_or_age_and_restarts() {
        let every_3 = FlushPolicy {
            messages: Some(3),
            interval_ms: None,
        };
        let mut u = Unflushed::synced(0);
        assert!(!u.note_appended(2, 10, every_3));
        assert!(u.note_appended(1, 20, every_3));
        assert_eq!(u, Unflushed::synced(20));
        let every_100ms = FlushPolicy {
            messages: None,
            interval_ms: Some(100),
        };
        assert!(!u.note_appended(50, 119, every_100ms));
        assert!(u.note_appended(1, 120, every_100ms));
        assert_eq!(u, Unflushed::synced(120));
        assert!(!u.note_appended(1_000, 1_000, FlushPolicy::default()));
    }
}
