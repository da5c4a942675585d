//! The state of one share partition (KIP-932's `SharePartition`): which
//! records of one topic partition a share group has handed out, to whom,
//! how often, and which are done.
//!
//! Below the share-partition start offset (SPSO) every record is done. From
//! there to the end offset (SPEO) lies the in-flight window, where each
//! record is Available (to be handed out), Acquired (handed to one member
//! under a time lock), Acknowledged (accepted) or Archived (rejected,
//! delivered too often, never deliverable: a transaction marker, an aborted
//! record, a compaction gap). Records past the window have never been seen.
//! Runs of records with the same state are kept as one interval, so a
//! window costs what its distinct states cost, not what its records do.
//!
//! The transitions: acquire (Available or unseen -> Acquired, the delivery
//! count grows), acknowledge (Acquired by this member -> Acknowledged,
//! Available, Archived), release (a member leaves or its lock runs out:
//! Acquired -> Available, or Archived once the delivery count reached the
//! limit). After each, the start moves past the done records at the front.

use crate::error::{GroupError, Result};
use std::collections::BTreeMap;
use std::fmt;

/// The state of a record in the in-flight window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RecordState {
    Available,
    Acquired,
    Acknowledged,
    Archived,
}

impl RecordState {
    /// Kafka's persisted state byte (0 available, 1 acquired, 2
    /// acknowledged, 4 archived).
    pub const fn to_byte(self) -> u8 {
        match self {
            RecordState::Available => 0,
            RecordState::Acquired => 1,
            RecordState::Acknowledged => 2,
            RecordState::Archived => 4,
        }
    }

    pub fn from_byte(b: u8) -> Option<RecordState> {
        [
            Self::Available,
            Self::Acquired,
            Self::Acknowledged,
            Self::Archived,
        ]
        .into_iter()
        .find(|s| s.to_byte() == b)
    }

    /// True once nothing can happen to the record any more.
    pub const fn is_done(self) -> bool {
        matches!(self, RecordState::Acknowledged | RecordState::Archived)
    }
}

impl fmt::Display for RecordState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RecordState::Available => "Available",
            RecordState::Acquired => "Acquired",
            RecordState::Acknowledged => "Acknowledged",
            RecordState::Archived => "Archived",
        })
    }
}

/// How a member acknowledges a range of records (ShareAcknowledge's
/// acknowledge types).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AckType {
    /// The member found no record at the offset (a compaction gap, a
    /// marker): archived.
    Gap,
    /// Processed: acknowledged.
    Accept,
    /// Not processed: available again (or archived at the delivery limit).
    Release,
    /// Unprocessable: archived, never delivered again.
    Reject,
}

impl AckType {
    /// The wire value (0 gap, 1 accept, 2 release, 3 reject).
    pub fn from_wire(v: i8) -> Option<AckType> {
        match v {
            0 => Some(AckType::Gap),
            1 => Some(AckType::Accept),
            2 => Some(AckType::Release),
            3 => Some(AckType::Reject),
            _ => None,
        }
    }
}

/// One acknowledgement batch: offsets `first..=last` with one type for all
/// of them, or one type per offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AckBatch {
    pub first: i64,
    pub last: i64,
    pub types: Vec<AckType>,
}

/// A stretch of fetched log, as the data path read it: offsets
/// `first..=last` of one batch, deliverable or not (a control batch, or an
/// aborted transaction's batch under read_committed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchedSpan {
    pub first: i64,
    pub last: i64,
    pub deliverable: bool,
}

/// Records handed to a member by one fetch: `first..=last`, each delivered
/// for the `delivery_count`-th time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AcquiredRange {
    pub first: i64,
    pub last: i64,
    pub delivery_count: u16,
}

/// One run of records with the same state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Run {
    pub(crate) last: i64,
    pub(crate) state: RecordState,
    pub(crate) delivery_count: u16,
    /// The member holding an Acquired run, and when its lock runs out.
    pub(crate) holder: Option<(String, i64)>,
}

impl Run {
    fn same_as(&self, o: &Run) -> bool {
        self.state == o.state && self.delivery_count == o.delivery_count && self.holder == o.holder
    }
}

/// What acquisition may take.
#[derive(Debug, Clone, Copy)]
pub struct AcquireLimits {
    /// Most records this fetch may acquire.
    pub max_records: usize,
    /// Most records the in-flight window may hold (Kafka's
    /// `group.share.partition.max.record.locks`).
    pub max_in_flight: i64,
    pub lock_until_ms: i64,
    /// An Available record already delivered this often is archived
    /// instead (it can be: a restart makes held records Available again
    /// with the count they reached).
    pub delivery_limit: u16,
}

/// The state of one share partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharePartition {
    start: i64,
    end: i64,
    /// Covers `start..end` without holes, keyed by first offset.
    pub(crate) runs: BTreeMap<i64, Run>,
}

impl SharePartition {
    /// A partition whose state starts at `start` with nothing in flight.
    pub fn new(start: i64) -> Self {
        Self {
            start,
            end: start,
            runs: BTreeMap::new(),
        }
    }

    /// The share-partition start offset: every record before it is done.
    pub fn start_offset(&self) -> i64 {
        self.start
    }

    /// The first offset never fetched.
    pub fn end_offset(&self) -> i64 {
        self.end
    }

    /// Every run of the window: `(first, last, state, delivery count,
    /// holder)`, in offset order.
    pub fn runs(&self) -> impl Iterator<Item = (i64, i64, RecordState, u16, Option<&str>)> {
        self.runs.iter().map(|(first, r)| {
            (
                *first,
                r.last,
                r.state,
                r.delivery_count,
                r.holder.as_ref().map(|(m, _)| m.as_str()),
            )
        })
    }

    /// The state and delivery count of one offset (`None` before the start
    /// counts as done: Acknowledged or Archived is not remembered there).
    pub fn state_of(&self, offset: i64) -> Option<(RecordState, u16)> {
        let (_, r) = self.runs.range(..=offset).next_back()?;
        (offset <= r.last).then_some((r.state, r.delivery_count))
    }

    /// Where the next fetch should read: the first Available record of the
    /// window, else the end when the window has room; `None` when there is
    /// nothing to hand out.
    pub fn fetch_offset(&self, max_in_flight: i64) -> Option<i64> {
        let available = self
            .runs
            .iter()
            .find(|(_, r)| r.state == RecordState::Available)
            .map(|(first, _)| *first);
        available.or((self.end - self.start < max_in_flight).then_some(self.end))
    }

    /// Makes `offset` (within the window) the first offset of a run.
    fn split_at(&mut self, offset: i64) {
        let Some((&first, run)) = self.runs.range(..offset).next_back() else {
            return;
        };
        if run.last < offset {
            return;
        }
        let tail = run.clone();
        self.runs.get_mut(&first).expect("found above").last = offset - 1;
        self.runs.insert(offset, tail);
    }

    /// Splits the window so that `first..=last` is a whole number of runs.
    fn isolate(&mut self, first: i64, last: i64) {
        self.split_at(first);
        if last + 1 < self.end {
            self.split_at(last + 1);
        }
    }

    /// Merges neighbouring runs that look alike and moves the start past
    /// the done records at the front.
    fn tidy(&mut self) {
        let firsts: Vec<i64> = self.runs.keys().copied().collect();
        let mut prev: Option<i64> = None;
        for first in firsts {
            if let Some(p) = prev
                && self.runs[&p].same_as(&self.runs[&first])
            {
                let run = self.runs.remove(&first).expect("listed");
                self.runs.get_mut(&p).expect("kept").last = run.last;
                continue;
            }
            prev = Some(first);
        }
        while let Some(entry) = self.runs.first_entry() {
            if !entry.get().state.is_done() {
                break;
            }
            self.start = entry.get().last + 1;
            entry.remove();
        }
        if self.runs.is_empty() {
            self.start = self.end.max(self.start);
        }
    }
}

/// The consequences of a run leaving Acquired without an acknowledgement.
fn released(run: &mut Run, delivery_limit: u16) {
    run.holder = None;
    run.state = if run.delivery_count >= delivery_limit {
        RecordState::Archived
    } else {
        RecordState::Available
    };
}

impl SharePartition {
    /// Hands `member` what the fetched `spans` (read up to `read_end`)
    /// allow: Available records of the window first seen again, then
    /// records past the window, which extend it (records that cannot be
    /// delivered are archived as they join it). Returns the acquired
    /// ranges, in offset order.
    pub fn acquire(
        &mut self,
        member: &str,
        spans: &[FetchedSpan],
        read_end: i64,
        limits: AcquireLimits,
    ) -> Vec<AcquiredRange> {
        let mut budget = limits.max_records;
        let mut out = Vec::new();
        self.reacquire(member, spans, limits, &mut budget, &mut out);
        self.extend(member, spans, read_end, limits, &mut budget, &mut out);
        self.tidy();
        merge_ranges(out)
    }

    /// Acquires Available records of the window that the spans deliver.
    fn reacquire(
        &mut self,
        member: &str,
        spans: &[FetchedSpan],
        limits: AcquireLimits,
        budget: &mut usize,
        out: &mut Vec<AcquiredRange>,
    ) {
        for span in spans.iter().filter(|s| s.deliverable) {
            let lo = span.first.max(self.start);
            let hi = span.last.min(self.end - 1);
            let mut at = lo;
            while at <= hi && *budget > 0 {
                let Some((_, run)) = self.runs.range(..=at).next_back() else {
                    break;
                };
                let run_last = run.last.min(hi);
                if run.state != RecordState::Available {
                    at = run_last + 1;
                    continue;
                }
                if run.delivery_count >= limits.delivery_limit {
                    self.isolate(at, run_last);
                    self.runs.get_mut(&at).expect("isolated").state = RecordState::Archived;
                    at = run_last + 1;
                    continue;
                }
                let take = count_to(at, run_last, *budget);
                let last = at + take - 1;
                self.isolate(at, last);
                let r = self.runs.get_mut(&at).expect("isolated");
                r.state = RecordState::Acquired;
                r.delivery_count = r.delivery_count.saturating_add(1);
                r.holder = Some((member.to_string(), limits.lock_until_ms));
                out.push(AcquiredRange {
                    first: at,
                    last,
                    delivery_count: r.delivery_count,
                });
                *budget -= usize::try_from(take).unwrap_or(usize::MAX);
                at = last + 1;
            }
        }
    }

    /// Extends the window past its end over what was read.
    fn extend(
        &mut self,
        member: &str,
        spans: &[FetchedSpan],
        read_end: i64,
        limits: AcquireLimits,
        budget: &mut usize,
        out: &mut Vec<AcquiredRange>,
    ) {
        let window_end = self.start.saturating_add(limits.max_in_flight);
        while self.end < read_end && self.end < window_end {
            let at = self.end;
            let span = spans.iter().find(|s| s.first <= at && at <= s.last);
            let (last, deliverable) = match span {
                Some(s) => (s.last.min(read_end - 1).min(window_end - 1), s.deliverable),
                None => {
                    let next = spans.iter().map(|s| s.first).filter(|f| *f > at).min();
                    (
                        next.unwrap_or(read_end).min(read_end).min(window_end) - 1,
                        false,
                    )
                }
            };
            if !deliverable {
                self.push_run(at, last, RecordState::Archived, 0, None);
                continue;
            }
            if *budget == 0 {
                break;
            }
            let take = count_to(at, last, *budget);
            let last = at + take - 1;
            let holder = Some((member.to_string(), limits.lock_until_ms));
            self.push_run(at, last, RecordState::Acquired, 1, holder);
            out.push(AcquiredRange {
                first: at,
                last,
                delivery_count: 1,
            });
            *budget -= usize::try_from(take).unwrap_or(usize::MAX);
        }
    }

    fn push_run(
        &mut self,
        first: i64,
        last: i64,
        state: RecordState,
        count: u16,
        holder: Option<(String, i64)>,
    ) {
        debug_assert_eq!(first, self.end);
        self.runs.insert(
            first,
            Run {
                last,
                state,
                delivery_count: count,
                holder,
            },
        );
        self.end = last + 1;
    }

    /// Applies one member's acknowledgements, all or nothing: every offset
    /// named must be Acquired by `member`, else INVALID_RECORD_STATE and
    /// nothing changes.
    pub fn acknowledge(
        &mut self,
        member: &str,
        batches: &[AckBatch],
        delivery_limit: u16,
    ) -> Result<()> {
        for b in batches {
            self.check_ack(member, b)?;
        }
        let mut ranges: Vec<(i64, i64)> = batches.iter().map(|b| (b.first, b.last)).collect();
        ranges.sort_unstable();
        if let Some(w) = ranges.windows(2).find(|w| w[1].0 <= w[0].1) {
            return Err(GroupError::InvalidRecordState(format!(
                "acknowledgement batches {}..={} and {}..={} overlap",
                w[0].0, w[0].1, w[1].0, w[1].1
            )));
        }
        for b in batches {
            if let [ty] = b.types.as_slice() {
                self.settle(b.first, b.last, *ty, delivery_limit);
            } else {
                for (offset, ty) in (b.first..=b.last).zip(&b.types) {
                    self.settle(offset, offset, *ty, delivery_limit);
                }
            }
        }
        self.tidy();
        Ok(())
    }

    /// Gives `first..=last` (checked to be Acquired) the outcome `ty`.
    fn settle(&mut self, first: i64, last: i64, ty: AckType, delivery_limit: u16) {
        self.isolate(first, last);
        for (_, run) in self.runs.range_mut(first..=last) {
            match ty {
                AckType::Accept => {
                    run.state = RecordState::Acknowledged;
                    run.holder = None;
                }
                AckType::Gap | AckType::Reject => {
                    run.state = RecordState::Archived;
                    run.holder = None;
                }
                AckType::Release => released(run, delivery_limit),
            }
        }
    }

    fn check_ack(&self, member: &str, b: &AckBatch) -> Result<()> {
        let bad = |why: String| Err(GroupError::InvalidRecordState(why));
        let len = b
            .last
            .checked_sub(b.first)
            .and_then(|d| d.checked_add(1))
            .unwrap_or(0);
        if b.first < 0 || len <= 0 {
            return bad(format!(
                "acknowledgement batch {}..={} is empty or negative",
                b.first, b.last
            ));
        }
        if b.types.is_empty() || (b.types.len() != 1 && i64::try_from(b.types.len()) != Ok(len)) {
            return bad(format!(
                "acknowledgement batch {}..={} has {} types; one, or one per offset, is expected",
                b.first,
                b.last,
                b.types.len()
            ));
        }
        if b.first < self.start || b.last >= self.end {
            return bad(format!(
                "offsets {}..={} are outside the in-flight window {}..{}",
                b.first, b.last, self.start, self.end
            ));
        }
        for (first, run) in self.runs.range(..=b.last).rev() {
            if run.last < b.first {
                break;
            }
            let mine = run.holder.as_ref().is_some_and(|(m, _)| m == member);
            if run.state != RecordState::Acquired || !mine {
                return bad(format!(
                    "offsets {}..={} are {} (not acquired by member {member})",
                    (*first).max(b.first),
                    run.last.min(b.last),
                    run.state
                ));
            }
        }
        Ok(())
    }

    /// Releases every record `member` holds (it left, or closed its share
    /// session). True if anything changed.
    pub fn release_member(&mut self, member: &str, delivery_limit: u16) -> bool {
        self.release_where(delivery_limit, |(m, _)| m == member)
    }

    /// Releases every lock that ran out before `now_ms`. True if anything
    /// changed.
    pub fn expire_locks(&mut self, now_ms: i64, delivery_limit: u16) -> bool {
        self.release_where(delivery_limit, |(_, until)| now_ms > *until)
    }

    fn release_where(
        &mut self,
        delivery_limit: u16,
        pick: impl Fn(&(String, i64)) -> bool,
    ) -> bool {
        let mut changed = false;
        for run in self.runs.values_mut() {
            if run.state == RecordState::Acquired && run.holder.as_ref().is_some_and(&pick) {
                released(run, delivery_limit);
                changed = true;
            }
        }
        if changed {
            self.tidy();
        }
        changed
    }

    /// The earliest lock deadline, if any record is Acquired.
    pub fn next_lock_deadline(&self) -> Option<i64> {
        self.runs
            .values()
            .filter_map(|r| r.holder.as_ref().map(|(_, d)| *d))
            .min()
    }

    /// Moves the start to `offset` (the log start passed it, or an admin
    /// reset the group's offsets): everything before it is forgotten, and
    /// a start past the end empties the window.
    pub fn move_start(&mut self, offset: i64) {
        if offset <= self.start {
            return;
        }
        if offset >= self.end {
            self.runs.clear();
            self.start = offset;
            self.end = offset;
            return;
        }
        self.split_at(offset);
        self.runs.retain(|first, _| *first >= offset);
        self.start = offset;
    }
}

/// How many offsets of `first..=last` a budget of `budget` records takes.
fn count_to(first: i64, last: i64, budget: usize) -> i64 {
    let len = last - first + 1;
    len.min(i64::try_from(budget).unwrap_or(i64::MAX))
}

/// Joins neighbouring ranges with the same delivery count.
fn merge_ranges(ranges: Vec<AcquiredRange>) -> Vec<AcquiredRange> {
    let mut out: Vec<AcquiredRange> = Vec::with_capacity(ranges.len());
    for r in ranges {
        match out.last_mut() {
            Some(p) if p.last + 1 == r.first && p.delivery_count == r.delivery_count => {
                p.last = r.last
            }
            _ => out.push(r),
        }
    }
    out
}

/// The persisted form of a share partition: Acquired records are stored
/// as Available with the delivery count they reached, so a restart hands
/// them out again but never resets how often they were delivered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareSnapshot {
    pub start_offset: i64,
    /// `(first, last, state, delivery count)`, covering the window.
    pub runs: Vec<(i64, i64, RecordState, u16)>,
}

impl SharePartition {
    pub fn snapshot(&self) -> ShareSnapshot {
        ShareSnapshot {
            start_offset: self.start,
            runs: self
                .runs
                .iter()
                .map(|(first, r)| {
                    let state = match r.state {
                        RecordState::Acquired => RecordState::Available,
                        s => s,
                    };
                    (*first, r.last, state, r.delivery_count)
                })
                .collect(),
        }
    }

    /// Rebuilds a partition from its snapshot. The snapshot was checked
    /// when decoded (runs contiguous from the start, no Acquired run).
    pub fn from_snapshot(s: &ShareSnapshot) -> Self {
        let mut p = SharePartition::new(s.start_offset);
        for (first, last, state, count) in &s.runs {
            p.push_run(*first, *last, *state, *count, None);
        }
        p.tidy();
        p
    }
}
