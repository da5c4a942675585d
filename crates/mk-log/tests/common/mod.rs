//! Helpers shared by the mk-log integration tests.
#![allow(dead_code)]

pub mod blocks;

use bytes::Bytes;
use mk_log::{LogConfig, PartitionLog, ProducerInfo, Record, RecordBatch};
use std::path::Path;

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
