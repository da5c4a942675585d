//! A randomized model test of the whole seam: random interleavings of
//! begin, send, send_offsets, commit, abort, timeouts, crashes (also right
//! after PrepareCommit) and clean restarts of two transactional ids over
//! two real partition logs, with every plan executed the way mk-cluster
//! will. After every step no uncommitted record is visible and the LSO is
//! at most the high watermark; at the end exactly the committed records and
//! offsets are visible. proptest prints the failing operation list, which
//! replays the case exactly.

mod common;

use common::{Harness, tp};
use mk_core::{ErrorCode, TopicPartition};
use mk_txn::{Begin, CompletionPlan, TxnState};
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet};

const IDS: [&str; 2] = ["t0", "t1"];

#[derive(Debug, Clone)]
enum Op {
    Begin(usize),
    Send(usize, u32),
    StageOffset(usize),
    Commit(usize),
    Abort(usize),
    CommitThenCrash(usize),
    Expire,
    Crash,
    CleanRestart,
}

fn arb_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..2usize).prop_map(Op::Begin),
        6 => (0..2usize, 0..2u32).prop_map(|(i, p)| Op::Send(i, p)),
        2 => (0..2usize).prop_map(Op::StageOffset),
        2 => (0..2usize).prop_map(Op::Commit),
        1 => (0..2usize).prop_map(Op::Abort),
        1 => (0..2usize).prop_map(Op::CommitThenCrash),
        1 => Just(Op::Expire),
        1 => Just(Op::Crash),
        1 => Just(Op::CleanRestart),
    ]
}

#[derive(Default)]
struct Model {
    epoch: [i32; 2],
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
    tp("in", i as u32)
}

impl Model {
    fn index(id: &str) -> usize {
        IDS.iter().position(|x| *x == id).unwrap()
    }

    fn finish(&mut self, h: &mut Harness, plan: CompletionPlan) {
        let i = Self::index(plan.transactional_id());
        let state = h.finish(plan);
        let values = std::mem::take(&mut self.pending[i]);
        let staged = self.staged[i].take();
        match state {
            TxnState::CompleteCommit => {
                self.committed.extend(values);
                if let Some(o) = staged {
                    self.offsets.insert(("g".to_string(), input(i)), o);
                }
            }
            TxnState::CompleteAbort => self.aborted.extend(values),
            other => panic!("complete returned {other}"),
        }
    }

    fn finish_all(&mut self, h: &mut Harness, plans: Vec<CompletionPlan>) {
        for plan in plans {
            self.finish(h, plan);
        }
    }

    /// Begins a transaction like a client would: on PRODUCER_FENCED (its
    /// sequences were lost by a crash) it re-initializes with a newer epoch,
    /// and a prior transaction handed back is completed first.
    fn begin(&mut self, h: &mut Harness, i: usize) {
        for _ in 0..3 {
            match h.coord().begin(IDS[i], i as i64 + 1, self.epoch[i]) {
                Ok(Begin::Started) => return,
                Ok(Begin::CompletePriorFirst(plan)) => self.finish(h, plan),
                Err(e) if e.code() == ErrorCode::ProducerFenced => self.epoch[i] += 1,
                Err(e) if e.code() == ErrorCode::InvalidTxnState => {
                    // Ongoing already: a newer instance takes over.
                    self.epoch[i] += 1;
                }
                Err(e) => panic!("begin: {e}"),
            }
        }
    }

    fn apply(&mut self, h: &mut Harness, op: &Op) {
        match *op {
            Op::Begin(i) => self.begin(h, i),
            Op::Send(i, p) => {
                let value = format!("v{}", self.counter);
                self.counter += 1;
                let out = tp("out", p);
                if let Ok(pending) =
                    h.coord()
                        .send(IDS[i], self.epoch[i], out.clone(), common::record(&value))
                {
                    let offset = h
                        .log(&out)
                        .append(pending.batch().clone())
                        .unwrap()
                        .base_offset;
                    h.coord().send_appended(pending, offset).unwrap();
                    self.pending[i].push(value);
                }
            }
            Op::StageOffset(i) => {
                self.counter += 1;
                let staged = [(input(i), self.counter)];
                if h.coord()
                    .send_offsets(IDS[i], self.epoch[i], "g", staged)
                    .is_ok()
                {
                    self.staged[i] = Some(self.counter);
                }
            }
            Op::Commit(i) => {
                if let Ok(plan) = h.coord().commit(IDS[i], self.epoch[i]) {
                    self.finish(h, plan);
                }
            }
            Op::Abort(i) => {
                if let Ok(plan) = h.coord().abort(IDS[i], self.epoch[i]) {
                    self.finish(h, plan);
                }
            }
            Op::CommitThenCrash(i) => {
                drop(h.coord().commit(IDS[i], self.epoch[i]));
                let plans = h.crash_and_reopen();
                self.finish_all(h, plans);
            }
            Op::Expire => {
                h.clock.advance(61_000);
                let plans = h.coord().expire_transactions().unwrap();
                self.finish_all(h, plans);
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

    /// After every step: nothing uncommitted is visible, LSO <= HW.
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
        for ((_, tp), o) in &h.committed {
            let i = tp.partition as usize;
            assert_eq!(
                self.offsets.get(&("g".to_string(), input(i))),
                Some(o),
                "after {op:?}"
            );
        }
    }

    /// At the end: abort whatever is open, then exactly the committed
    /// records (in log order) and offsets are visible, and the LSO is free.
    fn check_end(&mut self, h: &mut Harness) {
        for (i, id) in IDS.iter().enumerate() {
            if h.coord_ref().describe(id).map(|d| d.state) == Some(TxnState::Ongoing) {
                let plan = h.coord().abort(id, self.epoch[i]).unwrap();
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
        let stored: BTreeMap<_, _> = h.committed.clone();
        assert_eq!(stored, self.offsets);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

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
