//! The lifecycle role of the cluster: its state (Running -> Closing ->
//! Closed, or Running -> Failed), what is wrong while it runs degraded,
//! the tasks it owns, the in-process clients attached to it, and closing
//! and crashing it.

use crate::attached::AttachedClient;
use crate::cluster::BrokerCluster;
use crate::error::{ClusterError, Result};
use crate::health::ClusterHealth;
use crate::life::LifecycleState;
use crate::slot::PartitionSlot;
use std::sync::Weak;

/// The lifecycle of a cluster: `cluster.lifecycle().close().await`.
#[derive(Debug, Clone, Copy)]
pub struct Lifecycle<'a> {
    pub(crate) cluster: &'a BrokerCluster,
}

impl BrokerCluster {
    /// State, health, close and crash.
    pub fn lifecycle(&self) -> Lifecycle<'_> {
        Lifecycle { cluster: self }
    }
}

impl Lifecycle<'_> {
    pub fn state(self) -> LifecycleState {
        self.cluster.life.get()
    }

    /// Resolves with the cause once the cluster is terminally FAILED (what
    /// a supervising process waits for).
    pub async fn until_failed(self) -> String {
        self.cluster.life.until_failed().await
    }

    /// How many tasks the cluster owns right now (0 after `close()`).
    pub fn owned_tasks(self) -> usize {
        self.cluster.tasks.len()
    }

    /// Ok while the cluster runs; CLUSTER_CLOSED / CLUSTER_FAILED otherwise.
    pub fn check_running(self) -> Result<()> {
        self.cluster.check_running()
    }

    /// Spawns a task owned by the cluster: `close()` cancels and awaits it,
    /// so it never outlives the cluster (the runtime's drivers and the
    /// in-process producer's completions run this way). Needs a tokio
    /// runtime.
    pub fn spawn_owned<F>(self, fut: F) -> Result<()>
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        self.cluster.spawn_owned(fut)
    }

    /// Resolves once the cluster begins to close or crashes: what a task
    /// that must not wait on a closing cluster selects on.
    pub async fn closing(self) {
        self.cluster.shutdown.cancelled().await;
    }

    /// Attaches an in-process producer: the cluster's close has it send
    /// what it queued, its crash drops the queue.
    pub fn attach_producer(self, client: Weak<dyn AttachedClient>) {
        crate::locks::plain(&self.cluster.clients)
            .producers
            .push(client);
    }

    /// Attaches an in-process consumer: the cluster's close has it leave
    /// its group (after every producer sent what it queued).
    pub fn attach_consumer(self, client: Weak<dyn AttachedClient>) {
        crate::locks::plain(&self.cluster.clients)
            .consumers
            .push(client);
    }

    /// What is wrong right now (also while the broker runs degraded).
    pub fn health(self) -> ClusterHealth {
        let damaged = crate::locks::plain_read(&self.cluster.topics)
            .values()
            .flat_map(|t| t.partitions.iter())
            .filter_map(|s| s.damage().map(|c| (s.tp.clone(), c.to_string())))
            .collect();
        ClusterHealth {
            disk_full: crate::locks::plain(&self.cluster.disk_full).clone(),
            damaged,
        }
    }

    /// While the disk is marked full, tries one small durable write in the
    /// data directory (removed again) to learn whether space is back even
    /// when no client writes. The storage-probe driver calls this; it
    /// returns whether the disk is still full.
    pub fn probe_disk_space(self) -> bool {
        if crate::locks::plain(&self.cluster.disk_full).is_none() {
            return false;
        }
        let probe = self.cluster.config.data_dir.join(".space-probe");
        let written =
            mk_storage::fsutil::write_atomic_with(&self.cluster.faults, &probe, &[0u8; 65_536]);
        let _ = mk_storage::fsutil::remove_if_exists(&probe);
        match written {
            Ok(()) => {
                self.cluster.note_write_succeeded();
                false
            }
            Err(_) => true,
        }
    }

    /// Closes gracefully: producers send what they queued, consumers leave
    /// their groups, background tasks stop, every replica set checkpoints
    /// (HW, epochs, producer state) and closes its logs, the offsets log and
    /// the transaction journal (as a compact snapshot) are closed. Calling
    /// it again is a no-op. Afterwards every operation is CLUSTER_CLOSED and
    /// no task owned by the cluster is left running.
    pub async fn close(self) -> Result<()> {
        if self.cluster.life.get() == LifecycleState::Running {
            let live = crate::locks::plain(&self.cluster.clients).take_live();
            for client in live.producers.into_iter().chain(live.consumers) {
                client.close_with_cluster();
            }
        }
        if !self.cluster.life.begin_close() {
            return match self.cluster.life.get() {
                LifecycleState::Failed(cause) => Err(ClusterError::Failed(cause)),
                _ => Ok(()),
            };
        }
        let mut first_error: Option<ClusterError> = None;
        // Closing the replica sets settles every acks=all waiter, so the
        // producer completion tasks finish on their own.
        for slot in self.cluster.all_slots() {
            if let Some(e) = close_slot(&slot) {
                first_error.get_or_insert(e);
            }
            slot.hw_moved.notify_waiters();
        }
        self.cluster.shutdown.cancel();
        self.cluster.tasks.close();
        self.cluster.tasks.wait().await;
        if let Some(g) = self
            .cluster
            .take_store(&self.cluster.groups, "group coordinator")
            && let Err(e) = g.close()
        {
            first_error.get_or_insert(e.into());
        }
        if let Some(t) = self
            .cluster
            .take_store(&self.cluster.txns, "transaction coordinator")
            && let Err(e) = t.close()
        {
            first_error.get_or_insert(e.into());
        }
        drop(crate::locks::plain(&self.cluster.dir_lock).take());
        match first_error {
            None => {
                self.cluster.life.set(LifecycleState::Closed);
                tracing::info!(data_dir = %self.cluster.config.data_dir.display(), "cluster closed");
                Ok(())
            }
            Some(e) => {
                let failed = self.cluster.life.fail_from_closing(e.to_string());
                Err(failed)
            }
        }
    }

    /// Simulates a process kill for tests: everything is dropped without a
    /// flush or a checkpoint; queued producer records are cancelled. Data
    /// already written reached the OS and is recovered by the next open.
    pub fn crash(self) {
        self.cluster.life.set(LifecycleState::Closed);
        let live = crate::locks::plain(&self.cluster.clients).take_live();
        for client in live.producers.iter().chain(&live.consumers) {
            client.crash_with_cluster();
        }
        self.cluster.shutdown.cancel();
        self.cluster.tasks.close();
        for slot in self.cluster.all_slots() {
            if let Some(set) = slot.take_set() {
                set.crash();
            }
            slot.hw_moved.notify_waiters();
        }
        drop(
            self.cluster
                .take_store(&self.cluster.groups, "group coordinator"),
        );
        if let Some(t) = self
            .cluster
            .take_store(&self.cluster.txns, "transaction coordinator")
        {
            t.crash();
        }
        drop(crate::locks::plain(&self.cluster.dir_lock).take());
    }
}

/// Closes one partition for `close`: a healthy one checkpoints (what a
/// clean shutdown writes) and closes its logs; a damaged or failed one is
/// made durable but not checkpointed, so that no clean-shutdown checkpoint
/// vouches for its files and the next open recovers it as after a crash. A
/// failed invariant while closing fails only this partition. Returns the
/// error that makes the close fail, if any.
fn close_slot(slot: &PartitionSlot) -> Option<ClusterError> {
    let set = slot.take_set()?;
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        if slot.damage().is_some() {
            let mut set = set;
            if let Err(e) = set.flush() {
                tracing::warn!(partition = %slot.tp, error = %e, "cannot flush an offline partition");
            }
            set.crash();
            return Ok(());
        }
        set.close()
    }));
    let e = match outcome {
        Ok(Ok(())) => return None,
        Ok(Err(e)) => ClusterError::from(e),
        Err(panic) => {
            slot.mark_failed(&format!(
                "an invariant failed while it closed: {}",
                crate::slot::panic_text(panic.as_ref())
            ));
            return None;
        }
    };
    if e.storage_cause()
        .is_some_and(mk_storage::StorageError::is_transient)
    {
        // Its logs were fsynced before the checkpoint that failed; the
        // next open recovers as after a crash.
        tracing::warn!(partition = %slot.tp, error = %e, "closed without its checkpoints");
        return None;
    }
    Some(e)
}
