//! Kafka's classic group protocol for Kafka-protocol members: JoinGroup
//! (new members, MEMBER_ID_REQUIRED, static members, idempotent rejoins),
//! SyncGroup (the leader's assignment handed out verbatim) and Heartbeat,
//! following Kafka's `GroupCoordinator` rule by rule and in its order of
//! checks. Waiting requests get a handle that a later operation or the time
//! step (`expire_members`) resolves.

use crate::assignor::AssignorKind;
use crate::coordinator::{
    GroupCoordinator, MAX_PROTOCOLS, check_group_id, check_len, fenced, unknown_group,
    unknown_member,
};
use crate::error::{GroupError, Result};
use crate::group::{Group, GroupState, Member};
use crate::protocol::{GroupJoin, GroupJoined, GroupSync, JoinHandle, SyncHandle, Waiter};
use mk_core::TopicPartition;

fn check_join(join: &GroupJoin, min_ms: i64, max_ms: i64) -> Result<()> {
    check_group_id(&join.group_id)?;
    check_len("member id", &join.member_id)?;
    if let Some(instance) = &join.group_instance_id {
        if instance.is_empty() {
            return Err(GroupError::InvalidRequest(
                "group instance id must not be empty when set".into(),
            ));
        }
        check_len("group instance id", instance)?;
    }
    check_len("client id", &join.client_id)?;
    check_len("client host", &join.client_host)?;
    check_len("protocol type", &join.protocol_type)?;
    if join.protocols.len() > MAX_PROTOCOLS {
        return Err(GroupError::InvalidRequest(format!(
            "a member may list at most {MAX_PROTOCOLS} protocols, got {}",
            join.protocols.len()
        )));
    }
    for (name, _) in &join.protocols {
        check_len("protocol name", name)?;
    }
    for topic in &join.subscribed_topics {
        check_len("topic name", topic)?;
    }
    let session = i64::from(join.session_timeout_ms);
    if session < min_ms || session > max_ms {
        return Err(GroupError::InvalidSessionTimeout {
            given: session,
            min: min_ms,
            max: max_ms,
        });
    }
    Ok(())
}

impl Group {
    /// Answers a waiting join now (a rejoin that changes nothing).
    fn answer_join(&mut self, member: &str, waiter: Waiter<GroupJoined>, now_ms: i64) {
        if let Some(m) = self.members.get_mut(member) {
            m.extend_session(now_ms);
        }
        waiter.resolve(Ok(self.joined_answer(member, None)));
    }

    /// Marks `member` as rejoined and parks its request at the barrier. A
    /// request of the same member already parked (a client retry) is told
    /// to rejoin.
    fn await_join(
        &mut self,
        group_id: &str,
        member: &str,
        waiter: Waiter<GroupJoined>,
        now_ms: i64,
    ) {
        if let Some(m) = self.members.get_mut(member) {
            m.joined = true;
            m.extend_session(now_ms);
        }
        if let Some(old) = self.join_waiters.insert(member.to_string(), waiter) {
            old.resolve(Err(GroupError::RebalanceInProgress {
                group: group_id.to_string(),
                state: self.state,
            }));
        }
    }

    /// Kafka's `addMemberAndRebalance`.
    fn add_member(
        &mut self,
        group_id: &str,
        id: String,
        join: &GroupJoin,
        waiter: Waiter<GroupJoined>,
        now_ms: i64,
    ) {
        if let Some(instance) = &join.group_instance_id {
            self.statics.insert(instance.clone(), id.clone());
        }
        self.protocol_type = Some(join.protocol_type.clone());
        if self.leader.is_none() {
            self.leader = Some(id.clone());
        }
        self.members
            .insert(id.clone(), Member::client(join, now_ms));
        self.rebalance_after_change(group_id, now_ms);
        self.await_join(group_id, &id, waiter, now_ms);
    }

    /// Kafka's `updateMemberAndRebalance`.
    fn update_member(
        &mut self,
        group_id: &str,
        id: &str,
        join: &GroupJoin,
        waiter: Waiter<GroupJoined>,
        now_ms: i64,
    ) {
        if let Some(m) = self.members.get_mut(id) {
            m.update(join, now_ms);
        }
        self.protocol_type = Some(join.protocol_type.clone());
        self.rebalance_after_change(group_id, now_ms);
        self.await_join(group_id, id, waiter, now_ms);
    }

    /// A static member comes back under a new member id (Kafka's
    /// `updateStaticMemberThenRebalanceOrCompleteJoin`): the new id takes
    /// the old one's place (assignment included) and the old id is fenced.
    /// While Stable nothing rebalances unless the protocol the group would
    /// select for its next generation differs from the current one (or the
    /// protocol type changes): new metadata alone is no reason, because a
    /// restarted client's subscription metadata often differs (the Java
    /// client's carries its owned partitions and generation). The answer
    /// names the leader as it was before the replacement, so a replaced
    /// leader acts as a follower and fetches its assignment with SyncGroup
    /// instead of reassigning a Stable group. While CompletingRebalance the
    /// group rebalances, as Kafka does: the leader may already have been
    /// given the old member id to assign.
    fn replace_static(
        &mut self,
        group_id: &str,
        instance: &str,
        new_id: String,
        join: &GroupJoin,
        waiter: Waiter<GroupJoined>,
        now_ms: i64,
    ) {
        let old_id = self.statics[instance].clone();
        let Some(mut m) = self.members.remove(&old_id) else {
            // The map and the members agree by construction; a stale entry
            // is treated as an unknown instance.
            self.statics.remove(instance);
            self.add_member(group_id, new_id, join, waiter, now_ms);
            return;
        };
        let replaced = || fenced(group_id, instance, &old_id, &new_id);
        if let Some(w) = self.join_waiters.remove(&old_id) {
            w.resolve(Err(replaced()));
        }
        if let Some(w) = self.sync_waiters.remove(&old_id) {
            w.resolve(Err(replaced()));
        }
        let leader_before = self.leader.clone();
        if self.leader.as_deref() == Some(old_id.as_str()) {
            self.leader = Some(new_id.clone());
        }
        if self.pending_sync.remove(&old_id) {
            self.pending_sync.insert(new_id.clone());
        }
        let same_type = m.protocol_type == join.protocol_type;
        m.update(join, now_ms);
        m.instance_id = Some(instance.to_string());
        self.protocol_type = Some(join.protocol_type.clone());
        self.members.insert(new_id.clone(), m);
        self.statics.insert(instance.to_string(), new_id.clone());
        let unchanged = same_type && self.select_protocol() == self.protocol_name;
        match self.state {
            GroupState::Stable if unchanged => {
                waiter.resolve(Ok(self.joined_answer(&new_id, leader_before.as_deref())));
            }
            _ => {
                self.rebalance_after_change(group_id, now_ms);
                self.await_join(group_id, &new_id, waiter, now_ms);
            }
        }
    }

    /// The join rules of Kafka's `doNewMemberJoinGroup` and
    /// `doCurrentMemberJoinGroup`, after the request itself was validated.
    fn join(
        &mut self,
        group_id: &str,
        join: &GroupJoin,
        fresh_id: Option<String>,
        waiter: Waiter<GroupJoined>,
        now_ms: i64,
        max_size: usize,
    ) -> Result<()> {
        if self.is_coordinator_assigned() {
            return Err(GroupError::InconsistentGroupProtocol(format!(
                "group {group_id:?} has members whose partitions the coordinator assigns \
                 (JSON-TCP join_group); a Kafka-protocol member can join it only once they have left"
            )));
        }
        if let Some(why) = self.protocol_mismatch(join) {
            return Err(GroupError::InconsistentGroupProtocol(format!(
                "group {group_id:?}: {why}"
            )));
        }
        let instance = join.group_instance_id.as_deref();
        let Some(new_id) = fresh_id else {
            return self.join_known(group_id, join, waiter, now_ms);
        };
        let known_static = instance.filter(|i| self.statics.contains_key(*i));
        if known_static.is_none() && self.members.len() + self.pending.len() >= max_size {
            return Err(GroupError::GroupMaxSizeReached {
                group: group_id.to_string(),
                max: max_size,
            });
        }
        match known_static {
            Some(i) => self.replace_static(group_id, i, new_id, join, waiter, now_ms),
            None if instance.is_none() && join.require_known_member_id => {
                let deadline = now_ms.saturating_add(i64::from(join.session_timeout_ms));
                self.pending.insert(new_id.clone(), deadline);
                return Err(GroupError::MemberIdRequired {
                    group: group_id.to_string(),
                    member_id: new_id,
                });
            }
            None => self.add_member(group_id, new_id, join, waiter, now_ms),
        }
        Ok(())
    }

    /// A join that names a member id.
    /// Kafka's initial delayed join: the rebalance an empty group's first
    /// member starts waits `delay_ms` for more members, and each member
    /// that joins meanwhile extends the wait by `delay_ms`, never past the
    /// rebalance timeout from its start.
    fn delay_initial_rebalance(&mut self, was_empty: bool, delay_ms: i64, now_ms: i64) {
        if delay_ms <= 0 || self.state != GroupState::PreparingRebalance {
            return;
        }
        let started = match self.initial_delay {
            Some((started, _)) => started,
            None if was_empty => now_ms,
            None => return,
        };
        let cap = started.saturating_add(self.rebalance_timeout_ms());
        let until = now_ms.saturating_add(delay_ms).min(cap);
        self.initial_delay = Some((started, until));
        self.rebalance_deadline_ms = Some(until);
    }

    fn join_known(
        &mut self,
        group_id: &str,
        join: &GroupJoin,
        waiter: Waiter<GroupJoined>,
        now_ms: i64,
    ) -> Result<()> {
        let id = join.member_id.as_str();
        let instance = join.group_instance_id.as_deref();
        if self.pending.contains_key(id) {
            if let Some((i, current)) = instance.and_then(|i| self.statics.get_key_value(i)) {
                return Err(fenced(group_id, i, id, current));
            }
            self.pending.remove(id);
            self.add_member(group_id, id.to_string(), join, waiter, now_ms);
            return Ok(());
        }
        if let Some(current) = self.static_fenced(instance, id) {
            return Err(fenced(group_id, instance.unwrap_or_default(), id, current));
        }
        let unknown_instance = instance.is_some_and(|i| !self.statics.contains_key(i));
        let Some(member) = self.members.get(id).filter(|_| !unknown_instance) else {
            return Err(unknown_member(group_id, id, self.generation));
        };
        let unchanged = member.matches(join);
        let is_leader = self.leader.as_deref() == Some(id);
        match self.state {
            GroupState::PreparingRebalance => {
                self.update_member(group_id, id, join, waiter, now_ms);
            }
            // A member that missed its JoinGroup answer asks again: the
            // answer of the current generation.
            GroupState::CompletingRebalance if unchanged => {
                self.answer_join(id, waiter, now_ms);
            }
            // Kafka's idempotent rejoin of a follower. The leader's rejoin
            // always rebalances: that is how a leader reacts to changes its
            // members' metadata does not show (e.g. new partitions).
            GroupState::Stable if unchanged && !is_leader => {
                self.answer_join(id, waiter, now_ms);
            }
            GroupState::CompletingRebalance | GroupState::Stable => {
                self.update_member(group_id, id, join, waiter, now_ms);
            }
            // A classic group is never Assigning or Reconciling (the states
            // of KIP-848 and share groups).
            GroupState::Empty
            | GroupState::Dead
            | GroupState::Assigning
            | GroupState::Reconciling => {
                return Err(unknown_member(group_id, id, self.generation));
            }
        }
        Ok(())
    }
}

impl GroupCoordinator {
    /// Kafka's JoinGroup. Errors answered at once, in Kafka's order: an
    /// empty or oversized group id -> INVALID_GROUP_ID; oversized ids,
    /// names or protocol lists, an empty instance id -> INVALID_REQUEST; a
    /// session timeout outside the broker's bounds -> INVALID_SESSION_TIMEOUT;
    /// a member id for a group the coordinator does not know ->
    /// UNKNOWN_MEMBER; coordinator-assigned members in the group, a missing
    /// protocol type or protocol, another protocol type than the group's,
    /// or no protocol every member supports -> INCONSISTENT_GROUP_PROTOCOL;
    /// a new member of a full group -> GROUP_MAX_SIZE_REACHED; a new dynamic
    /// member with `require_known_member_id` -> MEMBER_ID_REQUIRED carrying
    /// the member id to join with (it must do so within its session
    /// timeout); a member id handed out for an instance id that another
    /// member id now holds -> FENCED_INSTANCE_ID; an unknown member id, or
    /// an unknown instance id with a member id -> UNKNOWN_MEMBER.
    ///
    /// Otherwise the handle resolves when the answer is known: at once for
    /// a follower's rejoin with unchanged protocols while Stable (or any
    /// member's while CompletingRebalance) and for a static member that
    /// returns unchanged while Stable; else when the rebalance's join phase
    /// completes — every member rejoined, or the rebalance timeout passed
    /// (then the time step completes it). A parked request is answered
    /// UNKNOWN_MEMBER if its member is removed, FENCED_INSTANCE_ID if its
    /// static member is replaced, REBALANCE_IN_PROGRESS if the same member
    /// joins again.
    pub fn join_member(&mut self, join: GroupJoin) -> Result<JoinHandle> {
        check_join(
            &join,
            self.min_session_timeout_ms,
            self.max_session_timeout_ms,
        )?;
        let group_id = join.group_id.clone();
        self.claim_for_classic(&group_id)?;
        let created = !self.groups.contains_key(&group_id);
        if created && !join.member_id.is_empty() {
            let generation = self.lookup(&group_id).map_or(0, |g| g.generation);
            return Err(unknown_member(&group_id, &join.member_id, generation));
        }
        let fresh_id = join.member_id.is_empty().then(|| {
            let prefix = join
                .group_instance_id
                .clone()
                .unwrap_or_else(|| join.client_id.clone());
            self.new_member_id(&prefix)
        });
        let now = self.now_ms();
        let max_size = self.max_group_size;
        let (waiter, handle) = Waiter::new();
        let delay = self.initial_rebalance_delay_ms;
        let g = self
            .groups
            .entry(group_id.clone())
            .or_insert_with(|| Group::new(AssignorKind::default()));
        let was_empty = g.state == GroupState::Empty;
        if let Err(e) = g.join(&group_id, &join, fresh_id, waiter, now, max_size) {
            if created && g.members.is_empty() && g.pending.is_empty() {
                self.groups.remove(&group_id);
            }
            return Err(e);
        }
        g.delay_initial_rebalance(was_empty, delay, now);
        self.try_complete_join(&group_id, &mut Vec::new())?;
        Ok(handle)
    }

    /// Kafka's SyncGroup. Errors answered at once, in Kafka's order: an
    /// invalid group id -> INVALID_GROUP_ID; an unknown group ->
    /// UNKNOWN_MEMBER; the instance id held by another member id ->
    /// FENCED_INSTANCE_ID; an unknown member -> UNKNOWN_MEMBER; another
    /// generation -> ILLEGAL_GENERATION; a protocol type or name other than
    /// the group's -> INCONSISTENT_GROUP_PROTOCOL; PreparingRebalance ->
    /// REBALANCE_IN_PROGRESS.
    ///
    /// While Stable the member's assignment is answered at once. While
    /// CompletingRebalance the leader's sync hands every member the bytes
    /// the leader assigned it (empty for a member it left out) and makes the
    /// group Stable; a follower's sync waits for that, and is answered
    /// REBALANCE_IN_PROGRESS if a new rebalance starts first.
    pub fn sync_member(&mut self, sync: GroupSync) -> Result<SyncHandle> {
        check_group_id(&sync.group_id)?;
        let now = self.now_ms();
        let group_id = sync.group_id.as_str();
        let member = sync.member_id.as_str();
        let g = self
            .groups
            .get_mut(group_id)
            .ok_or_else(|| unknown_group(group_id))?;
        let instance = sync.group_instance_id.as_deref();
        g.check_member(group_id, instance, member, sync.generation_id)?;
        check_sync_protocol(g, &sync)?;
        let (waiter, handle) = Waiter::new();
        match g.state {
            GroupState::Empty
            | GroupState::Dead
            | GroupState::Assigning
            | GroupState::Reconciling => {
                return Err(unknown_member(group_id, member, g.generation));
            }
            GroupState::PreparingRebalance => {
                return Err(GroupError::RebalanceInProgress {
                    group: group_id.to_string(),
                    state: g.state,
                });
            }
            GroupState::Stable => {
                g.synced(member, now);
                waiter.resolve(Ok(g.synced_answer(member)));
            }
            GroupState::CompletingRebalance => {
                g.synced(member, now);
                if let Some(old) = g.sync_waiters.insert(member.to_string(), waiter) {
                    old.resolve(Err(GroupError::RebalanceInProgress {
                        group: group_id.to_string(),
                        state: g.state,
                    }));
                }
                if g.leader.as_deref() == Some(member) {
                    g.apply_leader_assignment(&sync, now);
                }
            }
        }
        Ok(handle)
    }

    /// Kafka's Heartbeat: extends the member's session. Errors, in Kafka's
    /// order: an unknown group -> UNKNOWN_MEMBER; the instance id held by
    /// another member id -> FENCED_INSTANCE_ID; an unknown member ->
    /// UNKNOWN_MEMBER; another generation -> ILLEGAL_GENERATION;
    /// PreparingRebalance -> REBALANCE_IN_PROGRESS (the session is extended
    /// all the same, so the member can rejoin). While CompletingRebalance a
    /// heartbeat succeeds, as in Kafka: members heartbeat between their
    /// JoinGroup answer and their SyncGroup.
    pub fn heartbeat_member(
        &mut self,
        group: &str,
        member: &str,
        generation: i32,
        instance: Option<&str>,
    ) -> Result<()> {
        let now = self.now_ms();
        let g = self
            .groups
            .get_mut(group)
            .ok_or_else(|| unknown_group(group))?;
        g.check_member(group, instance, member, generation)?;
        let current = g.generation;
        let state = g.state;
        if let Some(m) = g.members.get_mut(member) {
            m.extend_session(now);
        }
        match state {
            GroupState::PreparingRebalance => Err(GroupError::RebalanceInProgress {
                group: group.to_string(),
                state,
            }),
            GroupState::Empty
            | GroupState::Dead
            | GroupState::Assigning
            | GroupState::Reconciling => Err(unknown_member(group, member, current)),
            GroupState::CompletingRebalance | GroupState::Stable => Ok(()),
        }
    }
}

impl Group {
    /// The checks of a request a current member of `group_id` sends with
    /// its generation, in Kafka's order: `instance` registered to another
    /// member id -> FENCED_INSTANCE_ID; an unknown member -> UNKNOWN_MEMBER;
    /// another generation -> ILLEGAL_GENERATION.
    pub(crate) fn check_member(
        &self,
        group_id: &str,
        instance: Option<&str>,
        member: &str,
        generation: i32,
    ) -> Result<()> {
        if let Some(current) = self.static_fenced(instance, member) {
            return Err(fenced(
                group_id,
                instance.unwrap_or_default(),
                member,
                current,
            ));
        }
        if !self.members.contains_key(member) {
            return Err(unknown_member(group_id, member, self.generation));
        }
        if generation != self.generation {
            return Err(GroupError::IllegalGeneration {
                group: group_id.to_string(),
                given: generation,
                current: self.generation,
            });
        }
        Ok(())
    }

    /// `member` sent its SyncGroup for the current generation.
    fn synced(&mut self, member: &str, now_ms: i64) {
        self.pending_sync.remove(member);
        if self.pending_sync.is_empty() {
            self.sync_deadline_ms = None;
        }
        if let Some(m) = self.members.get_mut(member) {
            m.extend_session(now_ms);
        }
    }

    /// The leader's SyncGroup: every member gets the bytes the leader
    /// assigned it (the first entry for it; entries for unknown members are
    /// ignored), the decoded partitions are kept for describe and lag, the
    /// group is Stable and every waiting sync is answered.
    fn apply_leader_assignment(&mut self, sync: &GroupSync, now_ms: i64) {
        for (id, m) in &mut self.members {
            m.assignment_bytes = sync
                .assignments
                .iter()
                .find(|(mid, _)| mid == id)
                .map(|(_, bytes)| bytes.clone())
                .unwrap_or_default();
            let mut partitions: Vec<TopicPartition> = sync
                .assigned_partitions
                .iter()
                .find(|(mid, _)| mid == id)
                .map(|(_, ps)| ps.clone())
                .unwrap_or_default();
            partitions.sort();
            partitions.dedup();
            m.assignment = partitions;
        }
        self.state = GroupState::Stable;
        for (id, w) in std::mem::take(&mut self.sync_waiters) {
            if let Some(m) = self.members.get_mut(&id) {
                m.extend_session(now_ms);
            }
            w.resolve(Ok(self.synced_answer(&id)));
        }
    }
}

/// A SyncGroup that names a protocol type or name must name the group's
/// (INCONSISTENT_GROUP_PROTOCOL otherwise); one that names none is fine.
fn check_sync_protocol(g: &Group, sync: &GroupSync) -> Result<()> {
    for (what, given, current) in [
        ("type", &sync.protocol_type, &g.protocol_type),
        ("name", &sync.protocol_name, &g.protocol_name),
    ] {
        if let Some(given) = given
            && Some(given) != current.as_ref()
        {
            return Err(GroupError::InconsistentGroupProtocol(format!(
                "group {:?} uses protocol {what} {:?}; the sync names {given:?}",
                sync.group_id,
                current.as_deref().unwrap_or_default()
            )));
        }
    }
    Ok(())
}
