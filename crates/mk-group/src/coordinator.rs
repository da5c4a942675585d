//! `GroupCoordinator`: membership, generations, eager rebalances, fencing of
//! stale members, and committed offsets (spec 03), as a deterministic state
//! machine driven by calls and an injected `Clock`.
//!
//! Every operation checks its errors in exactly the order spec 03 lists
//! them, and a rejected operation changes nothing. A rebalance persists the
//! group's new generation to the offsets log before the new state becomes
//! visible, so generations keep growing across restarts and a member that
//! held a generation before a restart stays fenced after it.

use crate::assignor::{Assignment, AssignorKind};
use crate::codec::GroupMetadata;
use crate::error::{GroupError, Result};
use crate::group::{Group, GroupDescription, GroupState, Member};
use crate::metadata::TopicMetadata;
use crate::offsets::OffsetStore;
use mk_core::{SharedClock, TopicPartition};
use mk_log::{CompactionResult, LogConfig, PartitionLog};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The name of the internal topic that stores committed offsets. mk-cluster
/// hides it from user listings and refuses user writes to it.
pub const OFFSETS_TOPIC: &str = "__consumer_offsets";

/// Longest group or member id, in bytes. Ids are part of every offsets-log
/// key, so they get a bound like any other input-controlled size.
pub const MAX_ID_BYTES: usize = 1024;

/// How a group that exists only through committed offsets (plain commits,
/// or a restart that kept offsets but no generation) looks: Empty at
/// generation 0, as Kafka shows a group used only to store offsets.
static OFFSETS_ONLY_GROUP: Group = Group::new(AssignorKind::RoundRobin);

/// Settings of the coordinator.
#[derive(Debug, Clone)]
pub struct GroupConfig {
    /// A member that does not heartbeat (or re-join) within this many
    /// milliseconds is removed by `expire_members`.
    pub session_timeout_ms: i64,
    /// How long a tombstone of the offsets log survives compaction (Kafka's
    /// `delete.retention.ms`).
    pub offsets_delete_retention_ms: i64,
    /// Settings of the offsets log (segment size, fault injection, ...).
    pub offsets_log: LogConfig,
}

impl Default for GroupConfig {
    fn default() -> Self {
        Self {
            session_timeout_ms: 10_000,
            offsets_delete_retention_ms: 86_400_000,
            offsets_log: LogConfig::default(),
        }
    }
}

impl GroupConfig {
    /// Checks every rule: session timeout > 0, delete retention >= 0, and the
    /// log configuration's own rules.
    pub fn validate(&self) -> Result<()> {
        if self.session_timeout_ms <= 0 {
            return Err(GroupError::InvalidRequest(format!(
                "session_timeout_ms must be > 0, got {}",
                self.session_timeout_ms
            )));
        }
        if self.offsets_delete_retention_ms < 0 {
            return Err(GroupError::InvalidRequest(format!(
                "offsets_delete_retention_ms must be >= 0, got {}",
                self.offsets_delete_retention_ms
            )));
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
    session_timeout_ms: i64,
    offsets_delete_retention_ms: i64,
    clock: SharedClock,
    groups: BTreeMap<String, Group>,
    store: OffsetStore,
}

fn check_id(kind: &str, id: &str) -> Result<()> {
    if id.is_empty() {
        return Err(GroupError::InvalidRequest(format!(
            "{kind} id must not be empty"
        )));
    }
    if id.len() > MAX_ID_BYTES {
        return Err(GroupError::InvalidRequest(format!(
            "{kind} id is {} bytes long; at most {MAX_ID_BYTES} are allowed",
            id.len()
        )));
    }
    Ok(())
}

fn unknown_group(group: &str) -> GroupError {
    GroupError::UnknownMember(format!("group {group:?} is unknown to the coordinator"))
}

fn unknown_member(group: &str, member: &str, generation: i32) -> GroupError {
    GroupError::UnknownMember(format!(
        "member {member:?} is not in group {group:?} (generation {generation})"
    ))
}

fn check_generation(group: &str, g: &Group, generation: i32) -> Result<()> {
    if generation != g.generation {
        return Err(GroupError::IllegalGeneration {
            group: group.to_string(),
            given: generation,
            current: g.generation,
        });
    }
    Ok(())
}

fn check_offsets_not_negative(offsets: &BTreeMap<TopicPartition, i64>) -> Result<()> {
    match offsets.iter().find(|(_, o)| **o < 0) {
        Some((tp, o)) => Err(GroupError::InvalidRequest(format!(
            "offset for {tp} must be >= 0, got {o}"
        ))),
        None => Ok(()),
    }
}

impl GroupCoordinator {
    /// Opens the coordinator with its offsets log in `offsets_dir` (created
    /// if missing; mk-cluster passes `<data_dir>/__consumer_offsets-0`) and
    /// replays it: committed offsets come back as they were, groups come
    /// back Empty with their last generation and assignor.
    pub fn open(offsets_dir: &Path, config: GroupConfig, clock: SharedClock) -> Result<Self> {
        config.validate()?;
        let (store, persisted) = OffsetStore::open(offsets_dir, config.offsets_log)?;
        let groups = persisted
            .into_iter()
            .map(|(id, meta)| (id, Group::restored(meta.generation, meta.assignor)))
            .collect();
        Ok(Self {
            session_timeout_ms: config.session_timeout_ms,
            offsets_delete_retention_ms: config.offsets_delete_retention_ms,
            clock,
            groups,
            store,
        })
    }

    /// The group as every operation sees it: a group with members or a
    /// persisted generation, else a group known by its committed offsets
    /// (Empty, generation 0), else `None`.
    fn lookup(&self, group: &str) -> Option<&Group> {
        self.groups
            .get(group)
            .or_else(|| self.store.group_offsets(group).map(|_| &OFFSETS_ONLY_GROUP))
    }

    pub fn session_timeout_ms(&self) -> i64 {
        self.session_timeout_ms
    }

    fn deadline(&self) -> i64 {
        self.clock.now_ms().saturating_add(self.session_timeout_ms)
    }

    // ----- membership ----------------------------------------------------

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

    /// Adds or replaces `member` with a fresh session deadline, starts a new
    /// generation and rebalances. Errors, in order: an empty (or oversized)
    /// group or member id, or a topic that does not exist -> INVALID_REQUEST;
    /// an `assignor` other than the group's while other members are in the
    /// group -> INVALID_REQUEST.
    ///
    /// The assignor rule: a group's assignor is chosen by a join that finds
    /// no other member in the group (its first join, or the first after the
    /// group emptied); `None` then means round-robin for a new group and the
    /// previous assignor for a known one. While other members are present, a
    /// join may name only the group's assignor (Kafka refuses such a member
    /// with INCONSISTENT_GROUP_PROTOCOL) or `None`.
    pub fn join_with_assignor(
        &mut self,
        group: &str,
        member: &str,
        topics: impl IntoIterator<Item = impl AsRef<str>>,
        assignor: Option<AssignorKind>,
        meta: &dyn TopicMetadata,
    ) -> Result<MemberAssignment> {
        check_id("group", group)?;
        check_id("member", member)?;
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
        let mut draft = match self.groups.get(group) {
            Some(g) => g.clone(),
            None => Group::new(assignor.unwrap_or_default()),
        };
        let others = draft.members.keys().any(|m| m != member);
        match assignor {
            Some(wanted) if wanted != draft.assignor && others => {
                return Err(GroupError::InvalidRequest(format!(
                    "group {group:?} uses the {} assignor; member {member:?} asked for {wanted}",
                    draft.assignor
                )));
            }
            Some(wanted) => draft.assignor = wanted,
            None => {}
        }
        let deadline_ms = self.deadline();
        draft.members.insert(
            member.to_string(),
            Member {
                topics: subscribed,
                deadline_ms,
            },
        );
        self.rebalance(group, draft, meta)?;
        let g = &self.groups[group];
        Ok(MemberAssignment {
            generation: g.generation,
            partitions: g.assigned(member).to_vec(),
        })
    }

    /// Removes `member` from `group` and rebalances. An unknown group or
    /// member is a no-op. Returns whether a member was removed.
    pub fn leave(&mut self, group: &str, member: &str, meta: &dyn TopicMetadata) -> Result<bool> {
        let Some(g) = self.groups.get(group) else {
            return Ok(false);
        };
        if !g.members.contains_key(member) {
            return Ok(false);
        }
        let mut draft = g.clone();
        draft.members.remove(member);
        self.rebalance(group, draft, meta)?;
        Ok(true)
    }

    /// Extends the session of `member`. Errors, in order: unknown group ->
    /// UNKNOWN_MEMBER; generation other than the current -> ILLEGAL_GENERATION;
    /// unknown member -> UNKNOWN_MEMBER.
    pub fn heartbeat(&mut self, group: &str, member: &str, generation: i32) -> Result<()> {
        let deadline_ms = self.deadline();
        let g = self.lookup(group).ok_or_else(|| unknown_group(group))?;
        check_generation(group, g, generation)?;
        let m = self
            .groups
            .get_mut(group)
            .and_then(|g| g.members.get_mut(member))
            .ok_or_else(|| unknown_member(group, member, generation))?;
        m.deadline_ms = deadline_ms;
        Ok(())
    }

    /// Removes every member whose deadline has passed (`now > deadline`),
    /// rebalances each affected group once, and returns the removed
    /// `(group, member)` pairs sorted.
    pub fn expire_members(&mut self, meta: &dyn TopicMetadata) -> Result<Vec<(String, String)>> {
        let now = self.clock.now_ms();
        let mut removed = Vec::new();
        let affected: Vec<String> = self
            .groups
            .iter()
            .filter(|(_, g)| g.members.values().any(|m| now > m.deadline_ms))
            .map(|(id, _)| id.clone())
            .collect();
        for id in affected {
            let mut draft = self.groups[&id].clone();
            draft.members.retain(|member, m| {
                let expired = now > m.deadline_ms;
                if expired {
                    removed.push((id.clone(), member.clone()));
                }
                !expired
            });
            self.rebalance(&id, draft, meta)?;
        }
        removed.sort();
        Ok(removed)
    }

    /// Rebalances every group that has a member subscribed to `topic`; for
    /// mk-cluster to call after the topic's partition count changed or the
    /// topic was deleted. Returns the rebalanced groups, sorted.
    pub fn rebalance_subscribers(
        &mut self,
        topic: &str,
        meta: &dyn TopicMetadata,
    ) -> Result<Vec<String>> {
        let affected: Vec<String> = self
            .groups
            .iter()
            .filter(|(_, g)| g.members.values().any(|m| m.topics.contains(topic)))
            .map(|(id, _)| id.clone())
            .collect();
        for id in &affected {
            let draft = self.groups[id].clone();
            self.rebalance(id, draft, meta)?;
        }
        Ok(affected)
    }

    /// Starts the next generation of `draft` (whose members are already
    /// updated), persists it, computes the assignment and publishes the
    /// group. Nothing is published if the write fails.
    fn rebalance(&mut self, group: &str, mut draft: Group, meta: &dyn TopicMetadata) -> Result<()> {
        draft.generation = draft.generation.checked_add(1).ok_or_else(|| {
            GroupError::InvalidRequest(format!(
                "group {group:?} has exhausted its generations at {}; delete and recreate it",
                draft.generation
            ))
        })?;
        draft.state = GroupState::PreparingRebalance;
        let persisted = GroupMetadata {
            generation: draft.generation,
            assignor: draft.assignor,
        };
        self.store
            .write_group(group, Some(persisted), self.clock.now_ms())?;
        let previous = std::mem::take(&mut draft.assignment);
        if draft.members.is_empty() {
            draft.state = GroupState::Empty;
        } else {
            let subscriptions = draft.subscriptions();
            let counts: BTreeMap<String, u32> = subscriptions
                .values()
                .flatten()
                .map(|t| (t.clone(), meta.partition_count(t).unwrap_or(0)))
                .collect();
            draft.assignment = draft.assignor.assign(&subscriptions, &counts, &previous);
            draft.state = GroupState::Stable;
        }
        self.groups.insert(group.to_string(), draft);
        Ok(())
    }

    /// The current generation and this member's partitions. Errors, in
    /// order: unknown group or member -> UNKNOWN_MEMBER; group not Stable ->
    /// REBALANCE_IN_PROGRESS.
    pub fn assignment(&self, group: &str, member: &str) -> Result<MemberAssignment> {
        let g = self.lookup(group).ok_or_else(|| unknown_group(group))?;
        if !g.members.contains_key(member) {
            return Err(unknown_member(group, member, g.generation));
        }
        if g.state != GroupState::Stable {
            return Err(GroupError::RebalanceInProgress {
                group: group.to_string(),
                state: g.state,
            });
        }
        Ok(MemberAssignment {
            generation: g.generation,
            partitions: g.assigned(member).to_vec(),
        })
    }

    // ----- committed offsets ---------------------------------------------

    /// Commits offsets as a member of the group's current generation. Errors,
    /// in order: unknown group -> UNKNOWN_MEMBER; group not Stable ->
    /// REBALANCE_IN_PROGRESS; other generation -> ILLEGAL_GENERATION; unknown
    /// member -> UNKNOWN_MEMBER; any partition not assigned to the member ->
    /// NOT_PARTITION_OWNER; a negative offset -> INVALID_REQUEST. Nothing of a
    /// rejected commit is stored. An accepted commit is one append to the
    /// offsets log, written to the OS before this returns (fsync: `flush`).
    pub fn commit(
        &mut self,
        group: &str,
        member: &str,
        generation: i32,
        offsets: &BTreeMap<TopicPartition, i64>,
    ) -> Result<()> {
        let g = self.lookup(group).ok_or_else(|| unknown_group(group))?;
        if g.state != GroupState::Stable {
            return Err(GroupError::RebalanceInProgress {
                group: group.to_string(),
                state: g.state,
            });
        }
        check_generation(group, g, generation)?;
        if !g.members.contains_key(member) {
            return Err(unknown_member(group, member, g.generation));
        }
        let owned = g.assigned(member);
        if let Some(tp) = offsets.keys().find(|tp| owned.binary_search(tp).is_err()) {
            return Err(GroupError::NotPartitionOwner {
                group: group.to_string(),
                member: member.to_string(),
                generation,
                partition: tp.clone(),
            });
        }
        check_offsets_not_negative(offsets)?;
        let now = self.clock.now_ms();
        self.store.commit(group, offsets, now)
    }

    /// Commits offsets for a consumer that assigns partitions by hand: no
    /// generation. Errors, in order: empty or oversized group id ->
    /// INVALID_REQUEST; the group has members -> UNKNOWN_MEMBER (as in Kafka,
    /// only members of the current generation may commit to an active group);
    /// a topic that does not exist -> UNKNOWN_TOPIC; a partition the topic
    /// does not have -> UNKNOWN_PARTITION; a negative offset ->
    /// INVALID_REQUEST.
    pub fn commit_direct(
        &mut self,
        group: &str,
        offsets: &BTreeMap<TopicPartition, i64>,
        meta: &dyn TopicMetadata,
    ) -> Result<()> {
        check_id("group", group)?;
        if let Some(g) = self.groups.get(group)
            && !g.members.is_empty()
        {
            return Err(GroupError::UnknownMember(format!(
                "group {group:?} has {} active members in generation {}; a commit without \
                 membership is allowed only while the group has no members",
                g.members.len(),
                g.generation
            )));
        }
        for tp in offsets.keys() {
            let partitions = meta
                .partition_count(&tp.topic)
                .ok_or_else(|| GroupError::UnknownTopic(tp.topic.clone()))?;
            if tp.partition >= partitions {
                return Err(GroupError::UnknownPartition {
                    partition: tp.clone(),
                    partitions,
                });
            }
        }
        check_offsets_not_negative(offsets)?;
        let now = self.clock.now_ms();
        self.store.commit(group, offsets, now)
    }

    /// Stores offsets staged by a committed transaction (spec 04: "store the
    /// staged offsets, no generation check"). Unlike `commit_direct` it is
    /// allowed while the group has members, because a read-process-write
    /// application commits its input offsets through its transaction while
    /// its consumer is a member of the group. The caller (mk-cluster) has
    /// validated the partitions when the offsets were staged. Errors: empty
    /// or oversized group id or a negative offset -> INVALID_REQUEST.
    pub fn commit_transactional(
        &mut self,
        group: &str,
        offsets: &BTreeMap<TopicPartition, i64>,
    ) -> Result<()> {
        check_id("group", group)?;
        check_offsets_not_negative(offsets)?;
        let now = self.clock.now_ms();
        self.store.commit(group, offsets, now)
    }

    /// The group fencing of a TxnOffsetCommit (Kafka's
    /// `validateOffsetCommit` for transactional commits): when the request
    /// carries any membership (`generation >= 0`, a member id or a group
    /// instance id), the member must be in the group — an unknown member
    /// (or group) is UNKNOWN_MEMBER — and the generation must be the
    /// group's current one, else ILLEGAL_GENERATION. Without membership
    /// (`-1`, `""`, no instance id) the offsets are accepted whatever the
    /// group's state, because a producer outside the group may commit its
    /// offsets through a transaction. Unlike `commit`, a group in the middle
    /// of a rebalance is not refused (Kafka does not refuse it either).
    ///
    /// Static membership: this coordinator knows no group instance ids yet,
    /// so a request naming one is UNKNOWN_MEMBER, which is what Kafka
    /// answers for an instance id the group does not know. When static
    /// members exist, an instance id held by another member id is
    /// FENCED_INSTANCE_ID, and that check comes before the member check.
    ///
    /// It only checks; the offsets are staged by the transaction coordinator
    /// and stored with `commit_transactional` when the transaction commits.
    pub fn validate_txn_offset_commit(
        &self,
        group: &str,
        member: &str,
        generation: i32,
        group_instance_id: Option<&str>,
    ) -> Result<()> {
        check_id("group", group)?;
        if generation < 0 && member.is_empty() && group_instance_id.is_none() {
            return Ok(());
        }
        let g = self.lookup(group).ok_or_else(|| unknown_group(group))?;
        if let Some(instance) = group_instance_id {
            return Err(GroupError::UnknownMember(format!(
                "group instance id {instance:?} is not a static member of group {group:?}"
            )));
        }
        if !g.members.contains_key(member) {
            return Err(unknown_member(group, member, g.generation));
        }
        check_generation(group, g, generation)
    }

    /// The committed offset of `partition` for `group`, if any.
    pub fn fetch_committed(&self, group: &str, partition: &TopicPartition) -> Option<i64> {
        self.store.committed(group, partition)
    }

    /// Every committed offset of `group`.
    pub fn committed_offsets(&self, group: &str) -> BTreeMap<TopicPartition, i64> {
        self.store.group_offsets(group).cloned().unwrap_or_default()
    }

    /// Deletes the committed offsets of `partitions` (tombstones in the
    /// offsets log). Refused with INVALID_REQUEST while a member of the group
    /// is subscribed to one of their topics (Kafka's
    /// GROUP_SUBSCRIBED_TO_TOPIC). Returns how many offsets were deleted.
    pub fn delete_offsets(&mut self, group: &str, partitions: &[TopicPartition]) -> Result<usize> {
        if let Some(g) = self.groups.get(group)
            && let Some((member, tp)) = g.members.iter().find_map(|(id, m)| {
                partitions
                    .iter()
                    .find(|tp| m.topics.contains(&tp.topic))
                    .map(|tp| (id, tp))
            })
        {
            return Err(GroupError::InvalidRequest(format!(
                "member {member:?} of group {group:?} is subscribed to topic {:?}; its offsets cannot be deleted",
                tp.topic
            )));
        }
        let now = self.clock.now_ms();
        self.store.delete_offsets(group, partitions, now)
    }

    /// Deletes every group's committed offsets of a deleted topic (whatever
    /// members are subscribed: the topic is gone). Returns how many offsets
    /// were deleted.
    pub fn delete_topic_offsets(&mut self, topic: &str) -> Result<usize> {
        let now = self.clock.now_ms();
        let groups: Vec<String> = self.store.groups().cloned().collect();
        let mut deleted = 0;
        for group in groups {
            let partitions: Vec<TopicPartition> = self
                .committed_offsets(&group)
                .into_keys()
                .filter(|tp| tp.topic == topic)
                .collect();
            if !partitions.is_empty() {
                deleted += self.store.delete_offsets(&group, &partitions, now)?;
            }
        }
        Ok(deleted)
    }

    /// Deletes a group with no members: its offsets and its generation.
    /// Errors: unknown group -> UNKNOWN_MEMBER; members present ->
    /// INVALID_REQUEST (Kafka's NON_EMPTY_GROUP).
    pub fn delete_group(&mut self, group: &str) -> Result<()> {
        let g = self.lookup(group).ok_or_else(|| unknown_group(group))?;
        if !g.members.is_empty() {
            return Err(GroupError::InvalidRequest(format!(
                "group {group:?} has {} members; only an empty group can be deleted",
                g.members.len()
            )));
        }
        let now = self.clock.now_ms();
        self.store.delete_group(group, now)?;
        self.groups.remove(group);
        Ok(())
    }

    // ----- describe and list ---------------------------------------------

    /// Every group the coordinator knows (with members, a generation, or
    /// committed offsets), sorted.
    pub fn list_groups(&self) -> Vec<String> {
        let mut ids: BTreeSet<&String> = self.groups.keys().collect();
        ids.extend(self.store.groups());
        ids.into_iter().cloned().collect()
    }

    /// State, generation, assignor and members (with subscriptions,
    /// assignment and deadline) of a group; `None` for an unknown group. A
    /// group known only by its committed offsets is Empty at generation 0.
    pub fn describe_group(&self, group: &str) -> Option<GroupDescription> {
        self.lookup(group).map(|g| g.describe(group))
    }

    /// The whole current assignment of a group (member -> partitions); empty
    /// unless the group is Stable.
    pub fn group_assignment(&self, group: &str) -> Assignment {
        self.groups
            .get(group)
            .map(|g| g.assignment.clone())
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

    /// Flushes and closes the offsets log cleanly.
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
    }
}
