//! Seeded, replayable model test of KIP-848 consumer groups.
//!
//! Ten simulated consumers (three of them static) share one group. Each
//! step picks a random action: a consumer joins, heartbeats (telling the
//! coordinator what it owns), finishes processing a new assignment (it
//! gives up what it lost and takes what it got, possibly several steps
//! late, like a slow client), leaves, steps away as a static member,
//! changes its subscription, crashes (stops calling; a crashed static
//! consumer may come back under a new member id), commits with its epoch,
//! or a zombie commits with a stale one; topics appear; the clock moves and
//! the time step runs; rarely the coordinator restarts. After every step:
//!
//! - (a) no partition has two holders in the coordinator (assigned or being
//!   revoked), and every live consumer that the coordinator counts as a
//!   member owns only partitions the coordinator counts it holding: so no
//!   partition is owned by two members at once;
//! - (b) every heartbeat and commit is answered as the rules predict from
//!   the group before the call: a commit is accepted exactly when its
//!   member is in the group at that member epoch;
//! - (c) the group epoch never goes back (across restarts too), no member
//!   epoch is ahead of it, and a target computed for the current epoch
//!   assigns every subscribed partition to exactly one member;
//! - (d) every 25 steps, once every live consumer heartbeats and processes
//!   promptly, the group becomes Stable within a bounded number of rounds
//!   with each member holding exactly its target.
//!
//! Replay one seed with `MK_SEED=<seed>`; `MK_SEEDS` and `MK_STEPS` change
//! how many seeds and steps run.

mod common;

use common::model::{self, tally};
use common::{Fixture, code, consumer_join, plain, tp};
use mk_core::{ErrorCode, TopicPartition};
use mk_group::{ConsumerGroupDescription, ConsumerHeartbeat, GroupState};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, BTreeSet};

const DEFAULT_SEEDS: u64 = 30;
const DEFAULT_STEPS: usize = 300;
const CLIENTS: usize = 10;
const STATICS: usize = 3;
const TOPICS: [&str; 3] = ["orders", "payments", "audit"];

#[test]
fn random_consumer_protocol_runs_keep_the_group_guarantees() {
    model::run_seeds(DEFAULT_SEEDS, DEFAULT_STEPS, |seed, steps| {
        Model::new(seed).run(steps)
    });
}

tally!(Stats {
    required: [
        revocations_waited,
        fenced,
        expired,
        static_returns,
        accepted_commits,
        refused_commits,
        stale_commits,
        settled,
        restarts,
    ],
    optional: [],
});

#[derive(Debug, Clone)]
enum Phase {
    Offline,
    /// Crashed: says nothing until it restarts.
    Crashed,
    /// In the group as far as the consumer knows.
    Member,
}

#[derive(Debug, Clone)]
struct Client {
    instance: Option<String>,
    member_id: String,
    incarnation: u32,
    epoch: i32,
    /// The epoch before the current one (a late commit uses it).
    prev_epoch: i32,
    phase: Phase,
    topics: Vec<&'static str>,
    /// What it consumes now.
    owned: BTreeSet<TopicPartition>,
    /// An assignment it received and has not processed yet.
    pending: Option<BTreeSet<TopicPartition>>,
}

struct Model {
    seed: u64,
    rng: ChaCha8Rng,
    f: Fixture,
    clients: Vec<Client>,
    zombies: Vec<(String, i32)>,
    highest_epoch: i32,
    stats: Stats,
    trace: model::Trace,
}

impl Model {
    fn new(seed: u64) -> Self {
        let clients = (0..CLIENTS)
            .map(|i| Client {
                instance: (i < STATICS).then(|| format!("static-{i}")),
                member_id: String::new(),
                incarnation: 0,
                epoch: 0,
                prev_epoch: 0,
                phase: Phase::Offline,
                topics: vec![TOPICS[i % 2]],
                owned: BTreeSet::new(),
                pending: None,
            })
            .collect();
        Self {
            seed,
            rng: ChaCha8Rng::seed_from_u64(seed),
            f: Fixture::new(),
            clients,
            zombies: Vec::new(),
            highest_epoch: 0,
            stats: Stats::default(),
            trace: model::Trace::default(),
        }
    }

    fn fail(&self, msg: String) -> ! {
        self.trace.fail(self.seed, &msg)
    }

    fn run(mut self, steps: usize) -> Stats {
        for step in 0..steps {
            self.step();
            self.check(step);
            if step % 25 == 24 {
                self.settle(step);
            }
        }
        self.stats
    }

    fn describe(&mut self) -> Option<ConsumerGroupDescription> {
        self.f.c().describe_consumer_group("g")
    }

    fn step(&mut self) {
        let c = self.rng.gen_range(0..CLIENTS);
        match self.rng.gen_range(0..100) {
            0..=14 => self.join(c),
            15..=44 => self.heartbeat(c),
            45..=59 => self.process(c),
            60..=63 => self.leave(c),
            64..=66 => self.crash(c),
            67..=69 => self.change_subscription(c),
            70..=76 => self.commit(c),
            77..=79 => self.late_commit(c),
            80..=82 => self.zombie_commit(),
            83 => self.new_topic(),
            84..=97 => self.tick(),
            _ => self.restart(),
        }
    }

    fn request(&self, c: usize, epoch: i32) -> ConsumerHeartbeat {
        let cl = &self.clients[c];
        ConsumerHeartbeat {
            group_id: "g".into(),
            member_id: cl.member_id.clone(),
            member_epoch: epoch,
            instance_id: cl.instance.clone(),
            rebalance_timeout_ms: if epoch == 0 { 20_000 } else { -1 },
            subscribed_topic_names: Some(cl.topics.iter().map(|t| t.to_string()).collect()),
            owned_partitions: Some(cl.owned.iter().cloned().collect()),
            client_id: format!("client-{c}"),
            client_host: "/10.0.0.1".into(),
            ..ConsumerHeartbeat::default()
        }
    }

    fn join(&mut self, c: usize) {
        if !matches!(self.clients[c].phase, Phase::Offline | Phase::Crashed) {
            return self.heartbeat(c);
        }
        let cl = &mut self.clients[c];
        cl.incarnation += 1;
        cl.member_id = format!("m{c}-{}", cl.incarnation);
        cl.owned.clear();
        cl.pending = None;
        let req = self.request(c, 0);
        self.trace.note(format!("join {c} as {}", req.member_id));
        self.send(c, req);
    }

    fn heartbeat(&mut self, c: usize) {
        if !matches!(self.clients[c].phase, Phase::Member) {
            return;
        }
        let req = self.request(c, self.clients[c].epoch);
        self.send(c, req);
    }

    /// Sends a heartbeat and applies its answer as a consumer would.
    fn send(&mut self, c: usize, req: ConsumerHeartbeat) {
        let before = self.describe();
        let (co, meta) = self.f.parts();
        let result = co.consumer_heartbeat(req.clone(), meta);
        match result {
            Ok(a) => {
                if req.instance_id.is_some()
                    && req.member_epoch == 0
                    && before.as_ref().is_some_and(|d| {
                        d.members.iter().any(|m| {
                            m.instance_id == req.instance_id && m.member_id != req.member_id
                        })
                    })
                {
                    self.stats.static_returns += 1;
                }
                let cl = &mut self.clients[c];
                cl.phase = Phase::Member;
                if cl.epoch != a.member_epoch {
                    cl.prev_epoch = cl.epoch;
                }
                cl.epoch = a.member_epoch;
                if let Some(assignment) = a.assignment {
                    cl.pending = Some(assignment.into_iter().collect());
                }
            }
            Err(e) => self.on_error(c, e.code(), &req, &before, &e.to_string()),
        }
    }

    fn on_error(
        &mut self,
        c: usize,
        code: ErrorCode,
        req: &ConsumerHeartbeat,
        before: &Option<ConsumerGroupDescription>,
        msg: &str,
    ) {
        let known = before
            .as_ref()
            .and_then(|d| d.members.iter().find(|m| m.member_id == req.member_id));
        match code {
            ErrorCode::FencedMemberEpoch
            | ErrorCode::UnknownMember
            | ErrorCode::FencedInstanceId => {
                if code == ErrorCode::UnknownMember && known.is_some() {
                    self.fail(format!(
                        "client {c}: UNKNOWN_MEMBER for a known member: {msg}"
                    ));
                }
                self.stats.fenced += 1;
                // The consumer gives everything up and joins again.
                let cl = &mut self.clients[c];
                cl.owned.clear();
                cl.pending = None;
                cl.phase = Phase::Offline;
            }
            ErrorCode::UnreleasedInstanceId if req.member_epoch == 0 => {
                // Another incarnation still holds the instance id: retry later.
                self.clients[c].phase = Phase::Offline;
            }
            _ => self.fail(format!("client {c}: unexpected {code}: {msg}")),
        }
    }

    /// The consumer finishes handling its new assignment.
    fn process(&mut self, c: usize) {
        if let Some(next) = self.clients[c].pending.take() {
            if self.clients[c].owned.iter().any(|p| !next.contains(p)) {
                self.stats.revocations_waited += 1;
            }
            self.clients[c].owned = next;
            self.heartbeat(c);
        }
    }

    fn leave(&mut self, c: usize) {
        if !matches!(self.clients[c].phase, Phase::Member) {
            return;
        }
        let away = self.clients[c].instance.is_some() && self.rng.gen_bool(0.8);
        let epoch = if away { -2 } else { -1 };
        let req = self.request(c, epoch);
        self.trace.note(format!("leave {c} ({epoch})"));
        let (co, meta) = self.f.parts();
        match co.consumer_heartbeat(req, meta) {
            Ok(a) if a.member_epoch == epoch => {}
            Ok(a) => self.fail(format!("leave answered epoch {}", a.member_epoch)),
            Err(e)
                if matches!(
                    e.code(),
                    ErrorCode::UnknownMember | ErrorCode::FencedInstanceId
                ) => {}
            Err(e) => self.fail(format!("leave: {e}")),
        }
        let cl = &mut self.clients[c];
        cl.owned.clear();
        cl.pending = None;
        cl.phase = Phase::Offline;
    }

    fn crash(&mut self, c: usize) {
        if matches!(self.clients[c].phase, Phase::Member) {
            self.trace.note(format!("crash {c}"));
            let cl = &mut self.clients[c];
            self.zombies.push((cl.member_id.clone(), cl.epoch));
            cl.owned.clear();
            cl.pending = None;
            cl.phase = Phase::Crashed;
        }
    }

    fn change_subscription(&mut self, c: usize) {
        let n = self.rng.gen_range(1..=TOPICS.len());
        let mut topics: Vec<&'static str> = TOPICS.to_vec();
        topics.truncate(n);
        self.clients[c].topics = topics;
        self.heartbeat(c);
    }

    fn commit(&mut self, c: usize) {
        if !matches!(self.clients[c].phase, Phase::Member) {
            return;
        }
        let (member, epoch) = (self.clients[c].member_id.clone(), self.clients[c].epoch);
        self.commit_as(&member, epoch);
    }

    /// A commit that was sent before the consumer's epoch moved on.
    fn late_commit(&mut self, c: usize) {
        if matches!(self.clients[c].phase, Phase::Member) && self.clients[c].prev_epoch > 0 {
            let (member, epoch) = (
                self.clients[c].member_id.clone(),
                self.clients[c].prev_epoch,
            );
            self.commit_as(&member, epoch);
        }
    }

    fn zombie_commit(&mut self) {
        if self.zombies.is_empty() {
            return;
        }
        let i = self.rng.gen_range(0..self.zombies.len());
        let (member, epoch) = self.zombies[i].clone();
        self.commit_as(&member, epoch);
    }

    fn commit_as(&mut self, member: &str, epoch: i32) {
        let expected_ok = self.describe().is_some_and(|d| {
            d.members
                .iter()
                .any(|m| m.member_id == member && m.member_epoch == epoch)
        });
        let offsets = plain(&[("orders", 0, i64::from(epoch.max(0)))]);
        let r = self.f.commit_request("g", member, epoch, 9, &offsets);
        match (expected_ok, r) {
            (true, Ok(_)) => self.stats.accepted_commits += 1,
            (false, Err(e)) if e.code() == ErrorCode::StaleMemberEpoch => {
                self.stats.stale_commits += 1
            }
            (false, Err(e)) if e.code() == ErrorCode::UnknownMember => {
                self.stats.refused_commits += 1
            }
            (expected, r) => self.fail(format!(
                "commit of {member} at {epoch}: expected ok={expected}, got {r:?}"
            )),
        }
    }

    fn new_topic(&mut self) {
        let n = self.f.meta.get("orders").copied().unwrap_or(4);
        if n < 8 {
            self.trace.note("orders grows a partition".into());
            self.f.meta.insert("orders".into(), n + 1);
        }
    }

    fn tick(&mut self) {
        let ms = self.rng.gen_range(1_000..25_000);
        self.f.clock.advance(ms);
        // Live consumers heartbeat before the time step, mostly.
        for c in 0..CLIENTS {
            if self.rng.gen_bool(0.8) {
                self.heartbeat(c);
            }
        }
        let removed = self.f.expire();
        self.stats.expired += u64::try_from(removed.len()).unwrap_or(0);
        self.trace
            .note(format!("tick {ms} ms, removed {removed:?}"));
    }

    fn restart(&mut self) {
        self.trace.note("coordinator restart".into());
        self.stats.restarts += 1;
        self.f.restart();
    }

    // ----- invariants -----------------------------------------------------

    fn check(&mut self, step: usize) {
        let Some(d) = self.describe() else {
            return;
        };
        if d.epoch < self.highest_epoch {
            self.fail(format!(
                "step {step}: group epoch went back from {} to {}",
                self.highest_epoch, d.epoch
            ));
        }
        self.highest_epoch = d.epoch;
        let mut holders: BTreeMap<&TopicPartition, &str> = BTreeMap::new();
        for m in &d.members {
            if m.member_epoch > d.epoch {
                self.fail(format!(
                    "step {step}: member {} at epoch {} > group epoch {}",
                    m.member_id, m.member_epoch, d.epoch
                ));
            }
            for p in m.assignment.iter().chain(&m.revoking) {
                if let Some(other) = holders.insert(p, &m.member_id) {
                    self.fail(format!(
                        "step {step}: {p} held by {other} and {}",
                        m.member_id
                    ));
                }
            }
        }
        for (i, cl) in self.clients.iter().enumerate() {
            let Some(m) = d.members.iter().find(|m| m.member_id == cl.member_id) else {
                continue;
            };
            if !matches!(cl.phase, Phase::Member) {
                continue;
            }
            if let Some(p) = cl
                .owned
                .iter()
                .find(|p| !m.assignment.contains(p) && !m.revoking.contains(p))
            {
                self.fail(format!("step {step}: client {i} owns {p}, which the coordinator does not count it holding"));
            }
        }
        if d.state != GroupState::Assigning && !d.members.is_empty() {
            self.check_targets(step, &d);
        }
    }

    fn subscribed_partitions(&self, d: &ConsumerGroupDescription) -> BTreeSet<TopicPartition> {
        let topics: BTreeSet<&String> = d.members.iter().flat_map(|m| &m.topics).collect();
        topics
            .into_iter()
            .flat_map(|t| (0..self.f.meta.get(t).copied().unwrap_or(0)).map(move |p| tp(t, p)))
            .collect()
    }

    fn check_targets(&self, step: usize, d: &ConsumerGroupDescription) {
        let mut seen = BTreeSet::new();
        for m in &d.members {
            for p in &m.target {
                if !seen.insert(p.clone()) {
                    self.fail(format!("step {step}: {p} is in two targets"));
                }
            }
        }
        // Partitions added since the last epoch show up at the next one.
        let want = self.subscribed_partitions(d);
        if seen.iter().any(|p| !want.contains(p)) {
            self.fail(format!(
                "step {step}: a target names an unsubscribed partition: {seen:?} vs {want:?}"
            ));
        }
    }

    /// Every live consumer heartbeats and processes promptly: the group
    /// must become Stable with everyone holding its target.
    fn settle(&mut self, step: usize) {
        for round in 0..12 {
            for c in 0..CLIENTS {
                if matches!(self.clients[c].phase, Phase::Crashed) {
                    continue;
                }
                if matches!(self.clients[c].phase, Phase::Offline) {
                    if round == 0 {
                        continue;
                    }
                    self.join(c);
                }
                self.heartbeat(c);
                self.process(c);
            }
            self.check(step);
            let Some(d) = self.describe() else { return };
            let live: Vec<&Client> = self
                .clients
                .iter()
                .filter(|c| matches!(c.phase, Phase::Member))
                .collect();
            let stable = d.state == GroupState::Stable
                && d.members.iter().all(|m| m.assignment == m.target)
                && live.iter().all(|c| {
                    d.members.iter().any(|m| {
                        m.member_id == c.member_id
                            && m.assignment.iter().cloned().collect::<BTreeSet<_>>() == c.owned
                    })
                });
            let crashed_members = d
                .members
                .iter()
                .any(|m| !live.iter().any(|c| c.member_id == m.member_id));
            if stable {
                let covered: BTreeSet<TopicPartition> =
                    d.members.iter().flat_map(|m| m.target.clone()).collect();
                if !crashed_members && covered != self.subscribed_partitions(&d) {
                    self.fail(format!(
                        "step {step}: Stable but {covered:?} is not every subscribed partition"
                    ));
                }
                self.stats.settled += 1;
                return;
            }
            if crashed_members {
                // A crashed member holds partitions until its session ends.
                return;
            }
        }
        let d = self.describe();
        self.fail(format!(
            "step {step}: the group did not settle: {d:#?}\nclients: {:#?}",
            self.clients
        ));
    }
}

#[test]
fn a_commit_of_an_unknown_member_is_told_apart_from_a_stale_one() {
    // A small fixed scenario next to the random runs: both refusals the
    // model expects, with their codes.
    let mut f = Fixture::new();
    let (c, meta) = f.parts();
    c.consumer_heartbeat(consumer_join("g", "a", "orders"), meta)
        .unwrap();
    let offsets = plain(&[("orders", 0, 1)]);
    let mut commit =
        |member: &str, epoch: i32| code(f.commit_request("g", member, epoch, 9, &offsets)).0;
    assert_eq!(commit("a", 7), ErrorCode::StaleMemberEpoch);
    assert_eq!(commit("b", 1), ErrorCode::UnknownMember);
}
