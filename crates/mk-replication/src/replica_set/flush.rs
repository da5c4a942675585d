//! The flush-cycle checkpoint in three steps, so its fsyncs hold no lock
//! (mk-log's `flush.rs` does the same for one log): [`PartitionReplicaSet::
//! plan_checkpoint`] under the partition lock, [`CheckpointPlan::sync`]
//! without it (every replica's log fsynced first, then its producer
//! snapshot and HW checkpoint written and fsynced beside their places), and
//! [`PartitionReplicaSet::finish_checkpoint`] under the lock again, which
//! renames those files into place only if the replica's log was not
//! rewritten meanwhile (a truncation makes a snapshot above the new end, or
//! a HW above it, untrue). What the plan wrote stays true when appends came
//! after it: a snapshot at offset `o` plus the log after `o` is the state,
//! and a HW checkpoint may lag the HW.

use super::PartitionReplicaSet;
use crate::error::{BrokerId, Result};
use crate::hw_checkpoint::{self, HW_CHECKPOINT_FILE};
use crate::producer_state::{Registrations, snapshot_path};
use mk_log::{FlushPlan, SyncedFlush};
use mk_storage::FaultInjector;
use mk_storage::fsutil::{self, Staged};
use std::path::PathBuf;
use std::sync::Arc;

/// What one checkpoint of a partition writes, collected under its lock.
#[derive(Debug)]
pub struct CheckpointPlan {
    replicas: Vec<ReplicaPlan>,
}

#[derive(Debug)]
struct ReplicaPlan {
    broker: BrokerId,
    faults: Arc<FaultInjector>,
    log: FlushPlan,
    rewrites: u64,
    /// Offset, path and bytes of the producer snapshot to write.
    snapshot: Option<(i64, PathBuf, Vec<u8>)>,
    registrations: Registrations,
    /// HW value, path and bytes of the HW checkpoint to write.
    hw: Option<(i64, PathBuf, Vec<u8>)>,
}

/// [`CheckpointPlan`] after its fsyncs, for
/// [`PartitionReplicaSet::finish_checkpoint`].
#[derive(Debug)]
pub struct SyncedCheckpoint {
    replicas: Vec<SyncedReplica>,
}

/// A file written and fsynced beside its place, with the value it records
/// (a snapshot's offset, a HW).
type StagedFile = Option<(i64, Staged)>;

#[derive(Debug)]
struct SyncedReplica {
    broker: BrokerId,
    faults: Arc<FaultInjector>,
    log: SyncedFlush,
    rewrites: u64,
    registrations: Registrations,
    /// The staged snapshot (with its offset) and HW checkpoint (with its
    /// value); an error when the log's fsync or a staging failed.
    staged: Result<(StagedFile, StagedFile)>,
}

impl CheckpointPlan {
    /// The fsyncs, without the partition lock.
    pub fn sync(self) -> SyncedCheckpoint {
        let replicas = self
            .replicas
            .into_iter()
            .map(|r| {
                let log = r.log.sync();
                // Logs go first so that no checkpoint points beyond durable
                // data: a failed log fsync stages nothing (its error comes
                // back from `finish_flush`).
                let staged = if !log.succeeded() {
                    Ok((None, None))
                } else {
                    let stage = |file: Option<(i64, PathBuf, Vec<u8>)>| -> Result<_> {
                        file.map(|(at, path, bytes)| {
                            r.faults.before_write(&path)?;
                            Ok((at, fsutil::stage(&r.faults, &path, &bytes)?))
                        })
                        .transpose()
                    };
                    stage(r.snapshot).and_then(|snapshot| match stage(r.hw) {
                        Ok(hw) => Ok((snapshot, hw)),
                        Err(e) => {
                            if let Some((_, s)) = snapshot {
                                s.discard();
                            }
                            Err(e)
                        }
                    })
                };
                SyncedReplica {
                    broker: r.broker,
                    faults: r.faults,
                    log,
                    rewrites: r.rewrites,
                    registrations: r.registrations,
                    staged,
                }
            })
            .collect();
        SyncedCheckpoint { replicas }
    }
}

impl PartitionReplicaSet {
    /// Step 1 of the checkpoint: cheap, under the partition lock.
    pub fn plan_checkpoint(&mut self) -> Result<CheckpointPlan> {
        let hw = self.high_watermark;
        let mut replicas = Vec::with_capacity(self.replicas.len());
        for (broker, r) in &mut self.replicas {
            let log = r.log.plan_flush()?;
            let snapshot = r
                .snapshot_to_write(&self.registrations)
                .map(|(offset, bytes)| (offset, snapshot_path(&r.dir, offset), bytes));
            let known = hw.min(r.leo());
            let hw_file = (r.checkpointed_hw != Some(known)).then(|| {
                (
                    known,
                    r.dir.join(HW_CHECKPOINT_FILE),
                    hw_checkpoint::encode(&self.tp, known),
                )
            });
            replicas.push(ReplicaPlan {
                broker: *broker,
                faults: r.log.config().faults.clone(),
                log,
                rewrites: r.log.rewrite_count(),
                snapshot,
                registrations: self.registrations.clone(),
                hw: hw_file,
            });
        }
        Ok(CheckpointPlan { replicas })
    }

    /// Step 3: under the partition lock again. Returns the first failure
    /// (a failed fsync latches that replica's log, as `checkpoint` does).
    pub fn finish_checkpoint(&mut self, synced: SyncedCheckpoint) -> Result<()> {
        let mut first_error = None;
        for s in synced.replicas {
            let Some(r) = self.replicas.get_mut(&s.broker) else {
                continue;
            };
            let unchanged = r.log.rewrite_count() == s.rewrites;
            let r_log = r.log.finish_flush(s.log);
            let outcome = r_log.map_err(Into::into).and_then(|()| {
                let (snapshot, hw) = s.staged?;
                if !unchanged {
                    for (_, staged) in snapshot.into_iter().chain(hw) {
                        staged.discard();
                    }
                    return Ok(());
                }
                if let Some((offset, staged)) = snapshot {
                    staged.commit(&s.faults)?;
                    r.snapshot_written(offset, &s.registrations)?;
                }
                if let Some((value, staged)) = hw {
                    staged.commit(&s.faults)?;
                    r.checkpointed_hw = Some(value);
                    r.log.note_dir_changed();
                }
                Ok(())
            });
            if let Err(e) = outcome {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}
