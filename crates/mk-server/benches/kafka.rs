//! Kafka-protocol throughput of the release `mk-server` binary, driven by a
//! librdkafka-based load generator: kcat (the Debian package; `cargo xtask
//! bench` checks it is installed). Producers batch as librdkafka batches by
//! default (linger.ms 5, up to 10000 messages or 1 MB per batch); the
//! consumer fetches with librdkafka's defaults. Prints one JSON line per
//! figure; reports, never asserts a time.
//!
//! Workloads: 2M records of 100 B and 500k records of 1 KiB, one partition,
//! acks=1 and acks=all (one broker, so acks=all is the HW path without
//! followers), then each topic consumed back from the beginning; RSS of the
//! server (VmHWM) after everything.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

const BIN: &str = env!("CARGO_BIN_EXE_mk-server");

struct Server {
    child: Child,
    kafka: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn start(data_dir: &Path, extra: &[&str]) -> Server {
        let mut child = Command::new(BIN)
            .args([
                "--listen",
                "127.0.0.1:0",
                "--kafka-listen",
                "127.0.0.1:0",
                "--data-dir",
            ])
            .arg(data_dir)
            .args(extra)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .spawn()
            .expect("start mk-server");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        // "mk-server listening on <kafka> (Kafka) and <json> (JSON-TCP), ..."
        let kafka = line
            .split("listening on ")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .filter(|_| line.contains("(Kafka)"))
            .unwrap_or_else(|| panic!("no Kafka address in {line:?}"))
            .trim_end_matches(',')
            .to_string();
        Server { child, kafka }
    }

    fn peak_rss_mib(&self) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    }
}

fn figure(name: &str, value: f64, unit: &str, workload: &str) {
    println!(
        "{}",
        serde_json::json!({"figure": name, "value": value, "unit": unit, "workload": workload})
    );
}

/// A file of `n` lines, each a `size`-byte printable value.
fn values_file(dir: &Path, size: usize, n: usize) -> PathBuf {
    let path = dir.join(format!("values-{size}.txt"));
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    for i in 0..n {
        let line: Vec<u8> = (0..size)
            .map(|j| b'a' + ((i * 31 + j * 7) % 26) as u8)
            .collect();
        out.write_all(&line).unwrap();
        out.write_all(b"\n").unwrap();
    }
    out.flush().unwrap();
    path
}

/// Produces every line of `file` to `topic` partition 0 with kcat; returns
/// the wall time (kcat exits once every delivery report has arrived).
fn produce(kafka: &str, topic: &str, file: &Path, acks: &str) -> f64 {
    let start = Instant::now();
    let status = Command::new("kcat")
        .args(["-b", kafka, "-P", "-t", topic, "-p", "0", "-l"])
        .arg(file)
        .args([
            "-X",
            &format!("acks={acks}"),
            // Let the local queue hold the whole run so the producer never
            // stalls on its own buffer; batching stays librdkafka's default.
            "-X",
            "queue.buffering.max.messages=10000000",
            "-X",
            "queue.buffering.max.kbytes=2097151",
        ])
        .stderr(Stdio::inherit())
        .status()
        .expect("kcat runs (apt-get install kcat)");
    assert!(status.success(), "kcat produce failed");
    start.elapsed().as_secs_f64()
}

/// Consumes `topic` partition 0 from the beginning to its end with kcat,
/// counting the records; returns (records, seconds).
fn consume(kafka: &str, topic: &str) -> (usize, f64) {
    let start = Instant::now();
    let mut child = Command::new("kcat")
        .args([
            "-b",
            kafka,
            "-C",
            "-t",
            topic,
            "-p",
            "0",
            "-o",
            "beginning",
            "-e",
            "-q",
            "-f",
            "%o\n",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("kcat runs");
    let mut n = 0usize;
    let mut last = -1i64;
    for line in BufReader::with_capacity(1 << 20, child.stdout.take().unwrap()).lines() {
        let o: i64 = line.unwrap().parse().unwrap();
        assert_eq!(
            o,
            last + 1,
            "offsets arrive in order, without gaps or repeats"
        );
        last = o;
        n += 1;
    }
    assert!(child.wait().unwrap().success(), "kcat consume failed");
    (n, start.elapsed().as_secs_f64())
}

fn main() {
    if Command::new("kcat").arg("-V").output().is_err() {
        eprintln!("kafka bench: kcat is not installed (apt-get install kcat)");
        std::process::exit(1);
    }
    let base = std::env::var_os("MK_BENCH_DIR").map(PathBuf::from);
    let dir = match &base {
        Some(b) => {
            std::fs::create_dir_all(b).unwrap();
            tempfile::tempdir_in(b).unwrap()
        }
        None => tempfile::tempdir().unwrap(),
    };
    let small = values_file(dir.path(), 100, 2_000_000);
    let large = values_file(dir.path(), 1024, 500_000);
    let server = Server::start(&dir.path().join("data"), &[]);
    let k = server.kafka.clone();
    // Warm-up: topic creation and first allocations.
    produce(&k, "warmup", &large, "1");
    for (size, file, n) in [(100, &small, 2_000_000usize), (1024, &large, 500_000)] {
        for acks in ["1", "all"] {
            let topic = format!("p{size}-acks{acks}");
            let secs = produce(&k, &topic, file, acks);
            let workload = format!(
                "kcat (librdkafka 2.0) -P, {n} records of {size} B, one partition, acks={acks}, librdkafka's default batching, 1 broker"
            );
            figure(
                &format!("kafka.produce.{size}B.acks_{acks}.records_per_s"),
                n as f64 / secs,
                "records/s",
                &workload,
            );
            figure(
                &format!("kafka.produce.{size}B.acks_{acks}.mb_per_s"),
                (n * size) as f64 / secs / 1e6,
                "MB/s",
                &workload,
            );
        }
        let topic = format!("p{size}-acks1");
        let (got, secs) = consume(&k, &topic);
        assert_eq!(got, n, "every record read back");
        let workload = format!(
            "kcat -C from the beginning to the end, {n} records of {size} B, one partition, librdkafka's default fetch sizes"
        );
        figure(
            &format!("kafka.consume.{size}B.records_per_s"),
            n as f64 / secs,
            "records/s",
            &workload,
        );
        figure(
            &format!("kafka.consume.{size}B.mb_per_s"),
            (n * size) as f64 / secs / 1e6,
            "MB/s",
            &workload,
        );
    }
    figure(
        "kafka.rss.peak_mib",
        server.peak_rss_mib(),
        "MiB",
        "VmHWM of the server after the Kafka produce and consume loads above",
    );
    drop(server);
    // What the segment size costs: the same 100 B produce with 1 GiB
    // segments (Kafka's default) instead of 1 MiB ones, so no roll (and its
    // fsync) happens on the append path.
    let server = Server::start(
        &dir.path().join("data-1gib"),
        &["--segment-bytes", "1073741824"],
    );
    let secs = produce(&server.kafka, "big-segments", &small, "1");
    figure(
        "kafka.produce.100B.acks_1.segment_1gib.records_per_s",
        2_000_000.0 / secs,
        "records/s",
        "as kafka.produce.100B.acks_1, with --segment-bytes 1073741824",
    );
}
