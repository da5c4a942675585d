//! How fast a broker is there: the release `mk-server` started on an empty
//! data directory (one broker, Kafka and JSON-TCP on free ports), timed
//! from the spawn to its startup line, to the first record a client
//! produced being acknowledged (JSON-TCP: connect, create_topic, produce
//! acks=1; Kafka: rskafka's client connects, CreateTopics, Produce
//! acks=all), and from SIGTERM to its exit; its peak RSS idle after the
//! start; and the in-process embedded broker's start. Each figure is the
//! median of `MK_BENCH_RUNS` (20) fresh starts. Prints one JSON line per
//! figure; it reports and never asserts.

#![allow(clippy::print_stdout, clippy::print_stderr)]

mod common;
use common::*;
use mk_server::embedded::{BrokerBuilder, BrokerProcess, EmbeddedBroker};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_mk-server");

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Median and maximum.
fn summary(mut samples: Vec<f64>) -> (f64, f64) {
    samples.sort_by(f64::total_cmp);
    let median = samples[samples.len() / 2];
    (median, samples[samples.len() - 1])
}

fn spawn(data: &Path) -> (BrokerProcess, Duration) {
    let started = Instant::now();
    let broker = BrokerBuilder::new()
        .data_dir(data)
        .spawn(BIN)
        .expect("mk-server starts");
    (broker, started.elapsed())
}

/// One JSON-TCP connection: create a topic, produce one record with
/// acks=1, wait for its offset.
fn json_first_record(addr: SocketAddr) {
    let mut stream = TcpStream::connect(addr).unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut call = |line: &str| {
        stream.write_all(line.as_bytes()).unwrap();
        let mut answer = String::new();
        reader.read_line(&mut answer).unwrap();
        assert!(answer.starts_with(r#"{"ok":true"#), "{answer}");
    };
    call(
        "{\"operation\":\"create_topic\",\"topic\":\"t\",\"partitions\":1,\"replication_factor\":1}\n",
    );
    call(
        "{\"operation\":\"produce\",\"topic\":\"t\",\"partition\":0,\"value_b64\":\"aGk=\",\"acks\":\"1\"}\n",
    );
}

async fn kafka_first_record(bootstrap: String) {
    use rskafka::client::ClientBuilder;
    use rskafka::client::partition::{Compression, UnknownTopicHandling};
    let client = ClientBuilder::new(vec![bootstrap]).build().await.unwrap();
    client
        .controller_client()
        .unwrap()
        .create_topic("t", 1, 1, 5_000)
        .await
        .unwrap();
    let partition = client
        .partition_client("t", 0, UnknownTopicHandling::Retry)
        .await
        .unwrap();
    let record = rskafka::record::Record {
        key: None,
        value: Some(b"hi".to_vec()),
        headers: BTreeMap::new(),
        timestamp: rskafka::chrono::Utc::now(),
    };
    let offsets = partition
        .produce(vec![record], Compression::NoCompression)
        .await
        .unwrap();
    assert_eq!(offsets, vec![0]);
}

#[derive(Default)]
struct Samples {
    listening: Vec<f64>,
    json_ack: Vec<f64>,
    kafka_ack: Vec<f64>,
    stop: Vec<f64>,
    rss_idle: Vec<f64>,
    embedded: Vec<f64>,
}

fn one_round(dir: &Path, round: usize, rt: &tokio::runtime::Runtime, s: &mut Samples) {
    let (mut broker, listening) = spawn(&dir.join(format!("json-{round}")));
    s.listening.push(ms(listening));
    let started = Instant::now() - listening;
    json_first_record(broker.json_addr());
    s.json_ack.push(ms(started.elapsed()));
    let stopping = Instant::now();
    let status = broker.terminate().unwrap();
    s.stop.push(ms(stopping.elapsed()));
    assert!(status.success(), "{status}");

    let (broker, listening) = spawn(&dir.join(format!("kafka-{round}")));
    let started = Instant::now() - listening;
    rt.block_on(kafka_first_record(broker.bootstrap()));
    s.kafka_ack.push(ms(started.elapsed()));
    drop(broker);

    let (broker, _) = spawn(&dir.join(format!("idle-{round}")));
    std::thread::sleep(Duration::from_secs(1));
    s.rss_idle.push(peak_rss_mib(broker.pid()));
    drop(broker);

    let started = Instant::now();
    let embedded = EmbeddedBroker::start().unwrap();
    s.embedded.push(ms(started.elapsed()));
    drop(embedded);
}

fn main() {
    let dir = bench_dir();
    let runs: usize = std::env::var("MK_BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(20);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut s = Samples::default();
    for round in 0..runs {
        one_round(dir.path(), round, &rt, &mut s);
    }
    let start = "mk-server (release), empty data dir, 1 broker, Kafka + JSON-TCP on free ports";
    let report = |name: &str, samples: Vec<f64>, unit: &str, what: &str| {
        let (median, max) = summary(samples);
        figure(
            name,
            median,
            unit,
            &format!("{what}; median of {runs} starts (max {max:.1})"),
        );
    };
    report(
        "startup.listening_ms",
        s.listening,
        "ms",
        &format!("{start}: spawn to the startup line"),
    );
    report(
        "startup.first_ack_json_ms",
        s.json_ack,
        "ms",
        &format!(
            "{start}: spawn to the first record acknowledged (JSON-TCP: connect, create_topic, produce acks=1)"
        ),
    );
    report(
        "startup.first_ack_kafka_ms",
        s.kafka_ack,
        "ms",
        &format!(
            "{start}: spawn to the first record acknowledged (rskafka: connect, ApiVersions, Metadata, CreateTopics, Produce acks=all)"
        ),
    );
    report(
        "startup.sigterm_to_exit_ms",
        s.stop,
        "ms",
        &format!("{start}: SIGTERM to exit after one record (graceful shutdown)"),
    );
    report(
        "startup.rss_idle_mib",
        s.rss_idle,
        "MiB",
        &format!("{start}: peak RSS (VmHWM) 1 s after the start, no client"),
    );
    report(
        "startup.embedded_ms",
        s.embedded,
        "ms",
        "EmbeddedBroker::start() in-process (own tokio runtime), temporary data dir, to listening",
    );
}
