//! Committed offsets: what a commit stores (`OffsetAndMetadata`), the one
//! commit rule (Kafka's `GroupCoordinator` offset-commit validation, plus
//! partition ownership for members whose assignment the coordinator
//! computed), transactional offsets, fetches, and the deletion of offsets
//! and of whole groups.

use crate::coordinator::{GroupCoordinator, check_group_id, unknown_group};
use crate::error::{GroupError, Result};
use crate::group::{Assigner, CONSUMER_PROTOCOL_TYPE, GroupState, GroupType};
use crate::metadata::TopicMetadata;
use mk_core::TopicPartition;
use std::collections::{BTreeMap, BTreeSet};

/// Who commits, as an OffsetCommit names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommitRequest<'a> {
    pub group: &'a str,
    /// The generation (classic) or member epoch (KIP-848); negative for a
    /// commit without membership.
    pub generation: i32,
    pub member: &'a str,
    pub instance: Option<&'a str>,
    /// The OffsetCommit version; `None` for JSON-TCP and in-process
    /// commits (the rule of versions before 9).
    pub version: Option<i16>,
}

/// What a commit stores for one partition (Kafka's `OffsetAndMetadata`):
/// the offset to resume from, the leader epoch the committer last saw at
/// that offset (KIP-320: a consumer resuming from it can tell whether the
/// log was truncated under it), and the committer's metadata string, both
/// answered back by OffsetFetch.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OffsetAndMetadata {
    pub offset: i64,
    /// `None` when the committer named none (Kafka's -1).
    pub leader_epoch: Option<i32>,
    /// Empty when the committer sent none (Kafka stores a null as "").
    pub metadata: String,
}

impl OffsetAndMetadata {
    /// An offset without a leader epoch or metadata.
    pub fn new(offset: i64) -> Self {
        Self {
            offset,
            leader_epoch: None,
            metadata: String::new(),
        }
    }

    /// A commit as Kafka's wire carries it: leader epoch -1 (or any
    /// negative value) means none, a null metadata string means "".
    pub fn from_wire(offset: i64, leader_epoch: i32, metadata: Option<String>) -> Self {
        Self {
            offset,
            leader_epoch: (leader_epoch >= 0).then_some(leader_epoch),
            metadata: metadata.unwrap_or_default(),
        }
    }

    /// The leader epoch as Kafka's wire carries it (-1 for none).
    pub fn leader_epoch_or_none(&self) -> i32 {
        self.leader_epoch.unwrap_or(-1)
    }
}

impl From<i64> for OffsetAndMetadata {
    fn from(offset: i64) -> Self {
        Self::new(offset)
    }
}

type Offsets = BTreeMap<TopicPartition, OffsetAndMetadata>;
type Answers = Vec<(TopicPartition, Result<()>)>;

/// Kafka's `offset.metadata.max.bytes` default: the longest metadata string
/// a commit may carry, counted as Kafka counts it (UTF-16 code units).
pub const DEFAULT_OFFSET_METADATA_MAX_BYTES: usize = 4096;

fn plain(offsets: &BTreeMap<TopicPartition, i64>) -> BTreeMap<TopicPartition, OffsetAndMetadata> {
    offsets
        .iter()
        .map(|(tp, o)| (tp.clone(), OffsetAndMetadata::new(*o)))
        .collect()
}

fn check_offsets_not_negative(offsets: &BTreeMap<TopicPartition, OffsetAndMetadata>) -> Result<()> {
    match offsets.iter().find(|(_, o)| o.offset < 0) {
        Some((tp, o)) => Err(GroupError::InvalidRequest(format!(
            "offset for {tp} must be >= 0, got {}",
            o.offset
        ))),
        None => Ok(()),
    }
}

fn check_partitions_exist(
    offsets: &BTreeMap<TopicPartition, OffsetAndMetadata>,
    meta: &dyn TopicMetadata,
) -> Result<()> {
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
    Ok(())
}

impl GroupCoordinator {
    /// Commits offsets (Kafka's OffsetCommit; JSON-TCP's `commit_offsets`
    /// and the in-process consumer's commits are the same rule). A commit
    /// with a negative generation, an empty member id and no instance id is
    /// a "simple" commit of a consumer that assigns partitions itself.
    ///
    /// Errors, in order (Kafka's, then ours): an invalid group id ->
    /// INVALID_GROUP_ID. A group the coordinator does not know accepts a
    /// commit with a negative generation (the group is then known by its
    /// offsets) and answers ILLEGAL_GENERATION otherwise, as Kafka does for
    /// OffsetCommit before v9. A negative generation is accepted while the
    /// group has no members. Otherwise, for a commit that names a
    /// generation, member or instance: the instance id held by another
    /// member id -> FENCED_INSTANCE_ID; an unknown member -> UNKNOWN_MEMBER;
    /// another generation -> ILLEGAL_GENERATION; a simple commit to a group
    /// with members -> UNKNOWN_MEMBER. Then: CompletingRebalance ->
    /// REBALANCE_IN_PROGRESS (during PreparingRebalance a member of the
    /// current generation may still commit, as in Kafka); for a member whose
    /// assignment the coordinator computed, a partition it does not own ->
    /// NOT_PARTITION_OWNER (Kafka has no such check and neither do
    /// Kafka-protocol members here: their leader computed the assignment);
    /// a topic or partition that does not exist -> UNKNOWN_TOPIC /
    /// UNKNOWN_PARTITION; a negative offset -> INVALID_REQUEST.
    ///
    /// Nothing of a rejected commit is stored. An accepted commit is one
    /// append to the offsets log, written to the OS before this returns
    /// (fsync: `flush`). A commit does not extend the member's session.
    /// This is the commit of plain offsets (no leader epoch, no metadata);
    /// see [`GroupCoordinator::commit_offsets_with_metadata`].
    pub fn commit_offsets(
        &mut self,
        group: &str,
        generation: i32,
        member: &str,
        instance: Option<&str>,
        offsets: &BTreeMap<TopicPartition, i64>,
        meta: &dyn TopicMetadata,
    ) -> Result<()> {
        let answers = self.commit_offsets_with_metadata(
            group,
            generation,
            member,
            instance,
            &plain(offsets),
            meta,
        )?;
        // Without metadata no partition can be refused on its own.
        answers.into_iter().try_for_each(|(_, r)| r)
    }

    /// Kafka's OffsetCommit: the rule of [`GroupCoordinator::commit_offsets`]
    /// for offsets that carry a leader epoch and a metadata string, stored
    /// and answered back by OffsetFetch. After the checks of the whole
    /// request, a partition whose metadata is longer than
    /// `offset_metadata_max_bytes` is refused on its own with
    /// OFFSET_METADATA_TOO_LARGE, as Kafka does, and the others are stored
    /// (one append). Returns one answer per partition, in partition order.
    pub fn commit_offsets_with_metadata(
        &mut self,
        group: &str,
        generation: i32,
        member: &str,
        instance: Option<&str>,
        offsets: &BTreeMap<TopicPartition, OffsetAndMetadata>,
        meta: &dyn TopicMetadata,
    ) -> Result<Vec<(TopicPartition, Result<()>)>> {
        let request = CommitRequest {
            group,
            generation,
            member,
            instance,
            version: None,
        };
        self.commit_request(&request, offsets, meta)
    }

    /// [`GroupCoordinator::commit_offsets_with_metadata`] of a Kafka
    /// OffsetCommit of `version`. The version changes two answers, as in
    /// Kafka: a commit with a generation (or member epoch) to an unknown
    /// group is GROUP_ID_NOT_FOUND from v9 on (ILLEGAL_GENERATION before),
    /// and a KIP-848 member must commit with v9+ (UNSUPPORTED_VERSION).
    ///
    /// To a KIP-848 consumer group `generation` is the member epoch: a
    /// commit without membership (negative epoch) is accepted while the
    /// group has no members; otherwise an unknown member -> UNKNOWN_MEMBER
    /// and an epoch other than the member's -> STALE_MEMBER_EPOCH. A share
    /// group takes no commits (GROUP_ID_NOT_FOUND).
    pub fn commit_request(
        &mut self,
        request: &CommitRequest<'_>,
        offsets: &BTreeMap<TopicPartition, OffsetAndMetadata>,
        meta: &dyn TopicMetadata,
    ) -> Result<Vec<(TopicPartition, Result<()>)>> {
        self.check_commit(request, offsets, meta)?;
        let (accepted, answers) = self.split_oversized_metadata(offsets);
        let now = self.now_ms();
        self.store.commit(request.group, &accepted, now)?;
        Ok(answers)
    }

    /// Checks Kafka's `offset.metadata.max.bytes` for one metadata string
    /// (counted in UTF-16 code units, as Kafka's `String.length()` does):
    /// OFFSET_METADATA_TOO_LARGE when it is longer. TxnOffsetCommit asks it
    /// before staging an offset.
    pub fn check_offset_metadata(&self, tp: &TopicPartition, metadata: &str) -> Result<()> {
        // Count no further than the bound: a long string costs no more.
        let len = metadata
            .encode_utf16()
            .take(self.offset_metadata_max_bytes + 1)
            .count();
        if len > self.offset_metadata_max_bytes {
            return Err(GroupError::OffsetMetadataTooLarge {
                partition: tp.clone(),
                max: self.offset_metadata_max_bytes,
            });
        }
        Ok(())
    }

    /// The offsets to store, and one answer per partition.
    fn split_oversized_metadata(
        &self,
        offsets: &BTreeMap<TopicPartition, OffsetAndMetadata>,
    ) -> (Offsets, Answers) {
        let mut accepted = BTreeMap::new();
        let mut answers = Vec::with_capacity(offsets.len());
        for (tp, o) in offsets {
            let answer = self.check_offset_metadata(tp, &o.metadata);
            if answer.is_ok() {
                let mut o = o.clone();
                o.leader_epoch = o.leader_epoch.filter(|e| *e >= 0);
                accepted.insert(tp.clone(), o);
            }
            answers.push((tp.clone(), answer));
        }
        (accepted, answers)
    }

    /// The checks of a whole commit request, in the order documented on
    /// [`GroupCoordinator::commit_offsets`] and
    /// [`GroupCoordinator::commit_request`].
    fn check_commit(
        &self,
        r: &CommitRequest<'_>,
        offsets: &BTreeMap<TopicPartition, OffsetAndMetadata>,
        meta: &dyn TopicMetadata,
    ) -> Result<()> {
        check_group_id(r.group)?;
        let owned = match self.group_type(r.group) {
            Some(GroupType::Consumer) => {
                self.validate_consumer_commit(r.group, r.member, r.generation, r.version)?;
                None
            }
            Some(GroupType::Share) => {
                return Err(GroupError::GroupIdNotFound(format!(
                    "Group {} is not a consumer group: it is a share group",
                    r.group
                )));
            }
            Some(GroupType::Classic) | None => self.classic_commit_owner(r)?,
        };
        if let Some(owned) = owned
            && let Some(tp) = offsets.keys().find(|tp| owned.binary_search(tp).is_err())
        {
            return Err(GroupError::NotPartitionOwner {
                group: r.group.to_string(),
                member: r.member.to_string(),
                generation: r.generation,
                partition: tp.clone(),
            });
        }
        check_partitions_exist(offsets, meta)?;
        check_offsets_not_negative(offsets)
    }

    /// The classic commit rule; returns the partitions a coordinator-assigned
    /// member owns (its commit may name only those).
    fn classic_commit_owner(&self, r: &CommitRequest<'_>) -> Result<Option<Vec<TopicPartition>>> {
        let (group, generation, member, instance) = (r.group, r.generation, r.member, r.instance);
        let simple = generation < 0 && member.is_empty() && instance.is_none();
        let g = match self.lookup(group) {
            None if generation >= 0 && r.version.is_some_and(|v| v >= 9) => {
                return Err(GroupError::GroupIdNotFound(format!(
                    "Group {group} does not exist."
                )));
            }
            None if generation >= 0 => {
                return Err(GroupError::IllegalGeneration {
                    group: group.to_string(),
                    given: generation,
                    current: 0,
                });
            }
            None => return Ok(None),
            Some(g) if generation < 0 && g.members.is_empty() => return Ok(None),
            Some(g) => g,
        };
        if simple {
            return Err(GroupError::UnknownMember(format!(
                "group {group:?} has {} active members in generation {}; a commit without \
                 membership is allowed only while the group has no members",
                g.members.len(),
                g.generation
            )));
        }
        g.check_member(group, instance, member, generation)?;
        if g.state == GroupState::CompletingRebalance {
            return Err(GroupError::RebalanceInProgress {
                group: group.to_string(),
                state: g.state,
            });
        }
        Ok(g.members
            .get(member)
            .filter(|m| m.assigner == Assigner::Coordinator)
            .map(|m| m.assignment.clone()))
    }

    /// A simple commit (generation -1, no member) of a consumer that assigns
    /// partitions by hand; see [`GroupCoordinator::commit_offsets`].
    pub fn commit_direct(
        &mut self,
        group: &str,
        offsets: &BTreeMap<TopicPartition, i64>,
        meta: &dyn TopicMetadata,
    ) -> Result<()> {
        self.commit_offsets(group, -1, "", None, offsets, meta)
    }

    /// Stores offsets staged by a committed transaction (spec 04: "store the
    /// staged offsets, no generation check"). Unlike a simple commit it is
    /// allowed while the group has members, because a read-process-write
    /// application commits its input offsets through its transaction while
    /// its consumer is a member of the group. The caller (mk-cluster) has
    /// validated the partitions (and the metadata length) when the offsets
    /// were staged. Errors: an invalid group id -> INVALID_GROUP_ID; a
    /// negative offset -> INVALID_REQUEST.
    pub fn commit_transactional(
        &mut self,
        group: &str,
        offsets: &BTreeMap<TopicPartition, OffsetAndMetadata>,
    ) -> Result<()> {
        check_group_id(group)?;
        check_offsets_not_negative(offsets)?;
        let now = self.now_ms();
        self.store.commit(group, offsets, now)
    }

    /// The group fencing of a TxnOffsetCommit (Kafka's
    /// `validateOffsetCommit` for transactional commits), used by the
    /// transaction flow in mk-cluster before it stages the offsets. When the
    /// request carries any membership (`generation >= 0`, a member id or a
    /// group instance id): the instance id held by another member id ->
    /// FENCED_INSTANCE_ID; a member (or group) the coordinator does not know
    /// -> UNKNOWN_MEMBER; another generation -> ILLEGAL_GENERATION. Without
    /// membership (`-1`, `""`, no instance id) it accepts, whatever the
    /// group's state, because a producer outside the group may commit
    /// offsets through its transaction. Unlike `commit_offsets`, a group in
    /// the middle of a rebalance is not refused (Kafka does not refuse
    /// transactional commits either), and no partition ownership is checked.
    ///
    /// It only checks: the offsets are staged by the transaction
    /// coordinator and stored with `commit_transactional` exactly when the
    /// transaction commits. An invalid group id is INVALID_GROUP_ID.
    pub fn validate_txn_offset_commit(
        &self,
        group: &str,
        member: &str,
        generation: i32,
        group_instance_id: Option<&str>,
    ) -> Result<()> {
        check_group_id(group)?;
        if generation < 0 && member.is_empty() && group_instance_id.is_none() {
            return Ok(());
        }
        if self.consumer_groups.contains_key(group) {
            // A KIP-848 member's transactional commit: its member epoch.
            return self.validate_consumer_commit(group, member, generation, None);
        }
        let g = self.lookup(group).ok_or_else(|| unknown_group(group))?;
        g.check_member(group, group_instance_id, member, generation)
    }

    /// The committed offset of `partition` for `group`, if any.
    pub fn fetch_committed(&self, group: &str, partition: &TopicPartition) -> Option<i64> {
        self.store.committed(group, partition).map(|o| o.offset)
    }

    /// The committed offset of `partition` for `group` with its leader
    /// epoch and metadata, if any (Kafka's OffsetFetch).
    pub fn fetch_committed_with_metadata(
        &self,
        group: &str,
        partition: &TopicPartition,
    ) -> Option<OffsetAndMetadata> {
        self.store.committed(group, partition).cloned()
    }

    /// Every committed offset of `group`.
    pub fn committed_offsets(&self, group: &str) -> BTreeMap<TopicPartition, i64> {
        self.store
            .group_offsets(group)
            .map(|m| m.iter().map(|(tp, o)| (tp.clone(), o.offset)).collect())
            .unwrap_or_default()
    }

    /// Every committed offset of `group` with its leader epoch and metadata.
    pub fn committed_offsets_with_metadata(
        &self,
        group: &str,
    ) -> BTreeMap<TopicPartition, OffsetAndMetadata> {
        self.store.group_offsets(group).cloned().unwrap_or_default()
    }

    /// Deletes the committed offsets of `partitions` (Kafka's OffsetDelete;
    /// tombstones in the offsets log, one append). Errors of the whole
    /// request: an unknown group -> GROUP_ID_NOT_FOUND; a group with members
    /// whose protocol type is not "consumer" -> NON_EMPTY_GROUP. Per
    /// partition: a topic a member subscribes to ->
    /// GROUP_SUBSCRIBED_TO_TOPIC; every other partition is deleted (one
    /// without a committed offset is a success that writes nothing). The
    /// answer lists the partitions as asked.
    pub fn delete_group_offsets(
        &mut self,
        group: &str,
        partitions: &[TopicPartition],
    ) -> Result<Vec<(TopicPartition, Result<()>)>> {
        let subscribed: BTreeSet<&str> = if let Some(c) = self.consumer_groups.get(group) {
            // Kafka lets a consumer group's offsets be deleted at any time,
            // except those of topics its members subscribe to.
            let mut topics: BTreeSet<&str> = c.subscribed.keys().map(String::as_str).collect();
            topics.extend(
                c.members
                    .values()
                    .flat_map(|m| m.topics.iter().map(String::as_str)),
            );
            topics
        } else {
            let g = self
                .lookup(group)
                .ok_or_else(|| GroupError::GroupIdNotFound(group.to_string()))?;
            if !g.members.is_empty() && g.protocol_type.as_deref() != Some(CONSUMER_PROTOCOL_TYPE) {
                return Err(GroupError::NonEmptyGroup {
                    group: group.to_string(),
                    members: g.members.len(),
                });
            }
            g.members
                .values()
                .flat_map(|m| m.topics.iter().map(String::as_str))
                .collect()
        };
        let mut eligible = Vec::new();
        let answer: Vec<(TopicPartition, Result<()>)> = partitions
            .iter()
            .map(|tp| {
                if subscribed.contains(tp.topic.as_str()) {
                    let e = GroupError::GroupSubscribedToTopic {
                        group: group.to_string(),
                        topic: tp.topic.clone(),
                    };
                    (tp.clone(), Err(e))
                } else {
                    eligible.push(tp.clone());
                    (tp.clone(), Ok(()))
                }
            })
            .collect();
        let now = self.now_ms();
        self.store.delete_offsets(group, &eligible, now)?;
        Ok(answer)
    }

    /// Deletes every group's committed offsets of a deleted topic (whatever
    /// members are subscribed: the topic is gone). Returns how many offsets
    /// were deleted.
    pub fn delete_topic_offsets(&mut self, topic: &str) -> Result<usize> {
        let now = self.now_ms();
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
        self.delete_topic_share_states(topic, now)?;
        Ok(deleted)
    }

    /// Forgets every share group's state of a deleted topic's partitions.
    fn delete_topic_share_states(&mut self, topic: &str, now: i64) -> Result<()> {
        let ids: Vec<String> = self.share_groups.keys().cloned().collect();
        for id in ids {
            let doomed: Vec<TopicPartition> = self.share_groups[&id]
                .partitions
                .keys()
                .filter(|tp| tp.topic == topic)
                .cloned()
                .collect();
            if doomed.is_empty() {
                continue;
            }
            let states: Vec<_> = doomed.iter().map(|tp| (tp.clone(), None)).collect();
            self.store.write_share_states(&id, &states, now)?;
            let g = self.share_groups.get_mut(&id).expect("listed above");
            for tp in &doomed {
                g.partitions.remove(tp);
            }
        }
        Ok(())
    }

    /// How many members `group` has, of whatever type; `None` if unknown.
    fn member_count(&self, group: &str) -> Option<usize> {
        if let Some(g) = self.consumer_groups.get(group) {
            return Some(g.members.len());
        }
        if let Some(g) = self.share_groups.get(group) {
            return Some(g.members.len());
        }
        self.lookup(group).map(|g| g.members.len())
    }

    /// Kafka's offset expiration (KIP-211): a group that has had no member
    /// for `offsets_retention_ms` loses its committed offsets, and the
    /// group goes with them. The time counts from the latest of its last
    /// commit, the last time this step saw it with members, and the
    /// coordinator's open (members are not persisted, so a restart counts
    /// as activity). Share groups keep their state. Returns the groups
    /// whose offsets expired, each deleted with one append. Run it
    /// regularly (the broker does every minute): when a group was last
    /// seen with members is what these runs saw.
    pub fn expire_offsets(&mut self) -> Result<Vec<String>> {
        let now = self.now_ms();
        let with_offsets: Vec<String> = self.store.groups().cloned().collect();
        self.seen_active_ms
            .retain(|g, _| with_offsets.binary_search(g).is_ok());
        let mut expired = Vec::new();
        for group in with_offsets {
            if self.share_groups.contains_key(&group) {
                continue;
            }
            if self.member_count(&group).unwrap_or(0) > 0 {
                self.seen_active_ms.insert(group, now);
                continue;
            }
            let idle_since = [
                self.store.last_commit_ms(&group),
                self.seen_active_ms.get(&group).copied(),
                Some(self.opened_ms),
            ]
            .into_iter()
            .flatten()
            .max()
            .unwrap_or(now);
            if now.saturating_sub(idle_since) < self.offsets_retention_ms {
                continue;
            }
            self.store.delete_group(&group, &[], now)?;
            self.groups.remove(&group);
            self.consumer_groups.remove(&group);
            self.seen_active_ms.remove(&group);
            expired.push(group);
        }
        Ok(expired)
    }

    /// Deletes groups without members: their offsets and their generation,
    /// one append per group (Kafka's DeleteGroups). Per group: unknown (or
    /// named twice) -> GROUP_ID_NOT_FOUND; members present ->
    /// NON_EMPTY_GROUP. The outer error is a storage failure only; groups
    /// before it are deleted.
    pub fn delete_groups(&mut self, groups: &[String]) -> Result<Vec<Result<()>>> {
        let mut answers = Vec::with_capacity(groups.len());
        for group in groups {
            let answer = match self.member_count(group) {
                None => Err(GroupError::GroupIdNotFound(group.clone())),
                Some(members) if members > 0 => Err(GroupError::NonEmptyGroup {
                    group: group.clone(),
                    members,
                }),
                Some(_) => {
                    let now = self.now_ms();
                    let shares: Vec<TopicPartition> = self
                        .share_groups
                        .get(group)
                        .map(|g| g.partitions.keys().cloned().collect())
                        .unwrap_or_default();
                    self.store.delete_group(group, &shares, now)?;
                    self.groups.remove(group);
                    self.consumer_groups.remove(group);
                    self.share_groups.remove(group);
                    self.share_sessions.remove_group(group);
                    Ok(())
                }
            };
            answers.push(answer);
        }
        Ok(answers)
    }
}
