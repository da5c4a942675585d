//! `GroupCoordinator`: the one coordinator of every consumer group, as a
//! deterministic state machine driven by calls and an injected `Clock`.
//!
//! Two kinds of member share it: Kafka-protocol members run Kafka's classic
//! rebalance protocol (`classic.rs`), and JSON-TCP members join with
//! `join_with_assignor`, for which the coordinator acts as the leader with
//! its own assignor (this file). Both use the same groups, generations,
//! fencing and committed offsets (`commits.rs`); the rebalance engine they
//! share is in `rebalance.rs`.
//!
//! A rejected operation changes nothing, and a generation is persisted to
//! the offsets log before it becomes visible, so generations keep growing
//! across restarts and a member that held a generation before a restart
//! stays fenced after it.

use crate::assignor::{Assignment, AssignorKind};
use crate::error::{GroupError, Result};
use crate::group::{Assigner, Group, GroupDescription, GroupState, Member};
use crate::metadata::TopicMetadata;
use crate::offsets::OffsetStore;
use crate::protocol::GroupListing;
use mk_core::{SharedClock, TopicPartition};
use mk_log::{CompactionResult, LogConfig, PartitionLog};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The name of the internal topic that stores committed offsets. mk-cluster
/// hides it from user listings and refuses user writes to it.
pub const OFFSETS_TOPIC: &str = "__consumer_offsets";

/// Longest group, member or instance id (and client id, host, protocol
/// name), in bytes. Ids are part of offsets-log keys and of every answer, so
/// they get a bound like any other input-controlled size.
pub const MAX_ID_BYTES: usize = 1024;

/// Most protocols one JoinGroup may list.
pub const MAX_PROTOCOLS: usize = 64;

/// How a group that exists only through committed offsets (plain commits,
/// or a restart that kept offsets but no generation) looks: Empty at
/// generation 0, as Kafka shows a group used only to store offsets.
static OFFSETS_ONLY_GROUP: Group = Group::new(AssignorKind::RoundRobin);

/// Settings of the coordinator.
#[derive(Debug, Clone)]
pub struct GroupConfig {
    /// The session timeout of coordinator-assigned (JSON-TCP) members: one
    /// that does not heartbeat (or re-join) within this many milliseconds
    /// is removed by `expire_members`. Kafka-protocol members bring their
    /// own.
    pub session_timeout_ms: i64,
    /// Bounds of a Kafka-protocol member's session timeout (Kafka's
    /// `group.min.session.timeout.ms` / `group.max.session.timeout.ms`).
    pub min_session_timeout_ms: i64,
    pub max_session_timeout_ms: i64,
    /// Most members (plus member ids handed out and not yet used) of one
    /// group (Kafka's `group.max.size`, which Kafka leaves unbounded).
    pub max_group_size: usize,
    /// Part of every member id the coordinator makes, so ids made after a
    /// restart never equal ids of before (mk-cluster passes a fresh random
    /// value per open; tests a fixed one).
    pub member_id_salt: String,
    /// How long a tombstone of the offsets log survives compaction (Kafka's
    /// `delete.retention.ms`).
    pub offsets_delete_retention_ms: i64,
    /// Settings of the offsets log (segment size, fault injection, ...).
    pub offsets_log: LogConfig,
    /// The longest metadata string a commit may carry (Kafka's
    /// `offset.metadata.max.bytes`, counted in UTF-16 code units as Kafka
    /// counts it).
    pub offset_metadata_max_bytes: usize,
}

impl Default for GroupConfig {
    fn default() -> Self {
        Self {
            session_timeout_ms: 10_000,
            min_session_timeout_ms: 6_000,
            max_session_timeout_ms: 1_800_000,
            max_group_size: 1_000,
            member_id_salt: "0".to_string(),
            offsets_delete_retention_ms: 86_400_000,
            offsets_log: LogConfig::default(),
            offset_metadata_max_bytes: crate::commits::DEFAULT_OFFSET_METADATA_MAX_BYTES,
        }
    }
}

impl GroupConfig {
    /// Checks every rule: session timeout > 0, 0 < min session <= max
    /// session, max group size > 0, a salt of at most 64 bytes, delete
    /// retention >= 0, and the log configuration's own rules.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(GroupError::InvalidRequest(m));
        if self.session_timeout_ms <= 0 {
            return bad(format!(
                "session_timeout_ms must be > 0, got {}",
                self.session_timeout_ms
            ));
        }
        if self.min_session_timeout_ms <= 0
            || self.max_session_timeout_ms < self.min_session_timeout_ms
        {
            return bad(format!(
                "min_session_timeout_ms must be > 0 and at most max_session_timeout_ms, got {} and {}",
                self.min_session_timeout_ms, self.max_session_timeout_ms
            ));
        }
        if self.max_group_size == 0 {
            return bad("max_group_size must be > 0".into());
        }
        if self.member_id_salt.len() > 64 {
            return bad(format!(
                "member_id_salt is {} bytes long; at most 64 are allowed",
                self.member_id_salt.len()
            ));
        }
        if self.offsets_delete_retention_ms < 0 {
            return bad(format!(
                "offsets_delete_retention_ms must be >= 0, got {}",
                self.offsets_delete_retention_ms
            ));
        }
        self.offsets_log.validate()?;
        Ok(())
    }
}

/// A member's view of the current generation: what `join` and `assignment`
/// return.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberAssignment {
    pub generation: i32,
    /// Sorted by (topic, partition).
    pub partitions: Vec<TopicPartition>,
}

/// The consumer group coordinator of one broker.
#[derive(Debug)]
pub struct GroupCoordinator {
    pub(crate) session_timeout_ms: i64,
    pub(crate) min_session_timeout_ms: i64,
    pub(crate) max_session_timeout_ms: i64,
    pub(crate) max_group_size: usize,
    member_id_salt: String,
    next_member: u64,
    offsets_delete_retention_ms: i64,
    pub(crate) offset_metadata_max_bytes: usize,
    pub(crate) clock: SharedClock,
    pub(crate) groups: BTreeMap<String, Group>,
    pub(crate) store: OffsetStore,
}

pub(crate) fn check_len(kind: &str, value: &str) -> Result<()> {
    if value.len() > MAX_ID_BYTES {
        return Err(GroupError::InvalidRequest(format!(
            "{kind} is {} bytes long; at most {MAX_ID_BYTES} are allowed",
            value.len()
        )));
    }
    Ok(())
}

pub(crate) fn check_group_id(group: &str) -> Result<()> {
    if group.is_empty() {
        return Err(GroupError::InvalidGroupId(
            "group id must not be empty".into(),
        ));
    }
    if group.len() > MAX_ID_BYTES {
        return Err(GroupError::InvalidGroupId(format!(
            "group id is {} bytes long; at most {MAX_ID_BYTES} are allowed",
            group.len()
        )));
    }
    Ok(())
}

pub(crate) fn unknown_group(group: &str) -> GroupError {
    GroupError::UnknownMember(format!("group {group:?} is unknown to the coordinator"))
}

pub(crate) fn unknown_member(group: &str, member: &str, generation: i32) -> GroupError {
    GroupError::UnknownMember(format!(
        "member {member:?} is not in group {group:?} (generation {generation})"
    ))
}

pub(crate) fn fenced(group: &str, instance: &str, member: &str, current: &str) -> GroupError {
    GroupError::FencedInstanceId {
        group: group.to_string(),
        instance: instance.to_string(),
        member: member.to_string(),
        current: current.to_string(),
    }
}

impl GroupCoordinator {
    /// Opens the coordinator with its offsets log in `offsets_dir` (created
    /// if missing; mk-cluster passes `<data_dir>/__consumer_offsets-0`) and
    /// replays it: committed offsets come back as they were, groups come
    /// back Empty with their last generation and assignor (members are not
    /// persisted; they join again).
    pub fn open(offsets_dir: &Path, config: GroupConfig, clock: SharedClock) -> Result<Self> {
        config.validate()?;
        let (store, persisted) = OffsetStore::open(offsets_dir, config.offsets_log)?;
        let groups = persisted
            .into_iter()
            .map(|(id, meta)| (id, Group::restored(meta.generation, meta.assignor)))
            .collect();
        Ok(Self {
            session_timeout_ms: config.session_timeout_ms,
            min_session_timeout_ms: config.min_session_timeout_ms,
            max_session_timeout_ms: config.max_session_timeout_ms,
            max_group_size: config.max_group_size,
            member_id_salt: config.member_id_salt,
            next_member: 0,
            offsets_delete_retention_ms: config.offsets_delete_retention_ms,
            offset_metadata_max_bytes: config.offset_metadata_max_bytes,
            clock,
            groups,
            store,
        })
    }

    /// The group as every read sees it: a group with members or a persisted
    /// generation, else a group known by its committed offsets (Empty,
    /// generation 0), else `None`.
    pub(crate) fn lookup(&self, group: &str) -> Option<&Group> {
        self.groups
            .get(group)
            .or_else(|| self.store.group_offsets(group).map(|_| &OFFSETS_ONLY_GROUP))
    }

    /// The session timeout of coordinator-assigned members.
    pub fn session_timeout_ms(&self) -> i64 {
        self.session_timeout_ms
    }

    pub(crate) fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// A member id made by the coordinator: Kafka's `<client id>-<unique>`
    /// (the instance id for a static member), unique thanks to the salt of
    /// this open and a counter.
    pub(crate) fn new_member_id(&mut self, prefix: &str) -> String {
        self.next_member += 1;
        // The prefix is input: keep the id within the id bound.
        let mut end = prefix.len().min(MAX_ID_BYTES - 100);
        while !prefix.is_char_boundary(end) {
            end -= 1;
        }
        format!(
            "{}-{}-{}",
            &prefix[..end],
            self.member_id_salt,
            self.next_member
        )
    }

    // ----- coordinator-assigned (JSON-TCP) membership ------------------------

    /// Joins (or re-joins) `member` to `group` with the group's assignor;
    /// see [`GroupCoordinator::join_with_assignor`].
    pub fn join(
        &mut self,
        group: &str,
        member: &str,
        topics: impl IntoIterator<Item = impl AsRef<str>>,
        meta: &dyn TopicMetadata,
    ) -> Result<MemberAssignment> {
        self.join_with_assignor(group, member, topics, None, meta)
    }

    /// Joins a member whose partitions the coordinator assigns (JSON-TCP's
    /// `join_group`): the coordinator is the leader of such a group, so the
    /// rebalance completes within this call — a new generation with the
    /// group's assignor, every member Stable. A re-join of a known member
    /// with the same topics (and no other assignor) while Stable is Kafka's
    /// idempotent rejoin: the current generation and assignment, no
    /// rebalance; it extends the session.
    ///
    /// Errors, in order: an empty (or oversized) group id -> INVALID_GROUP_ID;
    /// an empty (or oversized) member id, or a topic that does not exist ->
    /// INVALID_REQUEST; Kafka-protocol members in the group ->
    /// INCONSISTENT_GROUP_PROTOCOL; an `assignor` other than the group's
    /// while other members are in the group -> INVALID_REQUEST; a new member
    /// of a full group -> GROUP_MAX_SIZE_REACHED.
    ///
    /// The assignor rule: a group's assignor is chosen by a join that finds
    /// no other member in the group (its first join, or the first after the
    /// group emptied); `None` then means round-robin for a new group and the
    /// previous assignor for a known one. While other members are present, a
    /// join may name only the group's assignor or `None`.
    pub fn join_with_assignor(
        &mut self,
        group: &str,
        member: &str,
        topics: impl IntoIterator<Item = impl AsRef<str>>,
        assignor: Option<AssignorKind>,
        meta: &dyn TopicMetadata,
    ) -> Result<MemberAssignment> {
        check_group_id(group)?;
        if member.is_empty() {
            return Err(GroupError::InvalidRequest(
                "member id must not be empty".into(),
            ));
        }
        check_len("member id", member)?;
        let mut subscribed = BTreeSet::new();
        for topic in topics {
            let topic = topic.as_ref();
            if meta.partition_count(topic).is_none() {
                return Err(GroupError::InvalidRequest(format!(
                    "member {member:?} subscribed to topic {topic:?}, which does not exist"
                )));
            }
            subscribed.insert(topic.to_string());
        }
        let now = self.now_ms();
        let fresh = Group::new(assignor.unwrap_or_default());
        let g = self.groups.get(group).unwrap_or(&fresh);
        if g.assigner() == Some(Assigner::Client) {
            return Err(GroupError::InconsistentGroupProtocol(format!(
                "group {group:?} has Kafka-protocol members, whose leader assigns the partitions; \
                 a member assigned by the coordinator can join it only once they have left"
            )));
        }
        let others = g.members.keys().any(|m| m != member);
        let chosen = match assignor {
            Some(wanted) if wanted != g.assignor && others => {
                return Err(GroupError::InvalidRequest(format!(
                    "group {group:?} uses the {} assignor; member {member:?} asked for {wanted}",
                    g.assignor
                )));
            }
            Some(wanted) => wanted,
            None => g.assignor,
        };
        let known = g.members.get(member);
        if known.is_none() && g.members.len() >= self.max_group_size {
            return Err(GroupError::GroupMaxSizeReached {
                group: group.to_string(),
                max: self.max_group_size,
            });
        }
        if let Some(m) = known
            && g.state == GroupState::Stable
            && m.topics == subscribed
            && chosen == g.assignor
        {
            let answer = MemberAssignment {
                generation: g.generation,
                partitions: m.assignment.clone(),
            };
            let g = self
                .groups
                .get_mut(group)
                .expect("a known member has a group");
            if let Some(m) = g.members.get_mut(member) {
                m.extend_session(now);
            }
            return Ok(answer);
        }
        let mut members = g.members.clone();
        members.insert(
            member.to_string(),
            Member::coordinator(subscribed, self.session_timeout_ms, now),
        );
        self.rebalance_now(group, members, chosen, meta)?;
        let g = &self.groups[group];
        Ok(MemberAssignment {
            generation: g.generation,
            partitions: g.members[member].assignment.clone(),
        })
    }

    /// Removes `member` from `group` and rebalances. An unknown group or
    /// member is a no-op. Returns whether a member was removed. (One member
    /// of `leave_members`, for JSON-TCP's `leave_group`.)
    pub fn leave(&mut self, group: &str, member: &str, meta: &dyn TopicMetadata) -> Result<bool> {
        let results = self.leave_members(group, &[(member.to_string(), None)], meta)?;
        Ok(matches!(results.as_slice(), [Ok(())]))
    }

    /// Extends the session of `member`; `heartbeat_member` without an
    /// instance id.
    pub fn heartbeat(&mut self, group: &str, member: &str, generation: i32) -> Result<()> {
        self.heartbeat_member(group, member, generation, None)
    }

    /// Rebalances every coordinator-assigned group that has a member
    /// subscribed to `topic`; for mk-cluster to call after the topic's
    /// partition count changed or the topic was deleted. Returns the
    /// rebalanced groups, sorted. Kafka-protocol groups are left alone:
    /// their leader watches the metadata and rejoins, as in Kafka.
    pub fn rebalance_subscribers(
        &mut self,
        topic: &str,
        meta: &dyn TopicMetadata,
    ) -> Result<Vec<String>> {
        let affected: Vec<String> = self
            .groups
            .iter()
            .filter(|(_, g)| {
                g.is_coordinator_assigned() && g.members.values().any(|m| m.topics.contains(topic))
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in &affected {
            let g = &self.groups[id];
            let (members, assignor) = (g.members.clone(), g.assignor);
            self.rebalance_now(id, members, assignor, meta)?;
        }
        Ok(affected)
    }

    /// The current generation and this member's partitions. Errors, in
    /// order: unknown group or member -> UNKNOWN_MEMBER; group not Stable ->
    /// REBALANCE_IN_PROGRESS.
    pub fn assignment(&self, group: &str, member: &str) -> Result<MemberAssignment> {
        let g = self.lookup(group).ok_or_else(|| unknown_group(group))?;
        let Some(m) = g.members.get(member) else {
            return Err(unknown_member(group, member, g.generation));
        };
        if g.state != GroupState::Stable {
            return Err(GroupError::RebalanceInProgress {
                group: group.to_string(),
                state: g.state,
            });
        }
        Ok(MemberAssignment {
            generation: g.generation,
            partitions: m.assignment.clone(),
        })
    }

    // ----- describe and list ---------------------------------------------

    /// Every group the coordinator knows (with members, a generation, or
    /// committed offsets), sorted.
    pub fn list_groups(&self) -> Vec<String> {
        let mut ids: BTreeSet<&String> = self.groups.keys().collect();
        ids.extend(self.store.groups());
        ids.into_iter().cloned().collect()
    }

    /// Every group with its protocol type and state (Kafka's ListGroups),
    /// sorted by id.
    pub fn list_group_listings(&self) -> Vec<GroupListing> {
        self.list_groups()
            .into_iter()
            .filter_map(|id| self.lookup(&id).map(|g| g.listing(&id)))
            .collect()
    }

    /// State, generation, protocol and members (with subscriptions,
    /// assignment, client ids, metadata and deadline) of a group; `None` for
    /// an unknown group. A group known only by its committed offsets is
    /// Empty at generation 0.
    pub fn describe_group(&self, group: &str) -> Option<GroupDescription> {
        self.lookup(group).map(|g| g.describe(group))
    }

    /// The whole current assignment of a group (member -> partitions); empty
    /// unless the group is Stable.
    pub fn group_assignment(&self, group: &str) -> Assignment {
        self.groups
            .get(group)
            .map(Group::assignment)
            .unwrap_or_default()
    }

    // ----- storage steps ---------------------------------------------------

    /// Rolls and compacts the offsets log (keeps the latest record per key;
    /// tombstones older than `offsets_delete_retention_ms` go).
    pub fn compact(&mut self, now_ms: i64) -> Result<CompactionResult> {
        self.store.compact(now_ms, self.offsets_delete_retention_ms)
    }

    /// Fsyncs the offsets log: the flush step of the broker's flush cycle.
    pub fn flush(&mut self) -> Result<()> {
        self.store.flush()
    }

    /// Flushes and closes the offsets log cleanly. Waiting joins and syncs
    /// are answered CLUSTER_CLOSED (their handles see the coordinator go).
    pub fn close(self) -> Result<()> {
        self.store.close()
    }

    /// Read access to the offsets log (e.g. for a lab that prints it).
    pub fn offsets_log(&self) -> &PartitionLog {
        self.store.log()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coordinator_is_send_so_the_cluster_can_share_it() {
        fn assert_send<T: Send>() {}
        assert_send::<GroupCoordinator>();
    }

    #[test]
    fn config_rules_are_checked() {
        let mut c = GroupConfig::default();
        assert!(c.validate().is_ok());
        c.session_timeout_ms = 0;
        assert!(
            c.validate()
                .unwrap_err()
                .to_string()
                .contains("session_timeout_ms")
        );
        c.session_timeout_ms = 1;
        c.offsets_delete_retention_ms = -1;
        assert!(
            c.validate()
                .unwrap_err()
                .to_string()
                .contains("offsets_delete_retention_ms")
        );
        let mut c = GroupConfig {
            min_session_timeout_ms: 10,
            max_session_timeout_ms: 9,
            ..GroupConfig::default()
        };
        assert!(
            c.validate()
                .unwrap_err()
                .to_string()
                .contains("min_session")
        );
        c.max_session_timeout_ms = 10;
        c.max_group_size = 0;
        assert!(
            c.validate()
                .unwrap_err()
                .to_string()
                .contains("max_group_size")
        );
        c.max_group_size = 1;
        c.member_id_salt = "x".repeat(65);
        assert!(c.validate().unwrap_err().to_string().contains("salt"));
    }
}
