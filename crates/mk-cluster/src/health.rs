//! How far a storage failure reaches, and what the broker shows of it.
//!
//! - Transient (a full disk, no file descriptor left): the operation fails
//!   with STORAGE_ERROR and changed nothing; the broker keeps running and
//!   retries are welcome. A full disk is remembered (`disk_full`) until a
//!   write succeeds again, so operators and supervisors can see it.
//! - Damage of one partition (bad bytes or missing files found while
//!   reading it, a failed read of its files, a replica that cannot be
//!   opened): that partition goes offline — every later operation on it
//!   answers STORAGE_ERROR naming the cause, describe and metadata report it
//!   damaged — and every other partition keeps serving.
//! - Anything else (a write or fsync the disk refused, a broken broker-wide
//!   store): the broker is FAILED, terminally, because nobody knows what the
//!   disk holds any more. mk-server exits then, so a supervisor restarts it
//!   and recovery starts from what is durable.

use crate::cluster::{BrokerCluster, PartitionSlot};
use crate::error::ClusterError;
use mk_core::TopicPartition;
use mk_log::StorageError;
use std::path::PathBuf;
use std::sync::atomic::Ordering;

/// Whether the failed operation only read the partition's files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    Read,
    Write,
}

/// How far a storage failure reaches (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reach {
    Transient,
    Partition,
    Broker,
}

/// The reach of `e`, `None` for errors that are not storage failures.
pub(crate) fn reach(e: &ClusterError, access: Access) -> Option<Reach> {
    let Some(cause) = e.storage_cause() else {
        // A storage failure without a typed cause (e.g. an offsets record
        // that cannot be interpreted) is not understood well enough to be
        // kept local.
        return e.is_storage_failure().then_some(Reach::Broker);
    };
    Some(match (cause, access) {
        (c, _) if c.is_transient() => Reach::Transient,
        (StorageError::Unusable { .. }, _) => Reach::Partition,
        (StorageError::Io { .. }, Access::Read) => Reach::Partition,
        (StorageError::Io { .. }, Access::Write) => Reach::Broker,
    })
}

/// The disk was full at the last write that tried it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiskFull {
    /// When the first write failed, by the cluster clock.
    pub since_ms: i64,
    /// The file that write was for.
    pub path: PathBuf,
    pub error: String,
}

/// What is wrong with a running broker, for operators and supervisors.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ClusterHealth {
    /// Set while writes fail because the disk is full.
    pub disk_full: Option<DiskFull>,
    /// Partitions taken offline by damage, with the cause.
    pub damaged: Vec<(TopicPartition, String)>,
}

impl ClusterHealth {
    /// Nothing is wrong.
    pub fn is_healthy(&self) -> bool {
        self.disk_full.is_none() && self.damaged.is_empty()
    }
}

impl BrokerCluster {
    /// What is wrong right now (also while the broker runs degraded).
    pub fn health(&self) -> ClusterHealth {
        let damaged = self
            .topics
            .read()
            .expect("topics lock")
            .values()
            .flat_map(|t| t.partitions.iter())
            .filter_map(|s| s.damage().map(|c| (s.tp.clone(), c.to_string())))
            .collect();
        ClusterHealth {
            disk_full: self.disk_full.lock().expect("disk state").clone(),
            damaged,
        }
    }

    /// Records a transient failure: a full disk is remembered until a write
    /// succeeds, once, with one error line; running out of descriptors is
    /// logged.
    pub(crate) fn note_transient(&self, cause: &StorageError) {
        if !cause.is_disk_full() {
            tracing::warn!(error = %cause, "out of file descriptors; the operation failed and changed nothing");
            return;
        }
        let mut full = self.disk_full.lock().expect("disk state");
        if full.is_none() {
            tracing::error!(
                path = %cause.path().display(),
                error = %cause,
                "disk full: writes answer STORAGE_ERROR until space is freed; reads go on"
            );
            *full = Some(DiskFull {
                since_ms: self.clock.now_ms(),
                path: cause.path().to_path_buf(),
                error: cause.to_string(),
            });
            self.disk_full_flag.store(true, Ordering::SeqCst);
        }
    }

    /// A write went through: a full disk is over.
    pub(crate) fn note_write_succeeded(&self) {
        if !self.disk_full_flag.load(Ordering::Relaxed) {
            return;
        }
        let mut full = self.disk_full.lock().expect("disk state");
        self.disk_full_flag.store(false, Ordering::SeqCst);
        if let Some(f) = full.take() {
            tracing::info!(
                full_for_ms = self.clock.now_ms() - f.since_ms,
                "disk space is back: writes work again"
            );
        }
    }

    /// While the disk is marked full, tries one small durable write in the
    /// data directory (removed again) to learn whether space is back even
    /// when no client writes. The storage-probe driver calls this; it
    /// returns whether the disk is still full.
    pub fn probe_disk_space(&self) -> bool {
        if self.disk_full.lock().expect("disk state").is_none() {
            return false;
        }
        let probe = self.config.data_dir.join(".space-probe");
        let written = mk_log::fsutil::write_atomic_with(&self.faults, &probe, &[0u8; 65_536]);
        let _ = mk_log::fsutil::remove_if_exists(&probe);
        match written {
            Ok(()) => {
                self.note_write_succeeded();
                false
            }
            Err(_) => true,
        }
    }

    /// Takes `slot` offline because of `cause` (once; later causes are the
    /// same damage seen again) and returns the error its callers get.
    pub(crate) fn mark_damaged(&self, slot: &PartitionSlot, cause: &ClusterError) -> ClusterError {
        let text = cause.to_string();
        if slot.damaged.set(text.clone()).is_ok() {
            tracing::error!(
                partition = %slot.tp,
                cause = %text,
                "partition damaged: it answers STORAGE_ERROR from now on; every other partition keeps serving"
            );
        }
        slot.damaged_error()
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
    fn the_reach_of_a_failure_follows_its_kind_and_the_access() {
        let io = |kind| ClusterError::from(StorageError::io("/d/f", std::io::Error::from(kind)));
        let full = io(std::io::ErrorKind::StorageFull);
        assert_eq!(reach(&full, Access::Write), Some(Reach::Transient));
        let emfile = ClusterError::from(StorageError::io(
            "/d/f",
            std::io::Error::from_raw_os_error(24),
        ));
        assert_eq!(reach(&emfile, Access::Write), Some(Reach::Transient));
        let eio = io(std::io::ErrorKind::Other);
        assert_eq!(reach(&eio, Access::Read), Some(Reach::Partition));
        assert_eq!(reach(&eio, Access::Write), Some(Reach::Broker));
        let bad = ClusterError::from(StorageError::unusable("/d/f", "crc"));
        assert_eq!(reach(&bad, Access::Write), Some(Reach::Partition));
        assert_eq!(
            reach(&ClusterError::InvalidRequest("x".into()), Access::Write),
            None
        );
    }
}
