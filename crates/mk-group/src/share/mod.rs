//! KIP-932 share groups (Kafka's queues; the third group protocol): the
//! members of a share group consume the same partitions together, record
//! by record. A member heartbeats with ShareGroupHeartbeat and is assigned
//! partitions it may fetch from (several members may share one); each
//! ShareFetch acquires records for it under a time lock, and it
//! acknowledges each record (accept, release, reject). A record whose lock
//! runs out, or whose member leaves, is handed out again, until its
//! delivery count reaches the limit and it is archived.
//!
//! Files: `partition.rs` (one share partition's record states), `fetch.rs`
//! (ShareFetch, ShareAcknowledge and the offset admin operations, with
//! their persistence), `session.rs` (share sessions), `assign.rs` (the
//! `simple` assignor); this file holds the group, its heartbeat, describe
//! and the time step.

mod assign;
mod fetch;
mod partition;
mod session;

pub use assign::SHARE_ASSIGNOR;
pub use fetch::{
    PartitionRead, Reads, ShareAckResult, ShareBounds, ShareFetchPlan, ShareFetchRequest,
    ShareFetched,
};
pub use partition::{
    AckBatch, AckType, AcquireLimits, AcquiredRange, FetchedSpan, RecordState, SharePartition,
    ShareSnapshot,
};
pub(crate) use session::ShareSessions;
pub use session::{FINAL_SESSION_EPOCH, INITIAL_SESSION_EPOCH};

use crate::assignor::AssignorKind;
use crate::codec::GroupMetadata;
use crate::coordinator::{GroupCoordinator, check_len};
use crate::error::{GroupError, Result, invalid};
use crate::group::{GroupState, GroupType};
use crate::metadata::TopicMetadata;
use crate::protocol::HeartbeatAnswer;
use mk_core::TopicPartition;
use std::collections::{BTreeMap, BTreeSet};

/// One member of a share group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ShareMember {
    pub(crate) member_id: String,
    pub(crate) rack_id: Option<String>,
    pub(crate) client_id: String,
    pub(crate) client_host: String,
    pub(crate) topics: BTreeSet<String>,
    pub(crate) epoch: i32,
    pub(crate) previous_epoch: i32,
    pub(crate) assigned: BTreeSet<TopicPartition>,
    pub(crate) session_deadline_ms: i64,
}

/// One share group and the state of its share partitions.
#[derive(Debug, Default)]
pub(crate) struct ShareGroup {
    pub(crate) epoch: i32,
    pub(crate) assignment_epoch: i32,
    pub(crate) members: BTreeMap<String, ShareMember>,
    pub(crate) subscribed: BTreeMap<String, u32>,
    pub(crate) partitions: BTreeMap<TopicPartition, SharePartition>,
}

impl ShareGroup {
    pub(crate) fn new(epoch: i32) -> Self {
        Self {
            epoch,
            assignment_epoch: epoch,
            ..Self::default()
        }
    }

    /// Kafka's share group states: Empty without members, else Stable (a
    /// member's assignment is its target at once: nothing is revoked).
    pub(crate) fn state(&self) -> GroupState {
        if self.members.is_empty() {
            GroupState::Empty
        } else {
            GroupState::Stable
        }
    }

    fn describe(&self, group_id: &str) -> ShareGroupDescription {
        ShareGroupDescription {
            group_id: group_id.to_string(),
            state: self.state(),
            epoch: self.epoch,
            assignment_epoch: self.assignment_epoch,
            members: self
                .members
                .values()
                .map(|m| ShareMemberDescription {
                    member_id: m.member_id.clone(),
                    rack_id: m.rack_id.clone(),
                    member_epoch: m.epoch,
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    topics: m.topics.iter().cloned().collect(),
                    assignment: m.assigned.iter().cloned().collect(),
                    session_deadline_ms: m.session_deadline_ms,
                })
                .collect(),
            partitions: self
                .partitions
                .iter()
                .map(|(tp, p)| (tp.clone(), p.start_offset(), p.end_offset()))
                .collect(),
        }
    }

    /// Recomputes every member's assignment (the target is the
    /// assignment: share members revoke nothing).
    fn reassign(&mut self, resolved: &BTreeMap<String, BTreeSet<String>>) {
        let targets = assign::assign(resolved, &self.subscribed);
        for (id, m) in &mut self.members {
            let target = targets.get(id).cloned().unwrap_or_default();
            if target != m.assigned || m.epoch != self.epoch {
                m.previous_epoch = m.epoch;
                m.epoch = self.epoch;
                m.assigned = target;
            }
        }
        self.assignment_epoch = self.epoch;
    }
}

/// What describe shows of a share group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareGroupDescription {
    pub group_id: String,
    /// Empty or Stable.
    pub state: GroupState,
    pub epoch: i32,
    pub assignment_epoch: i32,
    /// Sorted by member id.
    pub members: Vec<ShareMemberDescription>,
    /// Every share partition with state: (partition, start offset, end
    /// offset of its in-flight window).
    pub partitions: Vec<(TopicPartition, i64, i64)>,
}

/// One member of a described share group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareMemberDescription {
    pub member_id: String,
    pub rack_id: Option<String>,
    pub member_epoch: i32,
    pub client_id: String,
    pub client_host: String,
    pub topics: Vec<String>,
    pub assignment: Vec<TopicPartition>,
    pub session_deadline_ms: i64,
}

/// A ShareGroupHeartbeat.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ShareHeartbeat {
    pub group_id: String,
    pub member_id: String,
    /// 0 to join, the current epoch to heartbeat, -1 to leave.
    pub member_epoch: i32,
    pub rack_id: Option<String>,
    /// `None` when unchanged.
    pub subscribed_topic_names: Option<Vec<String>>,
    pub client_id: String,
    pub client_host: String,
}

/// A successful ShareGroupHeartbeat's answer.
pub type ShareHeartbeatAnswer = HeartbeatAnswer;

/// Kafka's `throwIfShareGroupHeartbeatRequestIsInvalid`, plus bounds.
fn check_heartbeat(hb: &ShareHeartbeat) -> Result<()> {
    if hb.group_id.trim().is_empty() {
        return Err(invalid("GroupId can't be empty."));
    }
    if hb.rack_id.as_ref().is_some_and(|r| r.trim().is_empty()) {
        return Err(invalid("RackId can't be empty."));
    }
    if hb.member_id.trim().is_empty() {
        return Err(invalid("MemberId can't be empty."));
    }
    for (what, s) in [
        ("group id", &hb.group_id),
        ("member id", &hb.member_id),
        ("client id", &hb.client_id),
        ("client host", &hb.client_host),
    ] {
        check_len(what, s)?;
    }
    let names = hb.subscribed_topic_names.as_deref().unwrap_or_default();
    if names.len() > crate::consumer::MAX_SUBSCRIBED_TOPICS {
        return Err(invalid("too many subscribed topics"));
    }
    for n in names {
        check_len("topic name", n)?;
    }
    match hb.member_epoch {
        0 if names.is_empty() => Err(invalid(
            "SubscribedTopicNames must be set in first request.",
        )),
        e if e >= -1 => Ok(()),
        _ => Err(invalid("MemberEpoch is invalid.")),
    }
}

fn not_a_share_group(group: &str) -> GroupError {
    GroupError::GroupIdNotFound(format!("Group {group} is not a share group."))
}

impl GroupCoordinator {
    /// Kafka's ShareGroupHeartbeat. Errors, in order: a malformed request
    /// -> INVALID_REQUEST; the id of a classic or consumer group, or an
    /// unknown group with epoch != 0 -> GROUP_ID_NOT_FOUND; a new member of
    /// a full group -> GROUP_MAX_SIZE_REACHED; an unknown member ->
    /// UNKNOWN_MEMBER; an epoch other than the member's (or its previous
    /// one) -> FENCED_MEMBER_EPOCH. A leave (-1) removes the member and
    /// releases every record it holds.
    pub fn share_heartbeat(
        &mut self,
        hb: ShareHeartbeat,
        meta: &dyn TopicMetadata,
    ) -> Result<ShareHeartbeatAnswer> {
        check_heartbeat(&hb)?;
        let group = hb.group_id.clone();
        if self.groups.contains_key(&group) || self.consumer_groups.contains_key(&group) {
            return Err(not_a_share_group(&group));
        }
        if !self.share_groups.contains_key(&group) && hb.member_epoch != 0 {
            return Err(GroupError::GroupIdNotFound(format!(
                "Group {group} not found."
            )));
        }
        if hb.member_epoch == -1 {
            return self.share_leave(&hb, meta);
        }
        let existed = self.share_groups.contains_key(&group);
        let mut g = self.share_groups.remove(&group).unwrap_or_default();
        let answer = self.share_heartbeat_in(&mut g, &hb, meta);
        if existed || answer.is_ok() {
            self.share_groups.insert(group, g);
        }
        answer
    }

    fn share_heartbeat_in(
        &mut self,
        g: &mut ShareGroup,
        hb: &ShareHeartbeat,
        meta: &dyn TopicMetadata,
    ) -> Result<ShareHeartbeatAnswer> {
        let now = self.now_ms();
        let before = match g.members.get(&hb.member_id) {
            Some(m) if hb.member_epoch == 0 => Some(m.clone()),
            Some(m) => {
                check_share_epoch(m, hb.member_epoch)?;
                Some(m.clone())
            }
            None if hb.member_epoch == 0 => None,
            None => {
                return Err(GroupError::UnknownMember(format!(
                    "Member {} is not a member of group {}.",
                    hb.member_id, hb.group_id
                )));
            }
        };
        if before.is_none() && g.members.len() >= self.max_group_size {
            return Err(GroupError::GroupMaxSizeReached {
                group: hb.group_id.clone(),
                max: self.max_group_size,
            });
        }
        let mut m = before.clone().unwrap_or_else(|| new_member(&hb.member_id));
        if hb.rack_id.is_some() {
            m.rack_id.clone_from(&hb.rack_id);
        }
        if let Some(names) = &hb.subscribed_topic_names {
            m.topics = names.iter().cloned().collect();
        }
        m.client_id.clone_from(&hb.client_id);
        m.client_host.clone_from(&hb.client_host);
        m.session_deadline_ms = now.saturating_add(i64::from(
            self.setting(&hb.group_id, |s| s.share_session_timeout_ms),
        ));
        let changed = before.as_ref().is_none_or(|b| b.topics != m.topics);
        let mut members = g.members.clone();
        members.insert(m.member_id.clone(), m.clone());
        let (subscribed, resolved) = share_subscriptions(&members, meta);
        if changed || subscribed != g.subscribed {
            let epoch = g
                .epoch
                .checked_add(1)
                .ok_or_else(|| invalid("share group epochs exhausted"))?;
            self.persist_share_epoch(&hb.group_id, epoch, now)?;
            g.epoch = epoch;
            g.subscribed = subscribed;
        }
        g.members = members;
        if g.epoch > g.assignment_epoch || before.is_none() {
            g.reassign(&resolved);
        }
        let after = &g.members[&hb.member_id];
        let assignment = (hb.member_epoch == 0
            || before.as_ref().is_none_or(|b| b.assigned != after.assigned))
        .then(|| after.assigned.iter().cloned().collect());
        Ok(ShareHeartbeatAnswer {
            member_id: after.member_id.clone(),
            member_epoch: after.epoch,
            heartbeat_interval_ms: self.setting(&hb.group_id, |s| s.share_heartbeat_interval_ms),
            assignment,
        })
    }

    fn share_leave(
        &mut self,
        hb: &ShareHeartbeat,
        meta: &dyn TopicMetadata,
    ) -> Result<ShareHeartbeatAnswer> {
        if !self.share_groups[&hb.group_id]
            .members
            .contains_key(&hb.member_id)
        {
            return Err(GroupError::UnknownMember(format!(
                "Member {} is not a member of group {}.",
                hb.member_id, hb.group_id
            )));
        }
        self.remove_share_member(&hb.group_id, &hb.member_id, meta)?;
        Ok(ShareHeartbeatAnswer {
            member_id: hb.member_id.clone(),
            member_epoch: -1,
            heartbeat_interval_ms: self.setting(&hb.group_id, |s| s.share_heartbeat_interval_ms),
            assignment: None,
        })
    }

    /// Removes a member (a leave or an expired session): the group epoch
    /// grows, its share session closes and the records it holds are
    /// released (written before the member is gone).
    pub(crate) fn remove_share_member(
        &mut self,
        group: &str,
        member: &str,
        meta: &dyn TopicMetadata,
    ) -> Result<()> {
        let now = self.now_ms();
        self.release_share_member(group, member)?;
        let Some(g) = self.share_groups.get_mut(group) else {
            return Ok(());
        };
        let mut members = g.members.clone();
        members.remove(member);
        let (subscribed, resolved) = share_subscriptions(&members, meta);
        let epoch = g
            .epoch
            .checked_add(1)
            .ok_or_else(|| invalid("share group epochs exhausted"))?;
        let meta_record = GroupMetadata {
            group_type: GroupType::Share,
            generation: epoch,
            assignor: AssignorKind::default(),
        };
        self.store.write_group(group, Some(meta_record), now)?;
        let g = self.share_groups.get_mut(group).expect("looked up above");
        g.members = members;
        g.epoch = epoch;
        g.subscribed = subscribed;
        g.reassign(&resolved);
        self.share_sessions
            .remove(&(group.to_string(), member.to_string()));
        Ok(())
    }

    fn persist_share_epoch(&mut self, group: &str, epoch: i32, now: i64) -> Result<()> {
        let meta = GroupMetadata {
            group_type: GroupType::Share,
            generation: epoch,
            assignor: AssignorKind::default(),
        };
        self.store.write_group(group, Some(meta), now)
    }

    /// The state of one share partition of `group` (records in flight,
    /// their states and delivery counts), if it has any.
    pub fn share_partition(&self, group: &str, tp: &TopicPartition) -> Option<&SharePartition> {
        self.share_groups.get(group)?.partitions.get(tp)
    }

    /// The share group `group` (ShareGroupDescribe); `None` if no share
    /// group has that id.
    pub fn describe_share_group(&self, group: &str) -> Option<ShareGroupDescription> {
        self.share_groups.get(group).map(|g| g.describe(group))
    }
}

fn new_member(id: &str) -> ShareMember {
    ShareMember {
        member_id: id.to_string(),
        rack_id: None,
        client_id: String::new(),
        client_host: String::new(),
        topics: BTreeSet::new(),
        epoch: 0,
        previous_epoch: 0,
        assigned: BTreeSet::new(),
        session_deadline_ms: 0,
    }
}

/// Kafka's `throwIfShareGroupMemberEpochIsInvalid`.
fn check_share_epoch(m: &ShareMember, given: i32) -> Result<()> {
    if given > m.epoch || (given < m.epoch && given != m.previous_epoch) {
        return Err(GroupError::FencedMemberEpoch(format!(
            "The share group member {} has member epoch {given}; the group coordinator knows {}. \
             The member must abandon all its partitions and rejoin.",
            m.member_id, m.epoch
        )));
    }
    Ok(())
}

/// The subscribed topics that exist, with their partition counts, and
/// each member's existing topics.
fn share_subscriptions(
    members: &BTreeMap<String, ShareMember>,
    meta: &dyn TopicMetadata,
) -> (BTreeMap<String, u32>, BTreeMap<String, BTreeSet<String>>) {
    let resolved: BTreeMap<String, BTreeSet<String>> = members
        .iter()
        .map(|(id, m)| {
            let topics = m
                .topics
                .iter()
                .filter(|t| meta.partition_count(t).is_some())
                .cloned()
                .collect();
            (id.clone(), topics)
        })
        .collect();
    let counts = resolved
        .values()
        .flatten()
        .filter_map(|t| meta.partition_count(t).map(|n| (t.clone(), n)))
        .collect();
    (counts, resolved)
}
