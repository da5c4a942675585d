//! Seeded, replayable model test of Kafka's classic group protocol.
//!
//! Twelve simulated Kafka consumers (four of them static members) share one
//! group. Each step picks a random action: a consumer starts, rejoins (with
//! unchanged or changed subscription), reacts to a join or sync answer (the
//! leader computes an assignment with the harness's own assigner, as a
//! client would, and sends it with SyncGroup), heartbeats, commits, leaves,
//! or crashes (stops calling; a static consumer later restarts under its
//! instance id); a crashed consumer's last view is kept as a zombie that
//! tries to commit; the clock moves (live consumers heartbeat first, then
//! the coordinator's time step runs); rarely the coordinator itself
//! restarts. After every step it checks:
//!
//! - (a) at most one generation is live: the group's generation never goes
//!   back (across restarts too), no consumer holds a newer one, and every
//!   heartbeat and commit is answered exactly as the rules predict from the
//!   group before the call — so no commit of a fenced generation (or of a
//!   member that is gone or replaced) is ever accepted;
//! - (b) while the group is Stable, every partition of the members'
//!   subscriptions is assigned to exactly one member, and every consumer
//!   that finished its sync in the current generation holds exactly the
//!   assignment the coordinator describes for it;
//! - (c) a waiting JoinGroup exists only while PreparingRebalance and a
//!   waiting SyncGroup only while CompletingRebalance, and no waiting
//!   request is dropped without an answer (except by a coordinator restart);
//! - (d) a rebalance completes within the rebalance timeout: by the time
//!   step at or past it, a PreparingRebalance has ended (Kafka's one
//!   exception: only static members that have not rejoined are left, and
//!   the coordinator waits another round for them), and so has a
//!   CompletingRebalance.
//!
//! Replay one seed with `MK_SEED=<seed>`; `MK_SEEDS` and `MK_STEPS` change
//! how many seeds and steps run.

mod common;

use bytes::Bytes;
use common::model::{self, tally};
use common::{Fixture, tp};
use mk_core::{Clock, ErrorCode, TopicPartition};
use mk_group::{
    GroupDescription, GroupJoin, GroupJoined, GroupState, GroupSync, GroupSynced, JoinHandle,
    JoinedMember, SyncHandle,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, BTreeSet};

const DEFAULT_SEEDS: u64 = 30;
const DEFAULT_STEPS: usize = 400;
const CLIENTS: usize = 12;
const GROUP: &str = "g";
const TOPICS: [&str; 3] = ["orders", "payments", "audit"];
/// The largest rebalance timeout any consumer uses.
const MAX_REBALANCE_MS: i64 = 15_000;

#[test]
fn random_classic_protocol_runs_keep_the_group_guarantees() {
    model::run_seeds(DEFAULT_SEEDS, DEFAULT_STEPS, |seed, steps| {
        Model::new(seed).run(steps)
    });
}

tally!(
    /// How often the interesting transitions happened. Postponed static
    /// rounds are rare by nature; they are counted but not required.
    Stats {
    required: [
        generations_formed,
        stable_generations,
        member_ids_required,
        static_takeovers_without_rebalance,
        fenced_instances,
        stragglers_removed,
        sessions_expired,
        accepted_commits,
        refused_stale_commits,
        coordinator_restarts,
    ],
    optional: [static_rounds_postponed],
});

/// Where a simulated consumer is.
enum Phase {
    /// Not running.
    Offline,
    /// Running and about to (re)join, knowing `generation` from before.
    Idle { generation: Option<i32> },
    /// `restarts`: how many coordinator restarts had happened when the
    /// request was sent (only a restart may drop its answer).
    Joining {
        handle: JoinHandle,
        answer: Option<mk_group::Result<GroupJoined>>,
        restarts: u64,
    },
    Syncing {
        generation: i32,
        handle: SyncHandle,
        answer: Option<mk_group::Result<GroupSynced>>,
        restarts: u64,
    },
    Stable {
        generation: i32,
        assignment: Vec<TopicPartition>,
    },
}

struct Client {
    instance: Option<String>,
    session_ms: i32,
    rebalance_ms: i32,
    require_id: bool,
    topics: BTreeSet<&'static str>,
    member_id: String,
    phase: Phase,
}

impl Client {
    fn generation(&self) -> Option<i32> {
        match &self.phase {
            Phase::Idle { generation } => *generation,
            Phase::Syncing { generation, .. } | Phase::Stable { generation, .. } => {
                Some(*generation)
            }
            Phase::Offline | Phase::Joining { .. } => None,
        }
    }

    fn metadata(&self) -> Bytes {
        Bytes::from(self.topics.iter().copied().collect::<Vec<_>>().join(","))
    }

    fn join_request(&self) -> GroupJoin {
        GroupJoin {
            group_id: GROUP.into(),
            member_id: self.member_id.clone(),
            group_instance_id: self.instance.clone(),
            client_id: "model".into(),
            client_host: "/10.0.0.1".into(),
            session_timeout_ms: self.session_ms,
            rebalance_timeout_ms: self.rebalance_ms,
            protocol_type: "consumer".into(),
            protocols: vec![("range".into(), self.metadata())],
            require_known_member_id: self.require_id,
            subscribed_topics: self.topics.iter().map(|t| t.to_string()).collect(),
        }
    }
}

/// A crashed consumer's last view: it may still try to commit.
#[derive(Debug, Clone)]
struct Zombie {
    member_id: String,
    instance: Option<String>,
    generation: i32,
    assignment: Vec<TopicPartition>,
}

/// What the harness's assigner does, as a consumer leader would: per topic
/// (sorted), its partitions round-robin over the members that subscribe to
/// it (sorted by id). Returns the bytes per member and the decoded form.
type Assigned = (Vec<(String, Bytes)>, Vec<(String, Vec<TopicPartition>)>);

fn assign(members: &[JoinedMember], counts: &BTreeMap<String, u32>) -> Assigned {
    let mut subs: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for m in members {
        let text = std::str::from_utf8(&m.metadata).expect("our metadata is text");
        let topics = text.split(',').filter(|t| !t.is_empty());
        subs.insert(&m.member_id, topics.map(str::to_string).collect());
    }
    let mut out: BTreeMap<&str, Vec<TopicPartition>> =
        subs.keys().map(|m| (*m, Vec::new())).collect();
    let all_topics: BTreeSet<&String> = subs.values().flatten().collect();
    for topic in all_topics {
        let eligible: Vec<&str> = subs
            .iter()
            .filter(|(_, t)| t.contains(topic))
            .map(|(m, _)| *m)
            .collect();
        for p in 0..counts.get(topic).copied().unwrap_or(0) {
            let m = eligible[p as usize % eligible.len()];
            out.get_mut(m).expect("eligible").push(tp(topic, p));
        }
    }
    let bytes = out
        .iter()
        .map(|(m, ps)| (m.to_string(), encode(ps)))
        .collect();
    let decoded = out.into_iter().map(|(m, ps)| (m.to_string(), ps)).collect();
    (bytes, decoded)
}

fn encode(ps: &[TopicPartition]) -> Bytes {
    Bytes::from(
        ps.iter()
            .map(|p| format!("{}:{}", p.topic, p.partition))
            .collect::<Vec<_>>()
            .join(";"),
    )
}

fn decode(b: &Bytes) -> Vec<TopicPartition> {
    let text = std::str::from_utf8(b).expect("our assignment is text");
    let mut out: Vec<TopicPartition> = text
        .split(';')
        .filter(|s| !s.is_empty())
        .map(|s| {
            let (t, p) = s.split_once(':').expect("topic:partition");
            tp(t, p.parse().expect("a partition number"))
        })
        .collect();
    out.sort();
    out
}

/// A rebalance phase the harness watches: its state, the generation it
/// belongs to and when the harness first saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Episode {
    state: GroupState,
    generation: i32,
    since_ms: i64,
}

struct Model {
    seed: u64,
    rng: ChaCha8Rng,
    f: Fixture,
    clients: Vec<Client>,
    zombies: Vec<Zombie>,
    highest_generation: i32,
    episode: Option<Episode>,
    stats: Stats,
    trace: model::Trace,
}

impl Model {
    fn new(seed: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let clients = (0..CLIENTS)
            .map(|i| Client {
                instance: (i % 3 == 0).then(|| format!("inst-{i}")),
                // Static members run with long sessions, so a restart fits
                // in one (that is what static membership is for).
                session_ms: if i % 3 == 0 {
                    30_000
                } else {
                    [6_000, 8_000, 10_000][i % 4 % 3]
                },
                rebalance_ms: [5_000, 10_000, i32::try_from(MAX_REBALANCE_MS).unwrap()]
                    [(i / 3) % 3],
                require_id: i % 2 == 1,
                topics: random_topics(&mut rng),
                member_id: String::new(),
                phase: Phase::Offline,
            })
            .collect();
        Self {
            seed,
            rng,
            f: Fixture::new(),
            clients,
            zombies: Vec::new(),
            highest_generation: 0,
            episode: None,
            stats: Stats::default(),
            trace: model::Trace::default(),
        }
    }

    fn fail(&self, msg: String) -> ! {
        self.trace.fail(self.seed, &msg)
    }

    fn describe(&mut self) -> Option<GroupDescription> {
        self.f.c().describe_group(GROUP)
    }

    fn run(mut self, steps: usize) -> Stats {
        for step in 0..steps {
            let roll = self.rng.gen_range(0..100);
            let c = self.rng.gen_range(0..CLIENTS);
            match roll {
                0..=5 => self.start(c),
                6..=25 => self.react(c),
                26..=31 => self.rejoin(c),
                32..=43 => self.heartbeat(c),
                44..=59 => self.commit(c),
                60..=61 => self.leave(c),
                62..=64 => self.crash(c),
                65..=69 => self.zombie_commit(),
                70 if self.rng.gen_bool(0.15) => self.restart_coordinator(),
                _ => self.clock_step(),
            }
            self.collect_answers();
            self.check(step);
        }
        self.stats
    }

    // ----- consumer actions ----------------------------------------------

    fn start(&mut self, c: usize) {
        if !matches!(self.clients[c].phase, Phase::Offline) {
            return self.react(c);
        }
        self.trace.note(format!("start {c}"));
        self.clients[c].member_id.clear();
        self.clients[c].phase = Phase::Idle { generation: None };
        self.join(c);
    }

    fn rejoin(&mut self, c: usize) {
        if !matches!(
            self.clients[c].phase,
            Phase::Idle { .. } | Phase::Stable { .. }
        ) {
            return;
        }
        if self.rng.gen_bool(0.15) {
            self.clients[c].topics = random_topics(&mut self.rng);
        }
        self.join(c);
    }

    fn join(&mut self, c: usize) {
        let request = self.clients[c].join_request();
        let before = self.describe();
        let static_return = request.member_id.is_empty()
            && request.group_instance_id.as_ref().is_some_and(|i| {
                before.as_ref().is_some_and(|d| {
                    d.members
                        .iter()
                        .any(|m| m.group_instance_id.as_ref() == Some(i))
                })
            });
        self.trace.note(format!(
            "join {c} as {:?} (instance {:?}, topics {:?})",
            request.member_id, request.group_instance_id, self.clients[c].topics
        ));
        let generation = self.clients[c].generation();
        match self.f.c().join_member(request) {
            Ok(mut handle) => {
                let answer = handle.try_result();
                if static_return
                    && let Some(Ok(j)) = &answer
                    && before.as_ref().is_some_and(|d| {
                        d.state == GroupState::Stable && d.generation == j.generation_id
                    })
                {
                    self.stats.static_takeovers_without_rebalance += 1;
                }
                self.clients[c].phase = Phase::Joining {
                    handle,
                    answer,
                    restarts: self.stats.coordinator_restarts,
                };
            }
            Err(e) => match e.code() {
                ErrorCode::MemberIdRequired => {
                    self.stats.member_ids_required += 1;
                    let id = e.member_id_required().expect("carries the id").to_string();
                    self.clients[c].member_id = id;
                    self.clients[c].phase = Phase::Idle { generation };
                }
                code => self.on_error(c, code, generation, &format!("join: {e}")),
            },
        }
    }

    /// A consumer's reaction to an error answer, as Kafka clients react.
    fn on_error(&mut self, c: usize, code: ErrorCode, generation: Option<i32>, what: &str) {
        self.trace.note(format!("client {c} got {code} ({what})"));
        match code {
            ErrorCode::RebalanceInProgress | ErrorCode::IllegalGeneration => {
                self.clients[c].phase = Phase::Idle { generation };
            }
            ErrorCode::UnknownMember | ErrorCode::ClusterClosed => {
                self.clients[c].member_id.clear();
                self.clients[c].phase = Phase::Idle { generation: None };
            }
            ErrorCode::FencedInstanceId => {
                // A fenced static consumer is a zombie of its own restart:
                // it shuts down.
                self.stats.fenced_instances += 1;
                self.clients[c].member_id.clear();
                self.clients[c].phase = Phase::Offline;
            }
            other => self.fail(format!("client {c}: unexpected {other} ({what})")),
        }
    }

    fn react(&mut self, c: usize) {
        let phase = std::mem::replace(&mut self.clients[c].phase, Phase::Offline);
        match phase {
            Phase::Joining {
                answer: Some(answer),
                restarts,
                ..
            } => match answer {
                Ok(j) => self.on_joined(c, j),
                Err(e) => {
                    self.check_not_dropped(c, e.code(), restarts);
                    self.on_error(c, e.code(), None, &format!("join answer: {e}"))
                }
            },
            Phase::Syncing {
                generation,
                answer: Some(answer),
                restarts,
                ..
            } => match answer {
                Ok(s) => {
                    self.trace
                        .note(format!("client {c} synced in generation {generation}"));
                    self.clients[c].phase = Phase::Stable {
                        generation,
                        assignment: decode(&s.assignment),
                    };
                }
                Err(e) => {
                    self.check_not_dropped(c, e.code(), restarts);
                    self.on_error(c, e.code(), Some(generation), &format!("sync answer: {e}"))
                }
            },
            Phase::Idle { .. } => {
                self.clients[c].phase = phase;
                self.join(c);
            }
            other => self.clients[c].phase = other,
        }
    }

    /// A waiting request answered CLUSTER_CLOSED lost its answer, which only
    /// a coordinator restart may do.
    fn check_not_dropped(&self, c: usize, code: ErrorCode, restarts: u64) {
        if code == ErrorCode::ClusterClosed && restarts == self.stats.coordinator_restarts {
            self.fail(format!(
                "client {c}'s waiting request was dropped without an answer"
            ));
        }
    }

    fn on_joined(&mut self, c: usize, j: GroupJoined) {
        self.trace.note(format!(
            "client {c} joined generation {} as {} (leader {}, {} members)",
            j.generation_id,
            j.member_id,
            j.leader_id,
            j.members.len()
        ));
        if j.generation_id > self.highest_generation_seen() {
            self.fail(format!(
                "a join answer names generation {} beyond the group's",
                j.generation_id
            ));
        }
        self.clients[c].member_id = j.member_id.clone();
        let mut sync = GroupSync {
            group_id: GROUP.into(),
            generation_id: j.generation_id,
            member_id: j.member_id.clone(),
            group_instance_id: self.clients[c].instance.clone(),
            protocol_type: Some(j.protocol_type.clone()),
            protocol_name: Some(j.protocol_name.clone()),
            assignments: Vec::new(),
            assigned_partitions: Vec::new(),
        };
        if j.leader_id == j.member_id {
            let counts = self.f.meta.clone();
            (sync.assignments, sync.assigned_partitions) = assign(&j.members, &counts);
        }
        match self.f.c().sync_member(sync) {
            Ok(mut handle) => {
                let answer = handle.try_result();
                self.clients[c].phase = Phase::Syncing {
                    generation: j.generation_id,
                    handle,
                    answer,
                    restarts: self.stats.coordinator_restarts,
                };
            }
            Err(e) => self.on_error(c, e.code(), Some(j.generation_id), &format!("sync: {e}")),
        }
    }

    fn highest_generation_seen(&mut self) -> i32 {
        self.describe().map_or(0, |d| d.generation)
    }

    fn heartbeat(&mut self, c: usize) {
        let Some(generation) = self.clients[c].generation() else {
            return;
        };
        if self.clients[c].member_id.is_empty() {
            return;
        }
        let member = self.clients[c].member_id.clone();
        let instance = self.clients[c].instance.clone();
        let expected = self.expected_heartbeat(&member, generation, instance.as_deref());
        let r = self
            .f
            .c()
            .heartbeat_member(GROUP, &member, generation, instance.as_deref());
        let got = r.as_ref().err().map(|e| e.code());
        if got != expected {
            self.fail(format!(
                "heartbeat of {member} in generation {generation}: expected {expected:?}, got {r:?}"
            ));
        }
        if let Some(code) = got {
            self.on_error(c, code, Some(generation), "heartbeat");
        }
    }

    /// Kafka's heartbeat order, predicted from the group before the call.
    fn expected_heartbeat(
        &mut self,
        member: &str,
        generation: i32,
        instance: Option<&str>,
    ) -> Option<ErrorCode> {
        let Some(d) = self.describe() else {
            return Some(ErrorCode::UnknownMember);
        };
        membership_refusal(&d, member, generation, instance).or_else(|| {
            (d.state == GroupState::PreparingRebalance).then_some(ErrorCode::RebalanceInProgress)
        })
    }

    fn commit(&mut self, c: usize) {
        let Phase::Stable {
            generation,
            assignment,
        } = &self.clients[c].phase
        else {
            return;
        };
        let (generation, assignment) = (*generation, assignment.clone());
        let member = self.clients[c].member_id.clone();
        let instance = self.clients[c].instance.clone();
        if let Some(code) = self.commit_as(&member, instance.as_deref(), generation, &assignment) {
            self.on_error(c, code, Some(generation), "commit");
        }
    }

    fn zombie_commit(&mut self) {
        if self.zombies.is_empty() {
            return;
        }
        let z = self.zombies[self.rng.gen_range(0..self.zombies.len())].clone();
        self.trace.note(format!("zombie commit {z:?}"));
        let current = self.describe().map_or(0, |d| d.generation);
        let code = self.commit_as(
            &z.member_id,
            z.instance.as_deref(),
            z.generation,
            &z.assignment,
        );
        if code == Some(ErrorCode::FencedInstanceId) {
            self.stats.fenced_instances += 1;
        }
        if let Some(code) = code
            && z.generation != current
        {
            assert!(matches!(
                code,
                ErrorCode::IllegalGeneration
                    | ErrorCode::UnknownMember
                    | ErrorCode::FencedInstanceId
            ));
            self.stats.refused_stale_commits += 1;
        }
    }

    /// Commits `assignment` as `member`; checks the answer against the rule
    /// and returns its error code.
    fn commit_as(
        &mut self,
        member: &str,
        instance: Option<&str>,
        generation: i32,
        assignment: &[TopicPartition],
    ) -> Option<ErrorCode> {
        let offsets: BTreeMap<TopicPartition, i64> = assignment
            .iter()
            .map(|p| (p.clone(), self.rng.gen_range(0..1_000)))
            .collect();
        let before = self.describe();
        let expected = expected_commit(before.as_ref(), member, generation, instance);
        let r = self
            .f
            .commit_member(GROUP, member, generation, instance, &offsets);
        let got = r.as_ref().err().map(|e| e.code());
        if got != expected {
            self.fail(format!(
                "commit of {member} in generation {generation}: expected {expected:?}, got {r:?}"
            ));
        }
        if got.is_none() {
            // No commit of a fenced generation or of a non-member: the
            // prediction says so, and this states it once more.
            let d = before
                .as_ref()
                .expect("an accepted member commit has a group");
            assert_eq!(generation, d.generation);
            assert!(d.members.iter().any(|m| m.member_id == member));
            self.stats.accepted_commits += 1;
        }
        got
    }

    fn leave(&mut self, c: usize) {
        if self.clients[c].member_id.is_empty() || matches!(self.clients[c].phase, Phase::Offline) {
            return;
        }
        let member = self.clients[c].member_id.clone();
        let instance = self.clients[c].instance.clone();
        let by_instance = instance.is_some() && self.rng.gen_bool(0.5);
        let who = if by_instance {
            (String::new(), instance.clone())
        } else {
            (member.clone(), instance.clone())
        };
        let expected = match self.describe() {
            None => Some(ErrorCode::UnknownMember),
            Some(d) if by_instance => (!d.members.iter().any(|m| m.group_instance_id == instance))
                .then_some(ErrorCode::UnknownMember),
            Some(d) if fenced(&d, &member, instance.as_deref()) => {
                Some(ErrorCode::FencedInstanceId)
            }
            Some(d) => (!d.members.iter().any(|m| m.member_id == member))
                .then_some(ErrorCode::UnknownMember),
        };
        self.trace.note(format!("leave {c} ({who:?})"));
        let (coordinator, meta) = self.f.parts();
        let answers = coordinator
            .leave_members(GROUP, &[who], meta)
            .unwrap_or_else(|e| panic!("leave: {e}"));
        let got = answers[0].as_ref().err().map(|e| e.code());
        // A member id handed out with MEMBER_ID_REQUIRED is no member yet,
        // but leaving with it is a success (the id is dropped).
        let unused_id = matches!(self.clients[c].phase, Phase::Idle { .. })
            && !by_instance
            && got.is_none()
            && expected == Some(ErrorCode::UnknownMember);
        if got != expected && !unused_id {
            self.fail(format!(
                "leave of {member}: expected {expected:?}, got {:?}",
                answers[0]
            ));
        }
        self.clients[c].member_id.clear();
        self.clients[c].phase = Phase::Offline;
    }

    fn crash(&mut self, c: usize) {
        if matches!(self.clients[c].phase, Phase::Offline) {
            return;
        }
        self.trace.note(format!("crash {c}"));
        if let (Some(generation), false) = (
            self.clients[c].generation(),
            self.clients[c].member_id.is_empty(),
        ) {
            let assignment = match &self.clients[c].phase {
                Phase::Stable { assignment, .. } => assignment.clone(),
                _ => vec![tp("orders", 0)],
            };
            self.zombies.push(Zombie {
                member_id: self.clients[c].member_id.clone(),
                instance: self.clients[c].instance.clone(),
                generation,
                assignment,
            });
            if self.zombies.len() > 20 {
                self.zombies.remove(0);
            }
        }
        self.clients[c].member_id.clear();
        self.clients[c].phase = Phase::Offline;
    }

    // ----- time and the coordinator --------------------------------------

    fn clock_step(&mut self) {
        // Live consumers act between two ticks: they take their answers,
        // rejoin when told to, and heartbeat — most of the time.
        for c in 0..CLIENTS {
            if matches!(self.clients[c].phase, Phase::Offline) {
                continue;
            }
            // Two consumers are sluggish: they heartbeat but often miss a
            // rebalance, so barriers time out on them.
            let eager = if c % 6 == 1 { 0.2 } else { 0.9 };
            if self.rng.gen_bool(eager) {
                self.react(c);
                self.collect_answers();
            }
            if self.rng.gen_bool(0.9) {
                self.heartbeat(c);
            }
        }
        let ms = self.rng.gen_range(0..3_000);
        self.f.clock.advance(ms);
        let before = self.describe();
        let removed = self.f.expire();
        self.trace
            .note(format!("advance {ms} ms, expire -> {removed:?}"));
        if let Some(d) = &before {
            for (_, m) in &removed {
                if d.state == GroupState::PreparingRebalance
                    && let Some(member) = d.members.iter().find(|x| &x.member_id == m)
                    && member.deadline_ms >= self.f.clock.now_ms()
                {
                    self.stats.stragglers_removed += 1;
                } else {
                    self.stats.sessions_expired += 1;
                }
            }
        }
        self.check_rebalance_deadlines();
    }

    fn restart_coordinator(&mut self) {
        self.trace.note("coordinator restart".into());
        self.stats.coordinator_restarts += 1;
        self.f.crash();
    }

    /// Takes every answer that arrived, so the invariants can tell waiting
    /// requests from answered ones.
    fn collect_answers(&mut self) {
        for client in &mut self.clients {
            match &mut client.phase {
                Phase::Joining { handle, answer, .. } if answer.is_none() => {
                    *answer = handle.try_result();
                }
                Phase::Syncing { handle, answer, .. } if answer.is_none() => {
                    *answer = handle.try_result();
                }
                _ => {}
            }
        }
    }

    // ----- invariants ------------------------------------------------------

    fn check(&mut self, step: usize) {
        let Some(d) = self.describe() else {
            self.episode = None;
            return;
        };
        // (a) one live generation: it never goes back, nobody holds a newer one.
        if d.generation < self.highest_generation {
            self.fail(format!(
                "step {step}: generation went back from {} to {}",
                self.highest_generation, d.generation
            ));
        }
        if d.generation > self.highest_generation {
            self.stats.generations_formed += 1;
        }
        self.highest_generation = d.generation;
        for (i, c) in self.clients.iter().enumerate() {
            if c.generation().is_some_and(|g| g > d.generation) {
                self.fail(format!(
                    "step {step}: client {i} holds a generation beyond {}",
                    d.generation
                ));
            }
        }
        // (c) waiting requests only in the phase that answers them.
        for (i, c) in self.clients.iter().enumerate() {
            match &c.phase {
                Phase::Joining { answer: None, .. }
                    if d.state != GroupState::PreparingRebalance =>
                {
                    self.fail(format!(
                        "step {step}: client {i}'s join waits while {}",
                        d.state
                    ))
                }
                Phase::Syncing { answer: None, .. }
                    if d.state != GroupState::CompletingRebalance =>
                {
                    self.fail(format!(
                        "step {step}: client {i}'s sync waits while {}",
                        d.state
                    ))
                }
                _ => {}
            }
        }
        // (b) a Stable generation assigns every subscribed partition once.
        if d.state == GroupState::Stable {
            self.check_stable(step, &d);
        }
        self.track_episode(&d);
    }

    fn check_stable(&mut self, step: usize, d: &GroupDescription) {
        let mut owners: BTreeMap<&TopicPartition, usize> = BTreeMap::new();
        for m in &d.members {
            for p in &m.assignment {
                *owners.entry(p).or_default() += 1;
            }
        }
        let subscribed: BTreeSet<&String> = d.members.iter().flat_map(|m| &m.topics).collect();
        let expected: BTreeSet<TopicPartition> = subscribed
            .iter()
            .flat_map(|t| (0..self.f.meta[*t]).map(|p| tp(t, p)))
            .collect();
        let owned: BTreeSet<TopicPartition> = owners.keys().map(|p| (*p).clone()).collect();
        if owned != expected || owners.values().any(|n| *n != 1) {
            self.fail(format!(
                "step {step}: Stable generation {} does not assign each subscribed partition once: {owners:?} vs {expected:?}",
                d.generation
            ));
        }
        for (i, c) in self.clients.iter().enumerate() {
            if let Phase::Stable {
                generation,
                assignment,
            } = &c.phase
                && *generation == d.generation
                && let Some(m) = d.members.iter().find(|m| m.member_id == c.member_id)
                && &m.assignment != assignment
            {
                self.fail(format!(
                    "step {step}: client {i} holds {assignment:?}, the coordinator says {:?}",
                    m.assignment
                ));
            }
        }
    }

    fn track_episode(&mut self, d: &GroupDescription) {
        let now = self.f.clock.now_ms();
        let phase = matches!(
            d.state,
            GroupState::PreparingRebalance | GroupState::CompletingRebalance
        );
        let same = self
            .episode
            .is_some_and(|e| e.state == d.state && e.generation == d.generation);
        if !phase {
            if d.state == GroupState::Stable
                && self
                    .episode
                    .is_some_and(|e| e.state == GroupState::CompletingRebalance)
            {
                self.stats.stable_generations += 1;
            }
            self.episode = None;
        } else if !same {
            self.episode = Some(Episode {
                state: d.state,
                generation: d.generation,
                since_ms: now,
            });
        }
    }

    /// (d), after a time step: no rebalance phase outlives the rebalance
    /// timeout.
    fn check_rebalance_deadlines(&mut self) {
        let Some(d) = self.describe() else {
            return;
        };
        self.track_episode(&d);
        let Some(e) = self.episode else {
            return;
        };
        let now = self.f.clock.now_ms();
        if now < e.since_ms + MAX_REBALANCE_MS {
            return;
        }
        // Kafka's one exception: nobody rejoined and only static members are
        // left; the coordinator waits another round for them.
        let nobody_rejoined = self.clients.iter().all(|c| {
            !matches!(c.phase, Phase::Joining { answer: None, .. })
                || !d.members.iter().any(|m| m.member_id == c.member_id)
        });
        let only_static = d.members.iter().all(|m| m.group_instance_id.is_some());
        if e.state == GroupState::PreparingRebalance && nobody_rejoined && only_static {
            self.stats.static_rounds_postponed += 1;
            self.episode = Some(Episode { since_ms: now, ..e });
            return;
        }
        self.fail(format!(
            "{} of generation {} began at {} and still runs at {now}",
            e.state, e.generation, e.since_ms
        ));
    }
}

fn random_topics(rng: &mut ChaCha8Rng) -> BTreeSet<&'static str> {
    let mut set: BTreeSet<&'static str> = TOPICS
        .iter()
        .copied()
        .filter(|_| rng.gen_bool(0.5))
        .collect();
    if set.is_empty() {
        set.insert(TOPICS[rng.gen_range(0..TOPICS.len())]);
    }
    set
}

fn fenced(d: &GroupDescription, member: &str, instance: Option<&str>) -> bool {
    instance.is_some_and(|i| {
        d.members
            .iter()
            .any(|m| m.group_instance_id.as_deref() == Some(i) && m.member_id != member)
    })
}

/// What a heartbeat and a commit check first, in Kafka's order: a fenced
/// instance, an unknown member, then the generation.
fn membership_refusal(
    d: &GroupDescription,
    member: &str,
    generation: i32,
    instance: Option<&str>,
) -> Option<ErrorCode> {
    if fenced(d, member, instance) {
        return Some(ErrorCode::FencedInstanceId);
    }
    if !d.members.iter().any(|m| m.member_id == member) {
        return Some(ErrorCode::UnknownMember);
    }
    (generation != d.generation).then_some(ErrorCode::IllegalGeneration)
}

/// The commit rule's answer, predicted from the group before the call.
fn expected_commit(
    d: Option<&GroupDescription>,
    member: &str,
    generation: i32,
    instance: Option<&str>,
) -> Option<ErrorCode> {
    let Some(d) = d else {
        return (generation >= 0).then_some(ErrorCode::IllegalGeneration);
    };
    if generation < 0 && d.members.is_empty() {
        return None;
    }
    membership_refusal(d, member, generation, instance).or_else(|| {
        (d.state == GroupState::CompletingRebalance).then_some(ErrorCode::RebalanceInProgress)
    })
}
