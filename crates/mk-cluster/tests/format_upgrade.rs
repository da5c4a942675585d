//! Upgrading across batch formats: a data directory written by the release
//! before MKB1 version 2 (`tests/fixtures/data-mkb1-v1`, every batch an MKB1
//! version 1 frame) opens, serves every record exactly as that release
//! served it (`data-mkb1-v1.expected`, dumped by that release), keeps its
//! group offsets and transactions, and takes new writes beside the old
//! frames — after a clean shutdown and after a crash alike. How the
//! fixture was made: `tests/fixtures/README.md`.

mod common;

use bytes::Bytes;
use common::*;
use mk_cluster::*;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/data-mkb1-v1")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// The cluster settings the fixture was written with.
fn config(dir: &Path) -> MiniKafkaConfig {
    let mut config = MiniKafkaConfig::new(dir).with_brokers(vec![1, 2]);
    config.segment_max_bytes = 2048;
    config.index_interval_bytes = 256;
    config
}

/// The fixture's clock ended near here; retention (7 days) keeps it all.
const NOW_MS: i64 = 1_764_000_100_000;

fn hex(o: Option<&[u8]>) -> String {
    match o {
        None => "null".into(),
        Some(b) => b.iter().map(|x| format!("{x:02x}")).collect(),
    }
}

const PARTITIONS: [(&str, u32); 3] = [("events", 2), ("ledger", 1), ("table", 1)];

/// What consumers see, in the format of `data-mkb1-v1.expected` (the
/// generator at ad90f3f wrote it with the same lines).
fn dump(c: &BrokerCluster) -> String {
    let mut out = String::new();
    for (topic, parts) in PARTITIONS {
        for p in 0..parts {
            let tp = tp(topic, p);
            for iso in [Isolation::ReadUncommitted, Isolation::ReadCommitted] {
                let start = c.data().log_start_offset(&tp).unwrap();
                let mut req = FetchRequest::new(tp.clone(), start, 1_000_000).with_isolation(iso);
                req.max_bytes = Some(usize::MAX);
                let r = c.data().fetch(&req).unwrap();
                writeln!(
                    out,
                    "fetch {tp} {} start={start} hw={} lso={} next={} count={}",
                    iso.as_str(),
                    r.high_watermark,
                    r.last_stable_offset,
                    r.next_offset,
                    r.records.len()
                )
                .unwrap();
                for rec in &r.records {
                    let headers: Vec<String> = rec
                        .headers
                        .iter()
                        .map(|h| {
                            format!(
                                "{}:{}",
                                hex(Some(h.key.as_bytes())),
                                hex(h.value.as_deref())
                            )
                        })
                        .collect();
                    writeln!(
                        out,
                        "  {} ts={} key={} value={} headers=[{}]",
                        rec.offset,
                        rec.timestamp_ms,
                        hex(rec.key.as_deref()),
                        hex(rec.value.as_deref()),
                        headers.join(",")
                    )
                    .unwrap();
                }
            }
        }
    }
    for (tp, o) in c.groups().committed("fixture-group").unwrap() {
        writeln!(out, "committed fixture-group {tp} {o}").unwrap();
    }
    out
}

fn expected() -> String {
    std::fs::read_to_string(fixture().with_extension("expected")).unwrap()
}

/// A copy of the fixture, with the files named by `remove` (relative
/// paths, e.g. every clean-shutdown checkpoint) taken away.
fn copy_of_fixture(remove: impl Fn(&Path) -> bool) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixture(), dir.path());
    let mut stack = vec![dir.path().to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if remove(&path) {
                std::fs::remove_file(&path).unwrap();
            }
        }
    }
    dir
}

fn open_fixture(dir: &Path, clock: &ManualClock) -> std::sync::Arc<BrokerCluster> {
    BrokerCluster::open_with_clock(config(dir), std::sync::Arc::new(clock.clone())).unwrap()
}

#[test]
fn an_old_data_directory_serves_every_record_as_the_old_release_did() {
    let dir = copy_of_fixture(|_| false);
    let clock = ManualClock::new(NOW_MS);
    let c = open_fixture(dir.path(), &clock);
    assert_eq!(dump(&c), expected());
}

#[test]
fn an_old_data_directory_recovered_by_a_full_scan_serves_the_same() {
    // Without the clean-shutdown and recovery checkpoints every segment is
    // scanned (and its indexes rebuilt) frame by frame.
    let dir = copy_of_fixture(|p| {
        let name = p.file_name().unwrap().to_string_lossy();
        name == "clean-shutdown"
            || name == "recovery-checkpoint"
            || name.ends_with(".index")
            || name.ends_with(".timeindex")
    });
    let clock = ManualClock::new(NOW_MS);
    let c = open_fixture(dir.path(), &clock);
    assert_eq!(dump(&c), expected());
}

fn entry(key: &str, value: &str) -> ProduceEntry {
    ProduceEntry {
        key: Some(Bytes::copy_from_slice(key.as_bytes())),
        value: Some(Bytes::copy_from_slice(value.as_bytes())),
        headers: vec![Header::new("new", None)],
        timestamp_ms: Some(NOW_MS),
    }
}

async fn produce(c: &BrokerCluster, topic: &str, p: u32, records: Vec<ProduceEntry>) -> i64 {
    c.data()
        .produce(ProduceRequest {
            tp: tp(topic, p),
            records,
            // Followers catch up through `replicate_all_once` below; the
            // test drives no replication while a produce waits.
            acks: AckMode::One,
            producer: None,
        })
        .await
        .unwrap()
        .base_offset
        .unwrap()
}

/// Every record of a partition from its start, as (offset, key, value).
fn all_records(c: &BrokerCluster, tp: &TopicPartition) -> Vec<(i64, Option<Bytes>, Option<Bytes>)> {
    let start = c.data().log_start_offset(tp).unwrap();
    let mut req = FetchRequest::new(tp.clone(), start, 1_000_000);
    req.max_bytes = Some(usize::MAX);
    c.data()
        .fetch(&req)
        .unwrap()
        .records
        .into_iter()
        .map(|r| (r.offset, r.key, r.value))
        .collect()
}

#[tokio::test]
async fn an_old_data_directory_takes_new_writes_and_keeps_them_across_a_crash() {
    let dir = copy_of_fixture(|_| false);
    let clock = ManualClock::new(NOW_MS);
    let c = open_fixture(dir.path(), &clock);
    let before: BTreeMap<TopicPartition, Vec<_>> = PARTITIONS
        .iter()
        .flat_map(|(t, n)| (0..*n).map(move |p| tp(t, p)))
        .map(|tp| {
            let records = all_records(&c, &tp);
            (tp, records)
        })
        .collect();
    let mut added: BTreeMap<TopicPartition, Vec<(i64, String)>> = BTreeMap::new();
    for round in 0..12 {
        for (topic, parts) in [("events", 2), ("table", 1)] {
            for p in 0..parts {
                let value = format!("new {round} {}", "z".repeat(round * 40));
                let key = format!("row-{}", round % 3);
                let offset = produce(&c, topic, p, vec![entry(&key, &value)]).await;
                added.entry(tp(topic, p)).or_default().push((offset, value));
            }
        }
    }
    // Followers copy the old frames they lacked and the new ones.
    c.steps().replicate_all_once().unwrap();
    c.steps().refresh_isr().unwrap();
    c.lifecycle().crash();
    drop(c);
    let c = open_fixture(dir.path(), &clock);
    for (tp, old) in &before {
        let now = all_records(&c, tp);
        let new = added.get(tp).cloned().unwrap_or_default();
        assert_eq!(&now[..old.len()], &old[..], "{tp}: the old records");
        let tail: Vec<(i64, String)> = now[old.len()..]
            .iter()
            .map(|(o, _, v)| (*o, String::from_utf8(v.clone().unwrap().to_vec()).unwrap()))
            .collect();
        assert_eq!(tail, new, "{tp}: the new records after the old ones");
    }
    let committed = c.groups().committed("fixture-group").unwrap();
    assert_eq!(committed.get(&tp("events", 0)), Some(&5));
    assert_eq!(committed.get(&tp("events", 1)), Some(&3));
}

#[tokio::test]
async fn compaction_of_a_log_holding_old_and_new_frames_keeps_the_latest_per_key() {
    let dir = copy_of_fixture(|_| false);
    let clock = ManualClock::new(NOW_MS);
    let c = open_fixture(dir.path(), &clock);
    let table = tp("table", 0);
    let mut latest: BTreeMap<Option<Bytes>, (i64, Option<Bytes>)> = BTreeMap::new();
    for (o, k, v) in all_records(&c, &table) {
        latest.insert(k, (o, v));
    }
    for round in 0..30 {
        let key = format!("row-{}", round % 11);
        let value = format!("v2 {round} {}", "w".repeat(round * 10));
        let o = produce(&c, "table", 0, vec![entry(&key, &value)]).await;
        latest.insert(
            Some(Bytes::from(key)),
            (o, Some(Bytes::from(value.into_bytes()))),
        );
    }
    c.steps().roll(&table).unwrap();
    clock.advance(10_000);
    c.steps().compact("table", None).unwrap();
    let got = all_records(&c, &table);
    let mut want: Vec<(i64, Option<Bytes>, Option<Bytes>)> = latest
        .into_iter()
        // Tombstones older than delete.retention.ms are gone.
        .filter(|(_, (_, v))| v.is_some())
        .map(|(k, (o, v))| (o, k, v))
        .collect();
    want.sort();
    assert_eq!(got, want);
}
