//! Partition reassignments (Kafka's AlterPartitionReassignments and
//! ListPartitionReassignments): an operator moves a partition's replicas
//! between the hosted brokers. The replica set's side (adding replicas
//! that catch up as followers, completion, the handover of a removed
//! leader, cancelling) is mk-replication's `reassign.rs`; this module
//! checks requests against the hosted brokers, persists every step in the
//! metadata before it is used, completes moves from the replication steps
//! and removes the directories of replicas that left.
//!
//! Crash safety, step by step:
//! - a move is recorded (the set during the move, its adding and removing
//!   replicas) before the adding replicas' directories are created, and
//!   open creates those that a crash left missing;
//! - a completed or cancelled move is recorded (the new set, leader and
//!   epoch) together with the replicas that left, whose directories are
//!   removed only afterwards; open finishes removals a crash interrupted.
//!
//! So a restart either resumes a pending move or keeps its result, and no
//! replica the metadata counts on is ever removed.

use crate::cluster::BrokerCluster;
use crate::config::BrokerId;
use crate::error::{ClusterError, Result};
use crate::metadata::MetadataStore;
use crate::slot::PartitionSlot;
use mk_core::TopicPartition;
use mk_replication::{PartitionReplicaSet, Reassignment, SettledPlacement, remove_replica_dirs};
use std::collections::BTreeSet;
use std::path::Path;

/// Why a reassignment request for one partition was refused.
#[derive(Debug)]
pub enum ReassignmentRefusal {
    /// The target names an unknown broker, a broker twice, or nothing
    /// (INVALID_REPLICA_ASSIGNMENT).
    InvalidAssignment(String),
    /// A cancel found no move in progress (NO_REASSIGNMENT_IN_PROGRESS).
    NoneInProgress(String),
    /// The target changes the replica count although the request forbids
    /// it (INVALID_REPLICATION_FACTOR).
    ReplicationFactorChange(String),
    /// The partition does not exist, or the cluster cannot act.
    Cluster(ClusterError),
}

impl ReassignmentRefusal {
    /// The refusal for a protocol without Kafka's reassignment codes
    /// (JSON-TCP): INVALID_REQUEST with the same message, or the cluster's
    /// own error.
    pub fn into_cluster_error(self) -> ClusterError {
        match self {
            ReassignmentRefusal::InvalidAssignment(m)
            | ReassignmentRefusal::NoneInProgress(m)
            | ReassignmentRefusal::ReplicationFactorChange(m) => ClusterError::InvalidRequest(m),
            ReassignmentRefusal::Cluster(e) => e,
        }
    }
}

impl From<ClusterError> for ReassignmentRefusal {
    fn from(e: ClusterError) -> Self {
        ReassignmentRefusal::Cluster(e)
    }
}

/// What cancelling found, under the partition lock.
enum Cancel {
    /// Cancelled: the replicas that left (their directories go next).
    Done(Vec<BrokerId>),
    NoneInProgress,
    /// No original replica is in sync and the topic does not allow an
    /// unclean election: the original replicas.
    NeedsUnclean(Vec<BrokerId>),
}

/// One move in progress, as ListPartitionReassignments tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OngoingReassignment {
    pub partition: TopicPartition,
    /// The replica set during the move: the target, then the removing ones.
    pub replicas: Vec<BrokerId>,
    pub adding: Vec<BrokerId>,
    pub removing: Vec<BrokerId>,
}

/// Reassignments: `cluster.reassignments().alter(..)`.
#[derive(Debug, Clone, Copy)]
pub struct Reassignments<'a> {
    pub(crate) cluster: &'a BrokerCluster,
}

impl BrokerCluster {
    /// The reassignments role (see [`Reassignments`]).
    pub fn reassignments(&self) -> Reassignments<'_> {
        Reassignments { cluster: self }
    }
}

impl Reassignments<'_> {
    /// Starts moving `tp`'s replicas to `target` (replacing a move in
    /// progress), or with `None` cancels the move in progress. A move with
    /// nothing to add (a shrink, a reorder) completes at once; otherwise it
    /// completes from the replication steps once the adding replicas are in
    /// sync. `allow_replication_factor_change = false` refuses a target
    /// whose size differs from the original replica count.
    pub fn alter(
        self,
        tp: &TopicPartition,
        target: Option<&[BrokerId]>,
        allow_replication_factor_change: bool,
    ) -> std::result::Result<(), ReassignmentRefusal> {
        self.cluster.check_running()?;
        let slot = self.cluster.slot(tp)?;
        if slot.damage().is_some() {
            return Err(slot.damaged_error().into());
        }
        let Some(target) = target else {
            return self.cancel(&slot);
        };
        self.check_target(tp, target)?;
        let original = self.cluster.read_slot(&slot, |set| {
            Ok(set
                .reassignment()
                .map_or_else(|| set.replicas().to_vec(), |r| r.original().to_vec()))
        })?;
        if !allow_replication_factor_change && original.len() != target.len() {
            return Err(ReassignmentRefusal::ReplicationFactorChange(format!(
                "{tp}: the replication factor would change from {} to {}, and the request does not allow that",
                original.len(),
                target.len()
            )));
        }
        let files = slot.hold_files();
        let dropped = self
            .cluster
            .with_slot(&slot, |set| self.begin(&slot, set, target))?;
        self.remove_dirs(&slot, &dropped, files);
        self.complete_if_ready(&slot)?;
        Ok(())
    }

    /// The moves in progress: of `partitions` (unknown ones are left out),
    /// or of every partition with `None`; in topic and partition order.
    pub fn list(self, partitions: Option<&[TopicPartition]>) -> Result<Vec<OngoingReassignment>> {
        self.cluster.check_running()?;
        let slots = match partitions {
            None => self.cluster.healthy_slots(),
            Some(tps) => {
                let mut wanted: Vec<&TopicPartition> = tps.iter().collect();
                wanted.sort();
                wanted.dedup();
                wanted
                    .into_iter()
                    .filter_map(|tp| self.cluster.slot(tp).ok())
                    .filter(|s| s.damage().is_none())
                    .collect()
            }
        };
        let mut out = Vec::new();
        for slot in slots {
            let ongoing = self.cluster.read_slot(&slot, |set| {
                Ok(set.reassignment().map(|r| OngoingReassignment {
                    partition: slot.tp.clone(),
                    replicas: r.replicas(),
                    adding: r.adding(),
                    removing: r.removing(),
                }))
            });
            match ongoing {
                Ok(Some(o)) => out.push(o),
                Ok(None) | Err(ClusterError::TopicDeleted { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    /// The moves in progress of `topic`'s partitions, ascending;
    /// UNKNOWN_TOPIC when it does not exist.
    pub fn list_topic(self, topic: &str) -> Result<Vec<OngoingReassignment>> {
        let partitions = self.cluster.topic(topic)?.meta.partitions.len();
        let tps: Vec<TopicPartition> = (0..partitions)
            .filter_map(|p| u32::try_from(p).ok())
            .map(|p| TopicPartition::new(topic, p))
            .collect();
        self.list(Some(&tps))
    }

    /// Completes `slot`'s pending move if its adding replicas are in sync
    /// (the replication steps call it after each round).
    pub(crate) fn complete_if_ready(self, slot: &PartitionSlot) -> Result<()> {
        let files = slot.hold_files();
        let removed =
            self.cluster
                .with_slot(slot, |set| match set.try_complete_reassignment()? {
                    Some(settled) => self.record_settled(slot, &settled),
                    None => Ok(Vec::new()),
                })?;
        slot.hw_moved.notify_waiters();
        self.remove_dirs(slot, &removed, files);
        Ok(())
    }

    /// Every target broker is hosted here; the list itself is checked by
    /// the replica set (empty, duplicates).
    fn check_target(
        self,
        tp: &TopicPartition,
        target: &[BrokerId],
    ) -> std::result::Result<(), ReassignmentRefusal> {
        mk_replication::check_target(tp, target)
            .map_err(|e| ReassignmentRefusal::InvalidAssignment(e.to_string()))?;
        let hosted = &self.cluster.config.broker_ids;
        if let Some(unknown) = target.iter().find(|b| !hosted.contains(b)) {
            return Err(ReassignmentRefusal::InvalidAssignment(format!(
                "{tp}: the target replicas {target:?} name broker {unknown}, which is not one of the brokers {hosted:?}"
            )));
        }
        Ok(())
    }

    /// Records the move, then opens its adding replicas. Returns the
    /// replicas of a replaced move that left (their directories go next).
    fn begin(
        self,
        slot: &PartitionSlot,
        set: &mut PartitionReplicaSet,
        target: &[BrokerId],
    ) -> Result<Vec<BrokerId>> {
        let plan = set.plan_reassignment(target)?;
        let tp = &slot.tp;
        let held = set.replicas().to_vec();
        let replicas = plan.replicas();
        let leaving: Vec<BrokerId> = held
            .iter()
            .copied()
            .filter(|b| !replicas.contains(b))
            .collect();
        let mut metadata = self
            .cluster
            .store(&self.cluster.metadata, "metadata store")?;
        let before = metadata
            .get(&tp.topic)
            .and_then(|t| t.partitions.get(tp.partition as usize))
            .cloned();
        metadata.update_partition(&tp.topic, tp.partition, |p| {
            p.replicas.clone_from(&replicas);
            p.adding_replicas = plan.adding();
            p.removing_replicas = plan.removing();
            p.deleting_replicas.extend(leaving.iter().copied());
        })?;
        let offline = self.cluster.offline_brokers.borrow().clone();
        let adding_here: Vec<BrokerId> = replicas
            .iter()
            .copied()
            .filter(|b| !held.contains(b))
            .collect();
        let dropped = match set.begin_reassignment(plan, &offline) {
            Ok(dropped) => dropped,
            Err(e) => {
                // Nothing changed in the set: take the record back and the
                // directories that were created (best effort: a record left
                // behind resumes the move at the next open).
                if let Some(before) = before {
                    let _ = metadata.update_partition(&tp.topic, tp.partition, |p| *p = before);
                    let _ = remove_replica_dirs(&self.cluster.config.data_dir, tp, &adding_here);
                }
                return Err(e.into());
            }
        };
        drop(metadata);
        slot.note_replicas(set.replicas().len());
        self.cluster.appended.notify_one();
        tracing::info!(
            partition = %tp,
            ?target,
            replicas = ?set.replicas(),
            "partition reassignment started"
        );
        Ok(dropped)
    }

    /// Cancels the move in progress of `slot`. When no original replica
    /// is in sync (the leader is an adding replica), Kafka's controller
    /// reverts only where the topic allows unclean elections, and so does
    /// this: the first original replica leads if its broker is online,
    /// else the first online original replica, else the first original
    /// replica on its offline broker (no leader serves until it returns);
    /// records above the new leader's log end are lost. Otherwise the
    /// refusal is INVALID_REPLICA_ASSIGNMENT, as Kafka's.
    fn cancel(self, slot: &PartitionSlot) -> std::result::Result<(), ReassignmentRefusal> {
        let tp = &slot.tp;
        let unclean_allowed = self.cluster.brokers().unclean_allowed(tp)?;
        let online = self.cluster.brokers().online();
        let files = slot.hold_files();
        let outcome = self.cluster.with_slot(slot, |set| {
            let Some(r) = set.reassignment() else {
                return Ok(Cancel::NoneInProgress);
            };
            let settled = if !set.cancel_needs_unclean_election() {
                set.cancel_reassignment()?
            } else if unclean_allowed {
                let original = r.original();
                let leader = original
                    .iter()
                    .copied()
                    .find(|b| online.contains(b))
                    .or_else(|| original.first().copied())
                    .unwrap_or(-1);
                let settled = set.cancel_reassignment_unclean(leader)?;
                tracing::warn!(partition = %tp, leader, "reassignment cancelled with an unclean election: records above the new leader's log end are lost");
                settled
            } else {
                return Ok(Cancel::NeedsUnclean(r.original().to_vec()));
            };
            self.record_settled(slot, &settled).map(Cancel::Done)
        })?;
        let removed = match outcome {
            Cancel::Done(removed) => removed,
            Cancel::NoneInProgress => {
                return Err(ReassignmentRefusal::NoneInProgress(format!(
                    "{tp} has no reassignment in progress"
                )));
            }
            Cancel::NeedsUnclean(original) => {
                return Err(ReassignmentRefusal::InvalidAssignment(format!(
                    "{tp}: cannot revert to the original replicas {original:?}: none is in sync, so it would take an unclean leader election, and unclean.leader.election.enable is false for topic {:?}",
                    tp.topic
                )));
            }
        };
        slot.hw_moved.notify_waiters();
        self.remove_dirs(slot, &removed, files);
        self.cluster.appended.notify_one();
        tracing::info!(partition = %tp, "partition reassignment cancelled");
        Ok(())
    }

    /// Persists a settled placement (under the partition lock, so nothing
    /// of the new epoch or set is used before it is recorded) with the
    /// replicas that left as directories to remove.
    fn record_settled(
        self,
        slot: &PartitionSlot,
        settled: &SettledPlacement,
    ) -> Result<Vec<BrokerId>> {
        let tp = &slot.tp;
        self.cluster
            .store(&self.cluster.metadata, "metadata store")?
            .update_partition(&tp.topic, tp.partition, |p| {
                p.replicas.clone_from(&settled.replicas);
                p.leader_id = settled.leader.leader_id;
                p.leader_epoch = settled.leader.leader_epoch;
                p.adding_replicas.clear();
                p.removing_replicas.clear();
                p.deleting_replicas.extend(settled.removed.iter().copied());
            })?;
        slot.note_replicas(settled.replicas.len());
        tracing::info!(
            partition = %tp,
            replicas = ?settled.replicas,
            removed = ?settled.removed,
            leader = settled.leader.leader_id,
            epoch = settled.leader.leader_epoch,
            "partition reassignment completed"
        );
        Ok(settled.removed.clone())
    }

    /// Removes the directories of replicas that left, outside the
    /// partition lock but still holding the partition's files (`files`:
    /// so the flush cycle stages nothing into them meanwhile), then drops
    /// their record. A failure is logged and the record stays: the next
    /// open removes them.
    ///
    /// Every change of a move takes the partition's files first, then its
    /// lock, then the metadata store: the order of the flush cycle (files,
    /// lock) and of topic deletion (files, metadata), so neither can wait
    /// on a move that waits on it.
    fn remove_dirs(
        self,
        slot: &PartitionSlot,
        removed: &[BrokerId],
        files: std::sync::MutexGuard<'_, ()>,
    ) {
        if removed.is_empty() {
            return;
        }
        let tp = &slot.tp;
        let gone = remove_replica_dirs(&self.cluster.config.data_dir, tp, removed);
        drop(files);
        let forgotten = gone.map_err(ClusterError::from).and_then(|()| {
            self.cluster
                .store(&self.cluster.metadata, "metadata store")?
                .update_partition(&tp.topic, tp.partition, |p| {
                    p.deleting_replicas.retain(|b| !removed.contains(b));
                })
        });
        if let Err(e) = forgotten {
            tracing::error!(partition = %tp, ?removed, error = %e, "cannot remove the directories of replicas that left; the next open removes them");
        }
    }
}

/// The move the metadata records as pending for a partition, if any.
pub(crate) fn recorded_reassignment(p: &crate::metadata::PartitionMeta) -> Option<Reassignment> {
    Reassignment::from_parts(&p.replicas, &p.adding_replicas, &p.removing_replicas)
}

/// Removes the directories of replicas that left their partitions before a
/// crash let them be removed (called on open, before the data directory is
/// checked for unknown partitions).
pub(crate) fn finish_replica_removals(data_dir: &Path, metadata: &mut MetadataStore) -> Result<()> {
    let pending: Vec<(TopicPartition, Vec<BrokerId>)> = metadata
        .topics()
        .flat_map(|t| {
            t.partitions
                .iter()
                .filter(|p| !p.deleting_replicas.is_empty())
                .map(|p| {
                    let keep: BTreeSet<BrokerId> = p.replicas.iter().copied().collect();
                    let gone = p
                        .deleting_replicas
                        .iter()
                        .copied()
                        .filter(|b| !keep.contains(b))
                        .collect();
                    (TopicPartition::new(&t.name, p.partition), gone)
                })
        })
        .collect();
    for (tp, gone) in pending {
        remove_replica_dirs(data_dir, &tp, &gone)?;
        metadata.update_partition(&tp.topic, tp.partition, |p| p.deleting_replicas.clear())?;
        tracing::info!(partition = %tp, removed = ?gone, "finished removing replicas that left");
    }
    Ok(())
}
