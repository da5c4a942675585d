//! A randomized model test of the whole seam: random interleavings of
//! InitProducerId, AddPartitionsToTxn + Produce, AddOffsetsToTxn +
//! TxnOffsetCommit, EndTxn, timeouts, crashes (also in the middle of a
//! commit's markers), clean restarts and zombie producers of two
//! transactional ids over two real partition logs, with every plan executed
//! the way mk-cluster does. After every step no uncommitted record is
//! visible, the LSO is at most the high watermark and only committed
//! transactions' offsets are stored; at the end exactly the committed
//! records and offsets are visible. proptest prints the failing operation
//! list, which replays the case exactly (the cluster-level model in
//! mk-cluster prints a seed instead).
#![allow(
    clippy::too_many_lines,
    reason = "a test scenario reads top to bottom as one story; split, its steps would scatter"
)]

mod common;

use common::{Harness, Session, tp};
use mk_core::TopicPartition;
use mk_txn::{CompletionPlan, EndTxn, Outcome, TxnState};
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet};

const IDS: [&str; 2] = ["t0", "t1"];

#[derive(Debug, Clone)]
enum Op {
    Init(usize),
    Send(usize, u32),
    StageOffset(usize),
    Commit(usize),
    Abort(usize),
    /// EndTxn(commit), then the process dies after this many markers.
    CommitThenCrash(usize, usize),
    Zombie(usize, u32),
    Expire,
    Crash,
    CleanRestart,
}

fn arb_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => (0..2usize).prop_map(Op::Init),
        6 => (0..2usize, 0..2u32).prop_map(|(i, p)| Op::Send(i, p)),
        2 => (0..2usize).prop_map(Op::StageOffset),
        2 => (0..2usize).prop_map(Op::Commit),
        1 => (0..2usize).prop_map(Op::Abort),
        1 => (0..2usize, 0..3usize).prop_map(|(i, k)| Op::CommitThenCrash(i, k)),
        1 => (0..2usize, 0..2u32).prop_map(|(i, p)| Op::Zombie(i, p)),
        1 => Just(Op::Expire),
        1 => Just(Op::Crash),
        1 => Just(Op::CleanRestart),
    ]
}

#[derive(Default)]
struct Model {
    /// The current session of each id, once initialized.
    session: [Option<Session>; 2],
    /// Sessions that a newer one or a timeout fenced.
    zombies: Vec<Session>,
    /// Values sent by the current transaction of each id.
    pending: [Vec<String>; 2],
    /// The offset staged by the current transaction of each id.
    staged: [Option<i64>; 2],
    committed: BTreeSet<String>,
    aborted: BTreeSet<String>,
    /// (group, partition) -> offset that committed transactions stored.
    offsets: BTreeMap<(String, TopicPartition), i64>,
    counter: i64,
}

fn input(i: usize) -> TopicPartition {
    tp("in", u32::try_from(i).unwrap())
}

impl Model {
    fn index(id: &str) -> usize {
        IDS.iter().position(|x| *x == id).unwrap()
    }

    fn finish(&mut self, h: &mut Harness, mut plan: CompletionPlan) {
        h.execute(&mut plan);
        let (outcome, id) = (plan.outcome(), plan.transactional_id().to_string());
        let state = h.coord().complete(plan).unwrap();
        assert_eq!(state, outcome.complete_state(), "{id}");
        let i = Self::index(&id);
        let values = std::mem::take(&mut self.pending[i]);
        let staged = self.staged[i].take();
        if outcome == Outcome::Commit {
            self.committed.extend(values);
            if let Some(o) = staged {
                self.offsets.insert(("g".to_string(), input(i)), o);
            }
        } else {
            self.aborted.extend(values);
        }
    }

    fn finish_all(&mut self, h: &mut Harness, plans: Vec<CompletionPlan>) {
        for plan in plans {
            self.finish(h, plan);
        }
    }

    fn init(&mut self, h: &mut Harness, i: usize) {
        // A prior transaction the new session aborts (or a prepared one it
        // completes) is settled through the plan the harness finishes; the
        // model learns the outcome from the state it ends in.
        let before = h.coord_ref().describe(IDS[i]);
        let s = h.init(IDS[i]);
        if let Some(d) = before
            && !d.state.is_idle()
        {
            let values = std::mem::take(&mut self.pending[i]);
            let staged = self.staged[i].take();
            if d.state == TxnState::PrepareCommit {
                self.committed.extend(values);
                if let Some(o) = staged {
                    self.offsets.insert(("g".to_string(), input(i)), o);
                }
            } else {
                self.aborted.extend(values);
            }
        }
        if let Some(old) = self.session[i].replace(s) {
            self.zombies.push(old);
        }
    }

    fn apply(&mut self, h: &mut Harness, op: &Op) {
        match *op {
            Op::Init(i) => self.init(h, i),
            Op::Send(i, p) => {
                let Some(s) = self.session[i].clone() else {
                    return;
                };
                let out = tp("out", p);
                let value = format!("v{}", self.counter);
                self.counter += 1;
                if h.coord()
                    .add_partitions(&s.id, s.pid, s.epoch, std::slice::from_ref(&out))
                    .is_ok()
                {
                    h.produce(&s, &out, &value).unwrap();
                    self.pending[i].push(value);
                }
            }
            Op::StageOffset(i) => {
                let Some(s) = self.session[i].clone() else {
                    return;
                };
                self.counter += 1;
                let c = h.coord();
                if c.add_offsets(&s.id, s.pid, s.epoch, "g").is_ok() {
                    c.stage_offsets(&s.id, s.pid, s.epoch, "g", [(input(i), self.counter)])
                        .unwrap();
                    self.staged[i] = Some(self.counter);
                }
            }
            Op::Commit(i) | Op::Abort(i) => {
                let Some(s) = self.session[i].clone() else {
                    return;
                };
                let outcome = if matches!(op, Op::Commit(_)) {
                    Outcome::Commit
                } else {
                    Outcome::Abort
                };
                if let Ok(EndTxn::Execute(plan)) = h.coord().end_txn(&s.id, s.pid, s.epoch, outcome)
                {
                    self.finish(h, plan);
                }
            }
            Op::CommitThenCrash(i, k) => {
                let Some(s) = self.session[i].clone() else {
                    return;
                };
                if let Ok(EndTxn::Execute(plan)) =
                    h.coord().end_txn(&s.id, s.pid, s.epoch, Outcome::Commit)
                {
                    let markers: Vec<_> = plan
                        .markers()
                        .iter()
                        .take(k)
                        .map(|m| (m.tp().clone(), m.batch().clone()))
                        .collect();
                    for (tp, batch) in markers {
                        h.raw_marker(&tp, &batch);
                    }
                    drop(plan);
                }
                let plans = h.crash_and_reopen();
                self.finish_all(h, plans);
            }
            Op::Zombie(i, p) => {
                let Some(z) = self.zombies.iter().rev().find(|z| z.id == IDS[i]).cloned() else {
                    return;
                };
                // A fenced producer can append nothing and change nothing.
                let out = tp("out", p);
                let leo = h.log(&out).leo();
                let c = h.coord();
                assert!(
                    c.add_partitions(&z.id, z.pid, z.epoch, std::slice::from_ref(&out))
                        .is_err()
                );
                assert!(c.add_offsets(&z.id, z.pid, z.epoch, "g").is_err());
                assert!(c.end_txn(&z.id, z.pid, z.epoch, Outcome::Commit).is_err());
                assert!(h.produce(&z, &out, "zombie").is_err());
                assert_eq!(h.log(&out).leo(), leo);
            }
            Op::Expire => {
                // Every open transaction is past its timeout after this, and
                // the rule is that its session is fenced with it.
                let open: Vec<usize> = (0..2)
                    .filter(|i| {
                        h.coord_ref().describe(IDS[*i]).map(|d| d.state) == Some(TxnState::Ongoing)
                    })
                    .collect();
                h.clock.advance(common::TIMEOUT_MS + 1);
                let plans = h.coord().expire_transactions().unwrap();
                assert_eq!(plans.len(), open.len());
                self.finish_all(h, plans);
                for i in open {
                    if let Some(s) = self.session[i].take() {
                        self.zombies.push(s);
                    }
                }
            }
            Op::Crash => {
                let plans = h.crash_and_reopen();
                self.finish_all(h, plans);
            }
            Op::CleanRestart => {
                let plans = h.close_and_reopen();
                self.finish_all(h, plans);
            }
        }
    }

    /// After every step: nothing uncommitted is visible, LSO <= HW, and
    /// the stored offsets are exactly those of committed transactions.
    fn check_step(&self, h: &mut Harness, op: &Op) {
        for p in 0..2 {
            let out = tp("out", p);
            let (lso, hw) = (h.lso(&out), h.hw(&out));
            assert!(lso <= hw, "after {op:?}: LSO {lso} > HW {hw}");
            for v in h.read_committed(&out) {
                assert!(
                    self.committed.contains(&v),
                    "after {op:?}: {v} visible but not committed"
                );
            }
        }
        assert_eq!(h.committed, self.offsets, "after {op:?}");
    }

    /// At the end: abort whatever is open, then exactly the committed
    /// records (in log order) and offsets are visible, and the LSO is free.
    fn check_end(&mut self, h: &mut Harness) {
        for s in self.session.clone().into_iter().flatten() {
            if h.state(&s.id) == TxnState::Ongoing {
                let Ok(EndTxn::Execute(plan)) =
                    h.coord().end_txn(&s.id, s.pid, s.epoch, Outcome::Abort)
                else {
                    panic!("the open transaction of {} must abort", s.id);
                };
                self.finish(h, plan);
            }
        }
        assert!(h.coord_ref().pending_completions().is_empty());
        for p in 0..2 {
            let out = tp("out", p);
            assert_eq!(h.lso(&out), h.hw(&out));
            let expected: Vec<String> = h
                .read_uncommitted(&out)
                .into_iter()
                .filter(|v| self.committed.contains(v))
                .collect();
            assert_eq!(h.read_committed(&out), expected);
            for v in h.read_uncommitted(&out) {
                assert!(
                    self.committed.contains(&v) || self.aborted.contains(&v),
                    "{v} undecided"
                );
            }
        }
        for v in &self.committed {
            assert!(!self.aborted.contains(v), "{v} both committed and aborted");
        }
        assert_eq!(h.committed, self.offsets);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn random_transactions_with_crashes_are_all_or_nothing(ops in prop::collection::vec(arb_op(), 1..40)) {
        let mut h = Harness::new();
        let mut model = Model::default();
        for op in &ops {
            model.apply(&mut h, op);
            model.check_step(&mut h, op);
        }
        model.check_end(&mut h);
    }
}
