//! Faults stay local, bounded and loud (issue 12), tested in the core:
//! every fetch answer is bounded, damage found while reading stays with its
//! partition, a full disk fails writes typed while reads go on, lost or
//! damaged stores are refused or rebuilt safely, and nothing of a topic is
//! left half-created.
#![allow(
    clippy::too_many_lines,
    reason = "a test scenario reads top to bottom as one story; split, its steps would scatter"
)]

use bytes::Bytes;
mod common;

use common::{
    append_value, b, commit_value, dir_and_clock, fresh_cluster, fresh_cluster_with, fresh_topic,
    open, open_with, send_value, tp,
};
use mk_cluster::*;
use std::sync::Arc;

async fn put(c: &BrokerCluster, tp: &TopicPartition, value: &str) -> i64 {
    c.data()
        .append_batch(
            tp,
            RecordBatch::new(vec![Record::new(None, Some(b(value)), 1)]).unwrap(),
            AckMode::One,
        )
        .await
        .unwrap()
        .base_offset
        .unwrap()
}

#[tokio::test]
async fn a_json_fetch_is_capped_by_fetch_max_bytes_whatever_it_asks() {
    let (_dir, _, c) = fresh_cluster_with(|mut c| {
        c.fetch_max_bytes = 2_000;
        c
    });
    c.topics().create("cap", 1, 1).unwrap();
    let p = tp("cap", 0);
    let v = "v".repeat(600);
    for _ in 0..20 {
        put(&c, &p, &v).await;
    }
    for isolation in [Isolation::ReadUncommitted, Isolation::ReadCommitted] {
        for asked in [None, Some(1 << 30)] {
            let mut req = FetchRequest::new(p.clone(), 0, i64::MAX).with_isolation(isolation);
            req.max_bytes = asked;
            let got = c.data().fetch(&req).unwrap();
            assert_eq!(
                got.records.len(),
                3,
                "{isolation:?} {asked:?}: 3 x 600 <= 2000"
            );
            assert_eq!(got.next_offset, 3, "the reader resumes after the cut");
        }
        // A client limit below the cap still wins, and a record larger than
        // every limit still goes out alone.
        let mut req = FetchRequest::new(p.clone(), 5, i64::MAX).with_isolation(isolation);
        req.max_bytes = Some(10);
        let got = c.data().fetch(&req).unwrap();
        assert_eq!(got.records.len(), 1);
        assert_eq!(got.records[0].offset, 5);
    }
    // Reading the whole partition in capped answers loses nothing.
    let mut offset = 0;
    let mut seen = 0;
    while offset < 20 {
        let got = c
            .data()
            .fetch(&FetchRequest::new(p.clone(), offset, i64::MAX))
            .unwrap();
        seen += got.records.len();
        offset = got.next_offset;
    }
    assert_eq!(seen, 20);
    c.lifecycle().close().await.unwrap();
}

#[tokio::test]
async fn a_lost_metadata_file_refuses_to_start_and_says_how_to_recover() {
    let (dir, clock, c) = fresh_cluster();
    c.topics().create("c", 2, 1).unwrap();
    put(&c, &tp("c", 1), "kept").await;
    c.lifecycle().close().await.unwrap();
    drop(c);
    let meta = dir.path().join("metadata.json");
    let backup = std::fs::read(&meta).unwrap();
    std::fs::remove_file(&meta).unwrap();
    for _ in 0..2 {
        let e = BrokerCluster::open(MiniKafkaConfig::new(dir.path())).unwrap_err();
        assert_eq!(e.code(), ErrorCode::StorageError, "{e}");
        let msg = e.to_string();
        for needle in [
            "broker-1/c-0",
            "broker-1/c-1",
            "metadata.json is missing",
            "restore metadata.json from a backup",
            "move these directories",
        ] {
            assert!(msg.contains(needle), "{needle:?} in {msg}");
        }
        assert!(!meta.exists(), "a refused start writes no metadata");
    }
    // Restoring the file is the way back: everything is there.
    std::fs::write(&meta, backup).unwrap();
    let c = open(dir.path(), &clock);
    let got = c
        .data()
        .fetch(&FetchRequest::new(tp("c", 1), 0, 10))
        .unwrap();
    assert_eq!(got.records[0].value, Some(b("kept")));
    c.lifecycle().close().await.unwrap();
}

#[tokio::test]
async fn a_partition_directory_the_metadata_does_not_list_refuses_to_start() {
    let (dir, clock, c) = fresh_cluster();
    c.topics().create("known", 1, 1).unwrap();
    c.lifecycle().close().await.unwrap();
    drop(c);
    let stray = dir.path().join("broker-1").join("stray-0");
    std::fs::create_dir_all(&stray).unwrap();
    let e = BrokerCluster::open(MiniKafkaConfig::new(dir.path())).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("broker-1/stray-0") && msg.contains("metadata.json does not list them"),
        "{msg}"
    );
    std::fs::remove_dir(&stray).unwrap();
    open(dir.path(), &clock).lifecycle().close().await.unwrap();
}

#[tokio::test]
async fn a_creation_interrupted_by_a_crash_leaves_nothing_and_the_name_starts_empty() {
    use mk_cluster::metadata::{MetadataStore, TopicId, TopicMeta, place_replicas};
    let (dir, clock) = dir_and_clock();
    open(dir.path(), &clock).lifecycle().close().await.unwrap();
    // Where a crash inside create_topic leaves it: the creation recorded,
    // some files written, the topic not yet published.
    let mut store = MetadataStore::load(dir.path()).unwrap();
    let meta = TopicMeta {
        name: "half".into(),
        topic_id: TopicId::random(),
        partitions: vec![place_replicas(&[1], 0, 1), place_replicas(&[1], 1, 1)],
        config: TopicConfig::default(),
    };
    store.begin_create(&meta, &meta.partitions).unwrap();
    let half = dir.path().join("broker-1").join("half-0");
    let mut log = mk_log::PartitionLog::open(&half, mk_log::LogConfig::default(), 0).unwrap();
    log.append(RecordBatch::new(vec![Record::new(None, Some(b("ghost")), 1)]).unwrap())
        .unwrap();
    drop(log);
    let c = open(dir.path(), &clock);
    assert!(c.topics().list().unwrap().is_empty());
    assert!(!half.exists(), "the half-created files are gone");
    c.topics().create("half", 2, 1).unwrap();
    assert_eq!(
        c.data().log_end_offset(&tp("half", 0)).unwrap(),
        0,
        "nothing resurrected"
    );
    c.lifecycle().close().await.unwrap();
}

#[tokio::test]
async fn a_creation_that_fails_half_way_is_undone_and_the_broker_keeps_running() {
    let (dir, clock, c) = fresh_cluster_with(|c| c.with_brokers(vec![1, 2]));
    c.topics().create("ok", 1, 1).unwrap();
    // A file where broker 2's directory must go makes the creation fail at
    // its second partition, after the first one was created on broker 1.
    let blocker = dir.path().join("broker-2");
    std::fs::write(&blocker, b"a file where a directory must go").unwrap();
    let e = c.topics().create("late", 4, 1).unwrap_err();
    assert_eq!(e.code(), ErrorCode::StorageError, "{e}");
    assert!(e.to_string().contains("broker-2"), "{e}");
    assert_eq!(c.lifecycle().state(), LifecycleState::Running);
    assert!(
        !dir.path().join("broker-1").join("late-0").exists(),
        "the partition created before the failure was removed"
    );
    assert_eq!(c.topics().list().unwrap(), vec!["ok".to_string()]);
    put(&c, &tp("ok", 0), "still writable").await;
    std::fs::remove_file(&blocker).unwrap();
    c.topics().create("late", 4, 1).unwrap();
    c.lifecycle().close().await.unwrap();
    drop(c);
    open_with(dir.path(), &clock, |c| c.with_brokers(vec![1, 2]))
        .lifecycle()
        .close()
        .await
        .unwrap();
}

#[tokio::test]
async fn a_directory_in_the_way_of_a_new_topic_is_refused_before_anything_is_created() {
    let (dir, _, c) = fresh_cluster();
    c.topics().create("ok", 1, 1).unwrap();
    let stray = dir.path().join("broker-1").join("late-2");
    std::fs::create_dir_all(&stray).unwrap();
    let e = c.topics().create("late", 4, 1).unwrap_err();
    assert_eq!(e.code(), ErrorCode::StorageError, "{e}");
    assert!(e.to_string().contains("already exists"), "{e}");
    assert!(!dir.path().join("broker-1").join("late-0").exists());
    assert_eq!(c.lifecycle().state(), LifecycleState::Running);
    c.lifecycle().close().await.unwrap();
}

/// One idempotent record from `id` at sequence `seq`.
async fn idempotent_put(
    c: &BrokerCluster,
    p: &TopicPartition,
    id: ProducerIdentity,
    seq: i32,
    value: &str,
) -> ProduceResponse {
    c.data()
        .produce(ProduceRequest {
            tp: p.clone(),
            records: vec![ProduceEntry {
                value: Some(b(value)),
                ..ProduceEntry::default()
            }],
            acks: AckMode::All,
            producer: Some(ProducerInfo {
                producer_id: id.producer_id,
                producer_epoch: id.epoch,
                base_sequence: seq,
            }),
        })
        .await
        .unwrap()
}

#[tokio::test]
async fn a_deleted_identity_store_never_hands_out_an_id_the_log_holds() {
    let (dir, clock, c, p) = fresh_topic("t");
    let first = c.transactions().init_producer(Some("first")).unwrap();
    assert!(
        !idempotent_put(&c, &p, first, 0, "from first")
            .await
            .duplicate
    );
    let h = commit_value(&c, "t", "in a transaction").await;
    c.lifecycle().close().await.unwrap();
    drop(c);
    std::fs::remove_file(dir.path().join("producer-identities.json")).unwrap();
    let c = open(dir.path(), &clock);
    let second = c.transactions().init_producer(Some("second")).unwrap();
    assert!(
        second.producer_id != first.producer_id && second.producer_id != h.producer_id,
        "a new producer must not get an id the log holds"
    );
    let sent = idempotent_put(&c, &p, second, 0, "from second").await;
    assert!(
        !sent.duplicate,
        "the second producer's first record is stored"
    );
    // The transactional id keeps its producer id (from the journal) with a
    // newer epoch, so it can go on.
    let h2 = c.transactions().begin("tx").await.unwrap();
    assert_eq!(
        (h2.producer_id, h2.producer_epoch),
        (h.producer_id, h.producer_epoch + 1)
    );
    send_value(&c, &h2, "t", "next transaction").await;
    c.transactions().commit(&h2).await.unwrap();
    let values = committed_values(&c, &p);
    assert_eq!(
        values,
        vec![
            b("from first"),
            b("in a transaction"),
            b("from second"),
            b("next transaction")
        ]
    );
    c.lifecycle().close().await.unwrap();
}

#[tokio::test]
async fn a_damaged_offsets_log_after_a_crash_refuses_to_start_instead_of_losing_commits() {
    let (dir, _, c) = fresh_cluster();
    c.topics().create("t", 1, 1).unwrap();
    for offset in 1..=5 {
        let commit = std::collections::BTreeMap::from([(tp("t", 0), offset)]);
        c.groups().commit_direct("g", &commit).unwrap();
    }
    c.lifecycle().crash();
    drop(c);
    // A flipped byte inside the first commit record; four intact commits
    // follow it in the active segment.
    let segment = dir
        .path()
        .join(format!("{OFFSETS_TOPIC}-0"))
        .join(format!("{:020}.log", 0));
    let mut bytes = std::fs::read(&segment).unwrap();
    bytes[30] ^= 0xff;
    std::fs::write(&segment, &bytes).unwrap();
    let e = BrokerCluster::open(MiniKafkaConfig::new(dir.path())).unwrap_err();
    assert_eq!(e.code(), ErrorCode::StorageError, "{e}");
    assert!(
        e.to_string().contains("not a torn write") && e.to_string().contains(OFFSETS_TOPIC),
        "{e}"
    );
    assert_eq!(std::fs::read(&segment).unwrap(), bytes, "no commit was cut");
}

#[tokio::test]
async fn a_damaged_journal_line_with_later_states_refuses_to_start_instead_of_aborting_a_commit() {
    let (dir, _, c) = fresh_cluster();
    c.topics().create("t", 1, 1).unwrap();
    commit_value(&c, "t", "committed").await;
    c.lifecycle().crash();
    drop(c);
    let journal = dir.path().join(mk_txn::JOURNAL_FILE_NAME);
    let text = std::fs::read_to_string(&journal).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() >= 3, "{text}");
    // A flipped byte in the middle of the PrepareCommit line, which the
    // CompleteCommit line follows.
    let prepare = lines
        .iter()
        .position(|l| l.contains("PrepareCommit"))
        .unwrap();
    assert!(prepare + 1 < lines.len());
    let at: usize =
        lines[..prepare].iter().map(|l| l.len() + 1).sum::<usize>() + lines[prepare].len() / 2;
    let mut bytes = text.into_bytes();
    bytes[at] ^= 0x01;
    std::fs::write(&journal, &bytes).unwrap();
    let e = BrokerCluster::open(MiniKafkaConfig::new(dir.path())).unwrap_err();
    assert_eq!(e.code(), ErrorCode::StorageError, "{e}");
    assert!(
        e.to_string().contains(&format!("line {}", prepare + 1))
            && e.to_string().contains("not a torn append"),
        "{e}"
    );
    assert_eq!(std::fs::read(&journal).unwrap(), bytes, "nothing was cut");
}

/// Cuts the last `n` batches off the single segment of `tp` on broker 1
/// (what a power loss does to writes that were not fsynced yet).
fn lose_last_batches(dir: &std::path::Path, tp: &TopicPartition, n: usize) {
    let log_dir = dir.join("broker-1").join(tp.dir_name());
    let log = mk_log::PartitionLog::open(&log_dir, mk_log::LogConfig::default(), 0).unwrap();
    let batches = log.read_batches(0, usize::MAX, None).unwrap();
    let keep: usize = batches[..batches.len() - n].iter().map(|b| b.size()).sum();
    drop(log);
    std::fs::OpenOptions::new()
        .write(true)
        .open(log_dir.join(format!("{:020}.log", 0)))
        .unwrap()
        .set_len(keep as u64)
        .unwrap();
    for checkpoint in ["clean-shutdown", "recovery-checkpoint"] {
        let _ = std::fs::remove_file(log_dir.join(checkpoint));
    }
}

#[tokio::test]
async fn a_lost_marker_is_written_again_on_open_so_the_lso_moves_on() {
    for commit in [true, false] {
        let (dir, clock, c, p) = fresh_topic("t");
        let h = c.transactions().begin("tx").await.unwrap();
        send_value(&c, &h, "t", "in the txn").await;
        if commit {
            c.transactions().commit(&h).await.unwrap();
        } else {
            c.transactions().abort(&h).await.unwrap();
        }
        put(&c, &p, "after").await;
        c.lifecycle().crash();
        drop(c);
        // The marker (and the record after it) never reached the disk; the
        // journal, fsynced per change, knows the outcome.
        lose_last_batches(dir.path(), &p, 2);
        let c = open(dir.path(), &clock);
        let lso = c.data().last_stable_offset(&p).unwrap();
        assert_eq!(
            lso,
            c.data().visible_end(&p).unwrap(),
            "commit={commit}: the LSO is not stuck"
        );
        let values = committed_values(&c, &p);
        let expected = if commit {
            vec![b("in the txn")]
        } else {
            vec![]
        };
        assert_eq!(values, expected, "commit={commit}");
        // The next transaction of the same id works as usual.
        commit_value(&c, "t", "next").await;
        assert_eq!(
            c.data().last_stable_offset(&p).unwrap(),
            c.data().visible_end(&p).unwrap()
        );
        c.lifecycle().close().await.unwrap();
    }
}

fn values(got: &FetchResult) -> Vec<Bytes> {
    got.records
        .iter()
        .map(|r| r.value.clone().unwrap())
        .collect()
}

/// The values of `p`'s first ten records a read-committed fetch answers.
fn committed_values(c: &BrokerCluster, p: &TopicPartition) -> Vec<Bytes> {
    let read_committed =
        FetchRequest::new(p.clone(), 0, 10).with_isolation(Isolation::ReadCommitted);
    values(&c.data().fetch(&read_committed).unwrap())
}

/// A fetch of `p` from offset 0 (`max_records` at most) fails with a
/// storage error whose message says `says`.
fn assert_fetch_fails(c: &BrokerCluster, p: &TopicPartition, max_records: i64, says: &str) {
    let e = c
        .data()
        .fetch(&FetchRequest::new(p.clone(), 0, max_records))
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::StorageError, "{e}");
    assert!(e.to_string().contains(says), "{e}");
}

/// Flips one byte in the middle of `tp`'s first segment on broker 1.
fn flip_byte_in_first_segment(dir: &std::path::Path, tp: &TopicPartition) {
    let path = dir
        .join("broker-1")
        .join(tp.dir_name())
        .join(format!("{:020}.log", 0));
    let mut bytes = std::fs::read(&path).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x20;
    std::fs::write(&path, bytes).unwrap();
}

/// The error of a fetch of `t-0` from offset 0.
fn fetch_error(c: &BrokerCluster, t: &str) -> ErrorCode {
    c.data()
        .fetch(&FetchRequest::new(tp(t, 0), 0, 100))
        .unwrap_err()
        .code()
}

/// How many records a fetch of `t-0` from offset 0 returns.
fn fetched(c: &BrokerCluster, t: &str) -> usize {
    c.data()
        .fetch(&FetchRequest::new(tp(t, 0), 0, 100))
        .unwrap()
        .records
        .len()
}

/// A Kafka fetch (read_uncommitted, no wait) of `tps` from offset 0.
fn fetch_from_start(tps: Vec<TopicPartition>) -> BatchFetch {
    BatchFetch {
        partitions: tps
            .into_iter()
            .map(|tp| PartitionFetch {
                tp,
                offset: 0,
                max_bytes: 1 << 20,
                current_leader_epoch: None,
            })
            .collect(),
        isolation: Isolation::ReadUncommitted,
        max_bytes: 1 << 20,
        min_bytes: 1,
        max_wait: std::time::Duration::ZERO,
        broker: None,
    }
}

/// `damaged-0` is described as damaged and counted in the stats, and
/// `healthy-0` is not.
fn assert_only_damaged(c: &BrokerCluster, damaged: &str, healthy: &str) {
    let described = c.topics().describe(damaged).unwrap();
    assert!(described.partitions[0].damaged.is_some(), "{described:?}");
    let other = c.topics().describe(healthy).unwrap();
    assert!(other.partitions[0].damaged.is_none(), "{other:?}");
    assert_eq!(c.views().stats().unwrap().damaged_partitions, 1);
}

fn small_segments(mut c: MiniKafkaConfig) -> MiniKafkaConfig {
    c.segment_max_bytes = 1_024;
    c
}

/// Small segments; topic `damaged` gets 60 values (closed segments),
/// `healthy` one; then the broker closes (or crashes) and a byte of
/// `damaged`'s first segment is flipped. Returns the broker's directory and
/// clock and the broker reopened on them.
async fn one_damaged_one_healthy(
    damaged: &str,
    healthy: &str,
    crash: bool,
) -> (tempfile::TempDir, ManualClock, Arc<BrokerCluster>) {
    let (dir, clock, c) = fresh_cluster_with(small_segments);
    c.topics().create(damaged, 1, 1).unwrap();
    c.topics().create(healthy, 1, 1).unwrap();
    for i in 0..60 {
        put(&c, &tp(damaged, 0), &format!("{damaged}-value-{i:04}")).await;
    }
    put(&c, &tp(healthy, 0), &format!("{healthy}-value")).await;
    if crash {
        c.lifecycle().crash();
    } else {
        c.lifecycle().close().await.unwrap();
    }
    drop(c);
    flip_byte_in_first_segment(dir.path(), &tp(damaged, 0));
    let c = open_with(dir.path(), &clock, small_segments);
    (dir, clock, c)
}

#[tokio::test]
async fn a_corrupt_closed_segment_takes_only_its_partition_offline() {
    let (dir, clock, c) = one_damaged_one_healthy("c", "d", false).await;
    // The clean-shutdown checkpoint vouches for the closed segment, so the
    // broker starts; the damage is found by the first read reaching it.
    assert_fetch_fails(&c, &tp("c", 0), 100, "c-0 is damaged");
    // Everything else keeps serving.
    assert_eq!(c.lifecycle().state(), LifecycleState::Running);
    let d = c
        .data()
        .fetch(&FetchRequest::new(tp("d", 0), 0, 100))
        .unwrap();
    assert_eq!(values(&d), vec![b("d-value")]);
    put(&c, &tp("d", 0), "after the damage").await;
    assert_eq!(
        c.topics().list().unwrap(),
        vec!["c".to_string(), "d".to_string()]
    );
    c.topics().create("e", 1, 1).unwrap();
    c.steps().run_flush_cycle().unwrap();
    c.steps().replicate_all_once().unwrap();
    // The damaged partition refuses writes too, and is reported as damaged.
    let produced = append_value(&c, &tp("c", 0), "x", 1).await.unwrap_err();
    assert_eq!(produced.code(), ErrorCode::StorageError);
    assert_only_damaged(&c, "c", "d");
    let health = c.lifecycle().health();
    assert_eq!(health.damaged.len(), 1);
    assert_eq!(health.damaged[0].0, tp("c", 0));
    // A Kafka fetch of both answers per partition.
    let req = fetch_from_start(vec![tp("c", 0), tp("d", 0)]);
    let got = c.data().fetch_batches(&req).await.unwrap();
    assert_eq!(
        got[0].error.as_ref().map(ClusterError::code),
        Some(ErrorCode::StorageError)
    );
    assert!(got[1].error.is_none() && got[1].batches.len() == 2);
    c.lifecycle().close().await.unwrap();
    drop(c);
    // After a restart the damage is still local: the broker starts and
    // only c-0 answers STORAGE_ERROR.
    let c = open_with(dir.path(), &clock, small_segments);
    assert_eq!(fetch_error(&c, "c"), ErrorCode::StorageError);
    assert_eq!(fetched(&c, "d"), 2);
    c.lifecycle().close().await.unwrap();
}

#[tokio::test]
async fn a_partition_found_damaged_at_open_starts_offline_and_the_rest_serves() {
    // A crash without any flush: open scans every segment and finds it.
    let (_dir, _, c) = one_damaged_one_healthy("c", "d", true).await;
    let p = &c.topics().describe("c").unwrap().partitions[0];
    assert!(
        p.damaged
            .as_deref()
            .is_some_and(|d| d.contains("corrupt closed segment")),
        "{p:?}"
    );
    assert_eq!((p.high_watermark, p.log_end_offset), (-1, -1));
    assert_eq!(fetch_error(&c, "c"), ErrorCode::StorageError);
    assert_eq!(fetched(&c, "d"), 1);
    // Deleting the damaged topic is one way back; its name starts empty.
    c.topics().delete("c").unwrap();
    c.topics().create("c", 1, 1).unwrap();
    assert_eq!(c.data().log_end_offset(&tp("c", 0)).unwrap(), 0);
    c.lifecycle().close().await.unwrap();
}

#[tokio::test]
async fn a_full_disk_fails_writes_typed_keeps_reads_and_loses_no_acknowledged_record() {
    let (dir, clock) = dir_and_clock();
    let faults = Arc::new(FaultInjector::new());
    let c = BrokerCluster::open_with_faults(
        MiniKafkaConfig::new(dir.path()),
        Arc::new(clock.clone()),
        faults.clone(),
    )
    .unwrap();
    c.topics().create("t", 1, 1).unwrap();
    let p = tp("t", 0);
    for i in 0..10 {
        put(&c, &p, &format!("v{i}")).await;
    }
    faults.disk_full(true);
    let e = append_value(&c, &p, "refused", 1).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::StorageError, "{e}");
    assert!(
        e.storage_cause()
            .is_some_and(mk_storage::StorageError::is_disk_full),
        "{e}"
    );
    assert_eq!(
        c.lifecycle().state(),
        LifecycleState::Running,
        "a full disk does not fail the broker"
    );
    // Stored data stays readable, the failure is visible.
    assert_eq!(
        c.data()
            .fetch(&FetchRequest::new(p.clone(), 0, 100))
            .unwrap()
            .records
            .len(),
        10
    );
    assert!(c.lifecycle().health().disk_full.is_some());
    assert!(c.views().stats().unwrap().disk_full);
    let commit = std::collections::BTreeMap::from([(p.clone(), 5)]);
    assert_eq!(
        c.groups().commit_direct("g", &commit).unwrap_err().code(),
        ErrorCode::StorageError
    );
    assert_eq!(
        c.topics().create("u", 1, 1).unwrap_err().code(),
        ErrorCode::StorageError
    );
    assert!(!dir.path().join("broker-1").join("u-0").exists());
    let _ = c.steps().run_flush_cycle();
    assert_eq!(c.lifecycle().state(), LifecycleState::Running);
    assert!(c.lifecycle().probe_disk_space(), "still full");
    // Space is back: the probe notices without any client write.
    faults.disk_full(false);
    assert!(!c.lifecycle().probe_disk_space());
    assert!(c.lifecycle().health().is_healthy());
    assert_eq!(
        put(&c, &p, "v10").await,
        10,
        "the next record takes the next offset"
    );
    c.groups().commit_direct("g", &commit).unwrap();
    c.lifecycle().crash();
    drop(c);
    let c = open(dir.path(), &clock);
    let got = c
        .data()
        .fetch(&FetchRequest::new(p.clone(), 0, 100))
        .unwrap();
    let expected: Vec<Bytes> = (0..=10).map(|i| b(&format!("v{i}"))).collect();
    assert_eq!(values(&got), expected);
    assert_eq!(c.groups().fetch_committed("g", &p).unwrap(), Some(5));
    c.lifecycle().close().await.unwrap();
}

#[tokio::test]
async fn a_deleted_partition_directory_is_reported_not_silently_recreated_empty() {
    let (dir, clock, c) = fresh_cluster();
    c.topics().create("c", 1, 1).unwrap();
    c.topics().create("d", 1, 1).unwrap();
    put(&c, &tp("c", 0), "lost").await;
    put(&c, &tp("d", 0), "kept").await;
    c.lifecycle().close().await.unwrap();
    drop(c);
    std::fs::remove_dir_all(dir.path().join("broker-1").join("c-0")).unwrap();
    let c = open(dir.path(), &clock);
    assert_fetch_fails(&c, &tp("c", 0), 10, "missing");
    assert!(
        !dir.path().join("broker-1").join("c-0").exists(),
        "nothing was recreated"
    );
    assert_eq!(
        values(
            &c.data()
                .fetch(&FetchRequest::new(tp("d", 0), 0, 10))
                .unwrap()
        ),
        vec![b("kept")]
    );
    c.lifecycle().close().await.unwrap();
}

#[tokio::test]
async fn a_kafka_fetch_checks_frame_crcs_after_the_lock_and_damage_takes_the_partition_offline() {
    let (_dir, _, c) = one_damaged_one_healthy("k", "l", false).await;
    // The frames are located under the lock without their CRCs; the check
    // after it finds the flipped byte and reports it as any read would.
    let got = c
        .data()
        .fetch_batches(&fetch_from_start(vec![tp("k", 0)]))
        .await
        .unwrap();
    let e = got[0].error.as_ref().expect("the damaged partition fails");
    assert_eq!(e.code(), ErrorCode::StorageError, "{e}");
    assert!(got[0].batches.is_empty());
    let described = c.topics().describe("k").unwrap();
    assert!(described.partitions[0].damaged.is_some(), "{described:?}");
    let again = c
        .data()
        .fetch_batches(&fetch_from_start(vec![tp("k", 0)]))
        .await
        .unwrap();
    assert!(
        again[0]
            .error
            .as_ref()
            .is_some_and(|e| e.to_string().contains("k-0 is damaged")),
        "{:?}",
        again[0].error
    );
    // The other partition serves its batch, checked.
    let ok = c
        .data()
        .fetch_batches(&fetch_from_start(vec![tp("l", 0)]))
        .await
        .unwrap();
    assert!(ok[0].error.is_none(), "{:?}", ok[0].error);
    assert_eq!(ok[0].batches.len(), 1);
    assert_eq!(c.lifecycle().state(), LifecycleState::Running);
    c.lifecycle().close().await.unwrap();
}

#[tokio::test]
async fn a_follower_copy_checks_frames_after_the_lock_and_damage_takes_the_partition_offline() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(1_000);
    let c = open_with(dir.path(), &clock, |c| {
        let mut c = small_segments(c);
        c.broker_ids = vec![1, 2];
        c
    });
    c.topics().create("r", 1, 2).unwrap();
    c.topics().create("s", 1, 2).unwrap();
    for i in 0..60 {
        put(&c, &tp("r", 0), &format!("r-value-{i:04}")).await;
    }
    put(&c, &tp("s", 0), "s-value").await;
    // The leader's closed first segment is damaged before its follower
    // copied it: the frames are located under the partition lock, their
    // CRCs checked after it, and the damage found then takes the
    // partition offline as a checked read under the lock would.
    flip_byte_in_first_segment(dir.path(), &tp("r", 0));
    let e = c.steps().replicate_all_once().unwrap_err();
    assert_eq!(e.code(), ErrorCode::StorageError, "{e}");
    let described = c.topics().describe("r").unwrap();
    assert!(described.partitions[0].damaged.is_some(), "{described:?}");
    // The other partition's follower copied its batch: the HW moved.
    assert_eq!(c.data().visible_end(&tp("s", 0)).unwrap(), 1);
    assert_eq!(c.lifecycle().state(), LifecycleState::Running);
    c.lifecycle().close().await.unwrap();
}

#[tokio::test]
async fn a_share_fetch_checks_frame_crcs_after_the_lock_and_damage_takes_the_partition_offline() {
    let (_dir, _, c) = one_damaged_one_healthy("sq", "sh", false).await;
    let settings = GroupSettings {
        share_auto_offset_reset: Some(ShareAutoOffsetReset::Earliest),
        ..GroupSettings::default()
    };
    c.groups().set_settings("sg", settings).unwrap();
    let joined = c
        .groups()
        .share_heartbeat(ShareHeartbeat {
            group_id: "sg".into(),
            member_id: "m".into(),
            subscribed_topic_names: Some(vec!["sq".into(), "sh".into()]),
            ..ShareHeartbeat::default()
        })
        .unwrap();
    assert_eq!(
        joined.assignment.map(|mut a| {
            a.sort();
            a
        }),
        Some(vec![tp("sh", 0), tp("sq", 0)])
    );
    // A ShareFetch locates the frames under the partition lock and checks
    // their CRCs after it: the flipped byte fails the damaged partition, as
    // a Kafka fetch of it would, and the healthy one is shared.
    let req = mk_cluster::share::ShareFetchRequest {
        group_id: "sg".into(),
        member_id: "m".into(),
        session_epoch: 0,
        partitions: vec![tp("sq", 0), tp("sh", 0)],
        forgotten: vec![],
        acks: vec![],
    };
    let limits = ShareFetchLimits {
        max_wait: std::time::Duration::ZERO,
        max_records: 500,
        max_bytes: 1 << 20,
        broker: None,
    };
    let answer = c.groups().share_fetch(&req, limits).await.unwrap();
    let part = |t: &str| {
        answer
            .partitions
            .iter()
            .find(|p| p.tp == tp(t, 0))
            .unwrap_or_else(|| panic!("{t}-0 answered: {answer:?}"))
    };
    let damaged = part("sq");
    let e = damaged.error.as_ref().expect("the damaged partition fails");
    assert_eq!(e.code(), ErrorCode::StorageError, "{e}");
    assert!(damaged.batches.is_empty() && damaged.acquired.is_empty());
    let healthy = part("sh");
    assert!(healthy.error.is_none(), "{:?}", healthy.error);
    assert_eq!(healthy.batches.len(), 1);
    assert_eq!(healthy.acquired.len(), 1);
    assert_eq!(
        (healthy.acquired[0].first, healthy.acquired[0].last),
        (0, 0)
    );
    // The partition is offline (FAILED) and says so wherever it is looked at.
    assert_only_damaged(&c, "sq", "sh");
    assert_eq!(fetch_error(&c, "sq"), ErrorCode::StorageError);
    assert_eq!(c.lifecycle().state(), LifecycleState::Running);
    c.lifecycle().close().await.unwrap();
}
