//! Consumer-group operations of the core: calls into the one group
//! coordinator with the cluster's topic metadata, storage failures guarded
//! like every other store. The Kafka adapter uses the classic-protocol
//! operations (`join_member`, `sync_member`, ...); JSON-TCP and the
//! in-process consumer use `join` and friends, whose members the
//! coordinator assigns itself. Both reach the same groups, generations and
//! committed offsets.

use crate::cluster::BrokerCluster;
use crate::error::{ClusterError, Result};
use mk_core::TopicPartition;
use mk_group::{
    AnyGroupDescription, AssignorKind, GroupCoordinator, GroupDescription, GroupError, GroupHandle,
    GroupJoin, GroupJoined, GroupListing, GroupSync, GroupSynced, MemberAssignment,
    OffsetAndMetadata,
};
use std::collections::BTreeMap;

/// Consumer groups and committed offsets: `cluster.groups().join(..)`.
#[derive(Debug, Clone, Copy)]
pub struct Groups<'a> {
    pub(crate) cluster: &'a BrokerCluster,
}

impl BrokerCluster {
    /// The groups role (see [`Groups`]).
    pub fn groups(&self) -> Groups<'_> {
        Groups { cluster: self }
    }
}

impl Groups<'_> {
    pub(crate) fn with_groups<T>(
        self,
        f: impl FnOnce(&mut GroupCoordinator, &BTreeMap<String, u32>) -> mk_group::Result<T>,
    ) -> Result<T> {
        let counts = self.cluster.partition_counts();
        let mut guard = self.cluster.group_coordinator()?;
        let g = guard.as_mut().ok_or(ClusterError::Closed)?;
        let r = f(g, &counts);
        drop(guard);
        self.cluster.guard(r)
    }

    /// Waits for a join or sync answer without holding the coordinator's
    /// lock. A handle whose coordinator went away (the cluster closed or
    /// failed) reports the cluster's state.
    async fn group_answer<T>(self, handle: GroupHandle<T>) -> Result<T> {
        match handle.await {
            Ok(v) => Ok(v),
            Err(GroupError::Closed(_)) => Err(self
                .cluster
                .check_running()
                .err()
                .unwrap_or(ClusterError::Closed)),
            Err(e) => Err(e.into()),
        }
    }

    /// A number for a new member id, unique in this process (the
    /// in-process consumer names its members with it).
    pub fn next_member_number(self) -> u64 {
        self.cluster.next_member_number()
    }

    // ----- Kafka's classic protocol ----------------------------------------

    /// JoinGroup: resolves when the member's rebalance completes (or at once
    /// when nothing has to be waited for). A MEMBER_ID_REQUIRED error
    /// carries the member id to join with, see
    /// [`ClusterError::member_id_required`]. Dropping the future (a closed
    /// connection) leaves the member in the group until its session expires
    /// or the rebalance completes without it, as in Kafka.
    pub async fn join_member(self, join: GroupJoin) -> Result<GroupJoined> {
        let handle = self.with_groups(|g, _| g.join_member(join))?;
        self.group_answer(handle).await
    }

    /// SyncGroup: the leader's assignment, verbatim; a follower's call
    /// resolves once the leader's sync arrived.
    pub async fn sync_member(self, sync: GroupSync) -> Result<GroupSynced> {
        let handle = self.with_groups(|g, _| g.sync_member(sync))?;
        self.group_answer(handle).await
    }

    /// Heartbeat (REBALANCE_IN_PROGRESS tells the member to rejoin).
    pub fn heartbeat_member(
        self,
        group: &str,
        member: &str,
        generation: i32,
        instance: Option<&str>,
    ) -> Result<()> {
        self.with_groups(|g, _| g.heartbeat_member(group, member, generation, instance))
    }

    /// LeaveGroup for one or many members, each `(member id, instance id)`
    /// (member id "" when an instance id names it); one answer per member.
    pub fn leave_members(
        self,
        group: &str,
        members: &[(String, Option<String>)],
    ) -> Result<Vec<Result<()>>> {
        let answers = self.with_groups(|g, meta| g.leave_members(group, members, meta))?;
        Ok(answers
            .into_iter()
            .map(|r| r.map_err(ClusterError::from))
            .collect())
    }

    /// OffsetCommit with leader epochs and metadata (Kafka's): the rule of
    /// `commit`, then per partition OFFSET_METADATA_TOO_LARGE
    /// for metadata over the bound while the others are stored. One answer
    /// per partition, in partition order.
    pub fn commit_with_metadata(
        self,
        group: &str,
        generation: i32,
        member: &str,
        instance: Option<&str>,
        offsets: &BTreeMap<TopicPartition, OffsetAndMetadata>,
    ) -> Result<Vec<(TopicPartition, Result<()>)>> {
        let answers = self.with_groups(|g, meta| {
            g.commit_offsets_with_metadata(group, generation, member, instance, offsets, meta)
        })?;
        Ok(answers
            .into_iter()
            .map(|(tp, r)| (tp, r.map_err(ClusterError::from)))
            .collect())
    }

    /// The metadata bound of a TxnOffsetCommit, per partition (see
    /// `GroupCoordinator::check_offset_metadata`).
    pub(crate) fn check_offset_metadata(
        self,
        offsets: &BTreeMap<TopicPartition, OffsetAndMetadata>,
    ) -> Result<Vec<(TopicPartition, Result<()>)>> {
        let answers = self.with_groups(|g, _| {
            Ok(offsets
                .iter()
                .map(|(tp, o)| (tp.clone(), g.check_offset_metadata(tp, &o.metadata)))
                .collect::<Vec<_>>())
        })?;
        Ok(answers
            .into_iter()
            .map(|(tp, r)| (tp, r.map_err(ClusterError::from)))
            .collect())
    }

    /// OffsetCommit: generation -1 with an empty member id (and no instance
    /// id) is a simple commit, allowed while the group has no members.
    pub fn commit(
        self,
        group: &str,
        generation: i32,
        member: &str,
        instance: Option<&str>,
        offsets: &BTreeMap<TopicPartition, i64>,
    ) -> Result<()> {
        self.with_groups(|g, meta| {
            g.commit_offsets(group, generation, member, instance, offsets, meta)
        })
    }

    /// ListGroups: every group with its protocol type and state.
    pub fn listings(self) -> Result<Vec<GroupListing>> {
        self.with_groups(|g, _| Ok(g.list_group_listings()))
    }

    /// DeleteGroups: per group, GROUP_ID_NOT_FOUND or NON_EMPTY_GROUP.
    pub fn delete(self, groups: &[String]) -> Result<Vec<Result<()>>> {
        let answers = self.with_groups(|g, _| g.delete_groups(groups))?;
        Ok(answers
            .into_iter()
            .map(|r| r.map_err(ClusterError::from))
            .collect())
    }

    /// Deletes one group (DeleteGroups for a single group): its committed
    /// offsets go with it. GROUP_ID_NOT_FOUND or NON_EMPTY_GROUP as Kafka
    /// answers them.
    pub fn delete_one(self, group: &str) -> Result<()> {
        self.delete(&[group.to_string()])?.pop().unwrap_or(Ok(()))
    }

    /// Sets a group's committed offsets from outside the group, as
    /// `kafka-consumer-groups --reset-offsets` does: Kafka's commit for a
    /// group without members (generation -1, no member id), so a group
    /// with live members refuses it. Offsets are stored as given, even
    /// below the log start (a consumer then applies its reset policy).
    pub fn alter_offsets(self, group: &str, offsets: &BTreeMap<TopicPartition, i64>) -> Result<()> {
        self.commit(group, -1, "", None, offsets)
    }

    /// Every group's lag per partition it has committed: the high
    /// watermark minus the committed offset, never below 0 (the consumer's
    /// `lag` from outside the group). Partitions of deleted topics are left
    /// out.
    pub fn lags(self) -> Result<Vec<(String, TopicPartition, i64)>> {
        let mut lags = Vec::new();
        for group in self.list()? {
            for (tp, committed) in self.committed(&group)? {
                match self.cluster.data().visible_end(&tp) {
                    Ok(hw) => lags.push((group.clone(), tp, (hw - committed).max(0))),
                    Err(e)
                        if matches!(
                            e.code(),
                            mk_core::ErrorCode::UnknownTopic | mk_core::ErrorCode::UnknownPartition
                        ) => {}
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(lags)
    }

    /// OffsetDelete: per partition, GROUP_SUBSCRIBED_TO_TOPIC where a member
    /// subscribes to the topic; the whole request GROUP_ID_NOT_FOUND or
    /// NON_EMPTY_GROUP.
    pub fn delete_offsets(
        self,
        group: &str,
        partitions: &[TopicPartition],
    ) -> Result<Vec<(TopicPartition, Result<()>)>> {
        let answers = self.with_groups(|g, _| g.delete_group_offsets(group, partitions))?;
        Ok(answers
            .into_iter()
            .map(|(tp, r)| (tp, r.map_err(ClusterError::from)))
            .collect())
    }

    // ----- coordinator-assigned members (JSON-TCP, in-process) ---------------

    /// Joins (or re-joins) a group whose partitions the coordinator assigns;
    /// a re-join with unchanged topics while Stable keeps the generation.
    pub fn join(self, group: &str, member: &str, topics: &[String]) -> Result<MemberAssignment> {
        self.with_groups(|g, meta| g.join(group, member, topics, meta))
    }

    /// Joins choosing the group's assignor (see mk-group for the rule).
    pub fn join_with_assignor(
        self,
        group: &str,
        member: &str,
        topics: &[String],
        assignor: Option<AssignorKind>,
    ) -> Result<MemberAssignment> {
        self.with_groups(|g, meta| g.join_with_assignor(group, member, topics, assignor, meta))
    }

    /// Leaves a group (unknown group or member is a no-op: `false`).
    pub fn leave(self, group: &str, member: &str) -> Result<bool> {
        self.with_groups(|g, meta| g.leave(group, member, meta))
    }

    pub fn heartbeat(self, group: &str, member: &str, generation: i32) -> Result<()> {
        self.heartbeat_member(group, member, generation, None)
    }

    /// The member's assignment in the current generation.
    pub fn assignment(self, group: &str, member: &str) -> Result<MemberAssignment> {
        self.with_groups(|g, _| g.assignment(group, member))
    }

    /// A member's commit (JSON-TCP's `commit_offsets`): the same rule as
    /// `commit`, without an instance id.
    pub fn commit_offsets(
        self,
        group: &str,
        member: &str,
        generation: i32,
        offsets: &BTreeMap<TopicPartition, i64>,
    ) -> Result<()> {
        self.commit(group, generation, member, None, offsets)
    }

    /// A commit of a consumer that assigns partitions by hand (a simple
    /// commit).
    pub fn commit_direct(self, group: &str, offsets: &BTreeMap<TopicPartition, i64>) -> Result<()> {
        self.with_groups(|g, meta| g.commit_direct(group, offsets, meta))
    }

    // ----- reads and the time step -------------------------------------------

    pub fn fetch_committed(self, group: &str, tp: &TopicPartition) -> Result<Option<i64>> {
        self.with_groups(|g, _| Ok(g.fetch_committed(group, tp)))
    }

    /// Every committed offset of a group.
    pub fn committed(self, group: &str) -> Result<BTreeMap<TopicPartition, i64>> {
        self.with_groups(|g, _| Ok(g.committed_offsets(group)))
    }

    /// Committed offsets of a group (Kafka's OffsetFetch): every committed
    /// partition, or, for a list of partitions, each with its offset, leader
    /// epoch and metadata, or `None` where nothing is committed, in the
    /// order asked.
    pub fn committed_for(
        self,
        group: &str,
        partitions: Option<&[TopicPartition]>,
    ) -> Result<Vec<(TopicPartition, Option<OffsetAndMetadata>)>> {
        self.with_groups(|g, _| {
            Ok(match partitions {
                None => g
                    .committed_offsets_with_metadata(group)
                    .into_iter()
                    .map(|(tp, o)| (tp, Some(o)))
                    .collect(),
                Some(ps) => ps
                    .iter()
                    .map(|tp| (tp.clone(), g.fetch_committed_with_metadata(group, tp)))
                    .collect(),
            })
        })
    }

    /// State, generation, protocol and members of a group; `None` if the
    /// coordinator does not know it.
    pub fn describe(self, group: &str) -> Result<Option<GroupDescription>> {
        self.with_groups(|g, _| Ok(g.describe_group(group)))
    }

    /// A group of any type (classic, KIP-848 consumer or share) as an
    /// operator's describe shows it; `None` if the coordinator does not
    /// know it.
    pub fn describe_any(self, group: &str) -> Result<Option<AnyGroupDescription>> {
        self.with_groups(|g, _| Ok(g.describe_any_group(group)))
    }

    pub fn list(self) -> Result<Vec<String>> {
        self.with_groups(|g, _| Ok(g.list_groups()))
    }

    /// The group coordinator's time step: removes members whose session
    /// expired (and members that missed their SyncGroup), completes
    /// rebalances whose timeout passed, and rebalances the affected groups;
    /// returns the removed `(group, member)` pairs, sorted. The drivers run
    /// it every 100 ms.
    pub fn expire_members(self) -> Result<Vec<(String, String)>> {
        self.with_groups(|g, meta| g.expire_members(meta))
    }

    /// Kafka's offset expiration: the committed offsets of a group that
    /// has had no member for `offsets_retention_ms` go, and the group with
    /// them (see `GroupCoordinator::expire_offsets`); returns those groups.
    /// The drivers run it with the cleanup cycle, every minute.
    pub fn expire_offsets(self) -> Result<Vec<String>> {
        self.with_groups(|g, _| g.expire_offsets())
    }

    /// The group half of a TxnOffsetCommit's fencing (see
    /// `GroupCoordinator::validate_txn_offset_commit`).
    pub(crate) fn validate_txn_offset_commit(
        self,
        group: &str,
        member: &str,
        generation: i32,
        group_instance_id: Option<&str>,
    ) -> Result<()> {
        self.with_groups(|g, _| {
            g.validate_txn_offset_commit(group, member, generation, group_instance_id)
        })
    }

    pub(crate) fn store_transactional_offsets(
        self,
        group: &str,
        offsets: &BTreeMap<TopicPartition, OffsetAndMetadata>,
    ) -> Result<()> {
        let mut guard = self
            .cluster
            .store(&self.cluster.groups, "group coordinator")?;
        let g = guard.as_mut().ok_or(ClusterError::Closed)?;
        let r = g.commit_transactional(group, offsets);
        drop(guard);
        self.cluster.guard(r)
    }
}
