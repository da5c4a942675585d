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

use crate::error::ClusterError;
use mk_core::TopicPartition;
use mk_storage::StorageError;
use std::path::PathBuf;

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
