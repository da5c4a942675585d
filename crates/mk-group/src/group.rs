//! The in-memory state of one consumer group (generation, state, members,
//! assignment) and the read-only descriptions handed to admin tools.

use crate::assignor::{Assignment, AssignorKind, Subscriptions};
use mk_core::TopicPartition;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// The state of a group. The rebalance is eager and runs inside the call
/// that triggers it, so callers see Empty or Stable; PreparingRebalance is
/// what a group is between a membership change and its new assignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GroupState {
    /// No members (and so no assignment).
    Empty,
    /// Membership changed and no assignment has been computed yet.
    PreparingRebalance,
    /// Every member has its assignment for the current generation.
    Stable,
}

impl GroupState {
    /// Kafka's spelling of the state.
    pub const fn as_str(self) -> &'static str {
        match self {
            GroupState::Empty => "Empty",
            GroupState::PreparingRebalance => "PreparingRebalance",
            GroupState::Stable => "Stable",
        }
    }
}

impl fmt::Display for GroupState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One member as the coordinator knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Member {
    pub(crate) topics: BTreeSet<String>,
    pub(crate) deadline_ms: i64,
}

/// One consumer group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Group {
    pub(crate) generation: i32,
    pub(crate) state: GroupState,
    pub(crate) assignor: AssignorKind,
    pub(crate) members: BTreeMap<String, Member>,
    /// Empty unless the group is Stable.
    pub(crate) assignment: Assignment,
}

impl Group {
    /// A group that has never had a member.
    pub(crate) const fn new(assignor: AssignorKind) -> Self {
        Self::restored(0, assignor)
    }

    /// A group known only from its last persisted generation (after a
    /// restart): no members, so Empty.
    pub(crate) const fn restored(generation: i32, assignor: AssignorKind) -> Self {
        Self {
            generation,
            state: GroupState::Empty,
            assignor,
            members: BTreeMap::new(),
            assignment: Assignment::new(),
        }
    }

    pub(crate) fn subscriptions(&self) -> Subscriptions {
        self.members
            .iter()
            .map(|(id, m)| (id.clone(), m.topics.clone()))
            .collect()
    }

    /// The partitions assigned to `member` in the current generation.
    pub(crate) fn assigned(&self, member: &str) -> &[TopicPartition] {
        self.assignment.get(member).map_or(&[], Vec::as_slice)
    }

    pub(crate) fn describe(&self, group_id: &str) -> GroupDescription {
        GroupDescription {
            group_id: group_id.to_string(),
            state: self.state,
            generation: self.generation,
            assignor: self.assignor,
            members: self
                .members
                .iter()
                .map(|(id, m)| MemberDescription {
                    member_id: id.clone(),
                    topics: m.topics.iter().cloned().collect(),
                    assignment: self.assigned(id).to_vec(),
                    deadline_ms: m.deadline_ms,
                })
                .collect(),
        }
    }
}

/// What an admin `group describe` shows about a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupDescription {
    pub group_id: String,
    pub state: GroupState,
    pub generation: i32,
    pub assignor: AssignorKind,
    /// Sorted by member id.
    pub members: Vec<MemberDescription>,
}

/// One member of a described group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberDescription {
    pub member_id: String,
    /// Subscribed topics, sorted.
    pub topics: Vec<String>,
    /// Assigned partitions in the current generation, sorted.
    pub assignment: Vec<TopicPartition>,
    /// The member is expired once the clock passes this instant.
    pub deadline_ms: i64,
}
