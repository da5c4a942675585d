//! Moving a partition's replicas between brokers (Kafka's partition
//! reassignment, KIP-455): while a move is pending the replica set is the
//! target followed by the original replicas the target drops; the adding
//! replicas (target − original) are new followers that catch up like any
//! other. Once every adding replica is in the ISR (and some in-sync
//! replica stays), the move completes: the set becomes the target, a
//! removed leader hands over to the first in-sync target replica (epoch +
//! 1), and the removing replicas leave. Cancelling goes back to the
//! original replicas the same way.
//!
//! The set changes only in memory here. The caller persists the new
//! placement and deletes the directories of the replicas that left
//! ([`remove_replica_dirs`]) after it persisted it, so that a crash never
//! loses a replica the metadata still counts on.

use super::PartitionReplicaSet;
use crate::error::{BrokerId, ReplicationError, Result};
use crate::replica::{Replica, ReplicaRole, replica_dir};
use crate::replica_set::LeaderAndEpoch;
use mk_core::TopicPartition;
use std::collections::BTreeSet;
use std::path::Path;

/// A move in progress: where the replicas were and where they go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reassignment {
    original: Vec<BrokerId>,
    target: Vec<BrokerId>,
}

impl Reassignment {
    /// The move from `original` to `target`. As in Kafka, whose metadata
    /// keeps only the replica set during the move with its adding and
    /// removing replicas, the original replicas are taken in the order of
    /// that set (target first): a cancelled move returns to them in that
    /// order, before and after a restart alike.
    pub fn new(original: Vec<BrokerId>, target: Vec<BrokerId>) -> Self {
        let mut replicas = target.clone();
        replicas.extend(original.iter().filter(|b| !target.contains(b)));
        let original = replicas
            .into_iter()
            .filter(|b| original.contains(b))
            .collect();
        Self { original, target }
    }

    /// The move as Kafka's metadata records it: the replica set during the
    /// move and its adding and removing replicas. `None` when neither
    /// list names anything (no move is pending).
    pub fn from_parts(
        replicas: &[BrokerId],
        adding: &[BrokerId],
        removing: &[BrokerId],
    ) -> Option<Self> {
        if adding.is_empty() && removing.is_empty() {
            return None;
        }
        let original = replicas
            .iter()
            .copied()
            .filter(|b| !adding.contains(b))
            .collect();
        let target = replicas
            .iter()
            .copied()
            .filter(|b| !removing.contains(b))
            .collect();
        Some(Self { original, target })
    }

    pub fn original(&self) -> &[BrokerId] {
        &self.original
    }

    pub fn target(&self) -> &[BrokerId] {
        &self.target
    }

    /// The replica set while the move runs: the target, then the original
    /// replicas it drops (Kafka's order, so the preferred leader is the
    /// target's first replica from the start).
    pub fn replicas(&self) -> Vec<BrokerId> {
        let mut out = self.target.clone();
        out.extend(self.original.iter().filter(|b| !self.target.contains(b)));
        out
    }

    /// The target's replicas that are new (target − original).
    pub fn adding(&self) -> Vec<BrokerId> {
        minus(&self.target, &self.original)
    }

    /// The original replicas the target drops (original − target).
    pub fn removing(&self) -> Vec<BrokerId> {
        minus(&self.original, &self.target)
    }

    /// True when the move changes nothing but the order (nothing to add
    /// or remove): it completes at once.
    pub fn is_reorder(&self) -> bool {
        self.adding().is_empty() && self.removing().is_empty()
    }
}

fn minus(a: &[BrokerId], b: &[BrokerId]) -> Vec<BrokerId> {
    a.iter().copied().filter(|x| !b.contains(x)).collect()
}

/// What a completed (or cancelled) move changed, for the caller to persist
/// before it removes the replicas' directories.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettledPlacement {
    /// The replica set now, in placement order.
    pub replicas: Vec<BrokerId>,
    /// The replicas that left the set; their directories are still there.
    pub removed: Vec<BrokerId>,
    /// The leader and epoch now.
    pub leader: LeaderAndEpoch,
    /// Whether leadership moved (a removed leader handed over).
    pub leader_moved: bool,
}

/// Checks a target replica list: not empty, no duplicates, no negative id
/// (which brokers exist is the cluster's to check).
pub fn check_target(tp: &TopicPartition, target: &[BrokerId]) -> Result<()> {
    let bad = |reason: String| Err(ReplicationError::InvalidRequest(format!("{tp}: {reason}")));
    if target.is_empty() {
        return bad("the target replica list is empty".into());
    }
    if let Some(neg) = target.iter().find(|b| **b < 0) {
        return bad(format!("broker ids must be >= 0, got {neg}"));
    }
    let unique: BTreeSet<BrokerId> = target.iter().copied().collect();
    if unique.len() != target.len() {
        return bad(format!("the target replica list {target:?} has duplicates"));
    }
    Ok(())
}

impl PartitionReplicaSet {
    /// The move in progress, if any.
    pub fn reassignment(&self) -> Option<&Reassignment> {
        self.reassignment.as_ref()
    }

    /// The move a request for `target` starts: from the original replicas
    /// of a move already pending (a new target replaces the old one), else
    /// from the current replicas. Changes nothing.
    pub fn plan_reassignment(&self, target: &[BrokerId]) -> Result<Reassignment> {
        check_target(&self.tp, target)?;
        let original = self
            .reassignment
            .as_ref()
            .map_or_else(|| self.placement.clone(), |r| r.original.clone());
        let plan = Reassignment::new(original, target.to_vec());
        let kept = plan.replicas();
        if !kept.contains(&self.leader_id) {
            // Only a preferred election during a move can make an adding
            // replica the leader; a new target that drops it again must
            // wait for that move to end.
            return Err(ReplicationError::InvalidRequest(format!(
                "{}: broker {} leads it and is in neither the original replicas {:?} nor the new target {target:?}; cancel the pending move first",
                self.tp, self.leader_id, plan.original
            )));
        }
        Ok(plan)
    }

    /// Starts `plan` (from [`Self::plan_reassignment`], already persisted
    /// by the caller): opens a follower replica on every broker that gets
    /// one (created empty, or recovered if its directory exists), offline
    /// on the brokers in `offline` (they fetch once back online), and drops
    /// the replicas of a replaced move that are no longer wanted (returned:
    /// their directories are for the caller to remove). A move that only
    /// reorders is not kept pending: the caller completes it at once with
    /// [`Self::try_complete_reassignment`]. If a new replica cannot be
    /// opened, the set is left as it was.
    pub fn begin_reassignment(
        &mut self,
        plan: Reassignment,
        offline: &BTreeSet<BrokerId>,
    ) -> Result<Vec<BrokerId>> {
        let replicas = plan.replicas();
        let now = self.clock.now_ms();
        // Every new replica opens before the set changes, so a failure
        // leaves the set as it was (the new ones are dropped unused).
        let mut opened = Vec::new();
        for &broker in &replicas {
            if self.replicas.contains_key(&broker) {
                continue;
            }
            let dir = replica_dir(&self.data_dir, broker, &self.tp);
            let (mut replica, regs) =
                Replica::open(dir, &self.tp, &self.config.log, self.leader_epoch, now)?;
            replica.log.set_leader_epoch(self.leader_epoch)?;
            if offline.contains(&broker) {
                replica.role = ReplicaRole::Offline;
            }
            opened.push((broker, replica, regs));
        }
        for (broker, replica, regs) in opened {
            super::merge_registrations(&mut self.registrations, &regs);
            self.replicas.insert(broker, replica);
        }
        let dropped = self.drop_replicas_outside(&replicas);
        self.placement = replicas;
        self.reassignment = Some(plan);
        self.check_invariants();
        Ok(dropped)
    }

    /// Restores the move the metadata recorded as pending (at open, after
    /// [`Self::open`] opened every replica of the set during the move).
    pub fn restore_reassignment(&mut self, reassignment: Reassignment) -> Result<()> {
        let replicas: BTreeSet<BrokerId> = reassignment.replicas().into_iter().collect();
        let held: BTreeSet<BrokerId> = self.placement.iter().copied().collect();
        if replicas != held {
            return Err(ReplicationError::InvalidRequest(format!(
                "{}: the recorded move from {:?} to {:?} does not match the replicas {:?}",
                self.tp, reassignment.original, reassignment.target, self.placement
            )));
        }
        self.reassignment = Some(reassignment);
        Ok(())
    }

    /// Whether the pending move can complete: every adding replica is in
    /// the ISR and some in-sync replica stays (Kafka's rule).
    pub fn reassignment_ready(&self) -> bool {
        let Some(r) = &self.reassignment else {
            return false;
        };
        let removing = r.removing();
        r.adding().iter().all(|b| self.isr.contains(b))
            && self.isr.iter().any(|b| !removing.contains(b))
    }

    /// Completes the pending move if it is ready: the set becomes the
    /// target (see [`SettledPlacement`]). `None` when no move is pending or
    /// it is not ready yet.
    pub fn try_complete_reassignment(&mut self) -> Result<Option<SettledPlacement>> {
        if !self.reassignment_ready() {
            return Ok(None);
        }
        let target = self
            .reassignment
            .as_ref()
            .map(|r| r.target.clone())
            .expect("a ready move is pending");
        self.settle_placement(target).map(Some)
    }

    /// Cancels the pending move: the set goes back to the original
    /// replicas; a leader among the adding replicas hands over to the
    /// first in-sync original replica. Refused when no move is pending, or
    /// when no original replica is in sync (see
    /// [`Self::cancel_needs_unclean_election`]: this never elects a replica
    /// that may lack committed records).
    pub fn cancel_reassignment(&mut self) -> Result<SettledPlacement> {
        let original = self.pending_original()?;
        self.settle_placement(original)
    }

    /// Whether cancelling the pending move would need an unclean
    /// election: no original replica is in the ISR (so the leader is one
    /// of the adding replicas, which leave). False when no move is pending.
    pub fn cancel_needs_unclean_election(&self) -> bool {
        self.reassignment
            .as_ref()
            .is_some_and(|r| !r.original.iter().any(|b| self.isr.contains(b)))
    }

    /// Cancels the pending move when no original replica is in sync, as
    /// Kafka's controller reverts one where unclean elections are allowed:
    /// `leader`, an original replica the caller chose (the first online
    /// one; an offline one leaves the partition without a serving leader
    /// until its broker returns), leads in epoch + 1 as in
    /// [`Self::promote_unclean`] — records above its log end are lost —
    /// then the set goes back to the original replicas. When an original
    /// replica is in sync after all, this is [`Self::cancel_reassignment`].
    pub fn cancel_reassignment_unclean(&mut self, leader: BrokerId) -> Result<SettledPlacement> {
        let original = self.pending_original()?;
        if !self.cancel_needs_unclean_election() {
            return self.settle_placement(original);
        }
        if !original.contains(&leader) {
            return Err(ReplicationError::InvalidRequest(format!(
                "{}: broker {leader} is not one of the original replicas {original:?}",
                self.tp
            )));
        }
        self.take_leadership(leader)?;
        let mut settled = self.settle_placement(original)?;
        settled.leader_moved = true;
        Ok(settled)
    }

    /// The original replicas of the pending move.
    fn pending_original(&self) -> Result<Vec<BrokerId>> {
        match &self.reassignment {
            Some(r) => Ok(r.original.clone()),
            None => Err(ReplicationError::InvalidRequest(format!(
                "{}: no reassignment is in progress",
                self.tp
            ))),
        }
    }

    /// Makes `replicas` (a subset of the held ones holding an in-sync
    /// replica) the whole set: leadership moves to its first in-sync
    /// replica if the leader is not in it, the others leave, and no move
    /// stays pending.
    fn settle_placement(&mut self, replicas: Vec<BrokerId>) -> Result<SettledPlacement> {
        let mut leader_moved = false;
        if !replicas.contains(&self.leader_id) {
            let Some(&next) = replicas.iter().find(|b| self.isr.contains(b)) else {
                return Err(ReplicationError::NotInSyncReplica {
                    broker: replicas.first().copied().unwrap_or(-1),
                    isr: self.isr(),
                });
            };
            self.promote(next)?;
            leader_moved = true;
        }
        let removed = self.drop_replicas_outside(&replicas);
        self.placement = replicas.clone();
        self.reassignment = None;
        self.advance_high_watermark();
        self.check_invariants();
        Ok(SettledPlacement {
            replicas,
            removed,
            leader: self.leader_and_epoch(),
            leader_moved,
        })
    }

    /// Drops every replica not in `keep` (never the leader) from the set
    /// and the ISR, without touching its files; returns their brokers.
    fn drop_replicas_outside(&mut self, keep: &[BrokerId]) -> Vec<BrokerId> {
        let gone: Vec<BrokerId> = self
            .replicas
            .keys()
            .copied()
            .filter(|b| !keep.contains(b))
            .collect();
        for b in &gone {
            assert_ne!(*b, self.leader_id, "{}: the leader never leaves", self.tp);
            self.isr.remove(b);
            // Dropped like a crash: the directory is removed once the
            // caller has persisted that the replica left.
            drop(self.replicas.remove(b));
        }
        gone
    }
}

/// Removes the directories of `brokers`' replicas of `tp` (missing ones are
/// fine: an earlier attempt may have removed them).
pub fn remove_replica_dirs(
    data_dir: &Path,
    tp: &TopicPartition,
    brokers: &[BrokerId],
) -> Result<()> {
    for &broker in brokers {
        let dir = replica_dir(data_dir, broker, tp);
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                ) => {}
            Err(e) => return Err(mk_storage::StorageError::io(&dir, e).into()),
        }
    }
    Ok(())
}
