//! One partition slot of the cluster (its replica set behind its own lock,
//! the signal long polls wait on, its flush-policy state, whether damage
//! took it offline and its traffic counters) and one topic (its metadata
//! and slots).

use crate::config::FlushPolicy;
use crate::error::ClusterError;
use crate::metadata::TopicMeta;
use crate::traffic::PartitionTraffic;
use mk_core::TopicPartition;
use mk_replication::PartitionReplicaSet;
use std::sync::{Arc, Mutex, RwLock};
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
    /// watermark moves with the append itself).
    pub replicated: bool,
    /// What the flush policy needs to know since the last fsync.
    pub unflushed: Mutex<Unflushed>,
    /// Held by the flush cycle while it works on the partition's files
    /// without the partition lock (steps.rs `flush_slot`); whoever removes
    /// the partition's directory takes it first, so no staged file lands in
    /// a directory being removed.
    pub flushing: Mutex<()>,
    /// Set once when damage takes the partition offline (`health.rs`).
    pub damaged: std::sync::OnceLock<String>,
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

/// One topic: its metadata and partitions.
#[derive(Debug)]
pub(crate) struct Topic {
    pub meta: TopicMeta,
    pub partitions: Vec<Arc<PartitionSlot>>,
}

impl PartitionSlot {
    pub(crate) fn new(tp: TopicPartition, set: PartitionReplicaSet, now_ms: i64) -> Self {
        Self {
            tp,
            replicated: set.replicas().len() > 1,
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
            replicated: false,
            unflushed: Mutex::new(Unflushed::synced(now_ms)),
            flushing: Mutex::new(()),
            damaged: std::sync::OnceLock::new(),
            traffic: PartitionTraffic::default(),
        };
        let _ = slot.damaged.set(cause);
        slot
    }
}

impl PartitionSlot {
    /// Why this partition is offline, if it is.
    pub(crate) fn damage(&self) -> Option<&str> {
        self.damaged.get().map(String::as_str)
    }

    /// The error every operation on a damaged partition answers.
    pub(crate) fn damaged_error(&self) -> ClusterError {
        ClusterError::PartitionDamaged {
            partition: self.tp.to_string(),
            cause: self.damage().unwrap_or("unknown").to_string(),
        }
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
