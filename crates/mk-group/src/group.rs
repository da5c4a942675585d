//! The in-memory state of one consumer group (generation, state, members,
//! leader, the waiting requests of the classic protocol) and the read-only
//! descriptions handed to admin tools.

use crate::assignor::{Assignment, AssignorKind};
use crate::consumer::ConsumerGroupDescription;
use crate::protocol::{GroupJoin, GroupJoined, GroupListing, GroupSynced, JoinedMember, Waiter};
use crate::share::ShareGroupDescription;
use bytes::Bytes;
use mk_core::TopicPartition;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// Every `(group, member)` of `groups` for which `due` holds: the members
/// the time step removes, in group and member order.
pub(crate) fn due_members<G, M>(
    groups: &BTreeMap<String, G>,
    members: impl Fn(&G) -> &BTreeMap<String, M>,
    due: impl Fn(&M) -> bool,
) -> Vec<(String, String)> {
    groups
        .iter()
        .flat_map(|(id, g)| {
            members(g)
                .iter()
                .filter(|(_, m)| due(m))
                .map(move |(member, _)| (id.clone(), member.clone()))
        })
        .collect()
}

/// The protocol type coordinator-assigned members report, so Kafka tools
/// list their groups as consumer groups.
pub const CONSUMER_PROTOCOL_TYPE: &str = "consumer";

/// The state of a group, as Kafka's Admin client names the states of every
/// group type: a classic group is Empty, PreparingRebalance,
/// CompletingRebalance or Stable; a KIP-848 consumer group and a share
/// group are Empty, Assigning, Reconciling or Stable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GroupState {
    /// No members.
    Empty,
    /// A rebalance started: the coordinator waits for every member to
    /// rejoin (or for the rebalance timeout).
    PreparingRebalance,
    /// The generation is formed; the coordinator waits for the leader's
    /// assignment (SyncGroup).
    CompletingRebalance,
    /// Every member has (or can fetch) its assignment for the generation.
    Stable,
    /// A deleted group. The coordinator keeps none: describing an unknown
    /// group answers `None`, which adapters show as Dead.
    Dead,
    /// A consumer or share group whose group epoch is ahead of its target
    /// assignment: the next heartbeat computes the new target.
    Assigning,
    /// A consumer or share group in which some member has not reached the
    /// target assignment yet.
    Reconciling,
}

impl GroupState {
    /// Kafka's spelling of the state.
    pub const fn as_str(self) -> &'static str {
        match self {
            GroupState::Empty => "Empty",
            GroupState::PreparingRebalance => "PreparingRebalance",
            GroupState::CompletingRebalance => "CompletingRebalance",
            GroupState::Stable => "Stable",
            GroupState::Dead => "Dead",
            GroupState::Assigning => "Assigning",
            GroupState::Reconciling => "Reconciling",
        }
    }

    /// Every state, in Kafka's order.
    pub const ALL: [GroupState; 7] = [
        GroupState::Empty,
        GroupState::PreparingRebalance,
        GroupState::CompletingRebalance,
        GroupState::Stable,
        GroupState::Dead,
        GroupState::Assigning,
        GroupState::Reconciling,
    ];

    /// Parses Kafka's spelling.
    pub fn parse(s: &str) -> Option<GroupState> {
        GroupState::ALL.into_iter().find(|g| g.as_str() == s)
    }
}

impl fmt::Display for GroupState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The protocol a group's members speak (Kafka's group types; ListGroups v5
/// reports it and filters by it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GroupType {
    /// JoinGroup/SyncGroup/Heartbeat (and JSON-TCP's coordinator-assigned
    /// members); also a group that only stores offsets.
    Classic,
    /// KIP-848: ConsumerGroupHeartbeat, server-side assignment.
    Consumer,
    /// KIP-932: ShareGroupHeartbeat; members share partitions record by
    /// record.
    Share,
}

impl GroupType {
    /// Every type.
    pub const ALL: [GroupType; 3] = [GroupType::Classic, GroupType::Consumer, GroupType::Share];

    /// Kafka's spelling (lower case, as ListGroups v5 answers it).
    pub const fn as_str(self) -> &'static str {
        match self {
            GroupType::Classic => "classic",
            GroupType::Consumer => "consumer",
            GroupType::Share => "share",
        }
    }

    /// Parses a type name, ignoring case and surrounding blanks as Kafka
    /// does for ListGroups' types filter.
    pub fn parse(s: &str) -> Option<GroupType> {
        let s = s.trim();
        GroupType::ALL
            .into_iter()
            .find(|t| t.as_str().eq_ignore_ascii_case(s))
    }

    /// The byte that stands for this type in the offsets log.
    pub(crate) const fn to_byte(self) -> u8 {
        match self {
            GroupType::Classic => 0,
            GroupType::Consumer => 1,
            GroupType::Share => 2,
        }
    }

    pub(crate) fn from_byte(b: u8) -> Option<GroupType> {
        GroupType::ALL.into_iter().find(|t| t.to_byte() == b)
    }
}

impl fmt::Display for GroupType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who computes a member's assignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Assigner {
    /// A Kafka-protocol member: the group's leader computes the assignment
    /// and hands it out through SyncGroup.
    Client,
    /// A JSON-TCP `join_group` member: the coordinator computes the
    /// assignment with the group's assignor at once.
    Coordinator,
}

/// One member as the coordinator knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Member {
    pub(crate) assigner: Assigner,
    pub(crate) instance_id: Option<String>,
    pub(crate) client_id: String,
    pub(crate) client_host: String,
    pub(crate) session_timeout_ms: i64,
    pub(crate) rebalance_timeout_ms: i64,
    pub(crate) protocol_type: String,
    /// `(name, metadata)` in preference order; empty for coordinator-assigned
    /// members.
    pub(crate) protocols: Vec<(String, Bytes)>,
    pub(crate) topics: BTreeSet<String>,
    /// The member is expired once the clock passes this instant.
    pub(crate) deadline_ms: i64,
    /// The decoded assignment of the current generation, sorted.
    pub(crate) assignment: Vec<TopicPartition>,
    /// The leader's assignment bytes for this member.
    pub(crate) assignment_bytes: Bytes,
    /// Rejoined during the current PreparingRebalance (Kafka's "awaiting
    /// join").
    pub(crate) joined: bool,
}

impl Member {
    /// A Kafka-protocol member from its JoinGroup.
    pub(crate) fn client(join: &GroupJoin, now_ms: i64) -> Self {
        let session_timeout_ms = i64::from(join.session_timeout_ms);
        Self {
            assigner: Assigner::Client,
            instance_id: join.group_instance_id.clone(),
            client_id: join.client_id.clone(),
            client_host: join.client_host.clone(),
            session_timeout_ms,
            rebalance_timeout_ms: rebalance_timeout_ms(join),
            protocol_type: join.protocol_type.clone(),
            protocols: join.protocols.clone(),
            topics: join.subscribed_topics.iter().cloned().collect(),
            deadline_ms: now_ms.saturating_add(session_timeout_ms),
            assignment: Vec::new(),
            assignment_bytes: Bytes::new(),
            joined: false,
        }
    }

    /// A JSON-TCP member whose assignment the coordinator computes.
    pub(crate) fn coordinator(
        topics: BTreeSet<String>,
        session_timeout_ms: i64,
        now_ms: i64,
    ) -> Self {
        Self {
            assigner: Assigner::Coordinator,
            instance_id: None,
            client_id: String::new(),
            client_host: String::new(),
            session_timeout_ms,
            rebalance_timeout_ms: 0,
            protocol_type: CONSUMER_PROTOCOL_TYPE.to_string(),
            protocols: Vec::new(),
            topics,
            deadline_ms: now_ms.saturating_add(session_timeout_ms),
            assignment: Vec::new(),
            assignment_bytes: Bytes::new(),
            joined: false,
        }
    }

    /// Takes the settings of a new JoinGroup of the same member.
    pub(crate) fn update(&mut self, join: &GroupJoin, now_ms: i64) {
        self.client_id = join.client_id.clone();
        self.client_host = join.client_host.clone();
        self.session_timeout_ms = i64::from(join.session_timeout_ms);
        self.rebalance_timeout_ms = rebalance_timeout_ms(join);
        self.protocol_type = join.protocol_type.clone();
        self.protocols = join.protocols.clone();
        self.topics = join.subscribed_topics.iter().cloned().collect();
        self.extend_session(now_ms);
    }

    /// Kafka's `MemberMetadata.matches`: the same protocols with the same
    /// metadata, in the same order.
    pub(crate) fn matches(&self, join: &GroupJoin) -> bool {
        self.protocols == join.protocols
    }

    pub(crate) fn extend_session(&mut self, now_ms: i64) {
        self.deadline_ms = now_ms.saturating_add(self.session_timeout_ms);
    }

    fn supports(&self, protocol: &str) -> bool {
        self.protocols.iter().any(|(name, _)| name == protocol)
    }

    /// The metadata of `protocol` (empty if the member does not list it).
    pub(crate) fn metadata_for(&self, protocol: &str) -> Bytes {
        self.protocols
            .iter()
            .find(|(name, _)| name == protocol)
            .map(|(_, m)| m.clone())
            .unwrap_or_default()
    }
}

/// The rebalance timeout a join asks for; JoinGroup v0 has none and Kafka
/// uses the session timeout then.
fn rebalance_timeout_ms(join: &GroupJoin) -> i64 {
    if join.rebalance_timeout_ms > 0 {
        i64::from(join.rebalance_timeout_ms)
    } else {
        i64::from(join.session_timeout_ms)
    }
}

/// One consumer group.
#[derive(Debug)]
pub(crate) struct Group {
    pub(crate) generation: i32,
    pub(crate) state: GroupState,
    /// The assignor of coordinator-assigned members.
    pub(crate) assignor: AssignorKind,
    /// Kept when the group empties, as Kafka lists it.
    pub(crate) protocol_type: Option<String>,
    /// The protocol of the current generation.
    pub(crate) protocol_name: Option<String>,
    pub(crate) leader: Option<String>,
    pub(crate) members: BTreeMap<String, Member>,
    /// Member ids handed out with MEMBER_ID_REQUIRED -> the deadline by
    /// which the member must join with it.
    pub(crate) pending: BTreeMap<String, i64>,
    /// Static members: instance id -> member id.
    pub(crate) statics: BTreeMap<String, String>,
    /// While PreparingRebalance: when the barrier stops waiting.
    pub(crate) rebalance_deadline_ms: Option<i64>,
    /// The first rebalance of an empty group waits for more members
    /// (Kafka's `group.initial.rebalance.delay.ms`): when it started and
    /// until when it waits, however complete the join phase looks.
    pub(crate) initial_delay: Option<(i64, i64)>,
    /// Members of the generation that have not sent their SyncGroup yet,
    /// and when they are removed for it.
    pub(crate) pending_sync: BTreeSet<String>,
    pub(crate) sync_deadline_ms: Option<i64>,
    pub(crate) join_waiters: BTreeMap<String, Waiter<GroupJoined>>,
    pub(crate) sync_waiters: BTreeMap<String, Waiter<GroupSynced>>,
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
            protocol_type: None,
            protocol_name: None,
            leader: None,
            members: BTreeMap::new(),
            pending: BTreeMap::new(),
            statics: BTreeMap::new(),
            rebalance_deadline_ms: None,
            initial_delay: None,
            pending_sync: BTreeSet::new(),
            sync_deadline_ms: None,
            join_waiters: BTreeMap::new(),
            sync_waiters: BTreeMap::new(),
        }
    }

    /// Who assigns this group's partitions; `None` without members. Both
    /// kinds never share a group (joins refuse the other kind).
    pub(crate) fn assigner(&self) -> Option<Assigner> {
        self.members.values().next().map(|m| m.assigner)
    }

    pub(crate) fn is_coordinator_assigned(&self) -> bool {
        self.assigner() == Some(Assigner::Coordinator)
    }

    /// The largest rebalance timeout of the members: how long the barrier
    /// waits.
    pub(crate) fn rebalance_timeout_ms(&self) -> i64 {
        self.members
            .values()
            .map(|m| m.rebalance_timeout_ms)
            .max()
            .unwrap_or(0)
    }

    /// True when `instance` is registered to a member id other than
    /// `member` (Kafka's `isStaticMemberFenced`).
    pub(crate) fn static_fenced(&self, instance: Option<&str>, member: &str) -> Option<&str> {
        instance
            .and_then(|i| self.statics.get(i))
            .filter(|current| current.as_str() != member)
            .map(String::as_str)
    }

    /// The protocols every member except `except` supports.
    fn candidates(&self, except: Option<&str>) -> Option<BTreeSet<&str>> {
        let mut others = self
            .members
            .iter()
            .filter(|(id, _)| Some(id.as_str()) != except)
            .map(|(_, m)| m);
        let first = others.next()?;
        let mut set: BTreeSet<&str> = first.protocols.iter().map(|(n, _)| n.as_str()).collect();
        for m in others {
            set.retain(|p| m.supports(p));
        }
        Some(set)
    }

    /// Kafka's `supportsProtocols`: a member may join (or rejoin with new
    /// protocols) when it has a protocol type and protocols and, if others
    /// are in the group, their protocol type and a protocol all of them
    /// support. Returns why not.
    pub(crate) fn protocol_mismatch(&self, join: &GroupJoin) -> Option<String> {
        let member = Some(join.member_id.as_str()).filter(|m| !m.is_empty());
        match self.candidates(member) {
            None if join.protocol_type.is_empty() || join.protocols.is_empty() => Some(format!(
                "a member needs a protocol type and at least one protocol; got type {:?} with {} protocol(s)",
                join.protocol_type,
                join.protocols.len()
            )),
            None => None,
            Some(_) if self.protocol_type.as_deref() != Some(join.protocol_type.as_str()) => {
                Some(format!(
                    "the group's members use protocol type {:?}, the member asked for {:?}",
                    self.protocol_type.as_deref().unwrap_or_default(),
                    join.protocol_type
                ))
            }
            Some(candidates)
                if !join
                    .protocols
                    .iter()
                    .any(|(n, _)| candidates.contains(n.as_str())) =>
            {
                Some(format!(
                    "the member supports none of the protocols every member of the group supports ({})",
                    candidates.into_iter().collect::<Vec<_>>().join(", ")
                ))
            }
            Some(_) => None,
        }
    }

    /// Kafka's `selectProtocol`: among the protocols every member supports,
    /// each member votes for the first in its own order; most votes win,
    /// and (where Kafka leaves it to hash order) a tie goes to the smallest
    /// name, so the choice is deterministic.
    pub(crate) fn select_protocol(&self) -> Option<String> {
        let candidates = self.candidates(None)?;
        let mut votes: BTreeMap<&str, usize> = BTreeMap::new();
        for m in self.members.values() {
            if let Some((name, _)) = m
                .protocols
                .iter()
                .find(|(n, _)| candidates.contains(n.as_str()))
            {
                *votes.entry(name.as_str()).or_default() += 1;
            }
        }
        votes
            .into_iter()
            .max_by(|(a, va), (b, vb)| va.cmp(vb).then_with(|| b.cmp(a)))
            .map(|(name, _)| name.to_string())
    }

    /// The barrier of PreparingRebalance is passed: every member rejoined
    /// and no member id handed out with MEMBER_ID_REQUIRED is outstanding.
    /// Coordinator-assigned members never hold it.
    pub(crate) fn everyone_joined(&self) -> bool {
        self.is_coordinator_assigned()
            || (self.members.values().all(|m| m.joined) && self.pending.is_empty())
    }

    /// The JoinGroup answer of `member` for the current generation.
    pub(crate) fn joined_answer(&self, member: &str, leader_id: Option<&str>) -> GroupJoined {
        let protocol = self.protocol_name.clone().unwrap_or_default();
        let leader_id = leader_id
            .or(self.leader.as_deref())
            .unwrap_or_default()
            .to_string();
        let members = if self.leader.as_deref() == Some(member) && leader_id == member {
            self.members
                .iter()
                .map(|(id, m)| JoinedMember {
                    member_id: id.clone(),
                    group_instance_id: m.instance_id.clone(),
                    metadata: m.metadata_for(&protocol),
                })
                .collect()
        } else {
            Vec::new()
        };
        GroupJoined {
            generation_id: self.generation,
            protocol_type: self.protocol_type.clone().unwrap_or_default(),
            protocol_name: protocol,
            leader_id,
            member_id: member.to_string(),
            members,
        }
    }

    /// The SyncGroup answer of `member` (its assignment as the leader sent
    /// it).
    pub(crate) fn synced_answer(&self, member: &str) -> GroupSynced {
        GroupSynced {
            protocol_type: self.protocol_type.clone().unwrap_or_default(),
            protocol_name: self.protocol_name.clone().unwrap_or_default(),
            assignment: self
                .members
                .get(member)
                .map(|m| m.assignment_bytes.clone())
                .unwrap_or_default(),
        }
    }

    /// The whole decoded assignment (member -> partitions); empty unless
    /// Stable.
    pub(crate) fn assignment(&self) -> Assignment {
        if self.state != GroupState::Stable {
            return Assignment::new();
        }
        self.members
            .iter()
            .map(|(id, m)| (id.clone(), m.assignment.clone()))
            .collect()
    }

    pub(crate) fn listing(&self, group_id: &str) -> GroupListing {
        GroupListing {
            group_id: group_id.to_string(),
            protocol_type: self.protocol_type.clone().unwrap_or_default(),
            state: self.state,
            group_type: GroupType::Classic,
        }
    }

    pub(crate) fn describe(&self, group_id: &str) -> GroupDescription {
        // As Kafka's DescribeGroups: protocol, metadata and assignment bytes
        // only for a Stable group, whose generation they describe.
        let stable = self.state == GroupState::Stable;
        let protocol = if stable {
            self.protocol_name.clone().unwrap_or_default()
        } else {
            String::new()
        };
        GroupDescription {
            group_id: group_id.to_string(),
            state: self.state,
            generation: self.generation,
            assignor: self.assignor,
            protocol_type: self.protocol_type.clone().unwrap_or_default(),
            protocol_name: protocol.clone(),
            members: self
                .members
                .iter()
                .map(|(id, m)| MemberDescription {
                    member_id: id.clone(),
                    topics: m.topics.iter().cloned().collect(),
                    assignment: if stable {
                        m.assignment.clone()
                    } else {
                        Vec::new()
                    },
                    deadline_ms: m.deadline_ms,
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    group_instance_id: m.instance_id.clone(),
                    metadata: if stable {
                        m.metadata_for(&protocol)
                    } else {
                        Bytes::new()
                    },
                    assignment_bytes: if stable {
                        m.assignment_bytes.clone()
                    } else {
                        Bytes::new()
                    },
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
    /// The assignor the coordinator uses for coordinator-assigned members.
    pub assignor: AssignorKind,
    /// Empty for a group that never had a member.
    pub protocol_type: String,
    /// The protocol of the current generation; empty unless Stable.
    pub protocol_name: String,
    /// Sorted by member id.
    pub members: Vec<MemberDescription>,
}

/// A described group of any of the three types: what an operator's
/// `group describe` shows, whichever protocol the group's members speak.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AnyGroupDescription {
    Classic(GroupDescription),
    Consumer(ConsumerGroupDescription),
    Share(ShareGroupDescription),
}

impl AnyGroupDescription {
    pub fn group_type(&self) -> GroupType {
        match self {
            AnyGroupDescription::Classic(_) => GroupType::Classic,
            AnyGroupDescription::Consumer(_) => GroupType::Consumer,
            AnyGroupDescription::Share(_) => GroupType::Share,
        }
    }

    pub fn group_id(&self) -> &str {
        match self {
            AnyGroupDescription::Classic(d) => &d.group_id,
            AnyGroupDescription::Consumer(d) => &d.group_id,
            AnyGroupDescription::Share(d) => &d.group_id,
        }
    }

    pub fn state(&self) -> GroupState {
        match self {
            AnyGroupDescription::Classic(d) => d.state,
            AnyGroupDescription::Consumer(d) => d.state,
            AnyGroupDescription::Share(d) => d.state,
        }
    }
}

/// One member of a described group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberDescription {
    pub member_id: String,
    /// Subscribed topics, sorted.
    pub topics: Vec<String>,
    /// Assigned partitions in the current generation, sorted; empty unless
    /// the group is Stable.
    pub assignment: Vec<TopicPartition>,
    /// The member is expired once the clock passes this instant.
    pub deadline_ms: i64,
    /// Empty for coordinator-assigned (JSON-TCP) members.
    pub client_id: String,
    pub client_host: String,
    pub group_instance_id: Option<String>,
    /// The member's metadata for the group's protocol; empty unless Stable.
    pub metadata: Bytes,
    /// The leader's assignment bytes for the member; empty unless Stable
    /// (and always for coordinator-assigned members, whose assignment is
    /// `assignment`).
    pub assignment_bytes: Bytes,
}
