//! A seeded, replayable model test of Kafka's transaction flow through the
//! core: two transactional ids over three partitions and a consumer group,
//! with random InitProducerId (new sessions), AddPartitionsToTxn +
//! transactional Produce, AddOffsetsToTxn + TxnOffsetCommit, EndTxn commit
//! and abort (also retried), EndTxn hit by a storage failure at a random
//! write and then a crash, zombie producers, plain records, clock ticks with
//! the timeout step, crashes (`crash()` + reopen) and clean restarts.
//!
//! After every step: read_committed readers see only committed or plain
//! records, the LSO is at most the high watermark, the group's committed
//! offsets are exactly those of committed transactions, and a fenced
//! producer has appended nothing. At the end, with every open transaction
//! aborted: the LSO is free, read_committed sees exactly the committed and
//! plain records in log order, and every record is decided.
//!
//! Every assertion names its seed and step, and a failing run is reported
//! with its seed. Replay one seed with
//! `MK_SEED=<seed> cargo test -p mk-cluster --test txn_model`; `MK_SEEDS`
//! and `MK_STEPS` change how many seeds and steps run (as in
//! mk-replication's model test).
#![allow(
    clippy::too_many_lines,
    reason = "a test scenario reads top to bottom as one story; split, its steps would scatter"
)]

mod common;

use common::*;
use mk_cluster::*;
use std::collections::{BTreeMap, BTreeSet};

const IDS: [&str; 2] = ["t0", "t1"];
const PARTITIONS: u32 = 3;
const TIMEOUT_MS: i32 = 5_000;
const DEFAULT_STEPS: usize = 80;
const DEFAULT_SEEDS: u64 = 32;
const GROUP: &str = "g";

/// SplitMix64: small, good enough, and the same on every platform.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[derive(Debug, Clone, Copy)]
enum Op {
    Init(usize),
    Produce(usize, u32),
    Stage(usize),
    End(usize, bool),
    /// EndTxn(commit) with the n-th log write after the decision failing,
    /// then a crash.
    CommitFailing(usize, u64),
    Zombie(usize, u32),
    Plain(u32),
    Tick(i64),
    Crash,
    CleanRestart,
}

fn pick(rng: &mut Rng) -> Op {
    let i = usize::try_from(rng.below(2)).unwrap();
    let p = u32::try_from(rng.below(u64::from(PARTITIONS))).unwrap();
    match rng.below(22) {
        0..=2 => Op::Init(i),
        3..=9 => Op::Produce(i, p),
        10..=11 => Op::Stage(i),
        12..=13 => Op::End(i, true),
        14 => Op::End(i, false),
        15 => Op::CommitFailing(i, rng.below(4)),
        16 => Op::Zombie(i, p),
        17 => Op::Plain(p),
        18..=19 => Op::Tick(rng.below(4_000) as i64),
        20 => Op::Crash,
        _ => Op::CleanRestart,
    }
}

fn out(p: u32) -> TopicPartition {
    tp("out", p)
}

fn input(i: usize) -> TopicPartition {
    tp("in", u32::try_from(i).unwrap())
}

#[derive(Default)]
struct Model {
    clients: [Option<Client>; 2],
    zombies: Vec<Client>,
    /// Values of the open transaction of each id.
    pending: [Vec<String>; 2],
    /// The offset the open transaction of each id staged.
    staged: [Option<i64>; 2],
    /// When the open transaction of each id began (clock ms).
    started: [Option<i64>; 2],
    committed: BTreeSet<String>,
    aborted: BTreeSet<String>,
    plain: BTreeSet<String>,
    offsets: BTreeMap<TopicPartition, i64>,
    counter: i64,
}

impl Model {
    fn next_value(&mut self, prefix: &str) -> String {
        self.counter += 1;
        format!("{prefix}{}", self.counter)
    }

    fn settle(&mut self, i: usize, commit: bool) {
        let values = std::mem::take(&mut self.pending[i]);
        let staged = self.staged[i].take();
        self.started[i] = None;
        if commit {
            self.committed.extend(values);
            if let Some(o) = staged {
                self.offsets.insert(input(i), o);
            }
        } else {
            self.aborted.extend(values);
        }
    }

    fn begin_if_idle(&mut self, i: usize, now_ms: i64) {
        if self.started[i].is_none() {
            self.started[i] = Some(now_ms);
        }
    }

    async fn apply(&mut self, node: &mut Node, op: Op, ctx: &str) {
        let now = node.clock.now_ms();
        match op {
            Op::Init(i) => {
                let c = node.c();
                let client = Client::init(c, IDS[i], TIMEOUT_MS)
                    .await
                    .unwrap_or_else(|e| panic!("{ctx}: init: {e}"));
                // What the previous session left open is aborted.
                if self.started[i].is_some() {
                    self.settle(i, false);
                }
                if let Some(old) = self.clients[i].replace(client) {
                    self.zombies.push(old);
                }
            }
            Op::Produce(i, p) => {
                let Some(mut client) = self.clients[i].take() else {
                    return;
                };
                let value = self.next_value(&format!("{}-", IDS[i]));
                let c = node.c();
                client
                    .add(c, &[out(p)])
                    .await
                    .unwrap_or_else(|e| panic!("{ctx}: add: {e}"));
                client
                    .produce(c, &out(p), &[&value])
                    .await
                    .unwrap_or_else(|e| panic!("{ctx}: produce: {e}"));
                self.begin_if_idle(i, now);
                self.pending[i].push(value);
                self.clients[i] = Some(client);
            }
            Op::Stage(i) => {
                let Some(client) = self.clients[i].clone() else {
                    return;
                };
                self.counter += 1;
                client
                    .stage(node.c(), GROUP, &[(input(i), self.counter)])
                    .unwrap_or_else(|e| panic!("{ctx}: stage: {e}"));
                self.begin_if_idle(i, now);
                self.staged[i] = Some(self.counter);
            }
            Op::End(i, commit) => {
                let Some(client) = self.clients[i].clone() else {
                    return;
                };
                let c = node.c();
                let state = c.transactions().describe(IDS[i]).unwrap().unwrap().state;
                let r = client.end(c, commit).await;
                let same = if commit {
                    TxnState::CompleteCommit
                } else {
                    TxnState::CompleteAbort
                };
                match state {
                    TxnState::Ongoing => {
                        r.unwrap_or_else(|e| panic!("{ctx}: end: {e}"));
                        self.settle(i, commit);
                    }
                    s if s == same => r.unwrap_or_else(|e| panic!("{ctx}: retry: {e}")),
                    _ => assert_eq!(
                        r.unwrap_err().code(),
                        ErrorCode::InvalidTxnState,
                        "{ctx}: ending a {state} transaction"
                    ),
                }
            }
            Op::CommitFailing(i, n) => {
                let Some(client) = self.clients[i].clone() else {
                    return;
                };
                if self.started[i].is_none() {
                    return;
                }
                let c = node.c().clone();
                c.failure_injector().fail_writes_after(n);
                let r = client.end(&c, true).await;
                c.failure_injector().clear();
                if let Err(e) = &r {
                    assert_eq!(e.code(), ErrorCode::ClusterFailed, "{ctx}");
                }
                drop(c);
                node.crash_and_reopen();
                // The decision was journaled before any marker: recovery
                // completes the commit.
                let d = node.c().transactions().describe(IDS[i]).unwrap().unwrap();
                assert_eq!(d.state, TxnState::CompleteCommit, "{ctx}");
                self.settle(i, true);
            }
            Op::Zombie(i, p) => {
                let Some(mut z) = self.zombies.iter().rev().find(|z| z.id == IDS[i]).cloned()
                else {
                    return;
                };
                let c = node.c();
                let leo = c.data().log_end_offset(&out(p)).unwrap();
                let offsets = c.groups().fetch_committed(GROUP, &input(i)).unwrap();
                assert!(z.add(c, &[out(p)]).await.is_err(), "{ctx}: zombie add");
                let e = z.produce(c, &out(p), &["zombie"]).await.unwrap_err();
                assert_eq!(
                    e.code(),
                    ErrorCode::InvalidProducerEpoch,
                    "{ctx}: zombie produce: {e}"
                );
                assert!(z.stage(c, GROUP, &[(input(i), 1)]).is_err(), "{ctx}");
                assert!(z.end(c, true).await.is_err(), "{ctx}: zombie commit");
                assert_eq!(c.data().log_end_offset(&out(p)).unwrap(), leo, "{ctx}");
                assert_eq!(
                    c.groups().fetch_committed(GROUP, &input(i)).unwrap(),
                    offsets,
                    "{ctx}"
                );
            }
            Op::Plain(p) => {
                let value = self.next_value("plain-");
                let batch =
                    RecordBatch::new(vec![Record::new(None, Some(b(&value)), now)]).unwrap();
                node.c()
                    .data()
                    .append_batch(&out(p), batch, AckMode::All)
                    .await
                    .unwrap();
                self.plain.insert(value);
            }
            Op::Tick(ms) => {
                node.clock.advance(ms);
                let now = node.clock.now_ms();
                let expected: Vec<String> = (0..2)
                    .filter(|i| self.started[*i].is_some_and(|s| now - s > i64::from(TIMEOUT_MS)))
                    .map(|i| IDS[i].to_string())
                    .collect();
                let expired = node.c().transactions().expire().await.unwrap();
                assert_eq!(expired, expected, "{ctx}");
                for id in expired {
                    let i = IDS.iter().position(|x| *x == id).unwrap();
                    self.settle(i, false);
                    // The timeout fenced the session.
                    if let Some(old) = self.clients[i].take() {
                        self.zombies.push(old);
                    }
                }
            }
            Op::Crash => node.crash_and_reopen(),
            Op::CleanRestart => node.close_and_reopen().await,
        }
    }

    fn check_step(&self, node: &Node, ctx: &str) {
        let c = node.c();
        for p in 0..PARTITIONS {
            let t = out(p);
            let (lso, hw) = (
                c.data().last_stable_offset(&t).unwrap(),
                c.data().visible_end(&t).unwrap(),
            );
            assert!(lso <= hw, "{ctx}: {t}: LSO {lso} > HW {hw}");
            for v in read_committed(c, &t) {
                assert!(
                    self.committed.contains(&v) || self.plain.contains(&v),
                    "{ctx}: {t}: {v} is visible to read_committed but not committed"
                );
            }
        }
        for (i, id) in IDS.iter().enumerate() {
            let open = c
                .transactions()
                .describe(id)
                .unwrap()
                .is_some_and(|d| d.state == TxnState::Ongoing);
            assert_eq!(open, self.started[i].is_some(), "{ctx}: is {id} open");
            assert_eq!(
                c.groups().fetch_committed(GROUP, &input(i)).unwrap(),
                self.offsets.get(&input(i)).copied(),
                "{ctx}: committed offset of {}",
                input(i)
            );
        }
    }

    async fn check_end(&mut self, node: &Node, ctx: &str) {
        let c = node.c();
        for i in 0..2 {
            if self.started[i].is_some() {
                let client = self.clients[i]
                    .clone()
                    .expect("an open transaction has a client");
                client.end(c, false).await.unwrap();
                self.settle(i, false);
            }
        }
        for p in 0..PARTITIONS {
            let t = out(p);
            assert!(lso_is_free(c, &t), "{ctx}: {t}");
            let all = read_uncommitted(c, &t);
            let expected: Vec<String> = all
                .iter()
                .filter(|v| self.committed.contains(*v) || self.plain.contains(*v))
                .cloned()
                .collect();
            assert_eq!(read_committed(c, &t), expected, "{ctx}: {t}");
            for v in &all {
                assert!(
                    self.committed.contains(v)
                        || self.aborted.contains(v)
                        || self.plain.contains(v),
                    "{ctx}: {t}: {v} is undecided"
                );
            }
        }
        assert!(self.committed.is_disjoint(&self.aborted), "{ctx}");
    }
}

async fn run(seed: u64, steps: usize) {
    let mut rng = Rng(seed);
    let mut node = Node::new(|_| {});
    node.c().topics().create("out", PARTITIONS, 1).unwrap();
    node.c().topics().create("in", 2, 1).unwrap();
    let mut model = Model::default();
    for step in 0..steps {
        let op = pick(&mut rng);
        let ctx = format!("seed {seed}, step {step}, {op:?}");
        model.apply(&mut node, op, &ctx).await;
        model.check_step(&node, &ctx);
    }
    model.check_end(&node, &format!("seed {seed}, end")).await;
}

fn env(name: &str) -> Option<u64> {
    std::env::var(name).ok().map(|v| {
        v.parse()
            .unwrap_or_else(|_| panic!("{name} must be a number, got {v:?}"))
    })
}

#[tokio::test]
async fn seeded_transactions_with_crashes_and_timeouts_keep_their_guarantees() {
    let seeds: Vec<u64> = match env("MK_SEED") {
        Some(seed) => vec![seed],
        None => (0..env("MK_SEEDS").unwrap_or(DEFAULT_SEEDS)).collect(),
    };
    let steps = env("MK_STEPS").map_or(DEFAULT_STEPS, |s| usize::try_from(s).unwrap());
    for seed in seeds {
        // A run is a task of its own, so a panic anywhere in it (also in a
        // helper that knows no seed) is reported with the seed.
        if let Err(e) = tokio::spawn(run(seed, steps)).await {
            let msg = e
                .try_into_panic()
                .ok()
                .and_then(|p| {
                    p.downcast_ref::<String>()
                        .cloned()
                        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                })
                .unwrap_or_default();
            panic!("model test failed for seed {seed} (replay with MK_SEED={seed}): {msg}");
        }
    }
}
