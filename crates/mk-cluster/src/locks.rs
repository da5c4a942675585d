//! How the core takes its locks, so that a panic under one never turns
//! into a panic at every later caller.
//!
//! - A partition's lock (`slot.rs` `read_set` / `write_set`): poison takes
//!   that partition offline as FAILED; the others keep serving.
//! - A broker-wide store's lock (metadata, producer identities, the group
//!   and transaction coordinators, the security store: `store`): poison
//!   makes the broker FAILED, as any failure of a broker-wide store does
//!   (`health.rs`), so that a supervisor restarts it from what is durable.
//! - A lock over plain data, which every update leaves whole (one
//!   assignment, one insert or removal: the topic table, the disk-full
//!   state, the attached clients, the lifecycle state): poison cannot have
//!   broken it, so it is ignored (`plain`, `plain_read`, `plain_write`).
//!
//! Where one operation needs several, they are taken in one order, so no
//! two operations wait on each other in a circle: a partition's files
//! (`hold_files`), then the partition, then the metadata store.
//! Promotion and replica moves persist under the
//! partition's lock; topic deletion takes every partition's lock before
//! the metadata lock; a topic config change persists under the metadata
//! lock and applies to the partitions after releasing it, serialized by
//! `topic_alters` (tests/lock_order.rs).

use crate::cluster::BrokerCluster;
use crate::error::Result;
use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Locks plain data, ignoring poison (see the module docs).
pub(crate) fn plain<T>(lock: &Mutex<T>) -> MutexGuard<'_, T> {
    lock.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Reads plain data, ignoring poison.
pub(crate) fn plain_read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

/// Writes plain data, ignoring poison.
pub(crate) fn plain_write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}

impl BrokerCluster {
    /// Locks the broker-wide store `name`; a poisoned lock makes the broker
    /// FAILED and is answered CLUSTER_FAILED.
    pub(crate) fn store<'a, T>(&self, lock: &'a Mutex<T>, name: &str) -> Result<MutexGuard<'a, T>> {
        lock.lock().map_err(|_| {
            self.life.fail(format!(
                "the {name} failed: a panic while it was locked left it in an unknown state"
            ))
        })
    }

    /// Takes a broker-wide store out for closing. `None` inside, or a
    /// poisoned lock (the store's state is unknown: the caller drops it
    /// without closing it, and the next open recovers it from its files),
    /// both give `None`; the second also says so in the log.
    pub(crate) fn take_store<T>(&self, lock: &Mutex<Option<T>>, name: &str) -> Option<T> {
        match lock.lock() {
            Ok(mut guard) => guard.take(),
            Err(poisoned) => {
                tracing::error!(
                    store = name,
                    "a panic left the store in an unknown state: dropped without closing"
                );
                drop(poisoned.into_inner().take());
                None
            }
        }
    }
}

impl BrokerCluster {
    /// Test hook: poisons the lock of `tp`'s partition the way a panic of
    /// another caller under it would, so tests can check that the
    /// partition goes offline as FAILED and the rest keeps serving.
    #[doc(hidden)]
    pub fn poison_partition_lock(&self, tp: &mk_core::TopicPartition) -> Result<()> {
        let slot = self.slot(tp)?;
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _held = slot.set.write();
            panic!("poisoning the lock of {tp} (test hook)");
        }));
        Ok(())
    }
}
