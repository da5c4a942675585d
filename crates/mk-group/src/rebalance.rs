//! The rebalance engine both kinds of member share: starting a rebalance,
//! completing the join phase (the one generation bump of a rebalance), the
//! instant rebalance of coordinator-assigned groups, member removal and
//! leave, and the time step that expires sessions, unused member ids and
//! missed syncs and ends barriers whose rebalance timeout passed.
//!
//! Every generation bump is written to the offsets log before it is
//! published, so a failed write never publishes a generation.

use crate::assignor::{Assignment, AssignorKind};
use crate::codec::GroupMetadata;
use crate::coordinator::{GroupCoordinator, fenced, unknown_group, unknown_member};
use crate::error::{GroupError, Result};
use crate::group::{CONSUMER_PROTOCOL_TYPE, Group, GroupState, Member, due_members};
use crate::metadata::TopicMetadata;
use bytes::Bytes;
use std::collections::{BTreeMap, BTreeSet};

/// The generation after `current`; a group that used up `i32` must be
/// deleted and recreated.
fn next_generation(group: &str, current: i32) -> Result<i32> {
    current.checked_add(1).ok_or_else(|| {
        GroupError::InvalidRequest(format!(
            "group {group:?} has exhausted its generations at {current}; delete and recreate it"
        ))
    })
}

impl Group {
    /// Starts a rebalance: members awaiting their assignment are told to
    /// rejoin, and the barrier waits at most the members' largest rebalance
    /// timeout.
    pub(crate) fn prepare_rebalance(&mut self, group_id: &str, now_ms: i64) {
        for (_, w) in std::mem::take(&mut self.sync_waiters) {
            w.resolve(Err(GroupError::RebalanceInProgress {
                group: group_id.to_string(),
                state: GroupState::PreparingRebalance,
            }));
        }
        self.pending_sync.clear();
        self.sync_deadline_ms = None;
        self.state = GroupState::PreparingRebalance;
        self.rebalance_deadline_ms = Some(now_ms.saturating_add(self.rebalance_timeout_ms()));
    }

    /// Starts a rebalance unless one is already waiting for members.
    pub(crate) fn rebalance_after_change(&mut self, group_id: &str, now_ms: i64) {
        if matches!(
            self.state,
            GroupState::Stable | GroupState::CompletingRebalance | GroupState::Empty
        ) {
            self.prepare_rebalance(group_id, now_ms);
        }
    }

    /// Removes a member; its waiting requests are answered UNKNOWN_MEMBER
    /// (so a client that is still alive joins again).
    pub(crate) fn remove_member(&mut self, group_id: &str, id: &str) -> Option<Member> {
        let m = self.members.remove(id)?;
        if let Some(instance) = &m.instance_id
            && self.statics.get(instance).map(String::as_str) == Some(id)
        {
            self.statics.remove(instance);
        }
        self.pending_sync.remove(id);
        if self.leader.as_deref() == Some(id) {
            self.leader = None;
        }
        let gone = || unknown_member(group_id, id, self.generation);
        if let Some(w) = self.join_waiters.remove(id) {
            w.resolve(Err(gone()));
        }
        if let Some(w) = self.sync_waiters.remove(id) {
            w.resolve(Err(gone()));
        }
        Some(m)
    }

    /// Publishes the generation `generation` formed by the members that
    /// rejoined (and static members that did not, as Kafka keeps them):
    /// the protocol and leader are chosen and every waiting join is
    /// answered; the leader's answer carries every member's metadata.
    fn publish_generation(&mut self, generation: i32, now_ms: i64) {
        self.generation = generation;
        self.initial_delay = None;
        self.rebalance_deadline_ms = None;
        self.pending_sync.clear();
        self.sync_deadline_ms = None;
        if self.members.is_empty() {
            self.state = GroupState::Empty;
            self.protocol_name = None;
            self.leader = None;
            return;
        }
        self.protocol_name = self.select_protocol();
        let keep_leader = self
            .leader
            .as_ref()
            .is_some_and(|l| self.members.get(l).is_some_and(|m| m.joined));
        if !keep_leader {
            self.leader = self
                .members
                .iter()
                .find(|(_, m)| m.joined)
                .map(|(id, _)| id.clone());
        }
        self.state = GroupState::CompletingRebalance;
        for m in self.members.values_mut() {
            m.assignment.clear();
            m.assignment_bytes = Bytes::new();
            m.joined = false;
            m.extend_session(now_ms);
        }
        self.pending_sync = self.members.keys().cloned().collect();
        self.sync_deadline_ms = Some(now_ms.saturating_add(self.rebalance_timeout_ms()));
        for (id, w) in std::mem::take(&mut self.join_waiters) {
            w.resolve(Ok(self.joined_answer(&id, None)));
        }
    }
}

impl GroupCoordinator {
    /// Ends the join phase of `group_id` if it is PreparingRebalance and
    /// either every member rejoined or the rebalance timeout passed: dynamic
    /// members that did not rejoin are removed (pushed to `removed`), the
    /// generation is bumped once and persisted, and every waiting join is
    /// answered. If only static members that have not rejoined are left,
    /// Kafka waits another rebalance timeout for them (they rejoin, or their
    /// sessions expire) instead of forming a generation nobody answers.
    pub(crate) fn try_complete_join(
        &mut self,
        group_id: &str,
        removed: &mut Vec<(String, String)>,
    ) -> Result<()> {
        let now = self.now_ms();
        let Some(g) = self.groups.get_mut(group_id) else {
            return Ok(());
        };
        if g.state != GroupState::PreparingRebalance {
            return Ok(());
        }
        match g.initial_delay {
            Some((_, until)) if now < until => return Ok(()),
            Some(_) => g.initial_delay = None,
            None => {}
        }
        let timed_out = g.rebalance_deadline_ms.is_none_or(|d| now >= d);
        if !timed_out && !g.everyone_joined() {
            return Ok(());
        }
        let stragglers: Vec<String> = g
            .members
            .iter()
            .filter(|(_, m)| !m.joined && m.instance_id.is_none())
            .map(|(id, _)| id.clone())
            .collect();
        let any_joined = g.members.values().any(|m| m.joined);
        let survivors = g.members.len() - stragglers.len();
        if survivors > 0 && !any_joined {
            for id in stragglers {
                g.remove_member(group_id, &id);
                removed.push((group_id.to_string(), id));
            }
            g.rebalance_deadline_ms = Some(now.saturating_add(g.rebalance_timeout_ms()));
            return Ok(());
        }
        let generation = next_generation(group_id, g.generation)?;
        let persisted = GroupMetadata::classic(generation, g.assignor);
        self.store.write_group(group_id, Some(persisted), now)?;
        for id in stragglers {
            g.remove_member(group_id, &id);
            removed.push((group_id.to_string(), id));
        }
        g.publish_generation(generation, now);
        Ok(())
    }

    /// The rebalance of a coordinator-assigned group (the coordinator is its
    /// leader, so it completes at once): `members` become the next
    /// generation, persisted first, with the assignment of `assignor`, and
    /// the group is Stable (or Empty without members).
    pub(crate) fn rebalance_now(
        &mut self,
        group_id: &str,
        members: BTreeMap<String, Member>,
        assignor: AssignorKind,
        meta: &dyn TopicMetadata,
    ) -> Result<()> {
        let now = self.now_ms();
        let current = self.groups.get(group_id).map_or(0, |g| g.generation);
        let generation = next_generation(group_id, current)?;
        let persisted = GroupMetadata::classic(generation, assignor);
        self.store.write_group(group_id, Some(persisted), now)?;
        let g = self
            .groups
            .entry(group_id.to_string())
            .or_insert_with(|| Group::new(assignor));
        let previous: Assignment = g
            .members
            .iter()
            .map(|(id, m)| (id.clone(), m.assignment.clone()))
            .collect();
        g.members = members;
        g.generation = generation;
        g.assignor = assignor;
        g.rebalance_deadline_ms = None;
        g.pending_sync.clear();
        g.sync_deadline_ms = None;
        g.leader = None;
        g.statics.clear();
        if g.members.is_empty() {
            g.state = GroupState::Empty;
            g.protocol_name = None;
            return Ok(());
        }
        let subscriptions = g
            .members
            .iter()
            .map(|(id, m)| (id.clone(), m.topics.clone()))
            .collect();
        let counts: BTreeMap<String, u32> = g
            .members
            .values()
            .flat_map(|m| &m.topics)
            .map(|t| (t.clone(), meta.partition_count(t).unwrap_or(0)))
            .collect();
        let mut assignment = assignor.assign(&subscriptions, &counts, &previous);
        for (id, m) in &mut g.members {
            m.assignment = assignment.remove(id).unwrap_or_default();
            m.assignment_bytes = Bytes::new();
            m.joined = false;
        }
        g.state = GroupState::Stable;
        g.protocol_type = Some(CONSUMER_PROTOCOL_TYPE.to_string());
        g.protocol_name = Some(assignor.name().to_string());
        Ok(())
    }

    /// Removes members from `group` (Kafka's LeaveGroup; v3+ names several),
    /// each by member id or, with an empty member id, by instance id, and
    /// rebalances once. Per member, in order: an empty member id with an
    /// instance id no member holds -> UNKNOWN_MEMBER; a member id handed out
    /// with MEMBER_ID_REQUIRED and not used yet is dropped; an instance id
    /// that belongs to another member id -> FENCED_INSTANCE_ID; an unknown
    /// member id (or one named twice) -> UNKNOWN_MEMBER. An unknown group
    /// answers UNKNOWN_MEMBER for every member. The outer error is a
    /// storage failure only.
    pub fn leave_members(
        &mut self,
        group: &str,
        members: &[(String, Option<String>)],
        meta: &dyn TopicMetadata,
    ) -> Result<Vec<Result<()>>> {
        let Some(g) = self.groups.get(group) else {
            return Ok(members.iter().map(|_| Err(unknown_group(group))).collect());
        };
        let mut doomed: BTreeSet<String> = BTreeSet::new();
        let mut unused: BTreeSet<String> = BTreeSet::new();
        let results: Vec<Result<()>> = members
            .iter()
            .map(|(member, instance)| {
                let instance = instance.as_deref();
                if member.is_empty() {
                    return match instance.and_then(|i| g.statics.get(i)) {
                        Some(current) if doomed.insert(current.clone()) => Ok(()),
                        _ => Err(GroupError::UnknownMember(format!(
                            "no member of group {group:?} holds instance id {:?}",
                            instance.unwrap_or_default()
                        ))),
                    };
                }
                if g.pending.contains_key(member) && unused.insert(member.clone()) {
                    return Ok(());
                }
                if let Some(current) = g.static_fenced(instance, member) {
                    return Err(fenced(group, instance.unwrap_or_default(), member, current));
                }
                if !g.members.contains_key(member) || !doomed.insert(member.clone()) {
                    return Err(unknown_member(group, member, g.generation));
                }
                Ok(())
            })
            .collect();
        if doomed.is_empty() && unused.is_empty() {
            return Ok(results);
        }
        if g.is_coordinator_assigned() && !doomed.is_empty() {
            let mut left = g.members.clone();
            left.retain(|id, _| !doomed.contains(id));
            let assignor = g.assignor;
            self.rebalance_now(group, left, assignor, meta)?;
        } else {
            let now = self.now_ms();
            let g = self.groups.get_mut(group).expect("looked up above");
            for id in &doomed {
                g.remove_member(group, id);
            }
            if !doomed.is_empty() {
                g.rebalance_after_change(group, now);
            }
        }
        let g = self.groups.get_mut(group).expect("still there");
        g.pending.retain(|id, _| !unused.contains(id));
        self.try_complete_join(group, &mut Vec::new())?;
        Ok(results)
    }

    /// The time step of the coordinator (mk-cluster's drivers run it every
    /// 100 ms in a real broker; tests call it after moving the clock). For
    /// every group: member ids handed out with MEMBER_ID_REQUIRED and not
    /// used within their session timeout are dropped; members whose session
    /// deadline passed (`now > deadline`) are removed, except while they
    /// wait for a join or sync answer (Kafka keeps those alive); members of a
    /// generation that did not send SyncGroup within the rebalance timeout
    /// are removed; a barrier whose rebalance timeout passed completes
    /// (removing the dynamic members that did not rejoin). Each affected
    /// group rebalances once. KIP-848 consumer groups lose the members
    /// whose session expired or that missed their revocation deadline;
    /// share groups lose the members whose session expired, and records
    /// whose acquisition lock ran out are released. Returns every removed
    /// `(group, member)`, sorted.
    pub fn expire_members(&mut self, meta: &dyn TopicMetadata) -> Result<Vec<(String, String)>> {
        let now = self.now_ms();
        let mut removed = Vec::new();
        let ids: Vec<String> = self.groups.keys().cloned().collect();
        for id in ids {
            self.expire_group(&id, now, meta, &mut removed)?;
        }
        // A KIP-848 consumer group's member goes when its session expired
        // or it kept partitions past its rebalance timeout (each removal
        // bumps the group epoch).
        let consumers = due_members(
            &self.consumer_groups,
            |g| &g.members,
            |m| now > m.session_deadline_ms || m.revoke_deadline_ms.is_some_and(|d| now > d),
        );
        self.remove_due(consumers, Self::fence_consumer_member, meta, &mut removed)?;
        self.forget_unused_regexes();
        // A share group's member goes when its session expired (its records
        // are released); then records whose acquisition lock ran out are
        // available again.
        let shares = due_members(
            &self.share_groups,
            |g| &g.members,
            |m| now > m.session_deadline_ms,
        );
        self.remove_due(shares, Self::remove_share_member, meta, &mut removed)?;
        self.expire_share_locks(now)?;
        removed.sort();
        Ok(removed)
    }

    /// Removes each `(group, member)` of `due` with `remove` and adds it to
    /// `removed`.
    fn remove_due(
        &mut self,
        due: Vec<(String, String)>,
        remove: fn(&mut Self, &str, &str, &dyn TopicMetadata) -> Result<()>,
        meta: &dyn TopicMetadata,
        removed: &mut Vec<(String, String)>,
    ) -> Result<()> {
        for (group, member) in due {
            remove(self, &group, &member, meta)?;
            removed.push((group, member));
        }
        Ok(())
    }

    fn expire_group(
        &mut self,
        id: &str,
        now: i64,
        meta: &dyn TopicMetadata,
        removed: &mut Vec<(String, String)>,
    ) -> Result<()> {
        let g = self.groups.get_mut(id).expect("ids come from the map");
        // An id handed out expires when its session timeout has passed, at
        // the deadline itself, as Kafka's heartbeat timer for a pending
        // member fires (so a lost MEMBER_ID_REQUIRED round holds a join
        // phase no longer than Kafka).
        g.pending.retain(|_, deadline| now < *deadline);
        let expired: Vec<String> = g
            .members
            .iter()
            .filter(|(mid, m)| {
                now > m.deadline_ms
                    && !g.join_waiters.contains_key(*mid)
                    && !g.sync_waiters.contains_key(*mid)
            })
            .map(|(mid, _)| mid.clone())
            .collect();
        if g.is_coordinator_assigned() {
            if !expired.is_empty() {
                let mut left = g.members.clone();
                left.retain(|mid, _| !expired.contains(mid));
                let assignor = g.assignor;
                removed.extend(expired.into_iter().map(|m| (id.to_string(), m)));
                self.rebalance_now(id, left, assignor, meta)?;
            }
            return Ok(());
        }
        let mut changed = false;
        for mid in expired {
            g.remove_member(id, &mid);
            removed.push((id.to_string(), mid));
            changed = true;
        }
        if g.sync_deadline_ms.is_some_and(|d| now >= d) {
            g.sync_deadline_ms = None;
            for mid in std::mem::take(&mut g.pending_sync) {
                if g.remove_member(id, &mid).is_some() {
                    removed.push((id.to_string(), mid));
                    changed = true;
                }
            }
        }
        if changed {
            g.rebalance_after_change(id, now);
        }
        self.try_complete_join(id, removed)
    }
}
