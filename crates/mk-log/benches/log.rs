//! Log benchmarks for `cargo xtask bench`: append throughput, sequential
//! read throughput and reopen time of a ~1 GiB log, and the whole-batch
//! CRC-32C pass with the two CRC crates side by side. Prints one JSON line per
//! figure; it measures and reports, it never asserts a time.
#![allow(clippy::print_stdout)]
#![allow(
    clippy::too_many_lines,
    reason = "a benchmark runs its phases in order in one function"
)]

use bytes::Bytes;
use mk_log::{LogConfig, PartitionLog, Record, RecordBatch};
use std::path::Path;
use std::time::Instant;

fn emit(figure: &str, value: f64, unit: &str, workload: &str) {
    println!(
        "{{\"figure\":\"{figure}\",\"value\":{value:.1},\"unit\":\"{unit}\",\"workload\":\"{workload}\"}}"
    );
}

fn batch(value: &Bytes, n: usize) -> RecordBatch {
    RecordBatch::new(
        (0..n)
            .map(|i| Record::new(None, Some(value.clone()), i as i64))
            .collect(),
    )
    .expect("non-empty")
}

/// Appends `total_bytes` of values in batches of `per_batch`; returns
/// (MB/s of value bytes, records/s).
fn append(dir: &Path, value_len: usize, per_batch: usize, total_bytes: usize) -> (f64, f64) {
    let mut log = PartitionLog::open(dir, LogConfig::default(), 0).expect("open");
    let value = Bytes::from(vec![0x5a; value_len]);
    let batches = (total_bytes / (value_len * per_batch)).max(1);
    let template = batch(&value, per_batch);
    let start = Instant::now();
    for _ in 0..batches {
        log.append(template.clone()).expect("append");
    }
    let secs = start.elapsed().as_secs_f64();
    let records = (batches * per_batch) as f64;
    log.close().expect("close");
    (records * value_len as f64 / secs / 1e6, records / secs)
}

fn build_log(dir: &Path, total_bytes: usize) -> i64 {
    let mut log = PartitionLog::open(dir, LogConfig::default(), 0).expect("open");
    let value = Bytes::from(vec![0x42; 1024]);
    let template = batch(&value, 100);
    while usize::try_from(log.size_bytes()).unwrap() < total_bytes {
        log.append(template.clone()).expect("append");
    }
    let leo = log.leo();
    log.close().expect("close");
    leo
}

fn main() {
    let root = tempfile::Builder::new()
        .prefix("mk-log-bench")
        .tempdir_in(std::env::var_os("MK_BENCH_DIR").unwrap_or_else(|| ".".into()))
        .expect("temp dir");
    // Each figure is the median of three runs, each on a fresh directory
    // after the previous run's data was fsynced by `close`: the speed of
    // writing into this VM's page cache varies by 2x from run to run.
    // Directories are kept until the end, because deleting hundreds of MiB
    // makes the (discard-mounted) disk trim while the next run writes.
    for (value_len, per_batch, total) in [
        (100usize, 1usize, 16 << 20),
        (100, 100, 128 << 20),
        (1024, 1, 64 << 20),
        (1024, 100, 256 << 20),
    ] {
        let mut runs: Vec<(f64, f64)> = (0..3)
            .map(|run| {
                let dir = root
                    .path()
                    .join(format!("append-{value_len}-{per_batch}-{run}"));
                append(&dir, value_len, per_batch, total)
            })
            .collect();
        runs.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (mbps, rps) = runs[1];
        let workload = format!(
            "PartitionLog::append, {value_len} B values, {per_batch} per batch, 1 MiB segments, no fsync, median of 3 runs of {} MiB",
            total >> 20
        );
        emit(
            &format!("log.append.{value_len}B.batch{per_batch}.mb_per_s"),
            mbps,
            "MB/s",
            &workload,
        );
        emit(
            &format!("log.append.{value_len}B.batch{per_batch}.records_per_s"),
            rps,
            "records/s",
            &workload,
        );
    }

    // A ~1 GiB log in 1 MiB segments, reused for reading and reopening.
    let dir = root.path().join("big");
    let leo = build_log(&dir, 1 << 30);

    let log = PartitionLog::open(&dir, LogConfig::default(), 0).expect("open");
    let start = Instant::now();
    let mut offset = 0;
    let mut bytes = 0usize;
    while offset < leo {
        let records = log.fetch(offset, 1000, None).expect("fetch");
        offset = records.last().expect("records").offset + 1;
        bytes += records
            .iter()
            .map(|r| r.record.value.as_ref().map_or(0, Bytes::len))
            .sum::<usize>();
    }
    let secs = start.elapsed().as_secs_f64();
    emit(
        "log.read.mb_per_s",
        bytes as f64 / secs / 1e6,
        "MB/s",
        "PartitionLog::fetch from offset 0, 1000 records per call, 1 KiB values, ~1 GiB in 1 MiB segments, page cache warm",
    );
    emit(
        "log.read.records_per_s",
        leo as f64 / secs,
        "records/s",
        "same read",
    );
    log.close().expect("close");

    let mut samples = Vec::new();
    for _ in 0..5 {
        let start = Instant::now();
        let log = PartitionLog::open(&dir, LogConfig::default(), 0).expect("open");
        samples.push(start.elapsed().as_secs_f64() * 1e3);
        log.close().expect("close");
    }
    samples.sort_by(f64::total_cmp);
    emit(
        "log.reopen.clean.ms",
        samples[samples.len() / 2],
        "ms",
        "open after clean close, ~1 GiB in 1 MiB segments (median of 5)",
    );

    // Torn tail: crash (no clean-shutdown checkpoint) with half a frame at
    // the end of the active segment. The last flush left a recovery point,
    // so only the active segment is scanned.
    let log = PartitionLog::open(&dir, LogConfig::default(), 0).expect("open");
    let active = log.active();
    drop(log);
    let path = dir.join(format!("{:020}.log", active.base_offset));
    // Tears the tail, then times the open that repairs it.
    let torn_reopen = |name: &str, what: &str| {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .expect("active");
        std::io::Write::write_all(&mut f, b"MKB1\x00\x00\x10\x00garbage").expect("tear");
        drop(f);
        let start = Instant::now();
        let log = PartitionLog::open(&dir, LogConfig::default(), 0).expect("open");
        emit(name, start.elapsed().as_secs_f64() * 1e3, "ms", what);
        assert_eq!(log.leo(), leo, "torn tail repaired without losing data");
    };
    torn_reopen(
        "log.reopen.torn_tail.ms",
        "open after a crash with a torn tail: segments below the last flush's recovery point are trusted, the active segment is scanned and cut",
    );

    // The worst case: a crash before any flush ever recorded a recovery
    // point, so every batch of every segment is decoded and CRC-checked.
    std::fs::remove_file(dir.join("recovery-checkpoint")).expect("recovery point");
    torn_reopen(
        "log.reopen.full_scan.ms",
        "open after a crash with no recovery point: full recovery scan of ~1 GiB (every batch decoded, CRC checked)",
    );

    crc_passes();
}

/// The whole-batch CRC-32C pass, side by side: the crc32c crate (three
/// `crc32` instruction streams) and crc-fast (carry-less multiply folding),
/// which the log and the Kafka adapter use for a produced batch and a frame
/// read back. 1 MiB buffers, as a librdkafka Produce batch; the median of
/// three passes over 1 GiB each.
fn crc_passes() {
    let data: Vec<u8> = (0u32..1 << 20)
        .map(|i| i.wrapping_mul(2_654_435_761).to_le_bytes()[2])
        .collect();
    assert_eq!(crc32c::crc32c(&data), crc_fast::crc32_iscsi(&data));
    let speed = |crc: &dyn Fn(&[u8]) -> u32| {
        let mut runs: Vec<f64> = (0..3)
            .map(|_| {
                let start = Instant::now();
                let mut x = 0u32;
                for _ in 0..1024 {
                    x ^= crc(std::hint::black_box(&data));
                }
                std::hint::black_box(x);
                (1u64 << 30) as f64 / start.elapsed().as_secs_f64() / 1e9
            })
            .collect();
        runs.sort_by(f64::total_cmp);
        runs[1]
    };
    let crate_speed = speed(&|d: &[u8]| crc32c::crc32c(d));
    let fast_speed = speed(&|d: &[u8]| crc_fast::crc32_iscsi(d));
    let workload = "CRC-32C of a 1 MiB buffer, 1 GiB per run, median of 3 runs";
    emit(
        "crc.whole.crc32c_crate.gb_per_s",
        crate_speed,
        "GB/s",
        workload,
    );
    emit("crc.whole.crc_fast.gb_per_s", fast_speed, "GB/s", workload);
    emit(
        "crc.whole.crc_fast_over_crc32c",
        fast_speed / crate_speed,
        "ratio",
        "the two above, measured in the same run",
    );
}
