//! Helpers shared by the mk-log integration tests.
#![allow(dead_code)]

pub mod blocks;

use bytes::Bytes;
use mk_log::{LogConfig, PartitionLog, ProducerInfo, Record, RecordBatch};
use std::ops::Range;
use std::path::{Path, PathBuf};

pub fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

pub fn small_config() -> LogConfig {
    LogConfig {
        segment_max_bytes: 1_024,
        index_interval_bytes: 256,
        ..LogConfig::default()
    }
}

pub fn open(dir: &Path, config: &LogConfig) -> PartitionLog {
    PartitionLog::open(dir, config.clone(), 0).expect("open log")
}

/// A new temporary directory (removed when the guard drops) with a log
/// opened in it.
pub fn temp_log(config: &LogConfig) -> (tempfile::TempDir, PartitionLog) {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path(), config);
    (dir, log)
}

/// `temp_log(config)` holding `keyed(i, 1000, 1)` for every `i < n`: `n`
/// records with keys of their own.
pub fn keyed_log(config: &LogConfig, n: usize) -> (tempfile::TempDir, PartitionLog) {
    let (dir, mut log) = temp_log(config);
    append_keyed(&mut log, 0..n, 1000, 1);
    (dir, log)
}

/// Appends `keyed(i, keys, ts)` for every `i` of `range`.
pub fn append_keyed(log: &mut PartitionLog, range: Range<usize>, keys: usize, ts: i64) {
    for i in range {
        log.append(keyed(i, keys, ts)).unwrap();
    }
}

/// The file of the segment at `base` with extension `ext` ("log", "index"...).
pub fn seg_file(dir: &Path, base: i64, ext: &str) -> PathBuf {
    dir.join(format!("{base:020}.{ext}"))
}

/// Flips the bits of `mask` in the byte at `at` of the file at `path`;
/// returns the file's damaged bytes.
pub fn flip_byte(path: &Path, at: usize, mask: u8) -> Vec<u8> {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[at] ^= mask;
    std::fs::write(path, &bytes).unwrap();
    bytes
}

/// The length of the file at `path`.
pub fn file_len(path: &Path) -> usize {
    usize::try_from(std::fs::metadata(path).unwrap().len()).unwrap()
}

/// Opening the log in `dir` fails with a storage error whose message
/// contains `what`.
pub fn assert_open_refused(dir: &Path, config: &LogConfig, what: &str) {
    let err = PartitionLog::open(dir, config.clone(), 0).unwrap_err();
    assert_eq!(err.code(), mk_core::ErrorCode::StorageError, "{err}");
    assert!(err.to_string().contains(what), "{err}");
}

/// A one-record batch with value `v{i}` and key `k{i % keys}`.
pub fn keyed(i: usize, keys: usize, ts: i64) -> RecordBatch {
    RecordBatch::new(vec![Record::new(
        Some(b(&format!("k{}", i % keys))),
        Some(b(&format!("v{i}"))),
        ts,
    )])
    .unwrap()
}

pub fn value_batch(values: &[&str], ts: i64) -> RecordBatch {
    RecordBatch::new(
        values
            .iter()
            .map(|v| Record::new(None, Some(b(v)), ts))
            .collect(),
    )
    .unwrap()
}

/// Every record of the log as (offset, key, value, timestamp).
pub fn dump(log: &PartitionLog) -> Vec<(i64, Option<Bytes>, Option<Bytes>, i64)> {
    log.fetch(log.log_start_offset(), usize::MAX, None)
        .unwrap()
        .into_iter()
        .map(|r| {
            (
                r.offset,
                r.record.key,
                r.record.value,
                r.record.timestamp_ms,
            )
        })
        .collect()
}

/// Every record a fresh open of `dir` finds, as `dump` lists them.
pub fn reopened(dir: &Path, config: &LogConfig) -> Vec<(i64, Option<Bytes>, Option<Bytes>, i64)> {
    dump(&open(dir, config))
}

/// Names of the files in `dir`, sorted.
pub fn files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Producer `pid` at epoch 0, sequence 0.
pub fn producer(pid: i64) -> ProducerInfo {
    ProducerInfo {
        producer_id: pid,
        producer_epoch: 0,
        base_sequence: 0,
    }
}

/// `keyed(i, 10, 0)` written in a transaction of `txn_id` by producer `pid`.
pub fn txn_record(i: usize, pid: i64, txn_id: &str) -> RecordBatch {
    keyed(i, 10, 0)
        .with_producer(producer(pid))
        .with_transactional_id(txn_id)
}

/// The log content `dump` returns.
pub type Dump = Vec<(i64, Option<Bytes>, Option<Bytes>, i64)>;

/// Compacts a fresh log from `build` with a crash injected at every fault
/// step in turn, until a run completes: each crash reopens to exactly the
/// `old` or the `new` content and leaves no swap debris, the completed run
/// ends with `new`, at least eight crash points are exercised and both
/// outcomes occur.
pub fn compact_crashing_at_every_step(
    cfg: &LogConfig,
    build: impl Fn(&Path, &LogConfig) -> PartitionLog,
    old: &Dump,
    new: &Dump,
) {
    compact_crashing_at_every_step_with(cfg, build, 1_500, dump, old, new);
}

/// [`compact_crashing_at_every_step`] with compaction at `now_ms` (10 s of
/// grace) and the log's content taken by `snapshot`.
pub fn compact_crashing_at_every_step_with<T: PartialEq + std::fmt::Debug>(
    cfg: &LogConfig,
    build: impl Fn(&Path, &LogConfig) -> PartitionLog,
    now_ms: i64,
    snapshot: impl Fn(&PartitionLog) -> T,
    old: &T,
    new: &T,
) {
    let mut crashes = 0;
    let (mut saw_old, mut saw_new) = (false, false);
    for step in 0.. {
        let dir = tempfile::tempdir().unwrap();
        let mut log = build(dir.path(), cfg);
        cfg.faults.crash_at_step(step);
        let outcome = log.compact(now_ms, 10_000);
        cfg.faults.clear();
        drop(log); // the process dies here
        let reopened = PartitionLog::open(dir.path(), cfg.clone(), 0)
            .unwrap_or_else(|e| panic!("reopen after crash at step {step}: {e}"));
        let got = snapshot(&reopened);
        assert!(
            got == *old || got == *new,
            "crash at step {step} left a log that is neither old nor new: {got:?}"
        );
        saw_old |= got == *old;
        saw_new |= got == *new;
        let debris = files(dir.path());
        assert!(
            !debris
                .iter()
                .any(|f| f.ends_with(".cleaned") || f.starts_with("cleaner-swap")),
            "recovery leaves no swap debris after step {step}: {debris:?}"
        );
        if outcome.is_ok() {
            assert_eq!(got, *new);
            break;
        }
        crashes += 1;
    }
    assert!(crashes >= 8, "only {crashes} crash points exercised");
    assert!(
        saw_old && saw_new,
        "both outcomes occur across the crash points"
    );
}

/// The reference outcome of a compaction that completes: a log from
/// `build` (in the returned directory) compacted once, which must have
/// swapped several segments, with its content before and after.
pub fn reference_compaction(
    cfg: &LogConfig,
    build: impl Fn(&Path, &LogConfig) -> PartitionLog,
) -> (tempfile::TempDir, PartitionLog, Dump, Dump) {
    let dir = tempfile::tempdir().unwrap();
    let mut log = build(dir.path(), cfg);
    let old = dump(&log);
    let result = log.compact(1_500, 10_000).unwrap();
    assert!(
        result.segments.len() >= 2,
        "the swap must span several segments"
    );
    let new = dump(&log);
    (dir, log, old, new)
}

/// Cuts the file at `path` to `len` bytes: the operator's way out that a
/// refusal to open names.
pub fn cut_file(path: &Path, len: u64) {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(len)
        .unwrap();
}

/// `payload` in a frame envelope with a correct magic, length and CRC: what
/// reaches the checks behind the envelope.
pub fn enveloped(payload: &[u8]) -> Bytes {
    let mut f = b"MKB1".to_vec();
    f.extend_from_slice(&u32::try_from(payload.len()).unwrap().to_be_bytes());
    f.extend_from_slice(&crc32c::crc32c(payload).to_be_bytes());
    f.extend_from_slice(payload);
    Bytes::from(f)
}

/// Appends `bytes` to the file at `path`: a write the process did not
/// finish, or one nobody made.
pub fn append_bytes(path: &Path, bytes: &[u8]) {
    use std::io::Write;
    std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .unwrap()
        .write_all(bytes)
        .unwrap();
}

/// Producer `pid`'s abort marker for the transaction `txn_id`.
pub fn abort_marker(txn_id: &str, pid: i64) -> RecordBatch {
    RecordBatch::marker(mk_log::ControlType::Abort, txn_id, producer(pid))
}

/// Fails unless the file at `path` still holds exactly `bytes`.
pub fn assert_untouched(path: &Path, bytes: &[u8]) {
    assert_eq!(std::fs::read(path).unwrap(), bytes, "the file is untouched");
}
