//! Consumer-group operations of the core: thin calls into the group
//! coordinator with the cluster's topic metadata.

use crate::cluster::BrokerCluster;
use crate::error::{ClusterError, Result};
use mk_core::TopicPartition;
use mk_group::{AssignorKind, GroupCoordinator, GroupDescription, MemberAssignment};
use std::collections::BTreeMap;

impl BrokerCluster {
    fn with_groups<T>(
        &self,
        f: impl FnOnce(&mut GroupCoordinator, &BTreeMap<String, u32>) -> mk_group::Result<T>,
    ) -> Result<T> {
        let counts = self.partition_counts();
        let mut guard = self.groups()?;
        let g = guard.as_mut().ok_or(ClusterError::Closed)?;
        let r = f(g, &counts);
        drop(guard);
        self.guard(r)
    }

    /// Joins (or re-joins) a group; every join starts a new generation.
    pub fn join_group(
        &self,
        group: &str,
        member: &str,
        topics: &[String],
    ) -> Result<MemberAssignment> {
        self.with_groups(|g, meta| g.join(group, member, topics, meta))
    }

    /// Joins choosing the group's assignor (see mk-group for the rule).
    pub fn join_group_with_assignor(
        &self,
        group: &str,
        member: &str,
        topics: &[String],
        assignor: Option<AssignorKind>,
    ) -> Result<MemberAssignment> {
        self.with_groups(|g, meta| g.join_with_assignor(group, member, topics, assignor, meta))
    }

    /// Leaves a group (unknown group or member is a no-op: `false`).
    pub fn leave_group(&self, group: &str, member: &str) -> Result<bool> {
        self.with_groups(|g, meta| g.leave(group, member, meta))
    }

    pub fn heartbeat(&self, group: &str, member: &str, generation: i32) -> Result<()> {
        self.with_groups(|g, _| g.heartbeat(group, member, generation))
    }

    /// The member's assignment in the current generation.
    pub fn group_assignment(&self, group: &str, member: &str) -> Result<MemberAssignment> {
        self.with_groups(|g, _| g.assignment(group, member))
    }

    /// A member's commit, fenced by generation and ownership.
    pub fn commit_offsets(
        &self,
        group: &str,
        member: &str,
        generation: i32,
        offsets: &BTreeMap<TopicPartition, i64>,
    ) -> Result<()> {
        self.with_groups(|g, _| g.commit(group, member, generation, offsets))
    }

    /// A commit of a consumer that assigns partitions by hand.
    pub fn commit_offsets_direct(
        &self,
        group: &str,
        offsets: &BTreeMap<TopicPartition, i64>,
    ) -> Result<()> {
        self.with_groups(|g, meta| g.commit_direct(group, offsets, meta))
    }

    pub fn fetch_committed(&self, group: &str, tp: &TopicPartition) -> Result<Option<i64>> {
        self.with_groups(|g, _| Ok(g.fetch_committed(group, tp)))
    }

    /// Every committed offset of a group.
    pub fn committed_offsets(&self, group: &str) -> Result<BTreeMap<TopicPartition, i64>> {
        self.with_groups(|g, _| Ok(g.committed_offsets(group)))
    }

    /// Committed offsets of a group (Kafka's OffsetFetch): every committed
    /// partition, or, for a list of partitions, each with its offset or
    /// `None` where nothing is committed, in the order asked.
    pub fn committed_offsets_for(
        &self,
        group: &str,
        partitions: Option<&[TopicPartition]>,
    ) -> Result<Vec<(TopicPartition, Option<i64>)>> {
        match partitions {
            None => Ok(self
                .committed_offsets(group)?
                .into_iter()
                .map(|(tp, o)| (tp, Some(o)))
                .collect()),
            Some(ps) => ps
                .iter()
                .map(|tp| Ok((tp.clone(), self.fetch_committed(group, tp)?)))
                .collect(),
        }
    }

    pub fn describe_group(&self, group: &str) -> Result<Option<GroupDescription>> {
        self.with_groups(|g, _| Ok(g.describe_group(group)))
    }

    pub fn list_groups(&self) -> Result<Vec<String>> {
        self.with_groups(|g, _| Ok(g.list_groups()))
    }

    /// Removes members whose session expired and rebalances their groups;
    /// returns the removed `(group, member)` pairs, sorted.
    pub fn expire_group_members(&self) -> Result<Vec<(String, String)>> {
        self.with_groups(|g, meta| g.expire_members(meta))
    }

    /// The group half of a TxnOffsetCommit's fencing (see
    /// `GroupCoordinator::validate_txn_offset_commit`).
    pub(crate) fn validate_txn_offset_commit(
        &self,
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
        &self,
        group: &str,
        offsets: &BTreeMap<TopicPartition, i64>,
    ) -> Result<()> {
        let mut guard = self.groups.lock().expect("groups lock");
        let g = guard.as_mut().ok_or(ClusterError::Closed)?;
        let r = g.commit_transactional(group, offsets);
        drop(guard);
        self.guard(r)
    }
}
