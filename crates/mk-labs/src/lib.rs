//! Labs: narrated, deterministic failure scenarios that run on a temporary
//! data directory with a manual clock (spec 05). Each prints numbered steps
//! with the offsets, high watermarks and epochs it observes and reports the
//! key facts, which the tests check. `mk-server lab <name>` runs them. The
//! labs are written against the core's public roles and the in-process
//! client library, as a reader of the book would write them.

use bytes::Bytes;
use mk_client::{ClusterClients, ConsumerOptions};
use mk_cluster::{
    AckMode, BrokerCluster, ClusterError, FetchRequest, Isolation, ManualClock, MiniKafkaConfig,
    Record, RecordBatch, Result, TopicPartition, TxnHandle,
};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// The labs, by name.
pub const LAB_NAMES: &[&str] = &[
    "leader_failure",
    "rebalance",
    "divergent_tail",
    "exactly_once",
];

/// What a lab did: its narrated steps and the facts it established.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabReport {
    pub name: String,
    pub steps: Vec<String>,
    pub facts: BTreeMap<String, i64>,
}

impl LabReport {
    fn new(name: &str) -> Self {
        Self {
            name: name.to_string(),
            ..Self::default()
        }
    }

    fn step(&mut self, text: impl Into<String>) {
        let n = self.steps.len() + 1;
        self.steps.push(format!("{n}. {}", text.into()));
    }

    fn fact(&mut self, key: &str, value: i64) {
        self.facts.insert(key.to_string(), value);
    }
}

/// Runs the lab `name` in `data_dir` (which should be empty).
pub async fn run_lab(name: &str, data_dir: &Path) -> Result<LabReport> {
    match name {
        "leader_failure" => leader_failure(data_dir).await,
        "rebalance" => rebalance(data_dir).await,
        "divergent_tail" => divergent_tail(data_dir).await,
        "exactly_once" => exactly_once(data_dir).await,
        other => Err(ClusterError::InvalidRequest(format!(
            "unknown lab {other:?}; labs are {}",
            LAB_NAMES.join(", ")
        ))),
    }
}

fn open(
    dir: &Path,
    brokers: Vec<i32>,
    min_isr: usize,
    clock: &ManualClock,
) -> Result<Arc<BrokerCluster>> {
    BrokerCluster::open_with_clock(
        MiniKafkaConfig::new(dir)
            .with_brokers(brokers)
            .with_min_insync_replicas(min_isr),
        Arc::new(clock.clone()),
    )
}

fn one(value: &str, ts: i64) -> RecordBatch {
    RecordBatch::new(vec![Record::new(
        None,
        Some(Bytes::copy_from_slice(value.as_bytes())),
        ts,
    )])
    .expect("one record")
}

fn values(c: &BrokerCluster, tp: &TopicPartition) -> Result<Vec<(i64, String)>> {
    let r = c.data().fetch(&FetchRequest::new(
        tp.clone(),
        c.data().log_start_offset(tp)?,
        1_000,
    ))?;
    Ok(r.records
        .into_iter()
        .map(|r| {
            let v = r
                .value
                .map(|v| String::from_utf8_lossy(&v).into_owned())
                .unwrap_or_default();
            (r.offset, v)
        })
        .collect())
}

/// Appends each value as its own batch with acks=1.
async fn append_each(c: &BrokerCluster, tp: &TopicPartition, values: &[&str]) -> Result<()> {
    for v in values {
        c.data()
            .append_batch(tp, one(v, 1_000), AckMode::One)
            .await?;
    }
    Ok(())
}

fn describe(c: &BrokerCluster, tp: &TopicPartition) -> Result<String> {
    let p = c.topics().describe_partition(tp)?;
    Ok(format!(
        "leader={} epoch={} ISR={:?} HW={} LEOs={:?}",
        p.leader_id, p.leader_epoch, p.isr, p.high_watermark, p.log_end_offsets
    ))
}

/// acks=1 loses an acknowledged write when the leader fails before
/// replication; acks=all with min ISR 2 does not.
async fn leader_failure(dir: &Path) -> Result<LabReport> {
    let mut lab = LabReport::new("leader_failure");
    let clock = ManualClock::new(1_000);
    let tp = TopicPartition::new("payments", 0);
    let acks_one = two_brokers_with_payments(&dir.join("acks1"), 1, &clock)?;
    leader_failure_acks_one(&mut lab, &acks_one, &tp).await?;
    let acks_all = two_brokers_with_payments(&dir.join("acksall"), 2, &clock)?;
    leader_failure_acks_all(&mut lab, &acks_all, &tp).await?;
    Ok(lab)
}

/// The stage of both acts: two brokers and topic payments with
/// replication factor 2.
fn two_brokers_with_payments(
    dir: &Path,
    min_isr: usize,
    clock: &ManualClock,
) -> Result<Arc<BrokerCluster>> {
    let c = open(dir, vec![1, 2], min_isr, clock)?;
    c.topics().create("payments", 1, 2)?;
    Ok(c)
}

/// The first act: an acknowledged acks=1 write is lost with its leader.
async fn leader_failure_acks_one(
    lab: &mut LabReport,
    c: &BrokerCluster,
    tp: &TopicPartition,
) -> Result<()> {
    lab.step(format!(
        "Two brokers, topic payments with replication factor 2: {}",
        describe(c, tp)?
    ));
    let r = c
        .data()
        .append_batch(tp, one("pay-1", 1_000), AckMode::One)
        .await?;
    let acked = r.base_offset.unwrap_or(-1);
    lab.step(format!(
        "Produce pay-1 with acks=1: acknowledged at offset {acked} by the leader alone; {}",
        describe(c, tp)?
    ));
    let le = c.steps().promote(tp, 2)?;
    lab.step(format!(
        "Broker 1 fails before broker 2 fetched: broker 2 (still in the ISR) is promoted, epoch {}; {}",
        le.leader_epoch,
        describe(c, tp)?
    ));
    let after = values(c, tp)?;
    let lost = !after.iter().any(|(_, v)| v == "pay-1");
    lab.step(format!(
        "The new leader's log holds {after:?}: the acknowledged write is {}",
        if lost { "GONE" } else { "still there" }
    ));
    c.steps().rejoin(tp, 1)?;
    c.steps().replicate_all_once()?;
    lab.step(format!(
        "Broker 1 rejoins as a follower and reconciles by leader epoch: it drops its tail; {}",
        describe(c, tp)?
    ));
    lab.fact("acks1_acknowledged_offset", acked);
    lab.fact("acks1_write_lost", i64::from(lost));
    c.lifecycle().close().await
}

/// The second act: with acks=all and min ISR 2 the same failure keeps it.
async fn leader_failure_acks_all(
    lab: &mut LabReport,
    c: &BrokerCluster,
    tp: &TopicPartition,
) -> Result<()> {
    lab.step("Again with acks=all and min.insync.replicas=2".to_string());
    let pending = c
        .data()
        .submit_append(tp, one("pay-2", 1_000), AckMode::All, None)?;
    let wait = tokio::spawn(pending.wait());
    lab.step(format!(
        "Produce pay-2 with acks=all: appended on the leader, not yet acknowledged; {}",
        describe(c, tp)?
    ));
    c.steps().replicate_all_once()?;
    let r = wait
        .await
        .map_err(|e| ClusterError::InvalidRequest(format!("lab task failed: {e}")))??;
    let acked = r.base_offset.unwrap_or(-1);
    lab.step(format!(
        "Broker 2 fetches; the HW passes the batch and the producer hears back: offset {acked}; {}",
        describe(c, tp)?
    ));
    c.steps().promote(tp, 2)?;
    let after = values(c, tp)?;
    let survived = after.iter().any(|(o, v)| *o == acked && v == "pay-2");
    lab.step(format!(
        "Broker 1 fails, broker 2 is promoted: its log holds {after:?}: the write {}",
        if survived { "SURVIVES" } else { "is lost" }
    ));
    lab.fact("acks_all_acknowledged_offset", acked);
    lab.fact("acks_all_write_survived", i64::from(survived));
    c.lifecycle().close().await
}

/// A member of the rebalance lab's group, with a fixed member id so the
/// narration can name it.
fn analytics_member(c: &Arc<BrokerCluster>, id: &str) -> Result<mk_client::Consumer> {
    c.consumer(
        "analytics",
        ConsumerOptions {
            member_id: Some(id.into()),
            ..ConsumerOptions::default()
        },
    )
}

/// Two members join, the generation bumps, a stale view persists until
/// refresh, then no partition has two owners; leaving hands everything back.
async fn rebalance(dir: &Path) -> Result<LabReport> {
    let mut lab = LabReport::new("rebalance");
    let clock = ManualClock::new(1_000);
    let c = open(dir, vec![1], 1, &clock)?;
    c.topics().create("clicks", 4, 1)?;
    let a = analytics_member(&c, "a")?;
    let b = analytics_member(&c, "b")?;
    join_clicks(&mut lab, &a, "a")?;
    let got_b = join_clicks(&mut lab, &b, "b")?;
    let stale = a.assignment();
    let overlap_before = stale.iter().filter(|tp| got_b.contains(tp)).count();
    lab.step(format!(
        "Before refreshing, a still believes it owns {} ({} partitions also owned by b: no revoke barrier)",
        names(&stale),
        overlap_before
    ));
    let stale_commit = a.commit();
    lab.step(format!(
        "a commits with its stale generation: {}",
        match &stale_commit {
            Ok(()) => "accepted".to_string(),
            Err(e) => e.code().as_str().to_string(),
        }
    ));
    lab.fact("stale_commit_rejected", i64::from(stale_commit.is_err()));
    let fresh = a.refresh_assignment()?;
    let overlap_after = fresh.iter().filter(|tp| got_b.contains(tp)).count();
    lab.step(format!(
        "a refreshes: owns {}; overlap with b: {overlap_after}",
        names(&fresh)
    ));
    lab.fact("overlap_after_refresh", overlap_after as i64);
    b.close()?;
    let all = a.refresh_assignment()?;
    lab.step(format!(
        "b leaves: generation {}, a owns {}",
        a.generation().unwrap_or(-1),
        names(&all)
    ));
    lab.fact("partitions_after_leave", all.len() as i64);
    c.lifecycle().close().await?;
    Ok(lab)
}

/// Member `name` subscribes to `clicks`: narrates its generation and what
/// it owns, and records the generation as `generation_after_<name>`.
fn join_clicks(
    lab: &mut LabReport,
    member: &mk_client::Consumer,
    name: &str,
) -> Result<Vec<TopicPartition>> {
    let got = member.subscribe(&["clicks"])?;
    let generation = member.generation().unwrap_or(-1);
    lab.step(format!(
        "Member {name} joins: generation {generation}, owns {}",
        names(&got)
    ));
    lab.fact(&format!("generation_after_{name}"), i64::from(generation));
    Ok(got)
}

fn names(tps: &[TopicPartition]) -> String {
    let v: Vec<String> = tps.iter().map(|tp| tp.to_string()).collect();
    format!("[{}]", v.join(", "))
}

/// Epoch reconciliation step by step: a former leader's divergent tail is
/// replaced by the new leader's records at the same offsets.
async fn divergent_tail(dir: &Path) -> Result<LabReport> {
    let mut lab = LabReport::new("divergent_tail");
    let clock = ManualClock::new(1_000);
    let c = open(dir, vec![1, 2], 1, &clock)?;
    c.topics().create("ledger", 1, 2)?;
    let tp = TopicPartition::new("ledger", 0);
    append_each(&c, &tp, &["a", "b"]).await?;
    c.steps().replicate_all_once()?;
    c.steps().replicate_all_once()?;
    lab.step(format!(
        "a, b written in epoch 0 and replicated: {}",
        describe(&c, &tp)?
    ));
    append_each(&c, &tp, &["x1", "x2"]).await?;
    lab.step(format!(
        "x1, x2 written by broker 1 only (acks=1): {}",
        describe(&c, &tp)?
    ));
    let le = c.steps().promote(&tp, 2)?;
    lab.step(format!(
        "Broker 2 promoted (epoch {}); it keeps its whole log: {}",
        le.leader_epoch,
        describe(&c, &tp)?
    ));
    append_each(&c, &tp, &["y1", "y2"]).await?;
    lab.step(format!(
        "The new leader writes y1, y2 at offsets 2 and 3: {}",
        describe(&c, &tp)?
    ));
    c.steps().rejoin(&tp, 1)?;
    lab.step("Broker 1 rejoins as follower; its latest epoch is 0".to_string());
    c.steps().replicate_all_once()?;
    c.steps().replicate_all_once()?;
    lab.step(format!(
        "It asks the leader for the end offset of epoch 0 (2), truncates its divergent tail to 2 and fetches: {}",
        describe(&c, &tp)?
    ));
    let leader_values = values(&c, &tp)?;
    lab.step(format!("The partition now reads {leader_values:?}"));
    let info = c.topics().describe_partition(&tp)?;
    let converged = info
        .log_end_offsets
        .values()
        .all(|leo| *leo == info.log_end_offset);
    lab.fact("replicas_converged", i64::from(converged));
    lab.fact(
        "divergent_tail_replaced",
        i64::from(
            leader_values
                .iter()
                .map(|(_, v)| v.as_str())
                .collect::<Vec<_>>()
                == ["a", "b", "y1", "y2"],
        ),
    );
    lab.fact("leader_epoch", i64::from(info.leader_epoch));
    c.lifecycle().close().await?;
    Ok(lab)
}

/// The processing step of the exactly-once lab: up to `max` input records
/// from `from`, each written to `output` enriched, in transaction `h`.
async fn enrich(
    c: &BrokerCluster,
    h: &TxnHandle,
    input: &TopicPartition,
    from: i64,
    max: i64,
) -> Result<()> {
    for r in c
        .data()
        .fetch(&FetchRequest::new(input.clone(), from, max))?
        .records
    {
        let v = format!(
            "{}-enriched",
            String::from_utf8_lossy(&r.value.unwrap_or_default())
        );
        c.transactions()
            .send(h, "output", None, Some(Bytes::from(v)), None)
            .await?;
    }
    Ok(())
}

/// Commits transaction `h` with the group's input position `offset`.
async fn commit_with_input_offset(
    c: &BrokerCluster,
    h: &TxnHandle,
    input: &TopicPartition,
    offset: i64,
) -> Result<()> {
    c.transactions().send_offsets(
        h,
        "enricher-group",
        &BTreeMap::from([(input.clone(), offset)]),
    )?;
    c.transactions().commit(h).await
}

/// Read-process-write with a transaction; a crash mid-transaction; recovery
/// leaves every input processed exactly once in the committed output.
async fn exactly_once(dir: &Path) -> Result<LabReport> {
    let mut lab = LabReport::new("exactly_once");
    let clock = ManualClock::new(1_000);
    let c = open(dir, vec![1], 1, &clock)?;
    c.topics().create("input", 1, 1)?;
    c.topics().create("output", 1, 1)?;
    let input = TopicPartition::new("input", 0);
    let output = TopicPartition::new("output", 0);
    for i in 0..4 {
        c.data()
            .append_batch(&input, one(&format!("order-{i}"), 1_000), AckMode::One)
            .await?;
    }
    lab.step("input holds order-0..order-3".to_string());
    // One read-process-write cycle over the first two inputs.
    let h = c.transactions().begin("enricher").await?;
    enrich(&c, &h, &input, 0, 2).await?;
    commit_with_input_offset(&c, &h, &input, 2).await?;
    lab.step(format!(
        "Transaction 1 enriches order-0, order-1 and commits the input offset 2 with them: committed offset {:?}",
        c.groups().fetch_committed("enricher-group", &input)?
    ));
    // Transaction 2 processes the rest, then the process dies before commit.
    let h = c.transactions().begin("enricher").await?;
    enrich(&c, &h, &input, 2, 2).await?;
    lab.step("Transaction 2 writes order-2, order-3 output records... and the process crashes before commit".to_string());
    c.lifecycle().crash();
    drop(c);
    let c = open(dir, vec![1], 1, &clock)?;
    let committed = c
        .groups()
        .fetch_committed("enricher-group", &input)?
        .unwrap_or(0);
    lab.step(format!(
        "Restart: the committed input offset is still {committed}"
    ));
    // The new instance fences the zombie and aborts its open transaction.
    let h = c.transactions().begin("enricher").await?;
    lab.step(format!(
        "A new instance begins with epoch {}: the old transaction is aborted with markers",
        h.producer_epoch
    ));
    enrich(&c, &h, &input, committed, 10).await?;
    commit_with_input_offset(&c, &h, &input, 4).await?;
    let rc = c.data().fetch(
        &FetchRequest::new(output.clone(), 0, 100).with_isolation(Isolation::ReadCommitted),
    )?;
    let seen: Vec<String> = rc
        .records
        .iter()
        .map(|r| String::from_utf8_lossy(r.value.as_deref().unwrap_or_default()).into_owned())
        .collect();
    let ru = c.data().fetch(&FetchRequest::new(output.clone(), 0, 100))?;
    lab.step(format!(
        "Reprocess from offset {committed} and commit. read_committed output: {seen:?} ({} records in the log, {} visible to read_uncommitted)",
        c.data().log_end_offset(&output)?,
        ru.records.len()
    ));
    let distinct: std::collections::BTreeSet<&String> = seen.iter().collect();
    lab.fact("committed_outputs", seen.len() as i64);
    lab.fact("distinct_outputs", distinct.len() as i64);
    lab.fact("uncommitted_visible_outputs", ru.records.len() as i64);
    lab.fact(
        "final_committed_offset",
        c.groups()
            .fetch_committed("enricher-group", &input)?
            .unwrap_or(-1),
    );
    c.lifecycle().close().await?;
    Ok(lab)
}
