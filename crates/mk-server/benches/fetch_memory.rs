//! Memory of the release `mk-server` under fetches that ask for
//! everything: a 300 MB partition read end to end by 8 concurrent JSON-TCP
//! clients whose fetches carry no `max_bytes` and a huge `max_records`
//! (every answer is capped by `fetch_max_bytes` anyway), then 12 clients
//! that pipeline such fetches and never read. The server runs as a child
//! process, so its VmHWM is its own. Prints one JSON line per figure; it
//! reports and never asserts.

#![allow(clippy::print_stdout, clippy::print_stderr)]

mod common;
use common::*;
use mk_server::embedded::{BrokerBuilder, BrokerProcess};
use std::path::Path;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const BIN: &str = env!("CARGO_BIN_EXE_mk-server");
const PARTITION_BYTES: usize = 300 * 1_000_000;
const VALUE_BYTES: usize = 1_024;
const READERS: usize = 8;
const STALLED: usize = 12;

/// The broker as a child process (the embedded broker's child-process
/// mode, JSON-TCP only), stopped when dropped, and its address.
struct Server {
    broker: BrokerProcess,
    addr: String,
}

impl Server {
    fn start(data_dir: &Path) -> Server {
        let broker = BrokerBuilder::new()
            .data_dir(data_dir)
            .kafka_off()
            .spawn(BIN)
            .expect("start mk-server");
        let addr = broker.json_addr().to_string();
        Server { broker, addr }
    }

    /// A line of /proc/<pid>/status in bytes (VmHWM, VmRSS).
    fn memory(&self, field: &str) -> u64 {
        proc_memory_bytes(self.broker.pid(), field)
    }
}

async fn call(stream: &mut tokio::io::BufReader<TcpStream>, line: &str) -> String {
    stream.get_mut().write_all(line.as_bytes()).await.unwrap();
    stream.get_mut().write_all(b"\n").await.unwrap();
    let mut out = String::new();
    stream.read_line(&mut out).await.unwrap();
    out
}

/// Fills `t-0` with ~300 MB of 1 KiB values, 100 per request.
async fn fill(addr: &str) {
    let mut c = tokio::io::BufReader::new(TcpStream::connect(addr).await.unwrap());
    let r = call(
        &mut c,
        r#"{"operation":"create_topic","topic":"t","partitions":1,"replication_factor":1}"#,
    )
    .await;
    assert!(r.starts_with(r#"{"ok":true"#), "{r}");
    let value = base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        vec![b'v'; VALUE_BYTES],
    );
    let records = vec![format!(r#"{{"value_b64":"{value}"}}"#); 100].join(",");
    let line = format!(
        r#"{{"operation":"produce","topic":"t","partition":0,"acks":"1","records":[{records}]}}"#
    );
    for _ in 0..PARTITION_BYTES / (100 * VALUE_BYTES) {
        let r = call(&mut c, &line).await;
        assert!(r.starts_with(r#"{"ok":true"#), "{r}");
    }
}

fn unbounded_fetch(offset: i64) -> String {
    format!(
        r#"{{"operation":"fetch","topic":"t","partition":0,"offset":{offset},"max_records":1000000000}}"#
    )
}

/// Reads the whole partition with unbounded fetches; returns the bytes of
/// answers received.
async fn read_all(addr: String) -> u64 {
    let mut c = tokio::io::BufReader::new(TcpStream::connect(&addr).await.unwrap());
    let mut offset = 0i64;
    let mut received = 0u64;
    loop {
        let answer = call(&mut c, &unbounded_fetch(offset)).await;
        received += answer.len() as u64;
        let v: serde_json::Value = serde_json::from_str(&answer).unwrap();
        let next = v["next_offset"].as_i64().unwrap();
        if v["records"].as_array().is_none_or(Vec::is_empty) || next <= offset {
            return received;
        }
        offset = next;
    }
}

async fn run(dir: &Path) {
    let server = Server::start(&dir.join("server"));
    fill(&server.addr).await;
    let after_fill = server.memory("VmHWM:");

    let start = Instant::now();
    let readers: Vec<_> = (0..READERS)
        .map(|_| tokio::spawn(read_all(server.addr.clone())))
        .collect();
    let mut received = 0;
    for r in readers {
        received += r.await.unwrap();
    }
    let secs = start.elapsed().as_secs_f64();
    let workload = "8 concurrent JSON-TCP clients each read a 300 MB partition (1 KiB values) end to end with fetches without max_bytes and max_records 10^9; fetch_max_bytes 8 MiB (default)";
    figure(
        "server.fetch_unbounded.8readers.peak_rss_mib",
        mib(server.memory("VmHWM:")),
        "MiB",
        workload,
    );
    figure(
        "server.fetch_unbounded.8readers.mb_per_s",
        received as f64 / secs / 1e6,
        "MB/s",
        "answer bytes (JSON, base64) the 8 readers above received per second",
    );
    figure(
        "server.fetch_unbounded.after_fill.peak_rss_mib",
        mib(after_fill),
        "MiB",
        "VmHWM after writing the 300 MB partition, before the readers",
    );

    // Clients that pipeline unbounded fetches and never read: the server
    // holds at most a bounded queue per connection until the write timeout
    // drops them.
    let mut stalled = Vec::new();
    for _ in 0..STALLED {
        let mut s = TcpStream::connect(&server.addr).await.unwrap();
        let mut lines = String::new();
        for i in 0..50 {
            lines.push_str(&unbounded_fetch(i * 1_000));
            lines.push('\n');
        }
        s.write_all(lines.as_bytes()).await.unwrap();
        stalled.push(s);
    }
    // Measuring while they stall takes a moment of wall time; this is a
    // benchmark, not a test.
    let mut peak = 0;
    for _ in 0..20 {
        tokio::time::sleep(Duration::from_millis(250)).await;
        peak = peak.max(server.memory("VmRSS:"));
    }
    figure(
        "server.fetch_unbounded.12stalled.rss_mib",
        mib(peak),
        "MiB",
        "largest VmRSS over 5 s while 12 clients that never read each pipeline 50 unbounded fetches",
    );
    for mut s in stalled {
        let mut buf = [0u8; 1];
        let _ = s.read(&mut buf).await;
    }
}

fn main() {
    let dir = bench_dir();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(run(dir.path()));
}
