//! ShareFetch and ShareAcknowledge as operations of the coordinator, and
//! the share-group offset admin operations (Describe, Alter and
//! DeleteShareGroupOffsets).
//!
//! A ShareFetch takes two calls, because reading the log is the data
//! path's job: `share_fetch_plan` (the session, the piggybacked
//! acknowledgements, and where each partition should be read) and, once
//! the data path has read, `share_fetch_acquire` (which records the member
//! gets). Acquisition happens under the coordinator's lock with what is
//! Available at that moment, so two fetches that read the same records
//! never both acquire them.
//!
//! Every change of a share partition is written to the offsets log — one
//! append per request, all partitions or none — before it takes effect: an
//! acknowledgement that was answered survives a crash, and a delivery is
//! counted before the records are handed out.

use super::partition::{AckBatch, AcquireLimits, AcquiredRange, FetchedSpan, SharePartition};
use super::session::SessionStep;
use crate::coordinator::GroupCoordinator;
use crate::error::{GroupError, Result};
use crate::settings::{ShareAutoOffsetReset, ShareIsolation};
use mk_core::TopicPartition;
use std::collections::BTreeMap;

/// The first half of a ShareFetch (or a whole ShareAcknowledge).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ShareFetchRequest {
    pub group_id: String,
    pub member_id: String,
    pub session_epoch: i32,
    /// Partitions the request names (added to the session).
    pub partitions: Vec<TopicPartition>,
    /// Partitions the session forgets.
    pub forgotten: Vec<TopicPartition>,
    /// Acknowledgements, per partition.
    pub acks: Vec<(TopicPartition, Vec<AckBatch>)>,
}

/// The outcome of one partition's acknowledgements.
pub type ShareAckResult = (TopicPartition, Result<()>);

/// What `share_fetch_plan` decided.
#[derive(Debug)]
pub struct ShareFetchPlan {
    pub acks: Vec<ShareAckResult>,
    /// Partitions to read, each from this offset.
    pub reads: Vec<(TopicPartition, i64)>,
    /// Partitions that cannot be fetched (unknown topic or partition).
    pub errors: Vec<(TopicPartition, GroupError)>,
    pub isolation: ShareIsolation,
    pub lock_duration_ms: i32,
    /// The request closed the member's session: nothing is read.
    pub closed: bool,
}

/// What the data path read of one partition for a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionRead {
    pub partition: TopicPartition,
    /// The batches read, in offset order.
    pub spans: Vec<FetchedSpan>,
    /// The offset after the last batch read (the next read would start
    /// there); offsets before it not covered by a span are gaps.
    pub read_end: i64,
}

/// The records one partition handed to the member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareFetched {
    pub partition: TopicPartition,
    pub acquired: Vec<AcquiredRange>,
}

type Changes = Vec<(TopicPartition, SharePartition)>;

/// Where each partition is read from, and the partitions that cannot be.
pub type Reads = (
    Vec<(TopicPartition, i64)>,
    Vec<(TopicPartition, GroupError)>,
);

/// What the data path knows of one partition when a share fetch is
/// planned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShareBounds {
    /// The log start offset.
    pub log_start: i64,
    /// The end of what the group may be handed (the high watermark, or the
    /// last stable offset under read_committed).
    pub end: i64,
    /// Under `share.auto.offset.reset=by_duration:<d>`: the first offset
    /// whose record is at most `d` old (`None` when there is none, or the
    /// group resets otherwise). The data path asks the time index for it.
    pub by_time: Option<i64>,
}

impl ShareBounds {
    /// Bounds of a group that does not reset by time.
    pub fn new(log_start: i64, end: i64) -> Self {
        ShareBounds {
            log_start,
            end,
            by_time: None,
        }
    }

    /// Where a partition with no share state starts.
    fn initial_start(&self, reset: ShareAutoOffsetReset) -> i64 {
        match reset {
            ShareAutoOffsetReset::Latest => self.end,
            ShareAutoOffsetReset::Earliest => self.log_start,
            // No record that recent: from the end, as Kafka does. A
            // record past the end (not yet stable) is still where it starts.
            ShareAutoOffsetReset::ByDuration { .. } => {
                self.by_time.map_or(self.end, |o| o.max(self.log_start))
            }
        }
    }
}

impl GroupCoordinator {
    /// The first half of ShareFetch. Errors of the whole request: a group
    /// that is not a share group -> GROUP_ID_NOT_FOUND; a member that is
    /// not in it -> UNKNOWN_MEMBER; the session's epoch rules
    /// (SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH). Per
    /// partition: acknowledgements of records the member does not hold ->
    /// INVALID_RECORD_STATE (nothing of that partition's acknowledgements
    /// applies); a partition missing from `bounds` (one for each partition
    /// that exists) cannot be fetched. A partition fetched for the first
    /// time starts at its fetchable end (`share.auto.offset.reset=latest`),
    /// its log start (`earliest`) or its first record at most the duration
    /// old (`by_duration`); one whose log start passed its start moves up
    /// to it.
    pub fn share_fetch_plan(
        &mut self,
        req: &ShareFetchRequest,
        bounds: &BTreeMap<TopicPartition, ShareBounds>,
    ) -> Result<ShareFetchPlan> {
        let step = self.share_request_start(req, true)?;
        let acks = self.share_apply_acks(&req.group_id, &req.member_id, &req.acks)?;
        let mut plan = ShareFetchPlan {
            acks,
            reads: Vec::new(),
            errors: Vec::new(),
            isolation: self.share_isolation(&req.group_id),
            lock_duration_ms: self.setting(&req.group_id, |s| s.share_record_lock_duration_ms),
            closed: step == SessionStep::Closed,
        };
        if plan.closed {
            self.release_share_member(&req.group_id, &req.member_id)?;
            return Ok(plan);
        }
        let (reads, errors) = self.share_fetch_reads(&req.group_id, &req.member_id, bounds)?;
        plan.reads = reads;
        plan.errors = errors;
        Ok(plan)
    }

    /// Where each partition of the member's share session should be read
    /// now (and which cannot be read): the part of `share_fetch_plan` that
    /// a fetch waiting for records repeats.
    pub fn share_fetch_reads(
        &mut self,
        group: &str,
        member: &str,
        bounds: &BTreeMap<TopicPartition, ShareBounds>,
    ) -> Result<Reads> {
        let key = (group.to_string(), member.to_string());
        let max_in_flight = self.share_max_in_flight;
        let reset = self.share_auto_offset_reset(group);
        let (mut reads, mut errors) = (Vec::new(), Vec::new());
        let mut changes: Changes = Vec::new();
        let Some(g) = self.share_groups.get(group) else {
            return Ok((reads, errors));
        };
        for tp in self.share_sessions.partitions(&key) {
            let Some(&bound) = bounds.get(&tp) else {
                errors.push((
                    tp.clone(),
                    GroupError::UnknownPartition {
                        partition: tp,
                        partitions: 0,
                    },
                ));
                continue;
            };
            let fresh = !g.partitions.contains_key(&tp);
            let mut p = g
                .partitions
                .get(&tp)
                .cloned()
                .unwrap_or_else(|| SharePartition::new(bound.initial_start(reset)));
            let before = p.start_offset();
            p.move_start(bound.log_start);
            if let Some(from) = p.fetch_offset(max_in_flight).filter(|o| *o < bound.end) {
                reads.push((tp.clone(), from));
            }
            if fresh || p.start_offset() != before {
                changes.push((tp, p));
            }
        }
        self.commit_share_changes(group, changes)?;
        Ok((reads, errors))
    }

    /// The partitions the member's share session will hold once `req` is
    /// applied (what the data path must give bounds for). Changes nothing.
    pub fn share_session_preview(&self, req: &ShareFetchRequest) -> Vec<TopicPartition> {
        let mut parts: std::collections::BTreeSet<TopicPartition> = if req.session_epoch == 0 {
            std::collections::BTreeSet::new()
        } else {
            let key = (req.group_id.clone(), req.member_id.clone());
            self.share_sessions.partitions(&key).into_iter().collect()
        };
        parts.extend(req.partitions.iter().cloned());
        for tp in &req.forgotten {
            parts.remove(tp);
        }
        parts.into_iter().collect()
    }

    /// The second half of ShareFetch: acquires for the member what the
    /// data path read, at most `max_records` records in all.
    pub fn share_fetch_acquire(
        &mut self,
        group: &str,
        member: &str,
        reads: &[PartitionRead],
        max_records: usize,
    ) -> Result<Vec<ShareFetched>> {
        let still_member = self
            .share_groups
            .get(group)
            .is_some_and(|g| g.members.contains_key(member));
        if !still_member {
            return Ok(Vec::new());
        }
        let now = self.now_ms();
        let mut limits = AcquireLimits {
            max_records,
            max_in_flight: self.share_max_in_flight,
            lock_until_ms: now.saturating_add(i64::from(
                self.setting(group, |s| s.share_record_lock_duration_ms),
            )),
            delivery_limit: self.share_delivery_limit(group),
        };
        let g = &self.share_groups[group];
        let mut changes: Changes = Vec::new();
        let mut out = Vec::new();
        for read in reads {
            let Some(p) = g.partitions.get(&read.partition) else {
                continue;
            };
            let mut p = p.clone();
            let acquired = p.acquire(member, &read.spans, read.read_end, limits);
            let taken: i64 = acquired.iter().map(|r| r.last - r.first + 1).sum();
            limits.max_records = limits
                .max_records
                .saturating_sub(usize::try_from(taken).unwrap_or(usize::MAX));
            if p != g.partitions[&read.partition] {
                changes.push((read.partition.clone(), p));
            }
            if !acquired.is_empty() {
                out.push(ShareFetched {
                    partition: read.partition.clone(),
                    acquired,
                });
            }
        }
        self.commit_share_changes(group, changes)?;
        Ok(out)
    }

    /// ShareAcknowledge: the session rules (a ShareAcknowledge cannot open
    /// a session) and each partition's acknowledgements, as in
    /// `share_fetch_plan`. The final epoch closes the session and releases
    /// what the member still holds.
    pub fn share_acknowledge(&mut self, req: &ShareFetchRequest) -> Result<Vec<ShareAckResult>> {
        let step = self.share_request_start(req, false)?;
        let acks = self.share_apply_acks(&req.group_id, &req.member_id, &req.acks)?;
        if step == SessionStep::Closed {
            self.release_share_member(&req.group_id, &req.member_id)?;
        }
        Ok(acks)
    }

    fn share_request_start(
        &mut self,
        req: &ShareFetchRequest,
        may_open: bool,
    ) -> Result<SessionStep> {
        let Some(g) = self.share_groups.get(&req.group_id) else {
            return Err(GroupError::GroupIdNotFound(format!(
                "Group {} is not a share group.",
                req.group_id
            )));
        };
        if !g.members.contains_key(&req.member_id) {
            return Err(GroupError::UnknownMember(format!(
                "Member {} is not a member of share group {}.",
                req.member_id, req.group_id
            )));
        }
        let key = (req.group_id.clone(), req.member_id.clone());
        let max = self.share_max_sessions;
        self.share_sessions.step(
            key,
            req.session_epoch,
            may_open,
            &req.partitions,
            &req.forgotten,
            max,
        )
    }

    /// Applies each partition's acknowledgements; one write for all.
    fn share_apply_acks(
        &mut self,
        group: &str,
        member: &str,
        acks: &[(TopicPartition, Vec<AckBatch>)],
    ) -> Result<Vec<ShareAckResult>> {
        let limit = self.share_delivery_limit(group);
        let g = &self.share_groups[group];
        let mut changes: Changes = Vec::new();
        let mut results = Vec::new();
        for (tp, batches) in acks {
            let current = changes
                .iter()
                .rev()
                .find(|(t, _)| t == tp)
                .map(|(_, p)| p)
                .or(g.partitions.get(tp));
            let Some(p) = current else {
                let e = GroupError::InvalidRecordState(format!(
                    "share group {group} has no state for {tp}"
                ));
                results.push((tp.clone(), Err(e)));
                continue;
            };
            let mut p = p.clone();
            match p.acknowledge(member, batches, limit) {
                Ok(()) => {
                    changes.push((tp.clone(), p));
                    results.push((tp.clone(), Ok(())));
                }
                Err(e) => results.push((tp.clone(), Err(e))),
            }
        }
        self.commit_share_changes(group, changes)?;
        Ok(results)
    }

    /// Releases what `member` holds in every partition of `group`.
    pub(crate) fn release_share_member(&mut self, group: &str, member: &str) -> Result<()> {
        self.change_share_partitions(group, |_| true, |p, limit| p.release_member(member, limit))
    }

    /// Releases every lock of every share group that ran out (a record at
    /// its delivery limit is archived).
    pub(crate) fn expire_share_locks(&mut self, now: i64) -> Result<()> {
        let ids: Vec<String> = self.share_groups.keys().cloned().collect();
        ids.iter().try_for_each(|group| {
            self.change_share_partitions(
                group,
                |p| p.next_lock_deadline().is_some_and(|d| now > d),
                |p, limit| p.expire_locks(now, limit),
            )
        })
    }

    /// Applies `change` (given the group's delivery limit) to a copy of
    /// each partition of `group` that `select` picks, and commits the
    /// copies it changed.
    fn change_share_partitions(
        &mut self,
        group: &str,
        select: impl Fn(&SharePartition) -> bool,
        change: impl Fn(&mut SharePartition, u16) -> bool,
    ) -> Result<()> {
        let limit = self.share_delivery_limit(group);
        let Some(g) = self.share_groups.get(group) else {
            return Ok(());
        };
        let changes: Changes = g
            .partitions
            .iter()
            .filter(|(_, p)| select(p))
            .filter_map(|(tp, p)| {
                let mut p = p.clone();
                change(&mut p, limit).then(|| (tp.clone(), p))
            })
            .collect();
        self.commit_share_changes(group, changes)
    }

    /// Writes the new states (one append), then makes them current.
    fn commit_share_changes(&mut self, group: &str, changes: Changes) -> Result<()> {
        if changes.is_empty() {
            return Ok(());
        }
        let now = self.now_ms();
        let states: Vec<_> = changes
            .iter()
            .map(|(tp, p)| (tp.clone(), Some(p.snapshot())))
            .collect();
        self.store.write_share_states(group, &states, now)?;
        let g = self
            .share_groups
            .get_mut(group)
            .expect("changes come from the group");
        g.partitions.extend(changes);
        Ok(())
    }

    // ----- the offset admin operations --------------------------------------

    /// DescribeShareGroupOffsets: each partition's start offset, `None`
    /// where the group has no state (every partition with state when
    /// `partitions` is `None`). GROUP_ID_NOT_FOUND for a group that is not
    /// a share group.
    pub fn describe_share_offsets(
        &self,
        group: &str,
        partitions: Option<&[TopicPartition]>,
    ) -> Result<Vec<(TopicPartition, Option<i64>)>> {
        let g = self.share_groups.get(group).ok_or_else(|| {
            GroupError::GroupIdNotFound(format!("Group {group} is not a share group."))
        })?;
        Ok(match partitions {
            None => g
                .partitions
                .iter()
                .map(|(tp, p)| (tp.clone(), Some(p.start_offset())))
                .collect(),
            Some(ps) => ps
                .iter()
                .map(|tp| {
                    (
                        tp.clone(),
                        g.partitions.get(tp).map(SharePartition::start_offset),
                    )
                })
                .collect(),
        })
    }

    /// AlterShareGroupOffsets: sets start offsets (the in-flight window is
    /// dropped) of a share group without members; GROUP_ID_NOT_FOUND for
    /// an unknown or other group, NON_EMPTY_GROUP while it has members, a
    /// negative offset -> INVALID_REQUEST for that partition.
    pub fn alter_share_offsets(
        &mut self,
        group: &str,
        offsets: &BTreeMap<TopicPartition, i64>,
    ) -> Result<Vec<ShareAckResult>> {
        self.check_share_admin(group)?;
        let mut results = Vec::new();
        let mut changes: Changes = Vec::new();
        for (tp, offset) in offsets {
            if *offset < 0 {
                let e = GroupError::InvalidRequest(format!(
                    "start offset for {tp} must be >= 0, got {offset}"
                ));
                results.push((tp.clone(), Err(e)));
                continue;
            }
            changes.push((tp.clone(), SharePartition::new(*offset)));
            results.push((tp.clone(), Ok(())));
        }
        self.commit_share_changes(group, changes)?;
        Ok(results)
    }

    /// DeleteShareGroupOffsets: forgets the state of every partition of
    /// `topics` (the next fetch starts over by `share.auto.offset.reset`),
    /// under the same rules as `alter_share_offsets`. Returns, per topic,
    /// whether the group had state for it.
    pub fn delete_share_offsets(
        &mut self,
        group: &str,
        topics: &[String],
    ) -> Result<Vec<(String, bool)>> {
        self.check_share_admin(group)?;
        let now = self.now_ms();
        let g = &self.share_groups[group];
        let doomed: Vec<TopicPartition> = g
            .partitions
            .keys()
            .filter(|tp| topics.contains(&tp.topic))
            .cloned()
            .collect();
        let answer = topics
            .iter()
            .map(|t| (t.clone(), doomed.iter().any(|tp| &tp.topic == t)))
            .collect();
        let states: Vec<_> = doomed.iter().map(|tp| (tp.clone(), None)).collect();
        self.store.write_share_states(group, &states, now)?;
        let g = self.share_groups.get_mut(group).expect("checked");
        for tp in &doomed {
            g.partitions.remove(tp);
        }
        Ok(answer)
    }

    fn check_share_admin(&self, group: &str) -> Result<()> {
        let g = self.share_groups.get(group).ok_or_else(|| {
            GroupError::GroupIdNotFound(format!("Group {group} is not a share group."))
        })?;
        if !g.members.is_empty() {
            return Err(GroupError::NonEmptyGroup {
                group: group.to_string(),
                members: g.members.len(),
            });
        }
        Ok(())
    }
}
