//! Server benchmarks with their own load generator: the release `mk-server`
//! binary runs as a child process on loopback (so the RSS figure is the
//! server's alone) and this process drives it with pipelined JSON-TCP
//! requests. Prints one JSON line per figure; it reports and never asserts a
//! time.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Instant;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const BIN: &str = env!("CARGO_BIN_EXE_mk-server");

struct Server {
    child: Child,
    addr: String,
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
                "off",
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
        // "... listening on <json> (JSON-TCP; Kafka protocol off), ..."
        let addr = line
            .split(" (JSON-TCP")
            .next()
            .and_then(|head| head.split_whitespace().last())
            .unwrap_or_else(|| panic!("no address in {line:?}"))
            .to_string();
        Server { child, addr }
    }

    /// Peak resident set size (VmHWM) in bytes.
    fn peak_rss_bytes(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024)
    }
}

fn figure(name: &str, value: f64, unit: &str, workload: &str) {
    println!(
        "{}",
        serde_json::json!({"figure": name, "value": value, "unit": unit, "workload": workload})
    );
}

/// One request/response round trip (for setup and latency).
async fn call(stream: &mut TcpStream, line: &str) -> String {
    stream.write_all(line.as_bytes()).await.unwrap();
    stream.write_all(b"\n").await.unwrap();
    let mut out = Vec::new();
    let mut byte = [0u8; 1];
    loop {
        stream.read_exact(&mut byte).await.unwrap();
        if byte[0] == b'\n' {
            break;
        }
        out.push(byte[0]);
    }
    String::from_utf8(out).unwrap()
}

/// Sends `lines` over one connection without waiting for answers (the
/// writer runs ahead, bounded only by TCP and the server's in-flight
/// limit) and reads every response; returns the response bytes' error
/// count.
async fn pipelined(addr: &str, lines: Arc<Vec<Vec<u8>>>) -> usize {
    let stream = TcpStream::connect(addr).await.unwrap();
    stream.set_nodelay(true).unwrap();
    let (mut rd, mut wr) = stream.into_split();
    let expected = lines.len();
    let writer = tokio::spawn(async move {
        let mut chunk = Vec::with_capacity(256 * 1024);
        for line in lines.iter() {
            chunk.extend_from_slice(line);
            if chunk.len() >= 64 * 1024 {
                wr.write_all(&chunk).await.unwrap();
                chunk.clear();
            }
        }
        wr.write_all(&chunk).await.unwrap();
        wr
    });
    let mut buf = vec![0u8; 1 << 20];
    let mut seen = 0;
    let mut errors = 0;
    let mut tail: Vec<u8> = Vec::new();
    while seen < expected {
        let n = rd.read(&mut buf).await.unwrap();
        assert!(n > 0, "server closed the connection");
        // Count lines; look for error answers at line starts.
        tail.extend_from_slice(&buf[..n]);
        let mut start = 0;
        while let Some(pos) = tail[start..].iter().position(|b| *b == b'\n') {
            if tail[start..].starts_with(b"{\"ok\":false") {
                errors += 1;
            }
            seen += 1;
            start += pos + 1;
        }
        tail.drain(..start);
    }
    drop(writer.await.unwrap());
    errors
}

fn value_100b(i: usize) -> String {
    let v: Vec<u8> = (0..100).map(|j| ((i * 31 + j * 7) % 251) as u8).collect();
    base64::Engine::encode(&base64::engine::general_purpose::STANDARD, v)
}

async fn produce_requests(addr: &str, topic: &str, partition: u32, n: usize) -> f64 {
    let v = value_100b(partition as usize);
    let lines: Vec<Vec<u8>> = (0..n)
        .map(|_| {
            format!(
                "{{\"operation\":\"produce\",\"topic\":\"{topic}\",\"partition\":{partition},\"value_b64\":\"{v}\",\"acks\":\"1\"}}\n"
            )
            .into_bytes()
        })
        .collect();
    let lines = Arc::new(lines);
    let start = Instant::now();
    let errors = pipelined(addr, lines).await;
    assert_eq!(errors, 0, "produce answered with errors");
    start.elapsed().as_secs_f64()
}

async fn run(dir: &Path) {
    let server = Server::start(&dir.join("server"), &[]);
    let addr = server.addr.clone();
    let mut admin = TcpStream::connect(&addr).await.unwrap();
    for (topic, partitions) in [("one", 1), ("sixteen", 16), ("batched", 1)] {
        let r = call(
            &mut admin,
            &format!("{{\"operation\":\"create_topic\",\"topic\":\"{topic}\",\"partitions\":{partitions},\"replication_factor\":1}}"),
        )
        .await;
        assert!(r.starts_with("{\"ok\":true"), "{r}");
    }

    // Warm-up, then one connection.
    produce_requests(&addr, "one", 0, 20_000).await;
    let n = 200_000;
    let secs = produce_requests(&addr, "one", 0, n).await;
    figure(
        "server.produce.1conn.req_per_s",
        n as f64 / secs,
        "req/s",
        "1 connection, pipelined, one 100 B record per request, acks=1",
    );

    // Sixteen connections, one partition each.
    let per = 25_000;
    let start = Instant::now();
    let mut tasks = Vec::new();
    for p in 0..16u32 {
        let addr = addr.clone();
        tasks.push(tokio::spawn(async move {
            produce_requests(&addr, "sixteen", p, per).await
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let secs = start.elapsed().as_secs_f64();
    figure(
        "server.produce.16conn.req_per_s",
        (16 * per) as f64 / secs,
        "req/s",
        "16 connections (one partition each), pipelined, one 100 B record per request, acks=1",
    );

    // Batched: 100 records per request.
    let records: Vec<String> = (0..100)
        .map(|i| format!("{{\"value_b64\":\"{}\"}}", value_100b(i)))
        .collect();
    let line = format!(
        "{{\"operation\":\"produce\",\"topic\":\"batched\",\"partition\":0,\"acks\":\"1\",\"records\":[{}]}}\n",
        records.join(",")
    )
    .into_bytes();
    let requests = 20_000;
    let lines = Arc::new(vec![line; requests]);
    let start = Instant::now();
    let errors = pipelined(&addr, lines).await;
    let secs = start.elapsed().as_secs_f64();
    assert_eq!(errors, 0);
    figure(
        "server.produce.batched.records_per_s",
        (requests * 100) as f64 / secs,
        "records/s",
        "1 connection, pipelined, 100 records of 100 B per request, acks=1",
    );

    // Fetch: the 2M batched records, 500 per request.
    let total = requests * 100;
    let first = call(
        &mut admin,
        "{\"operation\":\"fetch\",\"topic\":\"batched\",\"partition\":0,\"offset\":0,\"max_records\":500}",
    )
    .await;
    assert_eq!(first.matches("\"offset\":").count(), 500);
    let lines: Vec<Vec<u8>> = (0..total / 500)
        .map(|i| {
            format!(
                "{{\"operation\":\"fetch\",\"topic\":\"batched\",\"partition\":0,\"offset\":{},\"max_records\":500}}\n",
                i * 500
            )
            .into_bytes()
        })
        .collect();
    let start = Instant::now();
    let errors = pipelined(&addr, Arc::new(lines)).await;
    let secs = start.elapsed().as_secs_f64();
    assert_eq!(errors, 0);
    figure(
        "server.fetch.records_per_s",
        total as f64 / secs,
        "records/s",
        "1 connection, pipelined fetches of max_records 500 (100 B values) over 2M records",
    );
    figure(
        "server.rss.peak_mib",
        server.peak_rss_bytes() as f64 / 1_048_576.0,
        "MiB",
        "VmHWM of the server process after the produce and fetch loads above",
    );
    drop(admin);
    drop(server);

    // acks=all latency with three brokers and min ISR 2, real drivers.
    let server = Server::start(
        &dir.join("acks-all"),
        &["--brokers", "1,2,3", "--min-insync-replicas", "2"],
    );
    let mut c = TcpStream::connect(&server.addr).await.unwrap();
    c.set_nodelay(true).unwrap();
    let r = call(
        &mut c,
        "{\"operation\":\"create_topic\",\"topic\":\"all\",\"partitions\":1,\"replication_factor\":3}",
    )
    .await;
    assert!(r.starts_with("{\"ok\":true"), "{r}");
    let request = format!(
        "{{\"operation\":\"produce\",\"topic\":\"all\",\"value_b64\":\"{}\",\"acks\":\"all\"}}",
        value_100b(0)
    );
    let mut latencies = Vec::new();
    for i in 0..6_000 {
        let start = Instant::now();
        let r = call(&mut c, &request).await;
        let took = start.elapsed();
        assert!(r.starts_with("{\"ok\":true"), "{r}");
        if i >= 1_000 {
            latencies.push(took);
        }
    }
    latencies.sort();
    let pct = |p: f64| {
        latencies[((latencies.len() as f64 * p) as usize).min(latencies.len() - 1)].as_secs_f64()
            * 1_000.0
    };
    let workload = "3 brokers in one server, min ISR 2, RF 3, one request at a time, 100 B, event-driven replication driver";
    figure("server.acks_all.p50_ms", pct(0.50), "ms", workload);
    figure("server.acks_all.p99_ms", pct(0.99), "ms", workload);
    figure(
        "server.acks_all.rss.peak_mib",
        server.peak_rss_bytes() as f64 / 1_048_576.0,
        "MiB",
        "VmHWM of the 3-broker server after the acks=all load",
    );
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else is accepted.
    let base = std::env::var_os("MK_BENCH_DIR").map(std::path::PathBuf::from);
    let dir = match &base {
        Some(b) => {
            std::fs::create_dir_all(b).unwrap();
            tempfile::tempdir_in(b).unwrap()
        }
        None => tempfile::tempdir().unwrap(),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(run(dir.path()));
}
