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
use crate::consumer::{ConsumerGroup, Resolver};
use crate::error::{GroupError, Result};
use crate::group::{
    AnyGroupDescription, Assigner, CONSUMER_PROTOCOL_TYPE, Group, GroupDescription, GroupState,
    GroupType, Member,
};
use crate::metadata::TopicMetadata;
use crate::offsets::OffsetStore;
use crate::protocol::GroupListing;
use crate::settings::{
    GROUP_CONFIGS, GroupConfigEntry, GroupSettings, ShareAutoOffsetReset, ShareIsolation,
};
use crate::share::{ShareGroup, SharePartition, ShareSessions};
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
    /// How long the first rebalance of an empty classic group waits for
    /// more members (Kafka's `group.initial.rebalance.delay.ms`): each
    /// member that joins meanwhile extends the wait by this much, never
    /// past the rebalance timeout. 0 forms the generation at once (the
    /// default here; mk-server's product default is Kafka's 3000).
    pub initial_rebalance_delay_ms: i64,
    /// Part of every member id the coordinator makes, so ids made after a
    /// restart never equal ids of before (mk-cluster passes a fresh random
    /// value per open; tests a fixed one).
    pub member_id_salt: String,
    /// How long a tombstone of the offsets log survives compaction (Kafka's
    /// `delete.retention.ms`).
    pub offsets_delete_retention_ms: i64,
    /// How long a group without members keeps its committed offsets
    /// (Kafka's `offsets.retention.minutes`, 7 days): see
    /// [`GroupCoordinator::expire_offsets`].
    pub offsets_retention_ms: i64,
    /// Settings of the offsets log (segment size, fault injection, ...).
    pub offsets_log: LogConfig,
    /// The longest metadata string a commit may carry (Kafka's
    /// `offset.metadata.max.bytes`, counted in UTF-16 code units as Kafka
    /// counts it).
    pub offset_metadata_max_bytes: usize,
    /// KIP-848 consumer groups: a member that does not heartbeat within
    /// this many milliseconds is removed (`group.consumer.session.timeout.ms`).
    pub consumer_session_timeout_ms: i32,
    /// How often consumer-group members heartbeat
    /// (`group.consumer.heartbeat.interval.ms`).
    pub consumer_heartbeat_interval_ms: i32,
    /// KIP-932 share groups: `group.share.session.timeout.ms`.
    pub share_session_timeout_ms: i32,
    /// `group.share.heartbeat.interval.ms`.
    pub share_heartbeat_interval_ms: i32,
    /// How long a member holds the records a share fetch acquired for it
    /// (`group.share.record.lock.duration.ms`).
    pub share_record_lock_duration_ms: i32,
    /// How often a record is delivered before it is archived
    /// (`group.share.delivery.count.limit`).
    pub share_delivery_count_limit: i32,
    /// Most records a share partition has in flight
    /// (`group.share.partition.max.record.locks`).
    pub share_partition_max_record_locks: i32,
    /// Most share sessions the broker keeps (`group.share.max.share.sessions`).
    pub share_max_sessions: usize,
}

impl Default for GroupConfig {
    fn default() -> Self {
        Self {
            session_timeout_ms: 10_000,
            min_session_timeout_ms: 6_000,
            max_session_timeout_ms: 1_800_000,
            max_group_size: 1_000,
            initial_rebalance_delay_ms: 0,
            member_id_salt: "0".to_string(),
            offsets_delete_retention_ms: 86_400_000,
            offsets_retention_ms: 604_800_000,
            offsets_log: LogConfig::default(),
            offset_metadata_max_bytes: crate::commits::DEFAULT_OFFSET_METADATA_MAX_BYTES,
            consumer_session_timeout_ms: 45_000,
            consumer_heartbeat_interval_ms: 5_000,
            share_session_timeout_ms: 45_000,
            share_heartbeat_interval_ms: 5_000,
            share_record_lock_duration_ms: 30_000,
            share_delivery_count_limit: 5,
            share_partition_max_record_locks: 2_000,
            share_max_sessions: 2_000,
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
        if self.offsets_retention_ms < 1 {
            return bad(format!(
                "offsets_retention_ms must be >= 1, got {}",
                self.offsets_retention_ms
            ));
        }
        self.validate_modern()?;
        self.offsets_log.validate()?;
        Ok(())
    }

    /// The rules of the KIP-848 and KIP-932 settings.
    fn validate_modern(&self) -> Result<()> {
        let bad = |m: String| Err(GroupError::InvalidRequest(m));
        for (name, v, min) in [
            (
                "consumer_session_timeout_ms",
                self.consumer_session_timeout_ms,
                1,
            ),
            (
                "consumer_heartbeat_interval_ms",
                self.consumer_heartbeat_interval_ms,
                1,
            ),
            ("share_session_timeout_ms", self.share_session_timeout_ms, 1),
            (
                "share_heartbeat_interval_ms",
                self.share_heartbeat_interval_ms,
                1,
            ),
            (
                "share_record_lock_duration_ms",
                self.share_record_lock_duration_ms,
                1,
            ),
            (
                "share_delivery_count_limit",
                self.share_delivery_count_limit,
                2,
            ),
            (
                "share_partition_max_record_locks",
                self.share_partition_max_record_locks,
                1,
            ),
        ] {
            if v < min {
                return bad(format!("{name} must be >= {min}, got {v}"));
            }
        }
        if self.share_delivery_count_limit > i32::from(u16::MAX) {
            return bad(format!(
                "share_delivery_count_limit must be at most {}, got {}",
                u16::MAX,
                self.share_delivery_count_limit
            ));
        }
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
    pub(crate) initial_rebalance_delay_ms: i64,
    member_id_salt: String,
    next_member: u64,
    offsets_delete_retention_ms: i64,
    pub(crate) offsets_retention_ms: i64,
    /// When each group with committed offsets was last seen with members
    /// by `expire_offsets`.
    pub(crate) seen_active_ms: BTreeMap<String, i64>,
    /// When the coordinator opened: no group's offsets expire sooner than
    /// the retention after it (members are not persisted).
    pub(crate) opened_ms: i64,
    pub(crate) offset_metadata_max_bytes: usize,
    pub(crate) clock: SharedClock,
    /// Classic groups (and coordinator-assigned JSON-TCP groups).
    pub(crate) groups: BTreeMap<String, Group>,
    /// KIP-848 consumer groups. A group id is in at most one of the three
    /// maps.
    pub(crate) consumer_groups: BTreeMap<String, ConsumerGroup>,
    /// KIP-932 share groups.
    pub(crate) share_groups: BTreeMap<String, ShareGroup>,
    pub(crate) share_sessions: ShareSessions,
    /// What consumer groups' regular expressions match.
    pub(crate) resolver: Resolver,
    /// Per-group settings (dynamic group configs).
    pub(crate) settings: BTreeMap<String, GroupSettings>,
    pub(crate) defaults: GroupSettingsDefaults,
    pub(crate) share_max_in_flight: i64,
    pub(crate) share_max_sessions: usize,
    pub(crate) store: OffsetStore,
}

/// The coordinator-wide defaults of the per-group settings.
#[derive(Debug, Clone, Copy)]
pub(crate) struct GroupSettingsDefaults {
    consumer_session_timeout_ms: i32,
    consumer_heartbeat_interval_ms: i32,
    share_session_timeout_ms: i32,
    share_heartbeat_interval_ms: i32,
    share_record_lock_duration_ms: i32,
    share_delivery_count_limit: i32,
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

/// The topics of a coordinator-assigned member's join, each of which must
/// exist (INVALID_REQUEST otherwise).
fn existing_topics(
    member: &str,
    topics: impl IntoIterator<Item = impl AsRef<str>>,
    meta: &dyn TopicMetadata,
) -> Result<BTreeSet<String>> {
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
    Ok(subscribed)
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
        let (store, persisted) = OffsetStore::open(offsets_dir, config.offsets_log.clone())?;
        let mut groups = BTreeMap::new();
        let mut consumer_groups = BTreeMap::new();
        let mut share_groups = BTreeMap::new();
        for (id, meta) in persisted.groups {
            match meta.group_type {
                GroupType::Classic => {
                    groups.insert(id, Group::restored(meta.generation, meta.assignor));
                }
                GroupType::Consumer => {
                    consumer_groups.insert(id, ConsumerGroup::new(meta.generation));
                }
                GroupType::Share => {
                    share_groups.insert(id, ShareGroup::new(meta.generation));
                }
            }
        }
        let mut settings = BTreeMap::new();
        for (id, configs) in persisted.configs {
            let mut s = GroupSettings::default();
            // A value that no longer fits (the bounds changed since it was
            // set) is dropped: the default takes over.
            for (name, value) in configs {
                let _ = s.apply(&name, Some(&value), &GroupSettings::default());
            }
            settings.insert(id, s);
        }
        for (id, states) in persisted.shares {
            // A share state outlives nothing: its group record was written
            // before any fetch could create it.
            let g = share_groups.entry(id).or_insert_with(|| ShareGroup::new(0));
            g.partitions = states
                .iter()
                .map(|(tp, s)| (tp.clone(), SharePartition::from_snapshot(s)))
                .collect();
        }
        Ok(Self {
            session_timeout_ms: config.session_timeout_ms,
            min_session_timeout_ms: config.min_session_timeout_ms,
            max_session_timeout_ms: config.max_session_timeout_ms,
            max_group_size: config.max_group_size,
            initial_rebalance_delay_ms: config.initial_rebalance_delay_ms,
            member_id_salt: config.member_id_salt,
            next_member: 0,
            offsets_delete_retention_ms: config.offsets_delete_retention_ms,
            offsets_retention_ms: config.offsets_retention_ms,
            seen_active_ms: BTreeMap::new(),
            opened_ms: clock.now_ms(),
            offset_metadata_max_bytes: config.offset_metadata_max_bytes,
            clock,
            groups,
            consumer_groups,
            share_groups,
            share_sessions: ShareSessions::default(),
            resolver: Resolver::default(),
            settings,
            defaults: GroupSettingsDefaults {
                consumer_session_timeout_ms: config.consumer_session_timeout_ms,
                consumer_heartbeat_interval_ms: config.consumer_heartbeat_interval_ms,
                share_session_timeout_ms: config.share_session_timeout_ms,
                share_heartbeat_interval_ms: config.share_heartbeat_interval_ms,
                share_record_lock_duration_ms: config.share_record_lock_duration_ms,
                share_delivery_count_limit: config.share_delivery_count_limit,
            },
            share_max_in_flight: i64::from(config.share_partition_max_record_locks),
            share_max_sessions: config.share_max_sessions,
            store,
        })
    }

    /// The type of the group `group`, if the coordinator knows it (a group
    /// known only by its committed offsets is classic).
    pub fn group_type(&self, group: &str) -> Option<GroupType> {
        if self.consumer_groups.contains_key(group) {
            Some(GroupType::Consumer)
        } else if self.share_groups.contains_key(group) {
            Some(GroupType::Share)
        } else {
            self.lookup(group).map(|_| GroupType::Classic)
        }
    }

    /// Kafka's IncrementalAlterConfigs of a GROUP resource: each change
    /// sets (`Some`) or deletes (`None`) one group config, all or nothing
    /// (INVALID_CONFIG names the first bad one); persisted before it takes
    /// effect unless `validate_only`.
    pub fn alter_group_configs(
        &mut self,
        group: &str,
        changes: &[(String, Option<String>)],
        validate_only: bool,
    ) -> Result<()> {
        check_group_id(group)?;
        let defaults = self.default_settings();
        let mut next = self.settings.get(group).cloned().unwrap_or_default();
        for (name, value) in changes {
            next.apply(name, value.as_deref(), &defaults)?;
        }
        if validate_only {
            return Ok(());
        }
        let now = self.now_ms();
        self.store.write_configs(group, &next.overrides(), now)?;
        self.set_group_settings(group, next);
        Ok(())
    }

    /// Kafka's DescribeConfigs of a GROUP resource: every group config with
    /// its value, set or default.
    pub fn describe_group_configs(&self, group: &str) -> Vec<GroupConfigEntry> {
        let defaults = self.default_settings();
        let set = self.settings.get(group);
        GROUP_CONFIGS
            .iter()
            .map(|d| match set.and_then(|s| s.value_of(d.name)) {
                Some(value) => GroupConfigEntry {
                    name: d.name,
                    value,
                    is_default: false,
                },
                None => GroupConfigEntry {
                    name: d.name,
                    value: defaults.value_of(d.name).unwrap_or_default(),
                    is_default: true,
                },
            })
            .collect()
    }

    /// The coordinator's defaults as settings (every value set).
    fn default_settings(&self) -> GroupSettings {
        let d = &self.defaults;
        GroupSettings {
            consumer_session_timeout_ms: Some(d.consumer_session_timeout_ms),
            consumer_heartbeat_interval_ms: Some(d.consumer_heartbeat_interval_ms),
            share_session_timeout_ms: Some(d.share_session_timeout_ms),
            share_heartbeat_interval_ms: Some(d.share_heartbeat_interval_ms),
            share_record_lock_duration_ms: Some(d.share_record_lock_duration_ms),
            share_delivery_count_limit: Some(d.share_delivery_count_limit),
            share_auto_offset_reset: Some(ShareAutoOffsetReset::default()),
            share_isolation_level: Some(ShareIsolation::default()),
        }
    }

    /// Sets one group's settings (its dynamic group configs); mk-cluster
    /// calls it on open and whenever they change.
    pub fn set_group_settings(&mut self, group: &str, settings: GroupSettings) {
        if settings == GroupSettings::default() {
            self.settings.remove(group);
        } else {
            self.settings.insert(group.to_string(), settings);
        }
    }

    /// `group`'s own value of one setting (`pick`), or the coordinator's
    /// default (`default_settings` sets every value, so the type's own
    /// default is never reached).
    pub(crate) fn setting<T: Default>(
        &self,
        group: &str,
        pick: impl Fn(&GroupSettings) -> Option<T>,
    ) -> T {
        self.settings
            .get(group)
            .and_then(&pick)
            .or_else(|| pick(&self.default_settings()))
            .unwrap_or_default()
    }

    /// The delivery count limit of `group`'s records.
    pub fn share_delivery_limit(&self, group: &str) -> u16 {
        let limit = self.setting(group, |s| s.share_delivery_count_limit);
        u16::try_from(limit.max(1)).unwrap_or(u16::MAX)
    }

    /// Which records `group` shares (`share.isolation.level`).
    pub fn share_isolation(&self, group: &str) -> ShareIsolation {
        self.setting(group, |s| s.share_isolation_level)
    }

    /// Where `group` starts a share partition it has no state for (the
    /// data path looks an offset up by time for `by_duration`).
    pub fn share_auto_offset_reset(&self, group: &str) -> ShareAutoOffsetReset {
        self.setting(group, |s| s.share_auto_offset_reset)
    }

    /// The group as every read sees it: a group with members or a persisted
    /// generation, else a group known by its committed offsets (Empty,
    /// generation 0), else `None`.
    pub(crate) fn lookup(&self, group: &str) -> Option<&Group> {
        if self.consumer_groups.contains_key(group) || self.share_groups.contains_key(group) {
            return None;
        }
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
        let subscribed = existing_topics(member, topics, meta)?;
        self.claim_for_classic(group)?;
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

    /// Makes way for a classic member of `group`: an empty KIP-848
    /// consumer group of that id becomes a classic group (its committed
    /// offsets stay), as Kafka converts it; a consumer group with members,
    /// or a share group, -> INCONSISTENT_GROUP_PROTOCOL (Kafka's online
    /// downgrade of a group with consumer-protocol members is not
    /// implemented).
    pub(crate) fn claim_for_classic(&mut self, group: &str) -> Result<()> {
        if let Some(g) = self.consumer_groups.get(group) {
            if !g.members.is_empty() {
                return Err(GroupError::InconsistentGroupProtocol(format!(
                    "group {group:?} is a consumer group with {} member(s) using the consumer \
                     protocol; a classic member can join it once they have left",
                    g.members.len()
                )));
            }
            self.consumer_groups.remove(group);
        }
        if self.share_groups.contains_key(group) {
            return Err(GroupError::InconsistentGroupProtocol(format!(
                "group {group:?} is a share group; a classic member cannot join it"
            )));
        }
        Ok(())
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
        ids.extend(self.consumer_groups.keys());
        ids.extend(self.share_groups.keys());
        ids.into_iter().cloned().collect()
    }

    /// Every group with its type, protocol type and state (Kafka's
    /// ListGroups: "consumer" is the protocol type of classic consumers and
    /// of KIP-848 groups, "share" of share groups), sorted by id.
    pub fn list_group_listings(&self) -> Vec<GroupListing> {
        self.list_groups()
            .into_iter()
            .filter_map(|id| self.listing(&id))
            .collect()
    }

    /// ListGroups with Kafka's filters: `states` (v4+) and `types` (v5+),
    /// both matched ignoring case; an empty filter takes every group, and a
    /// name that is no state or type matches none.
    pub fn list_group_listings_filtered(
        &self,
        states: &[String],
        types: &[String],
    ) -> Vec<GroupListing> {
        let types: Vec<Option<GroupType>> = types.iter().map(|t| GroupType::parse(t)).collect();
        self.list_group_listings()
            .into_iter()
            .filter(|l| {
                states.is_empty()
                    || states
                        .iter()
                        .any(|s| s.trim().eq_ignore_ascii_case(l.state.as_str()))
            })
            .filter(|l| types.is_empty() || types.contains(&Some(l.group_type)))
            .collect()
    }

    fn listing(&self, id: &str) -> Option<GroupListing> {
        let modern = |group_type: GroupType, protocol: &str, state: GroupState| GroupListing {
            group_id: id.to_string(),
            protocol_type: protocol.to_string(),
            state,
            group_type,
        };
        if let Some(g) = self.consumer_groups.get(id) {
            return Some(modern(
                GroupType::Consumer,
                CONSUMER_PROTOCOL_TYPE,
                g.state(),
            ));
        }
        if let Some(g) = self.share_groups.get(id) {
            return Some(modern(GroupType::Share, "share", g.state()));
        }
        self.lookup(id).map(|g| g.listing(id))
    }

    /// State, generation, protocol and members (with subscriptions,
    /// assignment, client ids, metadata and deadline) of a group; `None` for
    /// an unknown group. A group known only by its committed offsets is
    /// Empty at generation 0.
    pub fn describe_group(&self, group: &str) -> Option<GroupDescription> {
        self.lookup(group).map(|g| g.describe(group))
    }

    /// A group of any type: a KIP-848 consumer group or a share group as
    /// their describe answers them, otherwise the classic description
    /// (which includes a group known only by its committed offsets);
    /// `None` for an unknown group.
    pub fn describe_any_group(&self, group: &str) -> Option<AnyGroupDescription> {
        if let Some(d) = self.describe_consumer_group(group) {
            return Some(AnyGroupDescription::Consumer(d));
        }
        if let Some(d) = self.describe_share_group(group) {
            return Some(AnyGroupDescription::Share(d));
        }
        self.describe_group(group).map(AnyGroupDescription::Classic)
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
        assert!(GroupConfig::default().validate().is_ok());
        let d = GroupConfig::default;
        let cases = [
            (
                GroupConfig {
                    session_timeout_ms: 0,
                    ..d()
                },
                "session_timeout_ms",
            ),
            (
                GroupConfig {
                    session_timeout_ms: 1,
                    offsets_delete_retention_ms: -1,
                    ..d()
                },
                "offsets_delete_retention_ms",
            ),
            (
                GroupConfig {
                    min_session_timeout_ms: 10,
                    max_session_timeout_ms: 9,
                    ..d()
                },
                "min_session",
            ),
            (
                GroupConfig {
                    min_session_timeout_ms: 10,
                    max_session_timeout_ms: 10,
                    max_group_size: 0,
                    ..d()
                },
                "max_group_size",
            ),
            (
                GroupConfig {
                    min_session_timeout_ms: 10,
                    max_session_timeout_ms: 10,
                    max_group_size: 1,
                    member_id_salt: "x".repeat(65),
                    ..d()
                },
                "salt",
            ),
        ];
        for (config, named) in cases {
            let err = config.validate().unwrap_err().to_string();
            assert!(err.contains(named), "{err:?} should name {named}");
        }
    }
}
