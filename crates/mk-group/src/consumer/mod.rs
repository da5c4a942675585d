//! KIP-848 consumer groups (the second of the three group protocols):
//! members heartbeat with ConsumerGroupHeartbeat and the coordinator
//! assigns the partitions itself with a server-side assignor, moving each
//! member towards its target assignment one safe step at a time — a
//! partition is revoked from its owner before any other member gets it.
//! There is no join barrier, no leader and no generation: a group epoch
//! grows whenever the members' subscriptions (or the topics they resolve
//! to) change, the target assignment carries the epoch it was computed
//! for, and each member has its own member epoch.
//!
//! Files: `heartbeat.rs` (the heartbeat and leave rules), `member.rs` (one
//! member), `reconcile.rs` (one member's next step towards its target),
//! `assign.rs` (the `uniform` and `range` assignors), `subscription.rs`
//! (topic names and regular expressions); this file holds the group's
//! bookkeeping (who holds which partition), describe, the time step and
//! the member-epoch rule of offset commits and fetches.

mod assign;
mod heartbeat;
mod member;
mod reconcile;
mod subscription;

pub use assign::ServerAssignor;
pub use heartbeat::{ConsumerHeartbeat, ConsumerHeartbeatAnswer};
pub use member::{LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH, MemberState};
pub(crate) use subscription::Resolver;
pub use subscription::{MAX_REGEX_BYTES, MAX_SUBSCRIBED_TOPICS};

use crate::coordinator::GroupCoordinator;
use crate::error::{GroupError, Result};
use crate::group::GroupState;
use crate::metadata::TopicMetadata;
use member::ConsumerMember;
use mk_core::TopicPartition;
use std::collections::{BTreeMap, BTreeSet};

/// Every member's subscription resolved to existing topics.
pub(crate) type Resolved = BTreeMap<String, BTreeSet<String>>;

/// One KIP-848 consumer group.
#[derive(Debug, Default)]
pub(crate) struct ConsumerGroup {
    /// Grows whenever the subscriptions or their topics change.
    pub(crate) epoch: i32,
    /// The group epoch the target assignment was computed for.
    pub(crate) assignment_epoch: i32,
    pub(crate) members: BTreeMap<String, ConsumerMember>,
    /// Member id -> its target partitions.
    pub(crate) targets: BTreeMap<String, BTreeSet<TopicPartition>>,
    /// Static members: instance id -> member id.
    pub(crate) statics: BTreeMap<String, String>,
    /// Who holds each partition (assigned or still revoking). A partition
    /// has at most one holder: that is the protocol's safety rule.
    owners: BTreeMap<TopicPartition, String>,
    /// The subscribed topics and their partition counts the current epoch
    /// was computed with.
    pub(crate) subscribed: BTreeMap<String, u32>,
}

impl ConsumerGroup {
    /// A group at `epoch` without members (new, or after a restart).
    pub(crate) fn new(epoch: i32) -> Self {
        Self {
            epoch,
            assignment_epoch: epoch,
            ..Self::default()
        }
    }

    /// Kafka's consumer group states.
    pub(crate) fn state(&self) -> GroupState {
        if self.members.is_empty() {
            GroupState::Empty
        } else if self.epoch > self.assignment_epoch {
            GroupState::Assigning
        } else if self
            .members
            .values()
            .any(|m| !m.reconciled_to(self.assignment_epoch))
        {
            GroupState::Reconciling
        } else {
            GroupState::Stable
        }
    }

    /// The member holding `tp`, if any.
    pub(crate) fn holder(&self, tp: &TopicPartition) -> Option<&str> {
        self.owners.get(tp).map(String::as_str)
    }

    /// Stores `m` (replacing its previous self) and records what it holds.
    /// Reconciliation never hands out a partition another member holds;
    /// should it ever, the first holder keeps it (debug builds stop).
    pub(crate) fn put_member(&mut self, m: ConsumerMember) {
        self.release(&m.member_id);
        for tp in m.held() {
            let holder = self
                .owners
                .entry(tp.clone())
                .or_insert_with(|| m.member_id.clone());
            debug_assert_eq!(holder, &m.member_id, "{tp} would have two holders");
        }
        if let Some(i) = &m.instance_id {
            self.statics.insert(i.clone(), m.member_id.clone());
        }
        self.members.insert(m.member_id.clone(), m);
    }

    /// Removes a member and frees what it held.
    pub(crate) fn remove_member(&mut self, id: &str) -> Option<ConsumerMember> {
        self.release(id);
        self.targets.remove(id);
        let m = self.members.remove(id)?;
        if let Some(i) = &m.instance_id
            && self.statics.get(i).map(String::as_str) == Some(id)
        {
            self.statics.remove(i);
        }
        Some(m)
    }

    fn release(&mut self, id: &str) {
        if let Some(old) = self.members.get(id) {
            for tp in old.held() {
                if self.owners.get(tp).map(String::as_str) == Some(id) {
                    self.owners.remove(tp);
                }
            }
        }
    }

    /// The assignor the members ask for most.
    pub(crate) fn assignor(&self) -> ServerAssignor {
        assign::preferred(self.members.values().map(|m| m.assignor))
    }

    pub(crate) fn describe(&self, group_id: &str) -> ConsumerGroupDescription {
        ConsumerGroupDescription {
            group_id: group_id.to_string(),
            state: self.state(),
            epoch: self.epoch,
            assignment_epoch: self.assignment_epoch,
            assignor: self.assignor(),
            members: self
                .members
                .values()
                .map(|m| ConsumerMemberDescription {
                    member_id: m.member_id.clone(),
                    instance_id: m.instance_id.clone(),
                    rack_id: m.rack_id.clone(),
                    member_epoch: m.epoch,
                    state: m.state,
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    topics: m.topics.iter().cloned().collect(),
                    regex: m.regex.clone(),
                    assignment: m.assigned.iter().cloned().collect(),
                    revoking: m.revoking.iter().cloned().collect(),
                    target: self
                        .targets
                        .get(&m.member_id)
                        .map(|t| t.iter().cloned().collect())
                        .unwrap_or_default(),
                    session_deadline_ms: m.session_deadline_ms,
                })
                .collect(),
        }
    }
}

/// What describe (ConsumerGroupDescribe, the CLI, JSON-TCP) shows of a
/// consumer group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerGroupDescription {
    pub group_id: String,
    /// Empty, Assigning, Reconciling or Stable.
    pub state: GroupState,
    pub epoch: i32,
    pub assignment_epoch: i32,
    pub assignor: ServerAssignor,
    /// Sorted by member id.
    pub members: Vec<ConsumerMemberDescription>,
}

/// One member of a described consumer group: its current assignment and
/// its target side by side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerMemberDescription {
    pub member_id: String,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    /// -2 while a static member is away.
    pub member_epoch: i32,
    pub state: MemberState,
    pub client_id: String,
    pub client_host: String,
    /// Subscribed topic names, sorted.
    pub topics: Vec<String>,
    pub regex: Option<String>,
    /// The partitions the member holds now, sorted.
    pub assignment: Vec<TopicPartition>,
    /// Partitions it holds and must give up, sorted.
    pub revoking: Vec<TopicPartition>,
    /// Its target assignment, sorted.
    pub target: Vec<TopicPartition>,
    pub session_deadline_ms: i64,
}

impl GroupCoordinator {
    /// The consumer group `group` (ConsumerGroupDescribe); `None` if no
    /// consumer group has that id (an unknown id, or a classic or share
    /// group).
    pub fn describe_consumer_group(&self, group: &str) -> Option<ConsumerGroupDescription> {
        self.consumer_groups.get(group).map(|g| g.describe(group))
    }

    /// Forgets the compiled expressions no member of a consumer group
    /// uses any more (after the time step removed members).
    pub(crate) fn forget_unused_regexes(&mut self) {
        let in_use: BTreeSet<&str> = self
            .consumer_groups
            .values()
            .flat_map(|g| g.members.values().filter_map(|m| m.regex.as_deref()))
            .collect();
        self.resolver.retain(&in_use);
    }

    /// The member-epoch rule of an OffsetCommit (or TxnOffsetCommit) to a
    /// consumer group: a commit without membership (negative epoch) is
    /// accepted while the group has no members; otherwise an unknown member
    /// -> UNKNOWN_MEMBER; a non-transactional commit below OffsetCommit v9
    /// -> UNSUPPORTED_VERSION (Kafka requires v9+ of KIP-848 members); an
    /// epoch other than the member's -> STALE_MEMBER_EPOCH.
    pub(crate) fn validate_consumer_commit(
        &self,
        group: &str,
        member: &str,
        epoch: i32,
        version: Option<i16>,
    ) -> Result<()> {
        let g = &self.consumer_groups[group];
        if epoch < 0 && g.members.is_empty() {
            return Ok(());
        }
        let Some(m) = g.members.get(member) else {
            return Err(unknown_member(group, member));
        };
        if version.is_some_and(|v| v < 9) {
            return Err(GroupError::UnsupportedVersion(
                "OffsetCommit version 9 or above must be used by members using the consumer group protocol".into(),
            ));
        }
        at_epoch(group, member, epoch, m.epoch)
    }

    /// OffsetFetch v9+'s membership check: a request with a member id (or
    /// a member epoch >= 0) must come from a current member of a consumer
    /// group at its epoch (UNKNOWN_MEMBER, STALE_MEMBER_EPOCH). Requests
    /// without membership, and requests to classic groups, are not checked
    /// (Kafka checks only a classic group's Dead state). An unknown group
    /// answers no offsets, not an error.
    pub fn validate_offset_fetch(
        &self,
        group: &str,
        member: Option<&str>,
        epoch: i32,
    ) -> Result<()> {
        let Some(g) = self.consumer_groups.get(group) else {
            return Ok(());
        };
        if member.is_none() && epoch < 0 {
            return Ok(());
        }
        let member = member.unwrap_or_default();
        let Some(m) = g.members.get(member) else {
            return Err(unknown_member(group, member));
        };
        at_epoch(group, member, epoch, m.epoch)
    }

    /// The group's subscription metadata and every member's resolved
    /// topics, with `updated` in place of its current self (and `without`
    /// left out).
    pub(crate) fn consumer_subscriptions(
        &mut self,
        g: &ConsumerGroup,
        updated: Option<&ConsumerMember>,
        without: Option<&str>,
        meta: &dyn TopicMetadata,
    ) -> Result<(BTreeMap<String, u32>, Resolved)> {
        self.resolver.refresh(meta);
        let others = g
            .members
            .values()
            .filter(|m| Some(m.member_id.as_str()) != without)
            .filter(|m| updated.is_none_or(|u| u.member_id != m.member_id));
        let mut resolved = BTreeMap::new();
        for m in others.chain(updated) {
            let topics = self.resolver.resolve(&m.topics, m.regex.as_deref(), meta)?;
            resolved.insert(m.member_id.clone(), topics);
        }
        let counts = resolved
            .values()
            .flatten()
            .filter_map(|t| meta.partition_count(t).map(|n| (t.clone(), n)))
            .collect();
        Ok((counts, resolved))
    }
}

fn unknown_member(group: &str, member: &str) -> GroupError {
    GroupError::UnknownMember(format!(
        "member {member:?} is not a member of consumer group {group:?}"
    ))
}

/// STALE_MEMBER_EPOCH unless the `given` epoch is the member's `current`.
fn at_epoch(group: &str, member: &str, given: i32, current: i32) -> Result<()> {
    if given == current {
        return Ok(());
    }
    Err(GroupError::StaleMemberEpoch {
        group: group.to_string(),
        member: member.to_string(),
        given,
        current,
    })
}
