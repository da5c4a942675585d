//! Seeded, replayable model test of KIP-932 share groups.
//!
//! Four simulated share consumers read two partitions that keep growing
//! (batches of records, some undeliverable: aborted transactions' records
//! and markers, and gaps left by compaction). Each step picks a random
//! action: a consumer joins, fetches (acknowledging some of what it holds
//! on the way), acknowledges records it holds (accept, release, reject,
//! gap), leaves, closes its session, or crashes (stops calling); records are
//! produced; the clock moves (live consumers heartbeat, locks and sessions
//! run out); the coordinator restarts, cleanly or by a crash. Checked after
//! every step and every fetch:
//!
//! - a fetch acquires only records that were Available (or never seen),
//!   each with a delivery count one above the one it had, never one that
//!   another member holds;
//! - a record that is done (Acknowledged or Archived) stays done, across
//!   restarts too, and is never delivered again; an answered Accept makes
//!   its record done;
//! - no delivery count exceeds the delivery limit (the brief allows the
//!   limit plus one; the coordinator keeps the tighter bound);
//! - at the end, once every consumer accepts what it gets, every record of
//!   both partitions ends Acknowledged or Archived — each exactly once.
//!
//! Replay one seed with `MK_SEED=<seed>`; `MK_SEEDS` and `MK_STEPS` change
//! how many seeds and steps run.

mod common;

use common::model::{self, tally};
use common::share::{FakeLog, ShareClient, share_leave};
use common::{Fixture, tp};
use mk_core::{ErrorCode, TopicPartition};
use mk_group::share::{AckBatch, AckType, RecordState, SharePartition};
use mk_group::{GroupSettings, ShareAutoOffsetReset, ShareHeartbeat};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, BTreeSet};

const DEFAULT_SEEDS: u64 = 30;
const DEFAULT_STEPS: usize = 300;
const MEMBERS: usize = 4;
const LIMIT: u16 = 4;

#[test]
fn random_share_group_runs_end_every_record_exactly_once() {
    model::run_seeds(DEFAULT_SEEDS, DEFAULT_STEPS, |seed, steps| {
        Model::new(seed).run(steps)
    });
}

tally!(Stats {
    required: [
        redeliveries,
        archived_at_limit,
        rejected,
        lock_expiries,
        refused_acks,
        restarts,
        drained_records,
    ],
    optional: [],
});

#[derive(Debug, PartialEq, Eq, Clone, Copy)]
enum Phase {
    Offline,
    Crashed,
    Member,
}

struct Consumer {
    client: ShareClient,
    phase: Phase,
    /// What it believes it holds: partition -> offsets.
    held: BTreeMap<TopicPartition, BTreeSet<i64>>,
}

struct Model {
    seed: u64,
    rng: ChaCha8Rng,
    f: Fixture,
    log: FakeLog,
    consumers: Vec<Consumer>,
    /// Offsets seen done; they must stay done.
    ended: BTreeSet<(TopicPartition, i64)>,
    stats: Stats,
    trace: model::Trace,
}

fn partitions() -> [TopicPartition; 2] {
    [tp("queue2", 0), tp("queue2", 1)]
}

impl Model {
    /// Consumer `c` no longer holds the batch starting at `first` of `tp`.
    fn forget_held(&mut self, c: usize, tp: &TopicPartition, first: i64) {
        self.consumers[c]
            .held
            .entry(tp.clone())
            .or_default()
            .remove(&first);
    }

    fn new(seed: u64) -> Self {
        let mut f = Fixture::new();
        f.meta.insert("queue2".into(), 2);
        let mut m = Self {
            seed,
            rng: ChaCha8Rng::seed_from_u64(seed),
            f,
            log: FakeLog::new(),
            consumers: (0..MEMBERS)
                .map(|i| Consumer {
                    client: ShareClient::new("s", &format!("m{i}")),
                    phase: Phase::Offline,
                    held: BTreeMap::new(),
                })
                .collect(),
            ended: BTreeSet::new(),
            stats: Stats::default(),
            trace: model::Trace::default(),
        };
        m.log.batches_per_read = 3;
        m.apply_settings();
        for tp in partitions() {
            m.log.append(&tp, 3, true);
        }
        m
    }

    fn apply_settings(&mut self) {
        self.f.c().set_group_settings(
            "s",
            GroupSettings {
                share_auto_offset_reset: Some(ShareAutoOffsetReset::Earliest),
                share_delivery_count_limit: Some(i32::from(LIMIT)),
                ..GroupSettings::default()
            },
        );
    }

    fn fail(&self, msg: String) -> ! {
        self.trace.fail(self.seed, &msg)
    }

    fn run(mut self, steps: usize) -> Stats {
        for step in 0..steps {
            let c = self.rng.gen_range(0..MEMBERS);
            match self.rng.gen_range(0..100) {
                0..=9 => self.join(c),
                10..=39 => self.fetch(c),
                40..=59 => self.acknowledge(c),
                60..=62 => self.leave(c),
                63..=64 => self.close(c),
                65..=67 => self.crash(c),
                68..=79 => self.produce(),
                80..=96 => self.tick(),
                _ => self.restart(),
            }
            self.check(step);
        }
        self.drain();
        self.stats
    }

    fn join(&mut self, c: usize) {
        if self.consumers[c].phase == Phase::Member {
            return;
        }
        let id = format!("m{c}-{}", self.rng.gen_range(0..1_000_000));
        let (co, meta) = self.f.parts();
        let hb = ShareHeartbeat {
            group_id: "s".into(),
            member_id: id.clone(),
            subscribed_topic_names: Some(vec!["queue2".into()]),
            ..ShareHeartbeat::default()
        };
        co.share_heartbeat(hb, meta)
            .unwrap_or_else(|e| panic!("join: {e}"));
        let cons = &mut self.consumers[c];
        cons.client = ShareClient::new("s", &id);
        cons.phase = Phase::Member;
        cons.held.clear();
        self.trace.note(format!("join {c} as {id}"));
    }

    /// Random acknowledgements of some of what `c` holds.
    fn random_acks(&mut self, c: usize) -> Vec<(TopicPartition, Vec<AckBatch>)> {
        let mut out = Vec::new();
        for (tp, offsets) in self.consumers[c].held.clone() {
            let picked: Vec<i64> = offsets
                .into_iter()
                .filter(|_| self.rng.gen_bool(0.6))
                .collect();
            if picked.is_empty() {
                continue;
            }
            let batches = picked
                .into_iter()
                .map(|o| {
                    let ty = match self.rng.gen_range(0..20) {
                        0..=9 => AckType::Accept,
                        10..=15 => AckType::Release,
                        16..=18 => AckType::Reject,
                        _ => AckType::Gap,
                    };
                    AckBatch {
                        first: o,
                        last: o,
                        types: vec![ty],
                    }
                })
                .collect();
            out.push((tp, batches));
        }
        out
    }

    fn states(&mut self) -> BTreeMap<TopicPartition, Option<SharePartition>> {
        partitions()
            .into_iter()
            .map(|tp| {
                let p = self.f.c().share_partition("s", &tp).cloned();
                (tp, p)
            })
            .collect()
    }

    fn fetch(&mut self, c: usize) {
        if self.consumers[c].phase != Phase::Member {
            return;
        }
        let acks = self.random_acks(c);
        let max = self.rng.gen_range(1..8);
        self.fetch_with(c, acks, max);
    }

    /// One ShareFetch of consumer `c`: acknowledges `acks`, then acquires
    /// at most `max` records, checking both halves.
    fn fetch_with(&mut self, c: usize, acks: Vec<(TopicPartition, Vec<AckBatch>)>, max: usize) {
        let before = self.states();
        let names = if self.consumers[c].client.epoch == 0 {
            partitions().to_vec()
        } else {
            Vec::new()
        };
        let req = mk_group::share::ShareFetchRequest {
            group_id: "s".into(),
            member_id: self.consumers[c].client.member.clone(),
            session_epoch: self.consumers[c].client.epoch,
            partitions: names,
            forgotten: Vec::new(),
            acks: acks.clone(),
        };
        let plan = match self.f.c().share_fetch_plan(&req, &self.log.bounds()) {
            Ok(p) => p,
            Err(e) => return self.refused(c, e.code(), &e.to_string()),
        };
        let cl = &mut self.consumers[c].client;
        cl.epoch = if cl.epoch < 0 { 0 } else { cl.epoch + 1 };
        self.after_acks(c, &acks, &plan.acks, &before);
        let before = self.states();
        let reads = self.log.read(&plan);
        let member = self.consumers[c].client.member.clone();
        let got = self
            .f
            .c()
            .share_fetch_acquire("s", &member, &reads, max)
            .unwrap_or_else(|e| panic!("acquire: {e}"));
        for g in got {
            for r in g.acquired {
                self.check_acquired(&before, &g.partition, r.first, r.last, r.delivery_count);
                self.consumers[c]
                    .held
                    .entry(g.partition.clone())
                    .or_default()
                    .extend(r.first..=r.last);
            }
        }
    }

    fn check_acquired(
        &mut self,
        before: &BTreeMap<TopicPartition, Option<SharePartition>>,
        tp: &TopicPartition,
        first: i64,
        last: i64,
        count: u16,
    ) {
        for o in first..=last {
            if self.ended.contains(&(tp.clone(), o)) {
                self.fail(format!("{tp}@{o} was done and is delivered again"));
            }
            let prior = before[tp].as_ref().and_then(|p| {
                if o < p.start_offset() {
                    Some((RecordState::Acknowledged, 0))
                } else {
                    p.state_of(o)
                }
            });
            let expected = match prior {
                None => 1,
                Some((RecordState::Available, n)) => n + 1,
                Some((s, _)) => self.fail(format!("{tp}@{o} was {s} and is acquired")),
            };
            if count != expected {
                self.fail(format!(
                    "{tp}@{o} delivered with count {count}, expected {expected}"
                ));
            }
            if count > 1 {
                self.stats.redeliveries += 1;
            }
        }
    }

    fn refused(&mut self, c: usize, code: ErrorCode, msg: &str) {
        match code {
            ErrorCode::UnknownMember
            | ErrorCode::ShareSessionNotFound
            | ErrorCode::InvalidShareSessionEpoch => {
                // The consumer starts over: a new session (and membership).
                let cons = &mut self.consumers[c];
                cons.client.epoch = 0;
                cons.held.clear();
                if code == ErrorCode::UnknownMember {
                    cons.phase = Phase::Offline;
                }
            }
            _ => self.fail(format!("consumer {c}: unexpected {code}: {msg}")),
        }
    }

    /// Checks answered acknowledgements and updates what `c` holds.
    fn after_acks(
        &mut self,
        c: usize,
        sent: &[(TopicPartition, Vec<AckBatch>)],
        results: &[(TopicPartition, mk_group::Result<()>)],
        before: &BTreeMap<TopicPartition, Option<SharePartition>>,
    ) {
        for ((tp, batches), (_, r)) in sent.iter().zip(results) {
            if r.is_err() {
                self.stats.refused_acks += 1;
                // It held something it no longer does (its lock ran out).
                for b in batches {
                    self.forget_held(c, tp, b.first);
                }
                continue;
            }
            for b in batches {
                self.forget_held(c, tp, b.first);
                let after = self.f.c().share_partition("s", tp).cloned();
                let done = after.as_ref().is_none_or(|p| {
                    b.first < p.start_offset()
                        || p.state_of(b.first).is_some_and(|(s, _)| s.is_done())
                });
                let count = before[tp]
                    .as_ref()
                    .and_then(|p| p.state_of(b.first))
                    .map_or(0, |(_, n)| n);
                match b.types[0] {
                    AckType::Accept | AckType::Reject | AckType::Gap if !done => {
                        self.fail(format!(
                            "{tp}@{} was answered {:?} and is not done",
                            b.first, b.types[0]
                        ));
                    }
                    AckType::Reject => self.stats.rejected += 1,
                    AckType::Release if done && count >= LIMIT => self.stats.archived_at_limit += 1,
                    _ => {}
                }
            }
        }
    }

    fn acknowledge(&mut self, c: usize) {
        if self.consumers[c].phase != Phase::Member || self.consumers[c].client.epoch == 0 {
            return;
        }
        let acks = self.random_acks(c);
        let before = self.states();
        let req = mk_group::share::ShareFetchRequest {
            group_id: "s".into(),
            member_id: self.consumers[c].client.member.clone(),
            session_epoch: self.consumers[c].client.epoch,
            acks: acks.clone(),
            ..Default::default()
        };
        match self.f.c().share_acknowledge(&req) {
            Ok(results) => {
                self.consumers[c].client.epoch += 1;
                self.after_acks(c, &acks, &results, &before);
            }
            Err(e) => self.refused(c, e.code(), &e.to_string()),
        }
    }

    fn leave(&mut self, c: usize) {
        if self.consumers[c].phase != Phase::Member {
            return;
        }
        let member = self.consumers[c].client.member.clone();
        if let Err(e) = share_leave(&mut self.f, "s", &member)
            && e.code() != ErrorCode::UnknownMember
        {
            self.fail(format!("leave: {e}"));
        }
        self.consumers[c].phase = Phase::Offline;
        self.consumers[c].held.clear();
        self.trace.note(format!("leave {c}"));
    }

    fn close(&mut self, c: usize) {
        if self.consumers[c].phase != Phase::Member || self.consumers[c].client.epoch == 0 {
            return;
        }
        let cons = &mut self.consumers[c];
        let r = cons.client.close(&mut self.f, vec![]);
        cons.client.epoch = 0;
        cons.held.clear();
        if let Err(e) = r {
            self.refused(c, e.code(), &e.to_string());
        }
    }

    fn crash(&mut self, c: usize) {
        if self.consumers[c].phase == Phase::Member {
            self.consumers[c].phase = Phase::Crashed;
            self.consumers[c].held.clear();
            self.trace.note(format!("crash {c}"));
        }
    }

    fn produce(&mut self) {
        let tp = partitions()[self.rng.gen_range(0..2)].clone();
        match self.rng.gen_range(0..10) {
            0 => self.log.append(&tp, self.rng.gen_range(1..4), false),
            1 => self.log.append_after_gap(&tp, self.rng.gen_range(1..3), 2),
            _ => self.log.append(&tp, self.rng.gen_range(1..5), true),
        }
    }

    fn tick(&mut self) {
        let ms = self.rng.gen_range(1_000..40_000);
        self.f.clock.advance(ms);
        for c in 0..MEMBERS {
            if self.consumers[c].phase != Phase::Member {
                continue;
            }
            let hb = ShareHeartbeat {
                group_id: "s".into(),
                member_id: self.consumers[c].client.member.clone(),
                member_epoch: 0,
                subscribed_topic_names: Some(vec!["queue2".into()]),
                ..ShareHeartbeat::default()
            };
            let (co, meta) = self.f.parts();
            co.share_heartbeat(hb, meta)
                .unwrap_or_else(|e| panic!("heartbeat: {e}"));
        }
        let held_before = self.acquired_runs();
        let removed = self.f.expire();
        if self.acquired_runs() < held_before {
            self.stats.lock_expiries += 1;
        }
        self.trace
            .note(format!("tick {ms} ms, removed {removed:?}"));
    }

    /// How many runs of records are Acquired over both partitions.
    fn acquired_runs(&mut self) -> usize {
        self.states()
            .values()
            .flatten()
            .map(|p| p.runs().filter(|r| r.2 == RecordState::Acquired).count())
            .sum()
    }

    fn restart(&mut self) {
        self.stats.restarts += 1;
        if self.rng.gen_bool(0.5) {
            self.f.restart();
        } else {
            self.f.crash();
        }
        self.apply_settings();
        for cons in &mut self.consumers {
            if cons.phase == Phase::Member {
                cons.phase = Phase::Offline;
            }
            cons.client.epoch = 0;
            cons.held.clear();
        }
        self.trace.note("coordinator restart".into());
    }

    fn check(&mut self, step: usize) {
        for (tp, p) in self.states() {
            let Some(p) = p else { continue };
            for (first, last, state, count, _) in p.runs() {
                if count > LIMIT {
                    self.fail(format!(
                        "step {step}: {tp}@{first}..={last} delivered {count} times, limit {LIMIT}"
                    ));
                }
                if state.is_done() {
                    for o in first..=last {
                        self.ended.insert((tp.clone(), o));
                    }
                }
            }
            let start = p.start_offset();
            for (t, o) in self.ended.clone() {
                if t != tp || o < start {
                    continue;
                }
                if !p.state_of(o).is_some_and(|(s, _)| s.is_done()) {
                    self.fail(format!(
                        "step {step}: {tp}@{o} was done and is {:?} now",
                        p.state_of(o)
                    ));
                }
            }
            for o in self.ended_range(&tp, start) {
                self.ended.insert((tp.clone(), o));
            }
        }
    }

    /// Offsets below the start are done.
    fn ended_range(&self, _tp: &TopicPartition, start: i64) -> std::ops::Range<i64> {
        0..start
    }

    /// Every consumer accepts whatever it gets until both partitions are
    /// done up to their end.
    fn drain(&mut self) {
        self.f.clock.advance(100_000);
        self.f.expire();
        for c in 0..MEMBERS {
            self.consumers[c].phase = Phase::Offline;
            self.join(c);
        }
        for round in 0..400 {
            if self.drain_round(round % MEMBERS) {
                return;
            }
        }
        self.fail("the share group did not drain within 400 rounds".into());
    }

    /// Every partition is done up to its end and nobody holds anything.
    fn all_drained(&mut self) -> bool {
        let ends: Vec<(TopicPartition, i64)> = partitions()
            .into_iter()
            .map(|tp| {
                let end = self.log.end(&tp);
                (tp, end)
            })
            .collect();
        ends.iter().all(|(tp, end)| {
            self.f
                .c()
                .share_partition("s", tp)
                .is_some_and(|p| p.start_offset() >= *end)
        }) && self
            .consumers
            .iter()
            .all(|c| c.held.values().all(BTreeSet::is_empty))
    }

    /// One consumer accepts what it holds and fetches more; true once
    /// everything is done, each record of both partitions ended.
    fn drain_round(&mut self, c: usize) -> bool {
        let held = std::mem::take(&mut self.consumers[c].held);
        let acks = held
            .into_iter()
            .map(|(tp, os)| {
                let batches = os
                    .into_iter()
                    .map(|o| AckBatch {
                        first: o,
                        last: o,
                        types: vec![AckType::Accept],
                    })
                    .collect();
                (tp, batches)
            })
            .collect();
        self.fetch_with(c, acks, 50);
        self.check(usize::MAX);
        if !self.all_drained() {
            return false;
        }
        for tp in partitions() {
            let end = self.log.end(&tp);
            let missing: Vec<i64> = (0..end)
                .filter(|o| !self.ended.contains(&(tp.clone(), *o)))
                .collect();
            if !missing.is_empty() {
                self.fail(format!("{tp}: offsets {missing:?} never ended"));
            }
            self.stats.drained_records += u64::try_from(end).unwrap_or(0);
        }
        true
    }
}
