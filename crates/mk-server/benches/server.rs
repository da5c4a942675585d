//! JSON-TCP benchmarks of the release `mk-server` binary against the
//! loopback limit of the protocol on this machine.
//!
//! The limit is a zero-work responder built into this benchmark binary
//! (`server limit-server FILE MODE`, started as further child processes): a
//! thread per connection that answers every request line with a canned
//! response line (`{"ok":true}`, or for fetches the very bytes the broker
//! answered). Two of them run: the limit of issue 15 (`per-line`, one write
//! per answer, which is what a plain thread-per-connection responder does)
//! and a batching one (`per-read`, the answers to all lines of one read in
//! one write), the tighter bound. Every figure runs the same closed-loop
//! load against both limits and the broker back to back, rotating the
//! order, several rounds in a row; the figures are medians over the rounds
//! and each ratio is the median of the per-round ratios, so the machine's
//! drift (other sessions, page-cache writeback) cancels out of the ratios.
//!
//! A load is `connections x window`: every connection is a thread that
//! keeps `window` requests in flight (it sends a new one for each answer),
//! for a fixed time. Prints one JSON line per figure; it reports and never
//! asserts a time.
#![allow(
    clippy::too_many_lines,
    reason = "a benchmark runs its phases in order in one function"
)]
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod common;
use common::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_mk-server");

/// A child process serving JSON-TCP on `addr`, killed on drop.
struct Served {
    child: Spawned,
    addr: String,
}

impl Served {
    /// The broker, with its data in `data_dir`.
    fn broker(data_dir: &Path, extra: &[&str]) -> Served {
        let (child, line) = Spawned::spawn(
            Command::new(BIN)
                .args([
                    "--listen",
                    "127.0.0.1:0",
                    "--kafka-listen",
                    "off",
                    "--console-listen",
                    "off",
                    "--data-dir",
                ])
                .arg(data_dir)
                .args(extra)
                .env("RUST_LOG", "warn"),
            "mk-server",
        );
        // "... listening on <json> (JSON-TCP; Kafka protocol off), ..."
        let addr = line
            .split(" (JSON-TCP")
            .next()
            .and_then(|head| head.split_whitespace().last())
            .unwrap_or_else(|| panic!("no address in {line:?}"))
            .to_string();
        Served { child, addr }
    }

    /// The zero-work responder answering every line with the contents of
    /// `response` (a file holding one line with its `\n`).
    fn limit(response: &Path, mode: &str) -> Served {
        let (child, line) = Spawned::spawn(
            Command::new(std::env::current_exe().expect("own path"))
                .arg("limit-server")
                .arg(response)
                .arg(mode),
            "the limit server",
        );
        let addr = line
            .strip_prefix("limit listening on ")
            .unwrap_or_else(|| panic!("no address in {line:?}"))
            .trim()
            .to_string();
        Served { child, addr }
    }

    /// Peak resident set size (VmHWM) in MiB.
    fn peak_rss_mib(&self) -> f64 {
        peak_rss_mib(self.child.id())
    }
}

/// The limit server: a thread per connection answering every request line
/// with the canned `response`, nothing else. `per-line` is the responder of
/// issue 15 (one write per answer, as a plain `for line in lines { write }`
/// server does); `per-read` answers every line of one read with one write,
/// the tighter bound. Never returns.
fn limit_server(response: &Path, mode: &str) -> ! {
    let answer = std::fs::read(response).expect("canned response");
    assert!(answer.ends_with(b"\n"), "the canned response is one line");
    let per_line = match mode {
        "per-line" => true,
        "per-read" => false,
        other => panic!("unknown limit mode {other:?}"),
    };
    let answer = Arc::new(answer);
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    println!(
        "limit listening on {}",
        listener.local_addr().expect("bound")
    );
    std::io::stdout().flush().expect("stdout");
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let answer = answer.clone();
        std::thread::spawn(move || {
            let _ = stream.set_nodelay(true);
            if per_line {
                answer_per_line(stream, &answer);
            } else {
                answer_per_read(stream, &answer);
            }
        });
    }
    std::process::exit(0)
}

fn answer_per_line(stream: TcpStream, answer: &[u8]) {
    let Ok(mut w) = stream.try_clone() else {
        return;
    };
    let mut r = BufReader::with_capacity(64 * 1024, stream);
    let mut line = Vec::new();
    loop {
        line.clear();
        match r.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if w.write_all(answer).is_err() {
            return;
        }
    }
}

fn answer_per_read(mut stream: TcpStream, answer: &[u8]) {
    let mut buf = vec![0u8; 256 * 1024];
    let mut out = Vec::new();
    loop {
        let n = match stream.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let lines = buf[..n].iter().filter(|b| **b == b'\n').count();
        out.clear();
        for _ in 0..lines {
            out.extend_from_slice(answer);
        }
        if stream.write_all(&out).is_err() {
            return;
        }
    }
}

/// The two limit servers for one canned answer.
struct Limits {
    per_line: Served,
    per_read: Served,
}

impl Limits {
    fn start(response: &Path) -> Limits {
        Limits {
            per_line: Served::limit(response, "per-line"),
            per_read: Served::limit(response, "per-read"),
        }
    }
}

/// One request/response round trip (setup only).
fn call(addr: &str, line: &str) -> String {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.write_all(line.as_bytes()).unwrap();
    s.write_all(b"\n").unwrap();
    let mut out = String::new();
    BufReader::new(s).read_line(&mut out).unwrap();
    out.pop();
    out
}

fn ok(addr: &str, line: &str) -> String {
    let r = call(addr, line);
    assert!(r.starts_with("{\"ok\":true"), "{line} -> {r}");
    r
}

/// A closed-loop load: `connections` threads each keep `window` requests in
/// flight for `secs`.
#[derive(Debug, Clone, Copy)]
struct Load {
    connections: usize,
    window: usize,
    secs: f64,
}

/// What one run measured.
#[derive(Debug, Default)]
struct Outcome {
    answers: u64,
    errors: u64,
    secs: f64,
    /// Per-request latencies in seconds (only for a window of 1).
    latencies: Vec<f64>,
}

/// Runs `load` against `addr`; connection `c` sends the lines of
/// `lines(c)` in a cycle.
fn drive(addr: &str, load: Load, lines: &(dyn Fn(usize) -> Vec<Vec<u8>> + Sync)) -> Outcome {
    let barrier = Arc::new(Barrier::new(load.connections + 1));
    let outcomes: Vec<Outcome> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..load.connections)
            .map(|c| {
                let barrier = barrier.clone();
                let requests = lines(c);
                scope.spawn(move || connection(addr, load, &requests, &barrier))
            })
            .collect();
        barrier.wait();
        handles
            .into_iter()
            .map(|h| h.join().expect("load thread"))
            .collect()
    });
    let mut total = Outcome::default();
    for o in outcomes {
        total.answers += o.answers;
        total.errors += o.errors;
        total.secs = total.secs.max(o.secs);
        total.latencies.extend(o.latencies);
    }
    total
}

fn connection(addr: &str, load: Load, requests: &[Vec<u8>], barrier: &Barrier) -> Outcome {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_nodelay(true).unwrap();
    let mut next = 0usize;
    let mut out = Vec::new();
    let mut push = |out: &mut Vec<u8>| {
        out.extend_from_slice(&requests[next % requests.len()]);
        next += 1;
    };
    let mut buf = vec![0u8; 1 << 20];
    let mut o = Outcome::default();
    // Bytes since the last newline: an answer's seventh byte tells
    // `{"ok":true` from `{"ok":false`.
    let mut since_newline = 0usize;
    let mut sent = 0u64;
    let mut sent_at = std::collections::VecDeque::new();
    barrier.wait();
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(load.secs);
    for _ in 0..load.window {
        push(&mut out);
        sent += 1;
        if load.window == 1 {
            sent_at.push_back(Instant::now());
        }
    }
    s.write_all(&out).unwrap();
    while o.answers < sent {
        let n = s.read(&mut buf).expect("read");
        assert!(n > 0, "the server closed the connection");
        let chunk = &buf[..n];
        if since_newline <= 6 && 6 - since_newline < n && chunk[6 - since_newline] == b'f' {
            o.errors += 1;
        }
        let mut answered = 0;
        for (p, _) in chunk.iter().enumerate().filter(|(_, b)| **b == b'\n') {
            answered += 1;
            if p + 7 < n && chunk[p + 7] == b'f' {
                o.errors += 1;
            }
            since_newline = n - p - 1;
        }
        if answered == 0 {
            since_newline += n;
        }
        o.answers += answered;
        let now = Instant::now();
        if load.window == 1 {
            for _ in 0..answered {
                if let Some(at) = sent_at.pop_front() {
                    o.latencies.push(now.duration_since(at).as_secs_f64());
                }
            }
        }
        if now < deadline && answered > 0 {
            out.clear();
            for _ in 0..answered {
                push(&mut out);
            }
            sent += answered;
            if load.window == 1 {
                sent_at.push_back(Instant::now());
            }
            s.write_all(&out).unwrap();
        }
    }
    o.secs = start.elapsed().as_secs_f64();
    o
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return f64::NAN;
    }
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

#[allow(
    clippy::cast_possible_truncation,
    reason = "a rank from a fraction in [0, 1] of the sample count, clamped to the last sample"
)]
fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return f64::NAN;
    }
    v[((v.len() as f64 * p) as usize).min(v.len() - 1)]
}

/// How many limit/broker pairs each figure runs (`MK_BENCH_PAIRS`).
fn pairs() -> usize {
    std::env::var("MK_BENCH_PAIRS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(5)
}

/// Runs `load` against both limits and the broker, `pairs()` rounds in a
/// row with the order rotated every round (after a short warm-up of each),
/// and reports the broker's and the limits' median rates and the median
/// ratios. `before_ours` runs before every broker run.
#[allow(clippy::too_many_arguments)]
fn compare(
    name: &str,
    unit: &str,
    per_answer: f64,
    limits: &Limits,
    ours: &str,
    load: Load,
    workload: &str,
    lines: &(dyn Fn(usize) -> Vec<Vec<u8>> + Sync),
    before_ours: &mut dyn FnMut(),
) {
    if !selected(name) {
        return;
    }
    let targets = [
        limits.per_line.addr.as_str(),
        limits.per_read.addr.as_str(),
        ours,
    ];
    let warm = Load { secs: 0.3, ..load };
    for (i, addr) in targets.iter().enumerate() {
        if i == 2 {
            before_ours();
        }
        drive(addr, warm, lines);
    }
    let mut rates: [Vec<f64>; 3] = Default::default();
    for round in 0..pairs() {
        let mut got = [0.0f64; 3];
        for k in 0..3 {
            let i = (round + k) % 3;
            if i == 2 {
                before_ours();
            }
            let r = drive(targets[i], load, lines);
            assert_eq!(r.errors, 0, "{name}: {} answered with errors", targets[i]);
            got[i] = r.answers as f64 * per_answer / r.secs;
        }
        eprintln!(
            "{name}: round {round}: limit {:.0}, batching limit {:.0}, ours {:.0} {unit}",
            got[0], got[1], got[2]
        );
        for i in 0..3 {
            rates[i].push(got[i]);
        }
    }
    let ratio = |l: &[f64]| median(rates[2].iter().zip(l).map(|(o, l)| o / l).collect());
    let shape = format!(
        "{} conn x {} in flight, {} s per run, {} rounds",
        load.connections,
        load.window,
        load.secs,
        pairs()
    );
    let key = unit_key(unit);
    figure(
        &format!("{name}.{key}"),
        median(rates[2].clone()),
        unit,
        &format!("{workload}; {shape}; median"),
    );
    // Each limit server's rate under the same load, then ours over it:
    // (its index in `rates`, the figures' tag, what it is, its short name).
    let limits = [
        (
            0,
            "",
            "the zero-work limit server of issue 15 (one write per answer)",
            "limit",
        ),
        (
            1,
            "_batching",
            "the batching limit server (one write per read)",
            "batching limit",
        ),
    ];
    for (i, tag, server, short) in limits {
        figure(
            &format!("{name}.limit{tag}_{key}"),
            median(rates[i].clone()),
            unit,
            &format!("{server} under the same load; median"),
        );
        figure(
            &format!("{name}.ratio{tag}"),
            ratio(&rates[i]),
            "ours/limit",
            &format!("median over the rounds of broker / {short}, measured back to back"),
        );
    }
}

/// `MK_BENCH_ONLY=<substring>` runs only the figures whose name contains
/// it (to reproduce or profile one figure).
fn selected(name: &str) -> bool {
    std::env::var("MK_BENCH_ONLY").map_or(true, |only| name.contains(&only))
}

fn unit_key(unit: &str) -> &'static str {
    match unit {
        "req/s" => "req_per_s",
        "records/s" => "records_per_s",
        _ => "per_s",
    }
}

fn value_100b(i: usize) -> String {
    let v: Vec<u8> = (0..100)
        .map(|j| u8::try_from((i * 31 + j * 7) % 251).unwrap())
        .collect();
    base64::Engine::encode(&base64::engine::general_purpose::STANDARD, v)
}

fn produce_line(topic: &str, partition: usize, acks: &str) -> Vec<u8> {
    format!(
        "{{\"operation\":\"produce\",\"topic\":\"{topic}\",\"partition\":{partition},\"value_b64\":\"{}\",\"acks\":\"{acks}\"}}\n",
        value_100b(partition)
    )
    .into_bytes()
}

fn batch_line(topic: &str, partition: usize) -> Vec<u8> {
    let records: Vec<String> = (0..100)
        .map(|i| format!("{{\"value_b64\":\"{}\"}}", value_100b(i)))
        .collect();
    format!(
        "{{\"operation\":\"produce\",\"topic\":\"{topic}\",\"partition\":{partition},\"acks\":\"1\",\"records\":[{}]}}\n",
        records.join(",")
    )
    .into_bytes()
}

/// Creates a fresh topic for the next run of a produce figure and deletes
/// the previous one, so repeated runs do not pile gigabytes on the disk.
struct Topics {
    addr: String,
    prefix: String,
    partitions: usize,
    n: usize,
}

impl Topics {
    fn current(&self) -> String {
        format!("{}-{}", self.prefix, self.n)
    }

    fn renew(&mut self) {
        if self.n > 0 {
            ok(
                &self.addr,
                &format!(
                    "{{\"operation\":\"delete_topic\",\"topic\":\"{}\"}}",
                    self.current()
                ),
            );
        }
        self.n += 1;
        ok(
            &self.addr,
            &format!(
                "{{\"operation\":\"create_topic\",\"topic\":\"{}\",\"partitions\":{},\"replication_factor\":1}}",
                self.current(),
                self.partitions
            ),
        );
    }
}

fn write_file(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn run(dir: &Path) {
    let ok_line = write_file(dir, "ok.json", b"{\"ok\":true}\n");
    let limits = Limits::start(&ok_line);
    let server = Served::broker(&dir.join("server"), &[]);
    let secs = std::env::var("MK_BENCH_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1.0);

    // Single-record produce: every connection its own partition, as the
    // issue's shapes do; topics are renewed before each broker run.
    for (connections, window) in [(1usize, 1usize), (8, 8), (16, 32)] {
        let load = Load {
            connections,
            window,
            secs,
        };
        let mut topics = Topics {
            addr: server.addr.clone(),
            prefix: format!("single-{connections}x{window}"),
            partitions: connections,
            n: 0,
        };
        topics.renew();
        // The lines name the topic of the run, so they are built per run:
        // the closure reads the name the last renewal chose.
        let name = std::sync::Mutex::new(topics.current());
        let lines = |c: usize| {
            let topic = name.lock().unwrap().clone();
            vec![produce_line(&topic, c, "1")]
        };
        let mut renew = || {
            topics.renew();
            *name.lock().unwrap() = topics.current();
        };
        compare(
            &format!("server.produce.{connections}x{window}"),
            "req/s",
            1.0,
            &limits,
            &server.addr,
            load,
            "one 100 B record per request, acks=1, one partition per connection",
            &lines,
            &mut renew,
        );
    }

    // Batched produce: 100 records of 100 B per request.
    let load = Load {
        connections: 4,
        window: 4,
        secs,
    };
    let mut topics = Topics {
        addr: server.addr.clone(),
        prefix: "batched".into(),
        partitions: 4,
        n: 0,
    };
    topics.renew();
    let name = std::sync::Mutex::new(topics.current());
    let lines = |c: usize| vec![batch_line(&name.lock().unwrap(), c)];
    let mut renew = || {
        topics.renew();
        *name.lock().unwrap() = topics.current();
    };
    compare(
        "server.produce_batched.4x4",
        "records/s",
        100.0,
        &limits,
        &server.addr,
        load,
        "100 records of 100 B per request, acks=1, one partition per connection",
        &lines,
        &mut renew,
    );

    if selected("server.fetch") {
        // Fetch: 500 records per request from a partition of 1M records; the
        // limit answers with the broker's own answer to the first request.
        ok(
            &server.addr,
            "{\"operation\":\"create_topic\",\"topic\":\"fetched\",\"partitions\":1,\"replication_factor\":1}",
        );
        let fill = batch_line("fetched", 0);
        let total = 1_000_000usize;
        for _ in 0..total / (100 * 100) {
            // 100 pipelined requests of 100 records, then their answers.
            let mut s = TcpStream::connect(&server.addr).unwrap();
            s.write_all(&fill.repeat(100)).unwrap();
            let mut r = BufReader::new(s);
            for _ in 0..100 {
                let mut l = String::new();
                r.read_line(&mut l).unwrap();
                assert!(l.starts_with("{\"ok\":true"), "{l}");
            }
        }
        let fetch = |offset: usize| {
            format!(
            "{{\"operation\":\"fetch\",\"topic\":\"fetched\",\"partition\":0,\"offset\":{offset},\"max_records\":500}}\n"
        )
        .into_bytes()
        };
        let mut answer = call(&server.addr, &String::from_utf8(fetch(0)).unwrap()).into_bytes();
        assert_eq!(
            String::from_utf8_lossy(&answer)
                .matches("\"offset\":")
                .count(),
            500
        );
        answer.push(b'\n');
        let fetch_limits = Limits::start(&write_file(dir, "fetch.json", &answer));
        let lines = |_| (0..total / 500).map(|i| fetch(i * 500)).collect();
        compare(
            "server.fetch.1x8",
            "records/s",
            500.0,
            &fetch_limits,
            &server.addr,
            Load {
                connections: 1,
                window: 8,
                secs,
            },
            "fetches of max_records 500 (100 B values) cycling over 1M records, page cache warm",
            &lines,
            &mut || {},
        );
        drop(fetch_limits);
    }
    figure(
        "server.rss.peak_mib",
        server.peak_rss_mib(),
        "MiB",
        "VmHWM of the broker after the produce and fetch loads above",
    );
    drop(server);

    if !selected("server.acks_all") {
        return;
    }
    // acks=all latency with three brokers and min ISR 2, real drivers,
    // against the limit's round trip.
    let limit = &limits.per_line;
    let server = Served::broker(
        &dir.join("acks-all"),
        &["--brokers", "1,2,3", "--min-insync-replicas", "2"],
    );
    ok(
        &server.addr,
        "{\"operation\":\"create_topic\",\"topic\":\"all\",\"partitions\":1,\"replication_factor\":3}",
    );
    let line = produce_line("all", 0, "all");
    let lines = |_| vec![line.clone()];
    let load = Load {
        connections: 1,
        window: 1,
        secs,
    };
    drive(&server.addr, Load { secs: 0.3, ..load }, &lines);
    drive(&limit.addr, Load { secs: 0.3, ..load }, &lines);
    let (mut p50, mut p99, mut lp50, mut lp99) = (vec![], vec![], vec![], vec![]);
    for pair in 0..pairs() {
        let run = |addr: &str| {
            let mut r = drive(addr, load, &lines);
            assert_eq!(r.errors, 0, "acks=all: {addr} answered with errors");
            (
                percentile(&mut r.latencies, 0.50) * 1e3,
                percentile(&mut r.latencies, 0.99) * 1e3,
            )
        };
        let ((a, b), (c, d)) = if pair % 2 == 0 {
            let l = run(&limit.addr);
            (run(&server.addr), l)
        } else {
            let o = run(&server.addr);
            (o, run(&limit.addr))
        };
        eprintln!(
            "acks=all: pair {pair}: ours p50 {a:.3} p99 {b:.3}, limit p50 {c:.3} p99 {d:.3} ms"
        );
        p50.push(a);
        p99.push(b);
        lp50.push(c);
        lp99.push(d);
    }
    let ratio = |o: &[f64], l: &[f64]| median(o.iter().zip(l).map(|(o, l)| o / l).collect());
    let workload = "3 brokers in one server, min ISR 2, RF 3, 1 conn x 1 in flight, 100 B, event-driven replication driver; median of the pairs";
    figure(
        "server.acks_all.p50_ms",
        median(p50.clone()),
        "ms",
        workload,
    );
    figure(
        "server.acks_all.p99_ms",
        median(p99.clone()),
        "ms",
        workload,
    );
    figure(
        "server.acks_all.limit_p50_ms",
        median(lp50.clone()),
        "ms",
        "round trip of the zero-work limit server, same load",
    );
    figure(
        "server.acks_all.limit_p99_ms",
        median(lp99.clone()),
        "ms",
        "round trip of the zero-work limit server, same load",
    );
    figure(
        "server.acks_all.p50_ratio",
        ratio(&p50, &lp50),
        "ours/limit",
        "latency ratio (higher is slower), median over the pairs",
    );
    figure(
        "server.acks_all.p99_ratio",
        ratio(&p99, &lp99),
        "ours/limit",
        "latency ratio (higher is slower), median over the pairs",
    );
    figure(
        "server.acks_all.rss.peak_mib",
        server.peak_rss_mib(),
        "MiB",
        "VmHWM of the 3-broker server after the acks=all load",
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("limit-server") {
        limit_server(
            Path::new(args.get(1).expect("a response file")),
            args.get(2).map_or("per-line", String::as_str),
        );
    }
    // `cargo bench` passes `--bench`; nothing else is accepted.
    let dir = bench_dir();
    run(dir.path());
}
