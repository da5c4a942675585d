//! The fault-injection suite: one workload that touches every store of the
//! broker (metadata.json, producer-identities.json, the segments and their
//! indexes, both log checkpoints, producer snapshots, HW and leader-epoch
//! checkpoints, the offsets log, transactions.journal, compaction's swap),
//! run once to count its write and fsync sites, then again for every site
//! and every fault — ENOSPC, EIO, a torn write — injected at that site.
//!
//! After each run: the broker refused to start with a STORAGE_ERROR that
//! names a file, or it ran on and every error it gave was typed; while it
//! runs, the partitions the fault did not reach keep serving. Then it is
//! crashed and reopened without faults: reopening succeeds, no partition is
//! damaged, and no acknowledged record, commit or transaction is missing
//! or different.
//!
//! `MK_FAULT_SITE=<site>:<NoSpace|Io|Torn>` runs that one case only, to
//! look at a failure.
#![allow(
    clippy::too_many_lines,
    reason = "a test scenario reads top to bottom as one story; split, its steps would scatter"
)]

use bytes::Bytes;
use mk_cluster::*;
use std::collections::BTreeMap;
use std::sync::Arc;

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

fn tp(t: &str, p: u32) -> TopicPartition {
    TopicPartition::new(t, p)
}

fn config(dir: &std::path::Path) -> MiniKafkaConfig {
    let mut c = MiniKafkaConfig::new(dir).with_brokers(vec![1, 2]);
    c.segment_max_bytes = 512;
    c
}

/// What the workload was told succeeded.
#[derive(Debug, Default)]
struct Acked {
    /// Per partition: offset -> value.
    records: BTreeMap<TopicPartition, BTreeMap<i64, Bytes>>,
    /// Acknowledged commits: (group, partition) -> offset.
    commits: BTreeMap<(String, TopicPartition), i64>,
    /// The transaction's records, and whether its commit was acknowledged.
    txn: Vec<(i64, Bytes)>,
    txn_committed: bool,
    producer_ids: Vec<i64>,
    /// Every error the workload saw.
    errors: Vec<ClusterError>,
}

impl Acked {
    fn record(&mut self, tp: &TopicPartition, offset: i64, value: Bytes) {
        self.records
            .entry(tp.clone())
            .or_default()
            .insert(offset, value);
    }

    fn note<T>(&mut self, r: Result<T>) -> Option<T> {
        match r {
            Ok(v) => Some(v),
            Err(e) => {
                self.errors.push(e);
                None
            }
        }
    }
}

async fn put(c: &BrokerCluster, a: &mut Acked, tp: &TopicPartition, key: Option<&str>, v: &str) {
    let batch = RecordBatch::new(vec![Record::new(key.map(b), Some(b(v)), 1)]).unwrap();
    if let Some(r) = a.note(c.data().append_batch(tp, batch, AckMode::One).await) {
        a.record(tp, r.base_offset.unwrap(), b(v));
    }
}

/// The workload: every store, in an order that leaves something to
/// recover at each step.
async fn workload(c: &BrokerCluster, a: &mut Acked) {
    let (t0, t1, x0, k0) = (tp("t", 0), tp("t", 1), tp("x", 0), tp("k", 0));
    let _ = a.note(c.topics().create("t", 2, 2));
    let _ = a.note(c.topics().create("x", 1, 1));
    let compacted = TopicConfigOverrides {
        cleanup_policy: Some(CleanupPolicy::Compact),
        ..TopicConfigOverrides::default()
    };
    let _ = a.note(c.topics().create_with_overrides("k", 1, 1, &compacted));
    // An idempotent producer: a sequence moves on only when acknowledged.
    if let Some(id) = a.note(c.transactions().init_producer(Some("p"))) {
        a.producer_ids.push(id.producer_id);
        let mut seq = 0;
        for i in 0..3 {
            let v = format!("idempotent-{i}");
            let batch = RecordBatch::new(vec![Record::new(None, Some(b(&v)), 1)])
                .unwrap()
                .with_producer(ProducerInfo {
                    producer_id: id.producer_id,
                    producer_epoch: id.epoch,
                    base_sequence: seq,
                });
            if let Some(r) = a.note(c.data().append_batch(&t0, batch, AckMode::One).await) {
                a.record(&t0, r.base_offset.unwrap(), b(&v));
                seq += 1;
            }
        }
    }
    for i in 0..3 {
        put(c, a, &t1, None, &format!("plain-{i}")).await;
    }
    let _ = a.note(c.steps().replicate_all_once());
    let _ = a.note(c.steps().roll(&t0));
    put(c, a, &t0, None, "after-roll").await;
    let commit = BTreeMap::from([(t0.clone(), 2)]);
    if a.note(c.groups().commit_direct("g", &commit)).is_some() {
        a.commits.insert(("g".into(), t0.clone()), 2);
    }
    if let Some(h) = a.note(c.transactions().begin("tx").await) {
        for i in 0..2 {
            let v = format!("txn-{i}");
            if let Some((_, offset)) = a.note(
                c.transactions()
                    .send(&h, "x", None, Some(b(&v)), Some(0))
                    .await,
            ) {
                a.txn.push((offset, b(&v)));
            }
        }
        let staged = BTreeMap::from([(t1.clone(), 1)]);
        let offsets_staged = a
            .note(c.transactions().send_offsets(&h, "g2", &staged))
            .is_some();
        if a.note(c.transactions().commit(&h).await).is_some() {
            a.txn_committed = true;
            if offsets_staged {
                a.commits.insert(("g2".into(), t1.clone()), 1);
            }
        }
    }
    let _ = a.note(c.steps().run_flush_cycle());
    put(c, a, &t1, None, "after-flush").await;
    for i in 0..12 {
        put(
            c,
            a,
            &k0,
            Some(&format!("key-{}", i % 3)),
            &format!("compact-{i}"),
        )
        .await;
    }
    let _ = a.note(c.steps().replicate_all_once());
    let _ = a.note(c.steps().compact("k", Some(0)));
    let _ = a.note(c.topics().create("gone", 1, 1));
    put(c, a, &tp("gone", 0), None, "soon gone").await;
    a.records.remove(&tp("gone", 0));
    let _ = a.note(c.topics().delete("gone"));
    let _ = a.note(c.steps().run_flush_cycle());
    put(c, a, &x0, None, "last").await;
}

/// Codes a fault may legitimately surface as, directly or as a
/// consequence (a topic whose creation failed, a transaction that became
/// abort-only, a sequence that did not advance).
const TYPED: &[ErrorCode] = &[
    ErrorCode::StorageError,
    ErrorCode::ClusterFailed,
    ErrorCode::ClusterClosed,
    ErrorCode::UnknownTopic,
    ErrorCode::InvalidTxnState,
    ErrorCode::OutOfOrderSequence,
];

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A scratch directory on tmpfs when there is one: every run fsyncs a lot,
/// and the suite checks the broker's logic, not the disk's speed.
fn scratch() -> tempfile::TempDir {
    let shm = std::path::Path::new("/dev/shm");
    if shm.is_dir() {
        tempfile::tempdir_in(shm).unwrap()
    } else {
        tempfile::tempdir().unwrap()
    }
}

/// How a run ends: killed (what every fault in the workload is followed
/// by, so its recovery is tested), or closed (so faults at the sites of a
/// graceful shutdown are tested too).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    Crash,
    Close,
}

/// One run with `fault` at `site` (none for the counting runs). Returns the
/// sites the run passed; panics with the site and fault on any violation.
fn run(site: Option<(u64, Fault)>, end: End) -> u64 {
    let dir = scratch();
    let clock = ManualClock::new(1_000);
    let faults = Arc::new(FaultInjector::new());
    if let Some((s, f)) = site {
        faults.inject_at(s, f);
    }
    let what = format!("{site:?}");
    let rt = runtime();
    let mut acked = Acked::default();
    let opened = BrokerCluster::open_with_faults(
        config(dir.path()),
        Arc::new(clock.clone()),
        faults.clone(),
    );
    let sites = match opened {
        Err(e) => {
            // Refusing to start is fine if it says what and where.
            assert_eq!(e.code(), ErrorCode::StorageError, "{what}: {e}");
            assert!(
                e.to_string().contains(&dir.path().display().to_string()),
                "{what}: {e}"
            );
            faults.sites_passed()
        }
        Ok(c) => {
            rt.block_on(workload(&c, &mut acked));
            for e in &acked.errors {
                assert!(TYPED.contains(&e.code()), "{what}: untyped {e:?}");
            }
            if site.is_none() {
                assert!(
                    acked.errors.is_empty(),
                    "the workload runs clean: {:?}",
                    acked.errors
                );
            }
            // A full disk never stops the broker, except where the
            // transaction journal could not be written (its coordinator
            // stops itself: docs/operations.md).
            if let Some((_, Fault::NoSpace)) = site
                && let LifecycleState::Failed(cause) = c.lifecycle().state()
            {
                assert!(
                    cause.contains(mk_txn::JOURNAL_FILE_NAME),
                    "{what}: a full disk failed the broker: {cause}"
                );
            }
            faults.clear();
            match c.lifecycle().state() {
                // Still running: what the fault did not reach serves, and
                // with the fault gone everything does.
                LifecycleState::Running => {
                    assert!(
                        c.lifecycle().health().damaged.is_empty(),
                        "{what}: a write fault is no damage"
                    );
                    if c.topics().list().unwrap().contains(&"t".to_string()) {
                        let got = c.data().fetch(&FetchRequest::new(tp("t", 1), 0, 100));
                        assert!(got.is_ok(), "{what}: {got:?}");
                    }
                }
                LifecycleState::Failed(_) => {
                    let e = c.topics().list().unwrap_err();
                    assert_eq!(e.code(), ErrorCode::ClusterFailed, "{what}");
                }
                other => panic!("{what}: {other:?}"),
            }
            if end == End::Close {
                if let Some((s, f)) = site {
                    faults.inject_at(s, f);
                }
                if let Err(e) = rt.block_on(c.lifecycle().close()) {
                    assert!(TYPED.contains(&e.code()), "{what}: closing: untyped {e:?}");
                }
                faults.clear();
            }
            c.lifecycle().crash();
            faults.sites_passed()
        }
    };
    // Failures below name the run and what the workload was told.
    let what = format!(
        "{what} after {:?}",
        acked
            .errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
    );
    check_reopen(dir.path(), &clock, &acked, &what, &rt);
    sites
}

/// Reopens without faults and checks that nothing acknowledged is missing
/// or different.
fn check_reopen(
    dir: &std::path::Path,
    clock: &ManualClock,
    acked: &Acked,
    what: &str,
    rt: &tokio::runtime::Runtime,
) {
    let c = BrokerCluster::open_with_clock(config(dir), Arc::new(clock.clone()))
        .unwrap_or_else(|e| panic!("{what}: reopening without faults failed: {e}"));
    assert!(
        c.lifecycle().health().is_healthy(),
        "{what}: {:?}",
        c.lifecycle().health()
    );
    for (p, records) in &acked.records {
        let got = c
            .data()
            .fetch(&FetchRequest::new(p.clone(), 0, 1_000))
            .unwrap_or_else(|e| panic!("{what}: {p}: {e}"));
        let stored: BTreeMap<i64, Bytes> = got
            .records
            .into_iter()
            .map(|r| (r.offset, r.value.unwrap_or_default()))
            .collect();
        for (offset, value) in records {
            // Compaction may drop a superseded key; what is there must be
            // the acknowledged value.
            if p.topic == "k" && !stored.contains_key(offset) {
                continue;
            }
            assert_eq!(
                stored.get(offset),
                Some(value),
                "{what}: {p} offset {offset}"
            );
        }
        if p.topic != "k" {
            let acked_values = records.len();
            let distinct: std::collections::BTreeSet<&Bytes> = stored.values().collect();
            assert_eq!(
                distinct.len(),
                stored.len(),
                "{what}: {p} holds a duplicate"
            );
            assert!(stored.len() >= acked_values, "{what}: {p}");
        }
    }
    for ((group, p), offset) in &acked.commits {
        assert_eq!(
            c.groups().fetch_committed(group, p).unwrap(),
            Some(*offset),
            "{what}: commit of {group} on {p}"
        );
    }
    if !acked.txn.is_empty() {
        let read = c
            .data()
            .fetch(&FetchRequest::new(tp("x", 0), 0, 100).with_isolation(Isolation::ReadCommitted))
            .unwrap();
        let visible: Vec<Bytes> = read
            .records
            .iter()
            .filter_map(|r| r.value.clone())
            .collect();
        let txn: Vec<Bytes> = acked.txn.iter().map(|(_, v)| v.clone()).collect();
        let shown = txn.iter().filter(|v| visible.contains(v)).count();
        if acked.txn_committed {
            assert_eq!(
                shown,
                txn.len(),
                "{what}: the committed transaction is visible"
            );
        } else {
            assert!(
                shown == 0 || shown == txn.len(),
                "{what}: a transaction is all or nothing"
            );
        }
        // A transaction the fault left open ends by its timeout at the
        // latest: none hangs.
        clock.advance(c.config().transaction_timeout_ms + 1);
        rt.block_on(c.transactions().expire())
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(
            c.data().last_stable_offset(&tp("x", 0)).unwrap(),
            c.data().visible_end(&tp("x", 0)).unwrap(),
            "{what}: no transaction hangs"
        );
    }
    if let Ok(q) = c.transactions().init_producer(Some("q")) {
        assert!(
            !acked.producer_ids.contains(&q.producer_id),
            "{what}: a producer id handed out twice"
        );
    }
    rt.block_on(c.lifecycle().close())
        .unwrap_or_else(|e| panic!("{what}: {e}"));
}

#[test]
fn every_fault_at_every_write_and_fsync_site_stays_typed_and_loses_nothing() {
    // The sites of opening and the workload, then those of closing too.
    let workload = run(None, End::Crash);
    let all = run(None, End::Close);
    assert_eq!(
        run(None, End::Crash),
        workload,
        "every run passes the same sites"
    );
    assert!(
        workload > 100 && all > workload,
        "{workload} and {all} sites"
    );
    let end = |site| {
        if site < workload {
            End::Crash
        } else {
            End::Close
        }
    };
    if let Ok(one) = std::env::var("MK_FAULT_SITE") {
        let (site, fault) = one.split_once(':').expect("MK_FAULT_SITE=<site>:<fault>");
        let fault = Fault::ALL
            .into_iter()
            .find(|f| format!("{f:?}") == fault)
            .expect("a fault");
        let site = site.parse().unwrap();
        run(Some((site, fault)), end(site));
        return;
    }
    for site in 0..all {
        for fault in Fault::ALL {
            run(Some((site, fault)), end(site));
        }
    }
}
