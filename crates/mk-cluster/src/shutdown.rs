//! Closing and crashing the cluster.

use crate::cluster::BrokerCluster;
use crate::error::{ClusterError, Result};
use crate::lifecycle::LifecycleState;

impl BrokerCluster {
    /// Closes gracefully: producers send what they queued, consumers leave
    /// their groups, background tasks stop, every replica set checkpoints
    /// (HW, epochs, producer state) and closes its logs, the offsets log and
    /// the transaction journal (as a compact snapshot) are closed. Calling
    /// it again is a no-op. Afterwards every operation is CLUSTER_CLOSED and
    /// no task owned by the cluster is left running.
    pub async fn close(&self) -> Result<()> {
        if self.life.get() == LifecycleState::Running {
            let (producers, consumers) = self.clients.lock().expect("clients lock").take_live();
            for p in producers {
                p.flush_for_close();
            }
            for c in consumers {
                // A consumer whose group call fails still counts as closed.
                let _ = c.leave();
            }
        }
        if !self.life.begin_close() {
            return match self.life.get() {
                LifecycleState::Failed(cause) => Err(ClusterError::Failed(cause)),
                _ => Ok(()),
            };
        }
        let mut first_error: Option<ClusterError> = None;
        // Closing the replica sets settles every acks=all waiter, so the
        // producer completion tasks finish on their own.
        for slot in self.all_slots() {
            let set = slot.set.write().expect("partition lock").take();
            match set {
                None => {}
                // A damaged partition is made durable but not checkpointed:
                // no clean-shutdown checkpoint may vouch for its files.
                Some(mut set) if slot.damage().is_some() => {
                    if let Err(e) = set.flush() {
                        tracing::warn!(partition = %slot.tp, error = %e, "cannot flush a damaged partition");
                    }
                    set.crash();
                }
                Some(set) => {
                    if let Err(e) = set.close() {
                        let e = ClusterError::from(e);
                        if e.storage_cause()
                            .is_some_and(mk_log::StorageError::is_transient)
                        {
                            // Its logs were fsynced before the checkpoint that
                            // failed; the next open recovers as after a crash.
                            tracing::warn!(partition = %slot.tp, error = %e, "closed without its checkpoints");
                        } else {
                            first_error.get_or_insert(e);
                        }
                    }
                }
            }
            slot.hw_moved.notify_waiters();
        }
        self.shutdown.cancel();
        self.tasks.close();
        self.tasks.wait().await;
        if let Some(g) = self.groups.lock().expect("groups lock").take()
            && let Err(e) = g.close()
        {
            first_error.get_or_insert(e.into());
        }
        if let Some(t) = self.txns.lock().expect("txns lock").take()
            && let Err(e) = t.close()
        {
            first_error.get_or_insert(e.into());
        }
        drop(self.dir_lock.lock().expect("lock slot").take());
        match first_error {
            None => {
                self.life.set(LifecycleState::Closed);
                tracing::info!(data_dir = %self.config.data_dir.display(), "cluster closed");
                Ok(())
            }
            Some(e) => {
                let failed = self.life.fail_from_closing(e.to_string());
                Err(failed)
            }
        }
    }

    /// Simulates a process kill for tests: everything is dropped without a
    /// flush or a checkpoint; queued producer records are cancelled. Data
    /// already written reached the OS and is recovered by the next open.
    pub fn crash(&self) {
        self.life.set(LifecycleState::Closed);
        let (producers, _) = self.clients.lock().expect("clients lock").take_live();
        for p in producers {
            p.crash();
        }
        self.shutdown.cancel();
        self.tasks.close();
        for slot in self.all_slots() {
            if let Some(set) = slot.set.write().expect("partition lock").take() {
                set.crash();
            }
            slot.hw_moved.notify_waiters();
        }
        drop(self.groups.lock().expect("groups lock").take());
        if let Some(t) = self.txns.lock().expect("txns lock").take() {
            t.crash();
        }
        drop(self.dir_lock.lock().expect("lock slot").take());
    }
}
