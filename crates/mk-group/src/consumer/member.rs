//! One member of a KIP-848 consumer group as the coordinator knows it: its
//! subscription, its member epoch (and the one before), the partitions it
//! holds and those it must still give up, and its deadlines.

use super::assign::ServerAssignor;
use mk_core::TopicPartition;
use std::collections::BTreeSet;
use std::fmt;

/// The member epoch a heartbeat carries to leave the group.
pub const LEAVE_GROUP_MEMBER_EPOCH: i32 = -1;
/// The member epoch a static member's heartbeat carries to leave for a
/// while: it keeps its partitions until its session expires or it returns.
pub const LEAVE_GROUP_STATIC_MEMBER_EPOCH: i32 = -2;

/// Where a member stands in its reconciliation towards the target
/// assignment (Kafka's `MemberState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberState {
    /// The member holds its target assignment at the target epoch.
    Stable,
    /// The member must first give up partitions (`revoking`); it keeps its
    /// epoch until it reports them gone.
    UnrevokedPartitions,
    /// The member is at the target epoch but some partitions of its target
    /// are still held by other members; it gets them once they are
    /// released.
    UnreleasedPartitions,
}

impl MemberState {
    /// Kafka's spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            MemberState::Stable => "stable",
            MemberState::UnrevokedPartitions => "unrevoked_partitions",
            MemberState::UnreleasedPartitions => "unreleased_partitions",
        }
    }

    /// The state `as_str` spells `name`.
    pub fn parse(name: &str) -> Option<MemberState> {
        [
            MemberState::Stable,
            MemberState::UnrevokedPartitions,
            MemberState::UnreleasedPartitions,
        ]
        .into_iter()
        .find(|s| s.as_str() == name)
    }
}

impl fmt::Display for MemberState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One member of a consumer group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ConsumerMember {
    pub(crate) member_id: String,
    pub(crate) instance_id: Option<String>,
    pub(crate) rack_id: Option<String>,
    pub(crate) client_id: String,
    pub(crate) client_host: String,
    pub(crate) rebalance_timeout_ms: i64,
    /// Subscribed topic names (empty when the member subscribes by regular
    /// expression only).
    pub(crate) topics: BTreeSet<String>,
    /// The subscribed regular expression, if any.
    pub(crate) regex: Option<String>,
    /// The server assignor the member asked for.
    pub(crate) assignor: Option<ServerAssignor>,
    pub(crate) state: MemberState,
    /// 0 until its first reconciliation; -2 while a static member is away.
    pub(crate) epoch: i32,
    pub(crate) previous_epoch: i32,
    /// The partitions the member may consume.
    pub(crate) assigned: BTreeSet<TopicPartition>,
    /// Partitions the member holds and must give up before it moves on.
    pub(crate) revoking: BTreeSet<TopicPartition>,
    /// The member is removed once the clock passes this instant.
    pub(crate) session_deadline_ms: i64,
    /// While UnrevokedPartitions: the member is removed if it has not given
    /// its partitions up by then (its rebalance timeout).
    pub(crate) revoke_deadline_ms: Option<i64>,
}

impl ConsumerMember {
    /// A member that joins with nothing.
    pub(crate) fn new(member_id: String) -> Self {
        Self {
            member_id,
            instance_id: None,
            rack_id: None,
            client_id: String::new(),
            client_host: String::new(),
            rebalance_timeout_ms: 0,
            topics: BTreeSet::new(),
            regex: None,
            assignor: None,
            state: MemberState::Stable,
            epoch: 0,
            previous_epoch: 0,
            assigned: BTreeSet::new(),
            revoking: BTreeSet::new(),
            session_deadline_ms: 0,
            revoke_deadline_ms: None,
        }
    }

    /// True when the member holds its target at `target_epoch`.
    pub(crate) fn reconciled_to(&self, target_epoch: i32) -> bool {
        self.state == MemberState::Stable && self.epoch == target_epoch
    }

    /// Every partition the member holds: assigned or still to be revoked.
    pub(crate) fn held(&self) -> impl Iterator<Item = &TopicPartition> {
        self.assigned.iter().chain(&self.revoking)
    }

    /// Moves the member to `epoch`, remembering the epoch it leaves.
    pub(crate) fn set_epoch(&mut self, epoch: i32) {
        if epoch != self.epoch {
            self.previous_epoch = self.epoch;
            self.epoch = epoch;
        }
    }
}
