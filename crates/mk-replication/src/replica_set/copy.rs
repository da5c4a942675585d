//! Follower fetches in two locked steps with the record work between
//! them: [`PartitionReplicaSet::locate_follower_copies`] reconciles each
//! follower and locates the leader's frames it lacks (headers only), the
//! caller checks each frame ([`FollowerCopy::check`]: frame CRC, the max
//! timestamp) without holding the partition's lock, and
//! [`PartitionReplicaSet::apply_follower_copies`] appends what is still
//! the follower's next data. [`PartitionReplicaSet::replicate_all_once`]
//! does the three in a row.

use super::{FollowerFetch, PartitionReplicaSet};
use crate::error::{BrokerId, Result};
use crate::replica::ReplicaRole;
use mk_log::{CheckedFrame, StoredBatch};

/// The leader's frames one follower copies next, located under the
/// partition lock with their CRCs not yet checked.
#[derive(Debug)]
pub struct FollowerCopy {
    report: FollowerFetch,
    /// The follower's LEO and the leader epoch when they were located.
    from: i64,
    epoch: i32,
    batches: Vec<StoredBatch>,
}

/// A [`FollowerCopy`] whose frames are checked.
#[derive(Debug)]
pub struct CheckedCopy {
    report: FollowerFetch,
    from: i64,
    epoch: i32,
    frames: Vec<CheckedFrame>,
}

impl FollowerCopy {
    /// Checks every frame (CRC, and the records of a version 1 frame for
    /// its max timestamp): the record work of a follower fetch, done
    /// without the partition lock. Damage is the storage error a checked
    /// read of the leader's log gives.
    pub fn check(self) -> Result<CheckedCopy> {
        let frames = self
            .batches
            .into_iter()
            .map(CheckedFrame::of)
            .collect::<mk_log::Result<Vec<_>>>()?;
        Ok(CheckedCopy {
            report: self.report,
            from: self.from,
            epoch: self.epoch,
            frames,
        })
    }
}

impl PartitionReplicaSet {
    /// The first step of a replication step: every online follower, in
    /// broker-id order, reconciles if it has not in the current epoch, and
    /// the leader's whole batches from its LEO (at most
    /// `replica_fetch_max_bytes`, at least one batch) are located.
    pub fn locate_follower_copies(&mut self) -> Result<Vec<FollowerCopy>> {
        let followers: Vec<BrokerId> = self
            .replicas
            .iter()
            .filter(|(_, r)| r.role == ReplicaRole::Follower)
            .map(|(b, _)| *b)
            .collect();
        followers
            .into_iter()
            .map(|broker| self.locate_copy(broker))
            .collect()
    }

    /// Reconciles (when needed) one follower and locates what it copies.
    pub(super) fn locate_copy(&mut self, broker: BrokerId) -> Result<FollowerCopy> {
        let mut report = FollowerFetch {
            broker,
            truncated_to: None,
            reset_to: None,
            batches: 0,
            bytes: 0,
            log_end_offset: 0,
        };
        if self.replica(broker)?.reconciled_epoch != Some(self.leader_epoch) {
            self.reconcile(broker, &mut report)?;
            self.replica_mut(broker).reconciled_epoch = Some(self.leader_epoch);
        }
        let leader_start = self.leader().log.log_start_offset();
        if self.replica(broker)?.leo() < leader_start {
            // From the start of the leader's batch holding its log start
            // (DeleteRecords can put it inside a batch), so the follower's
            // log is a run of the leader's whole batches.
            let from = self.leader_batch_start(leader_start)?;
            self.reset_follower(broker, from, &mut report)?;
        }
        loop {
            let from = self.replica(broker)?.leo();
            let leader = self.leader();
            assert!(
                from <= leader.leo(),
                "{}: follower {broker} at {from} is ahead of the leader's LEO {} after reconciliation",
                self.tp,
                leader.leo()
            );
            // A follower reset to the start of the batch holding the
            // leader's log start reads that batch by the start itself.
            let at = from.max(leader.log.log_start_offset());
            let batches =
                leader
                    .log
                    .locate_batches(at, self.config.replica_fetch_max_bytes, None)?;
            match batches.first() {
                // The follower ends inside one of the leader's batches: the
                // two logs were batched differently in the same epoch (only
                // a leader that lost an unflushed tail and rewrote it can do
                // that). Cut back to that batch's start and try again; the
                // follower's LEO shrinks every round.
                Some(first) if first.base_offset() < from => {
                    let target = first.base_offset();
                    self.truncate_follower(broker, target, &mut report)?;
                }
                _ => {
                    return Ok(FollowerCopy {
                        report,
                        from,
                        epoch: self.leader_epoch,
                        batches,
                    });
                }
            }
        }
    }

    /// The last step of a replication step: each follower appends its
    /// checked frames if it is still where they were located (same leader
    /// epoch, still a follower, LEO unchanged; otherwise it copies at its
    /// next fetch), then the ISR and the HW are recomputed.
    pub fn apply_follower_copies(
        &mut self,
        copies: Vec<CheckedCopy>,
    ) -> Result<Vec<FollowerFetch>> {
        let fetches = copies
            .into_iter()
            .map(|c| self.apply_copy(c))
            .collect::<Result<Vec<_>>>()?;
        self.refresh_isr();
        Ok(fetches)
    }

    fn apply_copy(&mut self, copy: CheckedCopy) -> Result<FollowerFetch> {
        let CheckedCopy {
            mut report,
            from,
            epoch,
            frames,
        } = copy;
        let broker = report.broker;
        let current = self.replicas.get(&broker).is_some_and(|r| {
            r.role == ReplicaRole::Follower && r.reconciled_epoch == Some(epoch) && r.leo() == from
        });
        if epoch != self.leader_epoch || !current {
            report.log_end_offset = self.replicas.get(&broker).map_or(from, |r| r.leo());
            return Ok(report);
        }
        let now = self.clock.now_ms();
        let follower = self.replica_mut(broker);
        for f in &frames {
            follower.append_fetched(f)?;
            report.batches += 1;
            report.bytes += f.batch().size();
        }
        follower.last_fetch_ms = now;
        report.log_end_offset = follower.leo();
        self.follow_log_start(broker)?;
        Ok(report)
    }
}
