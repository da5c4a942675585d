//! Kafka-protocol throughput of the release `mk-server` binary, driven by
//! librdkafka: `mk-kafka-load` (bench/kafka-load, librdkafka 2.12 through
//! the rdkafka crate; `cargo xtask bench` builds it and passes its path in
//! `MK_KAFKA_LOAD`). Producers batch as librdkafka batches by default
//! (linger.ms 5, up to 10000 messages or 1 MB per batch); the consumer
//! fetches with librdkafka's defaults. One cross-check runs kcat (Debian's
//! librdkafka 2.0 tool) for the same produce. Prints one JSON line per
//! figure, including the CPU seconds the server and the load generator
//! used, because on this 2-core machine the two share the cores; reports,
//! never asserts a time.
//!
//! Workloads: 5M records of 100 B and 500k records of 1 KiB, one partition,
//! acks=1 and acks=all (one broker, so acks=all is the HW path without
//! followers), then each topic consumed back from the beginning; RSS of the
//! server (VmHWM) after everything. Then the request path on its own: 200k
//! Produce requests of one 100 B record each and 200k Fetch requests of one
//! batch each, counted by the server's `mk_requests_total`, so the cost of
//! the protocol layer (frame, header, request and response messages) is
//! what dominates rather than the records. Then batches as produced: 200k
//! JSON events produced with compression.type none, lz4 and zstd and read
//! back, reporting the bytes the producer sent, the bytes on disk and the
//! bytes fetched side by side (a broker that keeps batches as produced
//! stores and serves about what the producer sent).
//!
//! Before each produce run the bench writes and deletes a scratch file a
//! little larger than what the run stores ([`pretouch`]), and it reports
//! what a plain write into the page cache costs here in the same run
//! ([`host_memory`]): on this VM, memory left free for a few seconds goes
//! back to the host, and the next write to it costs several times a copy.
//!
//! `MK_KAFKA_BENCH=codecs` runs the codec figures alone;
//! `MK_KAFKA_BENCH=security` runs only the cost of SASL_SSL
//! (`kafka/security.rs`): the same load over PLAINTEXT and SASL_SSL side
//! by side.
#![allow(
    clippy::too_many_lines,
    reason = "a benchmark runs its phases in order in one function"
)]
#![allow(clippy::print_stdout, clippy::print_stderr)]

#[path = "kafka/security.rs"]
mod security;

mod common;
use common::*;
use mk_server::embedded::{BrokerBuilder, BrokerProcess};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

const BIN: &str = env!("CARGO_BIN_EXE_mk-server");

/// The broker as a child process (the embedded broker's child-process
/// mode), stopped when dropped, and its Kafka address.
struct Server {
    broker: BrokerProcess,
    kafka: String,
}

impl Server {
    /// A broker with its Prometheus endpoint on, for the figures that count
    /// requests.
    fn start_counted(data_dir: &Path) -> (Server, std::net::SocketAddr) {
        let server = Server::start(data_dir, &["--metrics-listen", "127.0.0.1:0"]);
        let metrics = server
            .broker
            .listening()
            .metrics
            .expect("the metrics endpoint is on");
        (server, metrics)
    }

    fn start(data_dir: &Path, extra: &[&str]) -> Server {
        let broker = BrokerBuilder::new()
            .data_dir(data_dir)
            .args(extra)
            .spawn(BIN)
            .expect("start mk-server");
        let kafka = broker.bootstrap();
        Server { broker, kafka }
    }

    fn peak_rss_mib(&self) -> f64 {
        peak_rss_mib(self.broker.pid())
    }
}

/// A file of `n` lines, each a `size`-byte printable value.
fn values_file(dir: &Path, size: usize, n: usize) -> PathBuf {
    let path = dir.join(format!("values-{size}.txt"));
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    for i in 0..n {
        let line: Vec<u8> = (0..size)
            .map(|j| b'a' + u8::try_from((i * 31 + j * 7) % 26).unwrap())
            .collect();
        out.write_all(&line).unwrap();
        out.write_all(b"\n").unwrap();
    }
    out.flush().unwrap();
    path
}

/// CPU seconds (user + system) a process has used, from /proc.
fn cpu_secs(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which is in parentheses).
    let rest = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 of the whole line: 11 and 12 here.
    (ticks(11) + ticks(12)) / 100.0
}

/// The value of the Kafka-protocol sample of counter `name` whose labels
/// include `label` (any, when empty) on the broker behind `metrics`.
fn kafka_counter(metrics: std::net::SocketAddr, name: &str, label: &str) -> f64 {
    use std::io::Read;
    let mut conn = std::net::TcpStream::connect(metrics).expect("connect to /metrics");
    conn.write_all(b"GET /metrics HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n")
        .expect("ask /metrics");
    let mut text = String::new();
    conn.read_to_string(&mut text).expect("read /metrics");
    let prefix = format!("{name}{{");
    text.lines()
        .filter(|l| l.starts_with(&prefix) && l.contains(label))
        .filter(|l| l.contains("protocol=\"kafka\""))
        .find_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .unwrap_or(0.0)
}

/// How many requests of `api` the broker behind `metrics` has served (its
/// `mk_requests_total` counter).
fn requests_served(metrics: std::net::SocketAddr, api: &str) -> f64 {
    kafka_counter(metrics, "mk_requests_total", &format!("api=\"{api}\""))
}

/// Bytes of the segment files (`*.log`) of partition 0 of `topic` under
/// the data directory `data`.
fn log_bytes(data: &Path, topic: &str) -> u64 {
    let want = format!("{topic}-0");
    let mut total = 0;
    let mut dirs = vec![data.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = e.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|x| x == "log")
                && d.file_name().is_some_and(|n| n.to_string_lossy() == want)
            {
                total += e.metadata().map_or(0, |m| m.len());
            }
        }
    }
    total
}

/// Batches as produced: the same 200k JSON events produced with
/// `compression.type` none, lz4 and zstd, each topic read back; the bytes
/// the producer sent (Produce request bytes the broker received), the
/// bytes on disk and the bytes fetched (Fetch response bytes), side by side
/// in one run, and their ratios.
fn codecs(dir: &Path) {
    const N: usize = 200_000;
    let data = dir.join("data-codecs");
    let (server, metrics) = Server::start_counted(&data);
    let k = server.kafka.clone();
    let pid = server.broker.pid();
    let n = N.to_string();
    for codec in ["none", "lz4", "zstd"] {
        let topic = format!("json-{codec}");
        let compression = format!("compression.type={codec}");
        let received = kafka_counter(metrics, "mk_received_bytes_total", "");
        let cpu = cpu_secs(pid);
        load(&[
            "produce",
            &k,
            &topic,
            &n,
            "0",
            "1",
            &compression,
            "mk.values=json",
        ]);
        let produce_cpu = cpu_secs(pid) - cpu;
        let sent_by_producer = kafka_counter(metrics, "mk_received_bytes_total", "") - received;
        let on_disk = log_bytes(&data, &topic) as f64;
        let sent = kafka_counter(metrics, "mk_sent_bytes_total", "");
        let cpu = cpu_secs(pid);
        load(&["consume", &k, &topic, &n]);
        let consume_cpu = cpu_secs(pid) - cpu;
        let fetched = kafka_counter(metrics, "mk_sent_bytes_total", "") - sent;
        let workload = format!(
            "librdkafka 2.12, {N} JSON events of about 130 B (mk.values=json), compression.type={codec}, acks=1, produced then consumed, 1 broker"
        );
        let name = format!("kafka.codec.{codec}");
        figure(
            &format!("{name}.producer_mb"),
            sent_by_producer / 1e6,
            "MB",
            &format!("{workload}: Produce request bytes the broker received"),
        );
        figure(
            &format!("{name}.disk_mb"),
            on_disk / 1e6,
            "MB",
            &format!("{workload}: segment bytes on disk"),
        );
        figure(
            &format!("{name}.fetched_mb"),
            fetched / 1e6,
            "MB",
            &format!("{workload}: Fetch response bytes the consumer received"),
        );
        figure(
            &format!("{name}.disk_to_producer"),
            on_disk / sent_by_producer,
            "ratio",
            "bytes on disk / bytes the producer sent (goal <= 1.05)",
        );
        figure(
            &format!("{name}.fetched_to_producer"),
            fetched / sent_by_producer,
            "ratio",
            "bytes fetched / bytes the producer sent (goal <= 1.05)",
        );
        figure(
            &format!("{name}.produce.server_cpu_us_per_record"),
            produce_cpu * 1e6 / N as f64,
            "µs/record",
            &format!("{workload}: server CPU per record produced"),
        );
        figure(
            &format!("{name}.consume.server_cpu_us_per_record"),
            consume_cpu * 1e6 / N as f64,
            "µs/record",
            &format!("{workload}: server CPU per record consumed"),
        );
    }
    figure(
        "kafka.codec.rss.peak_mib",
        server.peak_rss_mib(),
        "MiB",
        "VmHWM of a fresh server after the codec loads above",
    );
}

/// Writes `bytes` into a scratch file in 1 MiB writes and deletes it, so
/// that the page cache a measured run fills next comes from memory this
/// guest has already touched. This VM's balloon device has free page
/// reporting: memory left free for a few seconds goes back to the host, and
/// the first write to it afterwards costs the writer about ten times a
/// plain copy (the host backs the page on that touch). Without this step,
/// the broker's CPU per record measured what the host did with the guest's
/// free memory before the run (`host_memory` below shows how much).
fn pretouch(dir: &Path, bytes: usize) {
    let _ = write_scratch(dir, bytes);
}

/// CPU seconds the calling thread spent writing `bytes` into a new file in
/// 1 MiB writes, syncing it (the broker's flush cycle syncs what it wrote)
/// and deleting it.
fn write_scratch(dir: &Path, bytes: usize) -> f64 {
    use std::io::Write;
    let path = dir.join("scratch");
    let chunk = vec![0x5au8; 1 << 20];
    let before = thread_cpu_secs();
    let mut f = std::fs::File::create(&path).expect("scratch file");
    let mut left = bytes;
    while left > 0 {
        let n = left.min(chunk.len());
        f.write_all(&chunk[..n]).expect("scratch write");
        left -= n;
    }
    f.sync_data().expect("scratch sync");
    drop(f);
    std::fs::remove_file(&path).expect("scratch delete");
    thread_cpu_secs() - before
}

/// This thread's CPU time (the scheduler's, in nanoseconds).
fn thread_cpu_secs() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(f64::NAN, |ns| ns / 1e9)
}

/// What writing into the page cache costs on this machine, in the same
/// run as the broker's figures: the CPU per 100 B record of a plain 1 MiB
/// write of 5M records' bytes (about what the broker does with them at the
/// least), into memory touched just before, and into memory that sat free
/// for a while first (free page reporting hands it back to the host).
fn host_memory(dir: &Path) {
    const N: usize = 5_000_000;
    let bytes = N * 110;
    pretouch(dir, bytes * 3 / 2);
    let touched = write_scratch(dir, bytes);
    // Reporting starts 2 s after memory is freed and hands it back a share
    // at a time; 12 s let 1 GB go back in every try by hand (5 s did not
    // always).
    std::thread::sleep(std::time::Duration::from_secs(12));
    let fresh = write_scratch(dir, bytes);
    figure(
        "host.page_cache_write.touched.cpu_us_per_record",
        touched * 1e6 / N as f64,
        "µs/record",
        "a plain write (1 MiB writes, then fdatasync) of 5M x 110 B into memory the guest touched just before: the least a broker that stores records pays per 100 B record",
    );
    figure(
        "host.page_cache_write.fresh.cpu_us_per_record",
        fresh * 1e6 / N as f64,
        "µs/record",
        "the same write after the memory sat free for 12 s (the host takes free memory back by free page reporting, so this is what an unprepared run can pay)",
    );
}

/// One run of the load generator; returns (seconds, load generator CPU
/// seconds).
fn load(args: &[&str]) -> (f64, f64) {
    let bin = std::env::var("MK_KAFKA_LOAD").unwrap_or_else(|_| {
        eprintln!("kafka bench: MK_KAFKA_LOAD is not set; run it through `cargo xtask bench`");
        std::process::exit(1)
    });
    let out = Command::new("/usr/bin/time")
        .args(["-f", "cpu %U %S"])
        .arg(&bin)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {bin}: {e}"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{bin} {args:?} failed: {stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let cpu: f64 = stderr
        .lines()
        .find_map(|l| l.strip_prefix("cpu "))
        .map(|l| {
            l.split_whitespace()
                .filter_map(|x| x.parse::<f64>().ok())
                .sum()
        })
        .unwrap_or(f64::NAN);
    (v["secs"].as_f64().unwrap(), cpu)
}

/// Produces every line of `file` to `topic` partition 0 with kcat; returns
/// the wall time (kcat exits once every delivery report has arrived).
fn kcat_produce(kafka: &str, topic: &str, file: &Path) -> f64 {
    let start = Instant::now();
    let status = Command::new("kcat")
        .args(["-b", kafka, "-P", "-t", topic, "-p", "0", "-l"])
        .arg(file)
        .args([
            "-X",
            "acks=1",
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

/// How many times each throughput run is repeated: single runs on this VM
/// differ by up to three times now and then (docs/benchmarks.md).
const RUNS: usize = 3;
/// Produce runs are short (about 2 s) and the ones that land on memory the
/// host took back cost up to twice the others, so their median is taken
/// over more runs.
const PRODUCE_RUNS: usize = 5;

/// One throughput run: wall seconds, server and load generator CPU seconds.
struct Run {
    secs: f64,
    server_cpu: f64,
    load_cpu: f64,
}

/// Reports the run with the median server CPU of `runs`, naming every
/// run's server CPU per record in the workload.
fn report_median(name: &str, n: usize, size: usize, mut runs: Vec<Run>, workload: &str) {
    runs.sort_by(|a, b| a.server_cpu.total_cmp(&b.server_cpu));
    let each: Vec<String> = runs
        .iter()
        .map(|r| format!("{:.3}", r.server_cpu * 1e6 / n as f64))
        .collect();
    let median = &runs[runs.len() / 2];
    let workload = format!(
        "{workload}; the median of {} runs by server CPU (server us/record in each: {})",
        runs.len(),
        each.join(", ")
    );
    report(
        name,
        n,
        size,
        median.secs,
        median.server_cpu,
        median.load_cpu,
        &workload,
    );
}

/// Reports one throughput run: records/s, MB/s and where the CPU went.
fn report(
    name: &str,
    n: usize,
    size: usize,
    secs: f64,
    server_cpu: f64,
    load_cpu: f64,
    workload: &str,
) {
    figure(
        &format!("{name}.records_per_s"),
        n as f64 / secs,
        "records/s",
        workload,
    );
    figure(
        &format!("{name}.mb_per_s"),
        (n * size) as f64 / secs / 1e6,
        "MB/s",
        workload,
    );
    figure(
        &format!("{name}.server_cpu_us_per_record"),
        server_cpu * 1e6 / n as f64,
        "µs/record",
        "server CPU time (user + system) per record in that run",
    );
    figure(
        &format!("{name}.client_cpu_us_per_record"),
        load_cpu * 1e6 / n as f64,
        "µs/record",
        "librdkafka load generator CPU time per record in that run",
    );
}

/// Reports one request-rate run: requests/s and the CPU per request.
fn report_requests(
    name: &str,
    requests: f64,
    secs: f64,
    server_cpu: f64,
    load_cpu: f64,
    workload: &str,
) {
    figure(
        &format!("{name}.requests_per_s"),
        requests / secs,
        "requests/s",
        workload,
    );
    figure(
        &format!("{name}.server_cpu_us_per_request"),
        server_cpu * 1e6 / requests,
        "µs/request",
        "server CPU time (user + system) per request in that run",
    );
    figure(
        &format!("{name}.client_cpu_us_per_request"),
        load_cpu * 1e6 / requests,
        "µs/request",
        "librdkafka load generator CPU time per request in that run",
    );
}

/// The request path: Produce requests of one record each (no linger, one
/// record per batch) and Fetch requests of one batch each (a 1-byte
/// partition limit still returns the first batch whole, as in Kafka), so
/// the per-request cost of the protocol layer dominates.
fn request_rates(dir: &Path) {
    const N: usize = 200_000;
    let (server, metrics) = Server::start_counted(&dir.join("data-requests"));
    let k = server.kafka.clone();
    let pid = server.broker.pid();
    let one_per_request = ["linger.ms=0", "batch.num.messages=1"];
    let mut warmup = vec!["produce", &k, "warmup", "20000", "100", "1"];
    warmup.extend(one_per_request);
    load(&warmup);
    let n = N.to_string();
    let mut args = vec!["produce", &k, "requests", &n, "100", "1"];
    args.extend(one_per_request);
    let (before, served) = (cpu_secs(pid), requests_served(metrics, "Produce"));
    let (secs, load_cpu) = load(&args);
    report_requests(
        "kafka.produce.one_record_requests",
        requests_served(metrics, "Produce") - served,
        secs,
        cpu_secs(pid) - before,
        load_cpu,
        &format!(
            "librdkafka 2.12 producer, {N} Produce requests of one 100 B record (linger.ms=0, batch.num.messages=1), acks=1, one partition, 1 broker"
        ),
    );
    let (before, served) = (cpu_secs(pid), requests_served(metrics, "Fetch"));
    let (secs, load_cpu) = load(&["consume", &k, "requests", &n, "max.partition.fetch.bytes=1"]);
    report_requests(
        "kafka.fetch.one_batch_requests",
        requests_served(metrics, "Fetch") - served,
        secs,
        cpu_secs(pid) - before,
        load_cpu,
        &format!(
            "librdkafka 2.12 consumer reading those {N} one-record batches with max.partition.fetch.bytes=1: one batch per Fetch"
        ),
    );
}

fn main() {
    if Command::new("kcat").arg("-V").output().is_err() {
        eprintln!("kafka bench: kcat is not installed (apt-get install kcat)");
        std::process::exit(1);
    }
    let dir = bench_dir();
    // `MK_KAFKA_BENCH=codecs` or `security` measures that set alone.
    match std::env::var("MK_KAFKA_BENCH").as_deref() {
        Ok("codecs") => return codecs(dir.path()),
        Ok("security") => return security::security(dir.path()),
        _ => {}
    }
    let small = values_file(dir.path(), 100, 2_000_000);
    host_memory(dir.path());
    let server = Server::start(&dir.path().join("data"), &[]);
    let k = server.kafka.clone();
    let pid = server.broker.pid();
    // Warm-up: topic creation and first allocations.
    load(&["produce", &k, "warmup", "200000", "1024", "1"]);
    for (size, n) in [(100usize, 5_000_000usize), (1024, 500_000)] {
        for acks in ["1", "all"] {
            let runs: Vec<Run> = (0..PRODUCE_RUNS)
                .map(|i| {
                    // The first run's topic is the one consumed below.
                    let topic = if i == 0 {
                        format!("p{size}-acks{acks}")
                    } else {
                        format!("p{size}-acks{acks}-{i}")
                    };
                    // The broker's page cache takes about the records' bytes
                    // (plus batch and frame overhead): memory this guest has
                    // backed.
                    pretouch(dir.path(), n * (size + 64) * 3 / 2);
                    let before = cpu_secs(pid);
                    let (secs, load_cpu) = load(&[
                        "produce",
                        &k,
                        &topic,
                        &n.to_string(),
                        &size.to_string(),
                        acks,
                    ]);
                    Run {
                        secs,
                        server_cpu: cpu_secs(pid) - before,
                        load_cpu,
                    }
                })
                .collect();
            let workload = format!(
                "librdkafka 2.12 producer, {n} records of {size} B, one partition, acks={acks}{}, default batching, 1 broker, 64 MiB segments (the server default)",
                if acks == "all" {
                    " with idempotence"
                } else {
                    ""
                }
            );
            report_median(
                &format!("kafka.produce.{size}B.acks_{acks}"),
                n,
                size,
                runs,
                &workload,
            );
        }
        let topic = format!("p{size}-acks1");
        let runs: Vec<Run> = (0..RUNS)
            .map(|_| {
                let before = cpu_secs(pid);
                let (secs, load_cpu) = load(&["consume", &k, &topic, &n.to_string()]);
                Run {
                    secs,
                    server_cpu: cpu_secs(pid) - before,
                    load_cpu,
                }
            })
            .collect();
        let workload = format!(
            "librdkafka 2.12 consumer from the beginning to the end, {n} records of {size} B, one partition, default fetch sizes"
        );
        report_median(&format!("kafka.consume.{size}B"), n, size, runs, &workload);
    }
    let secs = kcat_produce(&k, "kcat", &small);
    figure(
        "kafka.produce.100B.kcat.records_per_s",
        2_000_000.0 / secs,
        "records/s",
        "cross-check: kcat (librdkafka 2.0) -P of 2M lines of 100 B, acks=1",
    );
    figure(
        "kafka.rss.peak_mib",
        server.peak_rss_mib(),
        "MiB",
        "VmHWM of the server after the Kafka produce and consume loads above",
    );
    drop(server);
    codecs(dir.path());
    request_rates(dir.path());
    // What the segment size costs: the same 100 B produce with 1 MiB
    // segments (the library default; 64x the rolls, each creating three
    // files and adding three fsyncs to the next flush) and with 1 GiB ones
    // (Kafka's default; no roll at all in this load).
    for (bytes, name) in [("1048576", "segment_1mib"), ("1073741824", "segment_1gib")] {
        let server = Server::start(
            &dir.path().join(format!("data-{name}")),
            &["--segment-bytes", bytes],
        );
        load(&["produce", &server.kafka, "warmup", "200000", "1024", "1"]);
        pretouch(dir.path(), 2_000_000 * 164 * 3 / 2);
        let (secs, _) = load(&["produce", &server.kafka, "segments", "2000000", "100", "1"]);
        figure(
            &format!("kafka.produce.100B.acks_1.{name}.records_per_s"),
            2_000_000.0 / secs,
            "records/s",
            &format!("as kafka.produce.100B.acks_1, with --segment-bytes {bytes}"),
        );
    }
}
