//! ConsumerGroupHeartbeat: the one request of a KIP-848 member. A member
//! joins with epoch 0, heartbeats with its current epoch, and leaves with
//! -1 (or, a static member stepping away for a restart, -2). Each
//! heartbeat may change the member's subscription (the group epoch then
//! grows and a new target assignment is computed) and moves the member one
//! reconciliation step further; the answer carries its member epoch and,
//! when it changed, its assignment.
//!
//! The rules follow Kafka's `GroupMetadataManager.consumerGroupHeartbeat`
//! in its order of checks. A group epoch is written to the offsets log
//! before it is published, and a rejected heartbeat changes nothing.

use super::member::{
    ConsumerMember, LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH, MemberState,
};
use super::reconcile::{Target, reconcile};
use super::subscription::{MAX_SUBSCRIBED_TOPICS, compile};
use super::{ConsumerGroup, ServerAssignor};
use crate::assignor::AssignorKind;
use crate::codec::GroupMetadata;
use crate::coordinator::{GroupCoordinator, check_len};
use crate::error::{GroupError, Result, invalid};
use crate::group::GroupType;
use crate::metadata::TopicMetadata;
use crate::protocol::HeartbeatAnswer;
use mk_core::TopicPartition;
use std::collections::BTreeSet;

/// A ConsumerGroupHeartbeat as the coordinator sees it (topic ids already
/// turned into names by the caller).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConsumerHeartbeat {
    pub group_id: String,
    /// The member's own id (clients make it; v0 may leave it empty when
    /// joining, then the coordinator makes one).
    pub member_id: String,
    /// 0 to join, the current epoch to heartbeat, -1 to leave, -2 for a
    /// static member's temporary leave.
    pub member_epoch: i32,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    /// -1 when unchanged since the last heartbeat.
    pub rebalance_timeout_ms: i32,
    /// `None` when unchanged.
    pub subscribed_topic_names: Option<Vec<String>>,
    /// `None` when unchanged; an empty string drops the expression.
    pub subscribed_topic_regex: Option<String>,
    /// `None` when unchanged.
    pub server_assignor: Option<String>,
    /// What the member owns now; `None` when unchanged since its last
    /// heartbeat.
    pub owned_partitions: Option<Vec<TopicPartition>>,
    pub client_id: String,
    pub client_host: String,
    /// The request version allows a joining member without an id (v0).
    pub member_id_optional: bool,
}

/// A successful ConsumerGroupHeartbeat's answer.
pub type ConsumerHeartbeatAnswer = HeartbeatAnswer;

/// Kafka's `throwIfConsumerGroupHeartbeatRequestIsInvalid`, plus the
/// bounds every input gets here.
fn check_heartbeat(hb: &ConsumerHeartbeat) -> Result<()> {
    let blank = |s: &Option<String>| s.as_ref().is_some_and(|s| s.trim().is_empty());
    if hb.group_id.trim().is_empty() {
        return Err(invalid("GroupId can't be empty."));
    }
    if blank(&hb.instance_id) {
        return Err(invalid("InstanceId can't be empty."));
    }
    if blank(&hb.rack_id) {
        return Err(invalid("RackId can't be empty."));
    }
    for (what, s) in [
        ("group id", Some(&hb.group_id)),
        ("member id", Some(&hb.member_id)),
    ]
    .into_iter()
    .chain([
        ("instance id", hb.instance_id.as_ref()),
        ("rack id", hb.rack_id.as_ref()),
        ("client id", Some(&hb.client_id)),
        ("client host", Some(&hb.client_host)),
    ]) {
        check_len(what, s.map_or("", String::as_str))?;
    }
    check_epoch_rules(hb)?;
    check_subscription(hb)
}

fn check_epoch_rules(hb: &ConsumerHeartbeat) -> Result<()> {
    let member_id_blank = hb.member_id.trim().is_empty();
    match hb.member_epoch {
        0 => {
            if member_id_blank && !hb.member_id_optional {
                return Err(invalid("MemberId can't be empty."));
            }
            if hb.rebalance_timeout_ms == -1 {
                return Err(invalid(
                    "RebalanceTimeoutMs must be provided in first request.",
                ));
            }
            if hb.owned_partitions.as_ref().is_none_or(|o| !o.is_empty()) {
                return Err(invalid("TopicPartitions must be empty when (re-)joining."));
            }
            if hb.subscribed_topic_names.is_none() && hb.subscribed_topic_regex.is_none() {
                return Err(invalid(
                    "SubscribedTopicNames or SubscribedTopicRegex must be set in first request.",
                ));
            }
        }
        LEAVE_GROUP_STATIC_MEMBER_EPOCH if hb.instance_id.is_none() => {
            return Err(invalid("InstanceId can't be null."));
        }
        e if e > 0 || e == LEAVE_GROUP_MEMBER_EPOCH || e == LEAVE_GROUP_STATIC_MEMBER_EPOCH => {
            if member_id_blank {
                return Err(invalid("MemberId can't be empty."));
            }
        }
        _ => return Err(invalid("MemberEpoch is invalid.")),
    }
    if hb.member_epoch >= 0 && hb.rebalance_timeout_ms < -1 {
        return Err(invalid(format!(
            "RebalanceTimeoutMs must be -1 or >= 0, got {}",
            hb.rebalance_timeout_ms
        )));
    }
    Ok(())
}

fn check_subscription(hb: &ConsumerHeartbeat) -> Result<()> {
    if let Some(names) = &hb.subscribed_topic_names {
        if names.len() > MAX_SUBSCRIBED_TOPICS {
            return Err(invalid(format!(
                "a member may subscribe to at most {MAX_SUBSCRIBED_TOPICS} topics, got {}",
                names.len()
            )));
        }
        for name in names {
            check_len("topic name", name)?;
        }
    }
    if let Some(a) = &hb.server_assignor
        && ServerAssignor::parse(a).is_none()
    {
        let known: Vec<&str> = ServerAssignor::ALL.iter().map(|a| a.name()).collect();
        return Err(GroupError::UnsupportedAssignor(format!(
            "ServerAssignor {a} is not supported. Supported assignors: {}.",
            known.join(", ")
        )));
    }
    if let Some(re) = hb
        .subscribed_topic_regex
        .as_deref()
        .filter(|r| !r.is_empty())
    {
        compile(re)?;
    }
    Ok(())
}

fn not_a_consumer_group(group: &str, what: &str) -> GroupError {
    GroupError::GroupIdNotFound(format!("Group {group} is not a consumer group: {what}"))
}

/// The member with the request's fields applied (`None` = unchanged).
fn apply(mut m: ConsumerMember, hb: &ConsumerHeartbeat) -> ConsumerMember {
    if hb.instance_id.is_some() {
        m.instance_id.clone_from(&hb.instance_id);
    }
    if hb.rack_id.is_some() {
        m.rack_id.clone_from(&hb.rack_id);
    }
    if hb.rebalance_timeout_ms >= 0 {
        m.rebalance_timeout_ms = i64::from(hb.rebalance_timeout_ms);
    }
    if let Some(a) = hb.server_assignor.as_deref() {
        m.assignor = ServerAssignor::parse(a);
    }
    if let Some(names) = &hb.subscribed_topic_names {
        m.topics = names.iter().cloned().collect();
    }
    if let Some(re) = &hb.subscribed_topic_regex {
        m.regex = Some(re.clone()).filter(|r| !r.is_empty());
    }
    m.client_id.clone_from(&hb.client_id);
    m.client_host.clone_from(&hb.client_host);
    m
}

/// Kafka's `throwIfConsumerGroupMemberEpochIsInvalid`: a heartbeat's epoch
/// must be the member's, or its previous one when the member owns only
/// partitions it still has (the answer that moved it on was lost).
fn check_member_epoch(m: &ConsumerMember, hb: &ConsumerHeartbeat) -> Result<()> {
    let given = hb.member_epoch;
    let lost_answer = given == m.previous_epoch
        && hb
            .owned_partitions
            .as_ref()
            .is_some_and(|o| o.iter().all(|tp| m.assigned.contains(tp)));
    if given > m.epoch || (given < m.epoch && !lost_answer) {
        return Err(GroupError::FencedMemberEpoch(format!(
            "The consumer group member {} has a {} member epoch ({given}) than the one known by the \
             group coordinator ({}). The member must abandon all its partitions and rejoin.",
            m.member_id,
            if given > m.epoch {
                "greater"
            } else {
                "smaller"
            },
            m.epoch
        )));
    }
    Ok(())
}

/// The member a heartbeat speaks for, and the member id it replaces (a
/// static member returning under a new id).
struct Resolved {
    member: ConsumerMember,
    replaces: Option<String>,
    new: bool,
}

fn resolve_member(
    g: &ConsumerGroup,
    group_id: &str,
    hb: &ConsumerHeartbeat,
    id: &str,
) -> Result<Resolved> {
    let joining = hb.member_epoch == 0;
    let Some(instance) = hb.instance_id.as_deref() else {
        return match g.members.get(id) {
            Some(m) if joining => Ok(Resolved {
                member: restarted(m),
                replaces: None,
                new: false,
            }),
            Some(m) => check_member_epoch(m, hb).map(|()| Resolved {
                member: m.clone(),
                replaces: None,
                new: false,
            }),
            None if joining => Ok(Resolved {
                member: ConsumerMember::new(id.to_string()),
                replaces: None,
                new: true,
            }),
            None => Err(unknown_member(group_id, id)),
        };
    };
    let existing = g.statics.get(instance).and_then(|mid| g.members.get(mid));
    match existing {
        None if joining => Ok(Resolved {
            member: ConsumerMember::new(id.to_string()),
            replaces: None,
            new: true,
        }),
        None => Err(GroupError::UnknownMember(format!(
            "Instance id {instance} is unknown."
        ))),
        Some(m) if m.member_id == id && joining => Ok(Resolved {
            member: restarted(m),
            replaces: None,
            new: false,
        }),
        Some(m) if joining => {
            if m.epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH {
                return Err(GroupError::UnreleasedInstanceId(format!(
                    "Static member {id} with instance id {instance} cannot join the group because the \
                     instance id is owned by {} member.",
                    m.member_id
                )));
            }
            let mut member = m.clone();
            member.member_id = id.to_string();
            member.epoch = 0;
            member.previous_epoch = 0;
            Ok(Resolved {
                member,
                replaces: Some(m.member_id.clone()),
                new: false,
            })
        }
        Some(m) if m.member_id != id => Err(GroupError::FencedInstanceId {
            group: group_id.to_string(),
            instance: instance.to_string(),
            member: id.to_string(),
            current: m.member_id.clone(),
        }),
        Some(m) => check_member_epoch(m, hb).map(|()| Resolved {
            member: m.clone(),
            replaces: None,
            new: false,
        }),
    }
}

/// A known member rejoining with epoch 0 has given up everything it held
/// (a join reports no owned partitions): it starts afresh under its id.
fn restarted(m: &ConsumerMember) -> ConsumerMember {
    let mut fresh = m.clone();
    fresh.assigned.clear();
    fresh.revoking.clear();
    fresh.state = MemberState::Stable;
    fresh.epoch = 0;
    fresh.previous_epoch = 0;
    fresh.revoke_deadline_ms = None;
    fresh
}

fn unknown_member(group: &str, member: &str) -> GroupError {
    GroupError::UnknownMember(format!("Member {member} is not a member of group {group}."))
}

fn next_epoch(group: &str, epoch: i32) -> Result<i32> {
    epoch.checked_add(1).ok_or_else(|| {
        invalid(format!(
            "group {group:?} has exhausted its epochs at {epoch}; delete and recreate it"
        ))
    })
}

impl GroupCoordinator {
    /// Kafka's ConsumerGroupHeartbeat (see the module documentation).
    ///
    /// Errors, in Kafka's order: a malformed request (empty group id, blank
    /// instance or rack id, a missing member id, a join without rebalance
    /// timeout or subscription or with owned partitions, an invalid epoch)
    /// -> INVALID_REQUEST; an unknown `server_assignor` ->
    /// UNSUPPORTED_ASSIGNOR; a regular expression that does not compile ->
    /// INVALID_REGULAR_EXPRESSION; the id of a classic group with members
    /// or of a share group, or an unknown group with epoch > 0 ->
    /// GROUP_ID_NOT_FOUND; a new member of a full group ->
    /// GROUP_MAX_SIZE_REACHED; an unknown member (or instance id) ->
    /// UNKNOWN_MEMBER; an instance id held by another member id ->
    /// FENCED_INSTANCE_ID when heartbeating, UNRELEASED_INSTANCE_ID when
    /// joining while the holder has not left; an epoch ahead of the
    /// member's or behind it (other than its previous epoch with owned
    /// partitions it still has) -> FENCED_MEMBER_EPOCH.
    ///
    /// An empty classic group with the id becomes a consumer group (its
    /// committed offsets stay); a non-empty one is not converted (Kafka's
    /// online upgrade of a group with classic members is not implemented).
    pub fn consumer_heartbeat(
        &mut self,
        hb: ConsumerHeartbeat,
        meta: &dyn TopicMetadata,
    ) -> Result<ConsumerHeartbeatAnswer> {
        check_heartbeat(&hb)?;
        if hb.member_epoch < 0 {
            return self.consumer_leave(&hb, meta);
        }
        let group_id = hb.group_id.clone();
        let converts = self.consumer_group_slot(&group_id, hb.member_epoch == 0)?;
        let existed = self.consumer_groups.contains_key(&group_id);
        let mut g = self.consumer_groups.remove(&group_id).unwrap_or_default();
        let answer = self.heartbeat_in(&mut g, &hb, meta, converts);
        // A group the failed heartbeat of its first member would have
        // created does not come into being.
        if existed || answer.is_ok() {
            self.consumer_groups.insert(group_id, g);
        }
        answer
    }

    /// Checks that `group` may be (or become) a consumer group; true when
    /// an empty classic group of that id converts.
    fn consumer_group_slot(&self, group: &str, joining: bool) -> Result<bool> {
        if self.consumer_groups.contains_key(group) {
            return Ok(false);
        }
        if self.share_groups.contains_key(group) {
            return Err(not_a_consumer_group(group, "it is a share group"));
        }
        if let Some(c) = self.groups.get(group)
            && (!c.members.is_empty() || !c.pending.is_empty())
        {
            return Err(not_a_consumer_group(
                group,
                &format!(
                    "it is a classic group with {} member(s); mk-group converts only an empty classic group",
                    c.members.len()
                ),
            ));
        }
        if !joining {
            return Err(GroupError::GroupIdNotFound(format!(
                "Consumer group {group} not found."
            )));
        }
        Ok(self.groups.contains_key(group))
    }

    fn heartbeat_in(
        &mut self,
        g: &mut ConsumerGroup,
        hb: &ConsumerHeartbeat,
        meta: &dyn TopicMetadata,
        converts: bool,
    ) -> Result<ConsumerHeartbeatAnswer> {
        let now = self.now_ms();
        let id = if hb.member_id.is_empty() {
            let prefix = hb
                .instance_id
                .clone()
                .unwrap_or_else(|| hb.client_id.clone());
            self.new_member_id(&prefix)
        } else {
            hb.member_id.clone()
        };
        let resolved = resolve_member(g, &hb.group_id, hb, &id)?;
        if resolved.new && g.members.len() >= self.max_group_size {
            return Err(GroupError::GroupMaxSizeReached {
                group: hb.group_id.clone(),
                max: self.max_group_size,
            });
        }
        let before = resolved.member.clone();
        let updated = apply(resolved.member, hb);
        let changed =
            resolved.new || updated.topics != before.topics || updated.regex != before.regex;
        let (subscribed, topics) =
            self.consumer_subscriptions(g, Some(&updated), resolved.replaces.as_deref(), meta)?;
        let bump = changed || subscribed != g.subscribed;
        if bump {
            let epoch = next_epoch(&hb.group_id, g.epoch)?;
            self.persist_consumer_epoch(&hb.group_id, epoch, now)?;
            g.epoch = epoch;
            g.subscribed = subscribed;
        }
        if converts {
            self.groups.remove(&hb.group_id);
        }
        if let Some(old) = &resolved.replaces {
            // The new id takes the old one's place, its target included.
            let target = g.targets.get(old).cloned();
            g.remove_member(old);
            if let Some(t) = target {
                g.targets.insert(updated.member_id.clone(), t);
            }
        }
        if g.epoch > g.assignment_epoch {
            let counts = g.subscribed.clone();
            g.targets = g
                .assignor_with(&updated)
                .assign(&topics, &counts, &g.targets);
            g.assignment_epoch = g.epoch;
        }
        Ok(self.finish_heartbeat(g, hb, before, updated, now))
    }

    /// Reconciles the member, stores it with its deadlines and answers.
    fn finish_heartbeat(
        &self,
        g: &mut ConsumerGroup,
        hb: &ConsumerHeartbeat,
        before: ConsumerMember,
        updated: ConsumerMember,
        now: i64,
    ) -> ConsumerHeartbeatAnswer {
        let owned: Option<BTreeSet<TopicPartition>> = hb
            .owned_partitions
            .as_ref()
            .map(|o| o.iter().cloned().collect());
        let empty = BTreeSet::new();
        let target = Target {
            epoch: g.assignment_epoch,
            partitions: g.targets.get(&updated.member_id).unwrap_or(&empty),
        };
        let me = updated.member_id.clone();
        let held_by_other = |tp: &TopicPartition| g.holder(tp).is_some_and(|h| h != me);
        let mut next = reconcile(&updated, &target, owned.as_ref(), &held_by_other);
        next.session_deadline_ms = now.saturating_add(i64::from(
            self.setting(&hb.group_id, |s| s.consumer_session_timeout_ms),
        ));
        next.revoke_deadline_ms = match next.state {
            MemberState::UnrevokedPartitions
                if next == updated && updated.revoke_deadline_ms.is_some() =>
            {
                updated.revoke_deadline_ms
            }
            MemberState::UnrevokedPartitions => Some(now.saturating_add(next.rebalance_timeout_ms)),
            _ => None,
        };
        let full = hb.member_epoch == 0
            || (hb.rebalance_timeout_ms != -1
                && (hb.subscribed_topic_names.is_some() || hb.subscribed_topic_regex.is_some())
                && hb.owned_partitions.is_some());
        let assignment = (full || next.assigned != before.assigned)
            .then(|| next.assigned.iter().cloned().collect());
        let answer = ConsumerHeartbeatAnswer {
            member_id: next.member_id.clone(),
            member_epoch: next.epoch,
            heartbeat_interval_ms: self.setting(&hb.group_id, |s| s.consumer_heartbeat_interval_ms),
            assignment,
        };
        g.put_member(next);
        answer
    }

    /// A leave: -1 removes the member (the group epoch grows), -2 keeps a
    /// static member's place and partitions until its session expires or
    /// it returns.
    fn consumer_leave(
        &mut self,
        hb: &ConsumerHeartbeat,
        meta: &dyn TopicMetadata,
    ) -> Result<ConsumerHeartbeatAnswer> {
        let group = hb.group_id.as_str();
        let Some(g) = self.consumer_groups.get_mut(group) else {
            return Err(match self.group_type(group) {
                Some(t) => not_a_consumer_group(group, &format!("it is a {t} group")),
                None => GroupError::GroupIdNotFound(format!("Consumer group {group} not found.")),
            });
        };
        let member = match hb.instance_id.as_deref() {
            None => g
                .members
                .get(&hb.member_id)
                .ok_or_else(|| unknown_member(group, &hb.member_id))?,
            Some(i) => {
                let m = g
                    .statics
                    .get(i)
                    .and_then(|mid| g.members.get(mid))
                    .ok_or_else(|| {
                        GroupError::UnknownMember(format!("Instance id {i} is unknown."))
                    })?;
                if m.member_id != hb.member_id {
                    return Err(GroupError::FencedInstanceId {
                        group: group.to_string(),
                        instance: i.to_string(),
                        member: hb.member_id.clone(),
                        current: m.member_id.clone(),
                    });
                }
                m
            }
        };
        let member_id = member.member_id.clone();
        if hb.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH {
            let mut away = member.clone();
            away.set_epoch(LEAVE_GROUP_STATIC_MEMBER_EPOCH);
            away.revoke_deadline_ms = None;
            g.put_member(away);
        } else {
            self.fence_consumer_member(group, &member_id, meta)?;
        }
        Ok(ConsumerHeartbeatAnswer {
            member_id,
            member_epoch: hb.member_epoch,
            heartbeat_interval_ms: self.setting(group, |s| s.consumer_heartbeat_interval_ms),
            assignment: None,
        })
    }

    /// Removes a member (a leave, an expired session, a missed revocation):
    /// the group epoch grows (written first) and its partitions are free.
    pub(crate) fn fence_consumer_member(
        &mut self,
        group: &str,
        member: &str,
        meta: &dyn TopicMetadata,
    ) -> Result<()> {
        let Some(mut g) = self.consumer_groups.remove(group) else {
            return Ok(());
        };
        let result = self.fence_in(&mut g, group, member, meta);
        self.consumer_groups.insert(group.to_string(), g);
        result
    }

    fn fence_in(
        &mut self,
        g: &mut ConsumerGroup,
        group: &str,
        member: &str,
        meta: &dyn TopicMetadata,
    ) -> Result<()> {
        if !g.members.contains_key(member) {
            return Ok(());
        }
        let now = self.now_ms();
        let (subscribed, _) = self.consumer_subscriptions(g, None, Some(member), meta)?;
        let epoch = next_epoch(group, g.epoch)?;
        self.persist_consumer_epoch(group, epoch, now)?;
        g.remove_member(member);
        g.epoch = epoch;
        g.subscribed = subscribed;
        Ok(())
    }

    fn persist_consumer_epoch(&mut self, group: &str, epoch: i32, now: i64) -> Result<()> {
        let meta = GroupMetadata {
            group_type: GroupType::Consumer,
            generation: epoch,
            assignor: AssignorKind::default(),
        };
        self.store.write_group(group, Some(meta), now)
    }
}

impl ConsumerGroup {
    /// The assignor for the next target: the members' choice, counting
    /// `updated` as it is now.
    fn assignor_with(&self, updated: &ConsumerMember) -> ServerAssignor {
        super::assign::preferred(
            self.members
                .values()
                .filter(|m| m.member_id != updated.member_id)
                .chain([updated])
                .map(|m| m.assignor),
        )
    }
}
