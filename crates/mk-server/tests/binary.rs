//! The real `mk-server` binary: it starts and prints where it listens,
//! refuses to start (non-zero, clear message, nothing left behind) when the
//! port is taken, the data directory is locked or metadata is unreadable,
//! shuts down gracefully on SIGTERM, keeps every acknowledged record across
//! a SIGKILL, and its client subcommands work against it.
#![allow(
    clippy::too_many_lines,
    reason = "a test scenario reads top to bottom as one story; split, its steps would scatter"
)]

use mk_adapter_jsontcp::JsonTcpClient;
use mk_adapter_jsontcp::mk_cluster::{AckMode, Bytes, ErrorCode, FetchRequest, TopicPartition};
use mk_server::embedded::BrokerBuilder;
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

mod common;
use common::*;

async fn fetch_all(addr: &str, topic: &str) -> Vec<(i64, Bytes)> {
    let mut c = JsonTcpClient::connect(addr).await.unwrap();
    let tp = TopicPartition::new(topic, 0);
    let mut out = Vec::new();
    let mut offset = 0;
    loop {
        let f = c
            .fetch(&FetchRequest::new(tp.clone(), offset, 1000), None)
            .await
            .unwrap();
        if f.records.is_empty() {
            return out;
        }
        for r in f.records {
            offset = r.offset + 1;
            out.push((r.offset, r.value.unwrap()));
        }
    }
}

#[tokio::test]
async fn every_acknowledged_record_survives_a_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut server = start(&data, &[]);
    let mut c = JsonTcpClient::connect(&server.addr).await.unwrap();
    c.create_topic("crash", 1, 1).await.unwrap();
    let tp = TopicPartition::new("crash", 0);
    let mut acked = Vec::new();
    let mut i = 0u64;
    // Produce until the connection breaks; the SIGKILL lands after 300
    // acknowledgements, while requests keep flowing.
    loop {
        let value = Bytes::from(format!("record-{i}"));
        match c
            .produce_one(&tp, None, Some(value.clone()), AckMode::One)
            .await
        {
            Ok(Some(offset)) => acked.push((offset, value)),
            Ok(None) => panic!("acks=1 always has an offset"),
            Err(_) => break,
        }
        i += 1;
        if acked.len() == 300 {
            server.broker.kill().unwrap();
        }
        assert!(i < 1_000_000, "the connection never broke after the kill");
    }
    assert!(acked.len() >= 300);
    drop(server);
    let server = start(&data, &[]);
    let stored = fetch_all(&server.addr, "crash").await;
    for (offset, value) in &acked {
        assert_eq!(
            stored.get(usize::try_from(*offset).unwrap()),
            Some(&(*offset, value.clone())),
            "acknowledged record at offset {offset} is there"
        );
    }
}

#[tokio::test]
async fn sigterm_shuts_down_gracefully_and_a_restart_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut server = spawn(
        BrokerBuilder::new()
            .brokers([1, 2, 3])
            .min_insync_replicas(2),
        &data,
    );
    let mut c = JsonTcpClient::connect(&server.addr).await.unwrap();
    c.create_topic("durable", 1, 3).await.unwrap();
    let tp = TopicPartition::new("durable", 0);
    for i in 0..50 {
        let o = c
            .produce_one(&tp, None, Some(Bytes::from(format!("v{i}"))), AckMode::All)
            .await
            .unwrap();
        assert_eq!(
            o,
            Some(i),
            "acks=all is acknowledged by the replication driver"
        );
    }
    let exit = server.broker.terminate().unwrap();
    assert!(exit.success(), "graceful shutdown exits 0, got {exit}");
    drop(server);
    let server = spawn(BrokerBuilder::new().brokers([1, 2, 3]), &data);
    let stored = fetch_all(&server.addr, "durable").await;
    assert_eq!(stored.len(), 50);
    assert_eq!(stored[49].1, Bytes::from("v49"));
}

#[test]
fn refuses_to_start_when_the_port_is_taken_without_touching_the_data_dir() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (ok, stdout, stderr) = serve_until_exit(&addr, &data);
    assert!(!ok);
    assert!(stdout.is_empty(), "{stdout}");
    assert!(stderr.contains("cannot listen on"), "{stderr}");
    assert!(!data.exists(), "a refused start leaves no data directory");
}

/// Runs `mk-server` on `data`, JSON-TCP on `listen` (the others on any
/// free port), until it exits by itself: (success, stdout, stderr).
fn serve_until_exit(listen: &str, data: &Path) -> (bool, String, String) {
    run(
        &[
            "--listen",
            listen,
            "--kafka-listen",
            "127.0.0.1:0",
            "--console-listen",
            "off",
            "--data-dir",
            data.to_str().unwrap(),
        ],
        "",
    )
}

#[test]
fn refuses_to_start_when_the_data_dir_is_locked_or_metadata_is_unreadable() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let first = start(&data, &[]);
    let (ok, stdout, stderr) = serve_until_exit("127.0.0.1:0", &data);
    assert!(!ok);
    assert!(stdout.is_empty(), "{stdout}");
    assert!(stderr.contains("in use by another process"), "{stderr}");
    drop(first);
    std::fs::write(data.join("metadata.json"), b"{ not json").unwrap();
    let (ok, stdout, stderr) = serve_until_exit("127.0.0.1:0", &data);
    assert!(!ok);
    assert!(stdout.is_empty(), "{stdout}");
    assert!(
        stderr.contains("STORAGE") || stderr.contains("storage"),
        "{stderr}"
    );
}

#[test]
fn client_subcommands_work_against_a_running_server() {
    let (_dir, server) = start_fresh();
    let s = ["--server", server.addr.as_str()];
    let with = |args: &[&str]| -> Vec<String> {
        args.iter().chain(s.iter()).map(|a| a.to_string()).collect()
    };
    let call = |args: &[&str], stdin: &str| {
        let args = with(args);
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let (ok, out, err) = run(&refs, stdin);
        assert!(ok, "{args:?} failed: {err}");
        out
    };
    call(&["topic", "create", "events", "--partitions", "2"], "");
    let listed = call(&["topic", "list"], "");
    assert!(
        listed
            .lines()
            .any(|l| l.split_whitespace().eq(["events", "2", "1", "0", "0"])),
        "name, partitions, replication factor, offline, under-replicated: {listed}"
    );
    assert!(call(&["topic", "describe", "events"], "").contains("high-watermark"));
    assert_eq!(
        call(&["produce", "events", "--partition", "0"], "hello\nworld\n"),
        "events-0 offset 0\nevents-0 offset 1\n"
    );
    call(
        &["produce", "events", "--keyed", "--partition", "1"],
        "k\tv\n",
    );
    assert_eq!(
        call(&["consume", "events", "--partition", "0"], ""),
        "events-0@0 value=hello\nevents-0@1 value=world\n"
    );
    // Without --partition every partition is read, as kcat does.
    assert_eq!(
        call(&["consume", "events"], ""),
        "events-0@0 value=hello\nevents-0@1 value=world\nevents-1@0 key=k value=v\n"
    );
    let json = call(&["consume", "events", "--partition", "1", "--json"], "");
    let v: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    assert_eq!(
        (v["key"].as_str(), v["value"].as_str()),
        (Some("k"), Some("v"))
    );
    let grouped = call(&["consume", "events", "--group", "g"], "");
    assert_eq!(grouped.lines().count(), 3, "{grouped}");
    let described = call(&["group", "describe", "g"], "");
    assert!(described.contains("events-0: committed 2"), "{described}");
    assert!(described.contains("events-1: committed 1"), "{described}");
    let (ok, _, err) = run(
        &with(&["topic", "describe", "missing"])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
        "",
    );
    assert!(!ok);
    assert!(err.contains("UNKNOWN_TOPIC"), "{err}");
}

#[test]
fn lab_subcommand_narrates_every_lab() {
    for lab in [
        "leader_failure",
        "rebalance",
        "divergent_tail",
        "exactly_once",
    ] {
        let (ok, out, err) = run(&["lab", lab], "");
        assert!(ok, "lab {lab}: {err}");
        assert!(out.starts_with(&format!("lab {lab}")), "{out}");
        assert!(out.contains("\n1. "), "numbered steps: {out}");
    }
    let (ok, _, err) = run(&["lab", "nope"], "");
    assert!(!ok);
    assert!(err.contains("available: leader_failure"), "{err}");
}

#[test]
fn an_operator_takes_a_broker_offline_and_back_outside_lab_mode() {
    let dir = tempfile::tempdir().unwrap();
    let server = spawn(
        BrokerBuilder::new()
            .brokers([1, 2, 3])
            .min_insync_replicas(2),
        &dir.path().join("data"),
    );
    let call = |args: &[&str]| {
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["--server", server.addr.as_str()]);
        let (ok, out, err) = run(&all, "");
        assert!(ok, "{args:?} failed: {err}");
        out
    };
    call(&["topic", "create", "f", "--replication-factor", "3"]);
    let out = call(&["broker", "offline", "1"]);
    assert!(
        out.contains("broker 1 is offline") && out.contains("f-0: leader now broker 2 (epoch 1)"),
        "{out}"
    );
    let d: serde_json::Value =
        serde_json::from_str(call(&["topic", "describe", "f", "--json"]).trim()).unwrap();
    assert_eq!(d["partitions"][0]["leader_id"], 2, "{d}");
    let out = call(&["broker", "online", "1", "--json"]);
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["online"], true);
    let (ok, _, err) = run(&["broker", "offline", "7", "--server", &server.addr], "");
    assert!(!ok && err.contains("INVALID_REQUEST"), "{err}");
}

/// A port that was free a moment ago (the kernel hands out ports in a
/// rotating order, so it is not handed out again at once).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn ports_refuse_connections_until_the_data_directory_is_open() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    // metadata.json as a FIFO: opening the data directory blocks until this
    // test writes the metadata, which makes "a long open" deterministic.
    let fifo = data.join("metadata.json");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let (json_port, kafka_port) = (free_port(), free_port());
    let json = format!("127.0.0.1:{json_port}");
    let kafka = format!("127.0.0.1:{kafka_port}");
    let mut child = Command::new(BIN)
        .args(["--listen", &json, "--kafka-listen", &kafka])
        .args(["--console-listen", "off", "--data-dir"])
        .arg(&data)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let _server = Running { child };
    // Opening the FIFO for writing returns once the server opened it for
    // reading, i.e. while it is opening the data directory, after it has
    // taken its ports.
    let (tx, rx) = mpsc::channel();
    let writer_path = fifo.clone();
    std::thread::spawn(move || {
        let _ = tx.send(std::fs::OpenOptions::new().write(true).open(writer_path));
    });
    let mut writer = rx
        .recv_timeout(PATIENCE)
        .expect("the server reads its metadata")
        .unwrap();
    for addr in [&json, &kafka] {
        let e = std::net::TcpStream::connect(addr)
            .expect_err("nobody may connect while the broker opens");
        assert_eq!(
            e.kind(),
            std::io::ErrorKind::ConnectionRefused,
            "{addr}: {e}"
        );
    }
    writer.write_all(br#"{"version":2,"topics":{}}"#).unwrap();
    drop(writer);
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    assert!(line.contains(&json) && line.contains(&kafka), "{line}");
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let mut c = JsonTcpClient::connect(&json).await.unwrap();
        assert!(c.list_topics().await.unwrap().is_empty());
    });
    std::net::TcpStream::connect(&kafka).expect("the Kafka listener accepts once open");
}

#[tokio::test]
async fn a_creation_that_cannot_fit_the_open_file_limit_is_refused_whole() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    // The issue's repro had 1024 and 2000 partitions; smaller numbers keep
    // the test fast with the same proportions.
    let server = start_wrapped(&["prlimit", "--nofile=100:100"], &data, &[]);
    let mut c = JsonTcpClient::connect(&server.addr).await.unwrap();
    let e = c.create_topic("big", 150, 1).await.unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("INVALID_REQUEST")
            && msg.contains("open files")
            && msg.contains("limit of 100"),
        "{msg}"
    );
    let left: Vec<_> = std::fs::read_dir(data.join("broker-1"))
        .map(|d| d.map(|e| e.unwrap().file_name()).collect())
        .unwrap_or_default();
    assert!(
        left.is_empty(),
        "nothing of the refused topic is on disk: {left:?}"
    );
    // The broker is unharmed: it lists, creates what fits, and writes.
    assert!(c.list_topics().await.unwrap().is_empty());
    c.create_topic("small", 5, 1).await.unwrap();
    let tp = TopicPartition::new("small", 4);
    assert_eq!(produce_value(&mut c, &tp, "v").await, Some(0));
    drop(server);
    // With a higher hard limit the server raises its soft limit to it, and
    // the same creation fits.
    let dir = tempfile::tempdir().unwrap();
    let server = start_wrapped(
        &["prlimit", "--nofile=100:400"],
        &dir.path().join("data"),
        &[],
    );
    let mut c = JsonTcpClient::connect(&server.addr).await.unwrap();
    c.create_topic("big", 150, 1).await.unwrap();
    assert_eq!(c.list_topics().await.unwrap(), vec!["big".to_string()]);
}

/// Produces `value` (no key, acks=1) to `tp`; returns its offset.
async fn produce_value(c: &mut JsonTcpClient, tp: &TopicPartition, value: &str) -> Option<i64> {
    c.produce_one(tp, None, Some(Bytes::from(value.to_string())), AckMode::One)
        .await
        .unwrap()
}

/// Waits for `server` to exit by itself; it must exit with `code` and say
/// `says` on stderr.
fn assert_exits(server: &mut mk_server::embedded::BrokerProcess, code: i32, says: &str) {
    let status = server
        .wait_exit(PATIENCE)
        .unwrap()
        .expect("the broker exits");
    let stderr = server.stderr();
    assert_eq!(status.code(), Some(code), "{stderr}");
    assert!(stderr.contains(says), "{stderr}");
}

/// Produces 4 KiB records to `tp` until the server refuses one; returns
/// the acknowledged ones and the refusal.
async fn produce_until_refused(
    c: &mut JsonTcpClient,
    tp: &TopicPartition,
    acked: &mut Vec<(i64, Bytes)>,
) -> mk_adapter_jsontcp::ClientError {
    for i in 0..100_000 {
        let value = Bytes::from(format!("{:04096}", acked.len() * 100_000 + i));
        match c
            .produce_one(tp, None, Some(value.clone()), AckMode::One)
            .await
        {
            Ok(Some(offset)) => acked.push((offset, value)),
            Ok(None) => panic!("acks=1 has an offset"),
            Err(e) => return e,
        }
    }
    panic!("the disk never filled up");
}

#[tokio::test]
async fn a_full_disk_fails_writes_typed_keeps_reads_then_recovers_or_exits_by_the_rule() {
    let disk = SmallDisk::new("8m");
    let data = disk.inside("data");
    // Room to give back later, twice.
    for filler in ["filler-1", "filler-2"] {
        std::fs::write(disk.outside(filler), vec![7u8; 1_500_000]).unwrap();
    }
    let enter = disk.enter();
    let wrapper: Vec<&str> = enter.iter().map(String::as_str).collect();
    let mut server = start_wrapped(&wrapper, &data, &["--segment-bytes", "262144"]);
    let mut c = JsonTcpClient::connect(&server.addr).await.unwrap();
    c.create_topic("t", 1, 1).await.unwrap();
    let tp = TopicPartition::new("t", 0);
    let mut acked = Vec::new();
    let refused = produce_until_refused(&mut c, &tp, &mut acked).await;
    assert_eq!(refused.code(), Some(ErrorCode::StorageError), "{refused}");
    assert!(acked.len() > 100, "{} records fit", acked.len());
    // Still up: stored data is readable, the failure is visible, and
    // writes keep failing typed while the disk is full.
    assert_eq!(fetch_all(&server.addr, "t").await, acked);
    let stats = c.stats().await.unwrap();
    assert!(stats.cluster.disk_full, "{stats:?}");
    // The command line shows it too, text and JSON.
    let text = ok_at(&server.addr, &["stats"], b"");
    assert!(
        text.contains("health        DEGRADED") && text.contains("disk full     YES"),
        "{text}"
    );
    let s: serde_json::Value =
        serde_json::from_str(ok_at(&server.addr, &["stats", "--json"], b"").trim()).unwrap();
    assert_eq!(s["disk_full"], true, "{s}");
    let again = c
        .produce_one(
            &tp,
            None,
            Some(Bytes::from(vec![b'x'; 65_536])),
            AckMode::One,
        )
        .await
        .unwrap_err();
    assert_eq!(again.code(), Some(ErrorCode::StorageError));
    assert!(c.list_topics().await.is_ok());
    // Space comes back: writes work again without a restart.
    std::fs::remove_file(disk.outside("filler-1")).unwrap();
    let v = Bytes::from("after space came back");
    let o = c
        .produce_one(&tp, None, Some(v.clone()), AckMode::One)
        .await
        .unwrap();
    assert_eq!(o, Some(acked.len() as i64), "the next offset, no gap");
    acked.push((o.unwrap(), v));
    assert!(!c.stats().await.unwrap().cluster.disk_full);
    server.broker.kill().unwrap();
    drop(server);
    // With a short limit, a disk that stays full makes the broker exit
    // with code 4.
    let mut server = BrokerBuilder::new()
        .wrapper(&wrapper)
        .data_dir(&data)
        .args(["--disk-full-exit-after-ms", "1000"])
        .capture_stderr()
        .spawn(BIN)
        .unwrap();
    let mut c = JsonTcpClient::connect(server.json_addr()).await.unwrap();
    let refused = produce_until_refused(&mut c, &tp, &mut acked).await;
    assert_eq!(refused.code(), Some(ErrorCode::StorageError), "{refused}");
    assert_exits(&mut server, 4, "the disk has been full");
    drop(server);
    // A restart with space loses no acknowledged record.
    std::fs::remove_file(disk.outside("filler-2")).unwrap();
    let server = start_wrapped(&wrapper, &data, &[]);
    assert_eq!(fetch_all(&server.addr, "t").await, acked);
}

#[tokio::test]
async fn a_failed_cluster_makes_the_broker_exit_with_code_3() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut server = BrokerBuilder::new()
        .data_dir(&data)
        .capture_stderr()
        .spawn(BIN)
        .unwrap();
    let addr = server.json_addr();
    let mut c = JsonTcpClient::connect(&addr).await.unwrap();
    c.create_topic("t", 1, 1).await.unwrap();
    let tp = TopicPartition::new("t", 0);
    assert_eq!(produce_value(&mut c, &tp, "acknowledged").await, Some(0));
    // The disk turns against the broker: the partition directory becomes
    // a file, so the next flush cycle's checkpoint write fails (not with a
    // full disk) and the cluster is FAILED.
    let part = data.join("broker-1").join("t-0");
    let moved = dir.path().join("t-0-moved");
    std::fs::rename(&part, &moved).unwrap();
    std::fs::write(&part, b"not a directory").unwrap();
    let _ = c.flush_cycle().await;
    assert_exits(&mut server, 3, "the broker failed");
    // Put the files back and restart: the acknowledged record is there.
    std::fs::remove_file(&part).unwrap();
    std::fs::rename(&moved, &part).unwrap();
    server.restart().expect("a restart recovers");
    assert_eq!(
        fetch_all(&addr.to_string(), "t").await,
        vec![(0, Bytes::from("acknowledged"))]
    );
}

#[tokio::test]
async fn every_fetch_answer_is_bounded_whatever_the_client_asks() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(&dir.path().join("data"), &["--fetch-max-bytes", "65536"]);
    let mut c = JsonTcpClient::connect(&server.addr).await.unwrap();
    c.create_topic("big", 1, 1).await.unwrap();
    let tp = TopicPartition::new("big", 0);
    let value = Bytes::from(vec![b'x'; 10_000]);
    for _ in 0..200 {
        c.produce_one(&tp, None, Some(value.clone()), AckMode::One)
            .await
            .unwrap();
    }
    // No max_bytes and a huge max_records: the answer still carries at
    // most 64 KiB of records (six of 10 000 bytes), not 2 MB.
    let line =
        br#"{"operation":"fetch","topic":"big","partition":0,"offset":0,"max_records":1000000000}"#;
    let answer = c.call_raw(line).await.unwrap();
    assert!(answer.len() < 100_000, "{} bytes", answer.len());
    let f = c
        .fetch(&FetchRequest::new(tp.clone(), 0, 1_000_000_000), None)
        .await
        .unwrap();
    assert_eq!(f.records.len(), 6);
    assert_eq!(f.next_offset, 6);
    assert_eq!(fetch_all(&server.addr, "big").await.len(), 200);
}

/// A line a running client subcommand wrote: which process, which stream.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Line {
    Out(usize, String),
    Err(usize, String),
}

/// A long-running client subcommand, killed when dropped.
struct Running {
    child: Child,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `args` as process number `id`; its stdout and stderr lines go to
/// `tx`.
fn spawn_lines(args: &[&str], id: usize, tx: &mpsc::Sender<Line>) -> Running {
    let mut child = spawn_piped(args, &[], Stdio::null());
    let out = child.stdout.take().unwrap();
    let err = child.stderr.take().unwrap();
    let (to, te) = (tx.clone(), tx.clone());
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            let _ = to.send(Line::Out(id, line));
        }
    });
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            let _ = te.send(Line::Err(id, line));
        }
    });
    Running { child }
}

/// Receives lines until `done` says so, keeping every line; fails after
/// `PATIENCE` without progress.
fn collect_until(
    rx: &mpsc::Receiver<Line>,
    seen: &mut Vec<Line>,
    mut done: impl FnMut(&[Line]) -> bool,
) {
    while !done(seen) {
        match rx.recv_timeout(PATIENCE) {
            Ok(line) => seen.push(line),
            Err(e) => panic!("no more output ({e}); seen so far: {seen:#?}"),
        }
    }
}

#[test]
fn two_group_consumers_share_the_partitions_and_keep_running_after_rebalances() {
    let (_dir, server) = start_fresh();
    let addr = server.addr.as_str();
    let (ok, _, err) = run(
        &[
            "topic",
            "create",
            "shared",
            "--partitions",
            "4",
            "--server",
            addr,
        ],
        "",
    );
    assert!(ok, "{err}");
    let consume = [
        "consume", "shared", "--group", "g", "--follow", "--server", addr,
    ];
    let (tx, rx) = mpsc::channel();
    let mut seen = Vec::new();
    let first = spawn_lines(&consume, 0, &tx);
    collect_until(&rx, &mut seen, |s| {
        s.iter()
            .any(|l| matches!(l, Line::Err(0, t) if t.starts_with("joined group g")))
    });
    // The second consumer's join starts a new generation; the first one is
    // fenced at its next commit and rejoins by itself (it used to exit).
    let second = spawn_lines(&consume, 1, &tx);
    collect_until(&rx, &mut seen, |s| {
        let joined = s
            .iter()
            .any(|l| matches!(l, Line::Err(1, t) if t.starts_with("joined group g")));
        let rejoined = s
            .iter()
            .any(|l| matches!(l, Line::Err(0, t) if t.starts_with("rejoined group g")));
        joined && rejoined
    });
    let mut expected = BTreeSet::new();
    for p in 0..4 {
        let values: String = (0..10).map(|i| format!("p{p}-{i}\n")).collect();
        expected.extend((0..10).map(|i| format!("p{p}-{i}")));
        let partition = p.to_string();
        let (ok, _, err) = run(
            &[
                "produce",
                "shared",
                "--partition",
                &partition,
                "--server",
                addr,
            ],
            &values,
        );
        assert!(ok, "{err}");
    }
    let printed = |s: &[Line]| -> Vec<(usize, String)> {
        s.iter()
            .filter_map(|l| match l {
                Line::Out(id, t) => t.split_once(" value=").map(|(_, v)| (*id, v.to_string())),
                Line::Err(..) => None,
            })
            .collect()
    };
    collect_until(&rx, &mut seen, |s| printed(s).len() >= expected.len());
    let records = printed(&seen);
    let values: Vec<&String> = records.iter().map(|(_, v)| v).collect();
    let unique: BTreeSet<String> = values.iter().map(|v| v.to_string()).collect();
    assert_eq!(unique, expected, "every record is printed");
    assert_eq!(
        values.len(),
        expected.len(),
        "no record is printed twice: {records:?}"
    );
    for id in [0, 1] {
        assert!(
            records.iter().any(|(who, _)| *who == id),
            "consumer {id} printed nothing: the partitions are not shared: {seen:#?}"
        );
    }
    let mut consumers = [first, second];
    for (id, c) in consumers.iter_mut().enumerate() {
        assert!(
            c.child.try_wait().unwrap().is_none(),
            "consumer {id} exited: {seen:#?}"
        );
    }
    assert!(
        !seen
            .iter()
            .any(|l| matches!(l, Line::Err(_, t) if t.contains("run the command again"))),
        "{seen:#?}"
    );
}

// ----- issue 14: the command line as Kafka users expect it ------------------
//
// Each test below failed on the code before issue 14; the setup talks raw
// JSON lines (`Wire`) so it does not depend on the client library's API.

#[test]
fn a_group_consumer_whose_stdout_closes_stops_and_commits_only_what_was_written() {
    let (_dir, server) = start_fresh();
    let addr = server.addr.as_str();
    let mut w = Wire::connect(addr);
    w.ok(serde_json::json!({"operation": "create_topic", "topic": "big", "partitions": 1, "replication_factor": 1}));
    let values: Vec<String> = (0..20_001).map(|i| format!("record-{i}")).collect();
    w.produce("big", 0, &values);

    // `consume big --group pipers | head -3`: read three lines, then close.
    let mut child = Command::new(BIN)
        .args(["consume", "big", "--group", "pipers", "--server", addr])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    for i in 0..3 {
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        assert_eq!(line, format!("big-0@{i} value=record-{i}\n"));
    }
    drop(out);
    let status = exits_within(&mut child, "the consumer after its reader left");
    assert!(
        status.success(),
        "a reader that went away ends the consumer quietly, as `| head` expects"
    );
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(
        !err.contains("cannot write") && !err.contains("panicked"),
        "{err}"
    );
    let committed = w.committed("pipers");
    assert_eq!(committed.len(), 1);
    let offset = committed[0].2;
    // What reached the pipe is at least the three lines read; far less than
    // everything fetched (the pipe holds at most 64 KiB of 20-byte lines).
    assert!(
        (3..5_000).contains(&offset),
        "committed {offset} of 20001 records after printing 3"
    );

    // `--follow | head -1`: the consumer notices at its next write.
    let mut child = Command::new(BIN)
        .args([
            "consume", "big", "--group", "tail", "--from", "latest", "--follow", "--server", addr,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    // Produce until the follower prints, then close its stdout.
    let mut line = String::new();
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut first = String::new();
        out.read_line(&mut first).unwrap();
        tx.send(first).unwrap();
        // Dropping `out` here closes the pipe, as head -1 does.
    });
    let deadline = std::time::Instant::now() + PATIENCE;
    while line.is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the follower printed nothing"
        );
        w.produce("big", 0, &["more".to_string()]);
        if let Ok(first) = rx.recv_timeout(Duration::from_millis(200)) {
            line = first;
        }
    }
    reader.join().unwrap();
    assert!(line.ends_with("value=more\n"), "{line}");
    let before = w.committed("tail")[0].2;
    let deadline = std::time::Instant::now() + PATIENCE;
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the follower kept running after its reader left"
        );
        w.produce("big", 0, &["after".to_string()]);
        std::thread::sleep(Duration::from_millis(50));
    }
    let after = w.committed("tail")[0].2;
    assert!(
        after <= before + 1,
        "committed {after}, but only one record after {before} was ever printed"
    );
}

#[test]
fn a_committed_offset_below_the_log_start_is_reset_by_policy_and_by_reset_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(&dir.path().join("data"), &["--lab"]);
    let addr = server.addr.as_str();
    let mut w = Wire::connect(addr);
    ok_at(
        addr,
        &["topic", "create", "r", "--config", "segment.bytes=1024"],
        b"",
    );
    let values: Vec<String> = (0..100).map(|i| format!("value-{i:040}")).collect();
    for v in &values {
        w.produce("r", 0, std::slice::from_ref(v));
    }
    for group in ["g", "h"] {
        let out = ok_at(
            addr,
            &["consume", "r", "--group", group, "--max-records", "5"],
            b"",
        );
        assert_eq!(out.lines().count(), 5, "{out}");
        assert_eq!(w.committed(group), vec![("r".to_string(), 0, 5)]);
    }
    // Retention deletes every closed segment: the log start passes 5.
    w.ok(serde_json::json!({"operation": "roll", "topic": "r", "partition": 0}));
    w.ok(serde_json::json!({"operation": "apply_retention", "topic": "r", "retention_bytes": 1}));
    let start = w.ok(serde_json::json!({"operation": "list_offsets", "topic": "r", "partition": 0, "at": "earliest"}))["offset"]
        .as_i64()
        .unwrap();
    assert_eq!(start, 100, "every record was in a closed segment");
    w.produce("r", 0, &["fresh".to_string()]);

    // The consumer resets by its policy (earliest) instead of failing.
    let (code, out, err) = run_full(
        &["consume", "r", "--group", "g", "--server", addr],
        b"",
        &[],
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(String::from_utf8(out).unwrap(), "r-0@100 value=fresh\n");
    assert!(err.contains("reset to 100"), "{err}");
    assert_eq!(w.committed("g"), vec![("r".to_string(), 0, 101)]);

    // reset-offsets works on a group below the log start (a dry run first).
    let plan = ok_at(
        addr,
        &["group", "reset-offsets", "h", "--to-earliest", "--dry-run"],
        b"",
    );
    assert!(plan.contains("r-0: 5 -> 100"), "{plan}");
    assert_eq!(
        w.committed("h"),
        vec![("r".to_string(), 0, 5)],
        "a dry run changes nothing"
    );
    let out = ok_at(
        addr,
        &["group", "reset-offsets", "h", "--to-earliest", "--execute"],
        b"",
    );
    assert!(out.contains("r-0: 5 -> 100"), "{out}");
    assert_eq!(w.committed("h"), vec![("r".to_string(), 0, 100)]);
    // An offset is clamped into the log, as kafka-consumer-groups does.
    let out = ok_at(
        addr,
        &[
            "group",
            "reset-offsets",
            "g",
            "--to-offset",
            "3",
            "--execute",
        ],
        b"",
    );
    assert!(out.contains("r-0: 101 -> 100"), "{out}");
    assert_eq!(w.committed("g"), vec![("r".to_string(), 0, 100)]);
}

#[test]
fn keys_pick_the_partition_kafkas_default_partitioner_picks_on_every_path() {
    use mk_adapter_jsontcp::mk_cluster::partitioner::partition_for_key;
    let (_dir, server) = start_with_topic(&["keys", "--partitions", "4"]);
    let addr = server.addr.as_str();
    let keys: Vec<String> = (0..20).map(|i| format!("user-{i}")).collect();
    let input: String = keys.iter().map(|k| format!("{k}\tv\n")).collect();
    let out = ok_at(addr, &["produce", "keys", "--keyed"], input.as_bytes());
    let partitions: Vec<u32> = out
        .lines()
        .map(|l| {
            l.split_whitespace()
                .next()
                .unwrap()
                .trim_start_matches("keys-")
                .parse()
                .unwrap()
        })
        .collect();
    let expected: Vec<u32> = keys
        .iter()
        .map(|k| partition_for_key(k.as_bytes(), 4))
        .collect();
    assert_eq!(partitions, expected, "{out}");
    assert!(
        expected.iter().any(|p| *p != 0),
        "the keys spread over partitions"
    );
    // JSON produce and txn_produce without a partition agree with them.
    use base64::Engine;
    let mut w = Wire::connect(addr);
    for k in &keys[..5] {
        let key = base64::engine::general_purpose::STANDARD.encode(k);
        let p = partition_for_key(k.as_bytes(), 4);
        let v = w.ok(serde_json::json!({"operation": "produce", "topic": "keys", "key_b64": key}));
        assert_eq!(v["partition"], p, "produce {k}");
        let epoch = w.ok(serde_json::json!({"operation": "begin_txn", "transactional_id": "tx"}))["producer_epoch"].clone();
        let v = w.ok(
            serde_json::json!({"operation": "txn_produce", "transactional_id": "tx",
            "producer_epoch": epoch, "topic": "keys", "key_b64": key}),
        );
        assert_eq!(v["partition"], p, "txn_produce {k}");
        w.ok(serde_json::json!({"operation": "commit_txn", "transactional_id": "tx", "producer_epoch": epoch}));
    }
}

#[test]
fn consume_without_a_group_reads_every_partition_of_several_topics() {
    let (_dir, server) = start_with_topic(&["a", "--partitions", "3"]);
    let addr = server.addr.as_str();
    let mut w = Wire::connect(addr);
    ok_at(addr, &["topic", "create", "b"], b"");
    for p in 0..3 {
        w.produce("a", p, &[format!("a{p}")]);
    }
    w.produce("b", 0, &["b0".to_string()]);
    let out = ok_at(addr, &["consume", "a", "b"], b"");
    let mut lines: Vec<&str> = out.lines().collect();
    lines.sort();
    assert_eq!(
        lines,
        [
            "a-0@0 value=a0",
            "a-1@0 value=a1",
            "a-2@0 value=a2",
            "b-0@0 value=b0"
        ]
    );
    let one = ok_at(addr, &["consume", "a", "--partition", "2"], b"");
    assert_eq!(one, "a-2@0 value=a2\n");
}

#[test]
fn produce_and_consume_are_binary_safe_with_formats_encodings_tombstones_and_numbered_bad_lines() {
    let (_dir, server) = start_with_topic(&["bin"]);
    let addr = server.addr.as_str();
    // Base64 keys and values, a tombstone by marker, an empty value.
    let input = b"azE=\t/wD+\nazI=\tNULL\nazM=\t\n";
    ok_at(
        addr,
        &[
            "produce",
            "bin",
            "--keyed",
            "--encoding",
            "base64",
            "--null-value",
            "NULL",
        ],
        input,
    );
    // Invalid UTF-8 as text goes through byte for byte.
    ok_at(addr, &["produce", "bin"], b"\xff\xferaw\n");
    let out = ok_at(
        addr,
        &[
            "consume",
            "bin",
            "--format",
            "%o:%k:%s:%S\\n",
            "--encoding",
            "hex",
            "--null-value",
            "NULL",
        ],
        b"",
    );
    assert_eq!(
        out,
        "0:6b31:ff00fe:3\n1:6b32:NULL:-1\n2:6b33::0\n3:NULL:fffe726177:5\n"
    );
    let (code, raw, err) = run_full(&["consume", "bin", "--server", addr], b"", &[]);
    assert_eq!(code, Some(0), "{err}");
    let raw_text = String::from_utf8_lossy(&raw);
    assert!(
        raw_text.contains("bin-0@1 key=k2 tombstone\n"),
        "a tombstone is not the string null: {raw_text}"
    );
    assert!(
        raw.windows(6).any(|w| w == b"\xff\xferaw\n"),
        "raw bytes, not replacement characters: {raw:?}"
    );
    // A bad line stops the run with its number, after the good ones before it.
    let (code, _, err) = fails_at(
        addr,
        &["produce", "bin", "--keyed"],
        b"a\tb\nno tab here\nc\td\n",
    );
    assert_eq!(code, Some(1));
    assert!(
        err.contains("line 2:") && err.contains("produced 1 record(s) before"),
        "{err}"
    );
    let (_, _, err) = fails_at(addr, &["produce", "bin", "--encoding", "hex"], b"00\nzz\n");
    assert!(err.contains("line 2: the value is not valid hex"), "{err}");
    // --skip-bad-lines reports it and goes on.
    let mut all = vec![
        "produce",
        "bin",
        "--keyed",
        "--skip-bad-lines",
        "--server",
        addr,
    ];
    let (code, out, err) = run_full(&all, b"e\tf\nbroken\ng\th\n", &[]);
    all.clear();
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(String::from_utf8(out).unwrap().lines().count(), 2);
    assert!(
        err.contains("line 2:") && err.contains("(skipped)"),
        "{err}"
    );
    let keys = ok_at(addr, &["consume", "bin", "--format", "%k "], b"");
    assert_eq!(
        keys, "k1 k2 k3  a  e g ",
        "the record before the stop went out, the bad lines did not"
    );
}

#[test]
fn topics_are_deleted_grown_and_reconfigured_after_creation() {
    let (_dir, server) = start_fresh();
    let addr = server.addr.as_str();
    ok_at(
        addr,
        &["topic", "create", "events", "--config", "retention.ms=-1"],
        b"",
    );
    let d: serde_json::Value =
        serde_json::from_str(ok_at(addr, &["topic", "describe", "events", "--json"], b"").trim())
            .unwrap();
    assert_eq!(
        d["config"]["retention.ms"], "-1",
        "-1 is Kafka's forever: {d}"
    );
    assert_eq!(
        d["config"]["segment.bytes"], "67108864",
        "the value in force, the broker default (64 MiB): {d}"
    );
    let text = ok_at(addr, &["topic", "describe", "events"], b"");
    assert!(text.contains("segment.bytes=67108864"), "{text}");
    ok_at(
        addr,
        &[
            "topic",
            "alter",
            "events",
            "--partitions",
            "3",
            "--config",
            "retention.ms=86400000",
            "--config",
            "segment.bytes=4096",
        ],
        b"",
    );
    let d: serde_json::Value =
        serde_json::from_str(ok_at(addr, &["topic", "describe", "events", "--json"], b"").trim())
            .unwrap();
    assert_eq!(d["partitions"].as_array().unwrap().len(), 3);
    assert_eq!(
        (
            d["config"]["retention.ms"].as_str(),
            d["config"]["segment.bytes"].as_str()
        ),
        (Some("86400000"), Some("4096"))
    );
    ok_at(
        addr,
        &[
            "topic",
            "alter",
            "events",
            "--delete-config",
            "segment.bytes",
        ],
        b"",
    );
    assert!(ok_at(addr, &["topic", "describe", "events"], b"").contains("segment.bytes=67108864"));
    let (_, _, err) = fails_at(
        addr,
        &["topic", "create", "tiny", "--config", "segment.bytes=10"],
        b"",
    );
    assert!(
        err.contains("segment.bytes must be >= 1024, got 10"),
        "{err}"
    );
    let (_, _, err) = fails_at(
        addr,
        &["topic", "alter", "events", "--config", "segment.bytes=10"],
        b"",
    );
    assert!(err.contains("INVALID_REQUEST"), "{err}");
    ok_at(addr, &["topic", "delete", "events"], b"");
    assert_eq!(ok_at(addr, &["topic", "list"], b""), "(no topics)\n");
}

#[test]
fn consume_from_a_time_and_groups_listed_reset_to_a_time_and_deleted() {
    let (_dir, server) = start_with_topic(&["t"]);
    let addr = server.addr.as_str();
    let mut w = Wire::connect(addr);
    let records: Vec<_> = [1_000, 2_000, 3_000]
        .iter()
        .map(|ts| serde_json::json!({"value_b64": "eA==", "timestamp_ms": ts}))
        .collect();
    w.ok(serde_json::json!({"operation": "produce", "topic": "t", "partition": 0, "records": records}));
    let out = ok_at(
        addr,
        &[
            "consume",
            "t",
            "--from-time",
            "2000",
            "--format",
            "%o@%T\\n",
        ],
        b"",
    );
    assert_eq!(out, "1@2000\n2@3000\n");
    let out = ok_at(
        addr,
        &[
            "consume",
            "t",
            "--from-time",
            "1970-01-01T00:00:02.500Z",
            "--format",
            "%o ",
        ],
        b"",
    );
    assert_eq!(out, "2 ");
    ok_at(addr, &["consume", "t", "--group", "g"], b"");
    let listed = ok_at(addr, &["group", "list"], b"");
    assert_eq!(listed, "g  Empty  consumer  classic\n");
    ok_at(
        addr,
        &[
            "group",
            "reset-offsets",
            "g",
            "--to-datetime",
            "1970-01-01T00:00:02Z",
            "--execute",
        ],
        b"",
    );
    assert_eq!(w.committed("g"), vec![("t".to_string(), 0, 1)]);
    ok_at(
        addr,
        &[
            "group",
            "reset-offsets",
            "g",
            "--to-latest",
            "--topic",
            "t",
            "--execute",
        ],
        b"",
    );
    assert_eq!(w.committed("g"), vec![("t".to_string(), 0, 3)]);
    ok_at(
        addr,
        &["group", "reset-offsets", "g", "--to-earliest", "--execute"],
        b"",
    );
    assert_eq!(w.committed("g"), vec![("t".to_string(), 0, 0)]);
    let (code, _, err) = fails_at(addr, &["group", "reset-offsets", "g"], b"");
    assert_eq!(code, Some(2), "no --to-* is a usage error: {err}");
    ok_at(addr, &["group", "delete", "g"], b"");
    assert_eq!(ok_at(addr, &["group", "list"], b""), "(no groups)\n");
    let (_, _, err) = fails_at(addr, &["group", "delete", "g"], b"");
    assert!(err.contains("GROUP_ID_NOT_FOUND"), "{err}");
}

#[test]
fn the_smaller_items_errors_exit_codes_and_limits() {
    let (_dir, server) = start_with_topic(&["t"]);
    let addr = server.addr.as_str();
    let mut w = Wire::connect(addr);
    w.produce("t", 0, &["a".to_string(), "b".to_string()]);
    // --max-records 0 prints nothing (with and without a group).
    assert_eq!(
        ok_at(addr, &["consume", "t", "--max-records", "0"], b""),
        ""
    );
    assert_eq!(
        ok_at(
            addr,
            &["consume", "t", "--group", "z", "--max-records", "0"],
            b""
        ),
        ""
    );
    assert_eq!(
        ok_at(addr, &["consume", "t", "--max-records", "1"], b""),
        "t-0@0 value=a\n"
    );
    // --json errors are one JSON object on stderr.
    let (code, _, err) = fails_at(addr, &["topic", "describe", "nope", "--json"], b"");
    assert_eq!(code, Some(1));
    let e: serde_json::Value = serde_json::from_str(err.trim()).unwrap();
    assert_eq!(
        (e["ok"].as_bool(), e["code"].as_str()),
        (Some(false), Some("UNKNOWN_TOPIC")),
        "{err}"
    );
    // Messages do not repeat their code.
    let (_, _, err) = fails_at(addr, &["topic", "describe", "nope"], b"");
    assert_eq!(
        err,
        "mk-server: UNKNOWN_TOPIC: topic \"nope\" does not exist\n"
    );
    // A consumer group on a missing topic is UNKNOWN_TOPIC.
    let (_, _, err) = fails_at(addr, &["consume", "nope", "--group", "g"], b"");
    assert!(err.contains("UNKNOWN_TOPIC"), "{err}");
    // Usage errors found after parsing exit 2, with a code.
    let (code, _, err) = fails_at(addr, &["produce", "t", "--acks", "2"], b"x\n");
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("INVALID_REQUEST: --acks must be 0, 1, all or -1, got \"2\""),
        "{err}"
    );
    for bad in [
        &["consume", "t", "--from", "middle"][..],
        &["consume", "t", "--isolation", "dirty"],
        &["consume", "t", "--format", "%x"],
        &["consume", "t", "--from-time", "soon"],
    ] {
        let (code, _, err) = fails_at(addr, bad, b"");
        assert_eq!(code, Some(2), "{bad:?}: {err}");
    }
    // MK_SERVER says where the server is.
    let (code, out, err) = run_full(&["topic", "list", "--json"], b"", &[("MK_SERVER", addr)]);
    assert_eq!(code, Some(0), "{err}");
    let listed: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(listed["topics"][0]["topic"], "t", "{listed}");
    // stats and completions.
    let s: serde_json::Value =
        serde_json::from_str(ok_at(addr, &["stats", "--json"], b"").trim()).unwrap();
    assert_eq!(
        (s["topics"].as_u64(), s["records"].as_u64()),
        (Some(1), Some(2)),
        "{s}"
    );
    let (code, script, _) = run_full(&["completions", "bash"], b"", &[]);
    assert_eq!(code, Some(0));
    let script = String::from_utf8(script).unwrap();
    assert!(
        script.contains("mk-server") && script.contains("reset-offsets"),
        "{script}"
    );
}

#[test]
fn an_acks_all_produce_in_lab_mode_times_out_instead_of_hanging() {
    let dir = tempfile::tempdir().unwrap();
    let server = spawn(
        BrokerBuilder::new()
            .arg("--lab")
            .brokers([1, 2, 3])
            .min_insync_replicas(2),
        &dir.path().join("data"),
    );
    let addr = server.addr.as_str();
    ok_at(
        addr,
        &["topic", "create", "t", "--replication-factor", "3"],
        b"",
    );
    // Nothing replicates in lab mode until replicate_once: acks=all waits.
    let started = std::time::Instant::now();
    let (code, _, err) = fails_at(
        addr,
        &["produce", "t", "--acks", "all", "--timeout-ms", "300"],
        b"x\n",
    );
    assert_eq!(code, Some(1));
    assert!(
        err.contains("REQUEST_TIMED_OUT") && err.contains("300 ms"),
        "{err}"
    );
    assert!(started.elapsed() < PATIENCE);
}

#[test]
fn bulk_produce_pipelines_batches() {
    let (_dir, server) = start_with_topic(&["bulk"]);
    let addr = server.addr.as_str();
    let input: String = (0..10_000).map(|i| format!("line-{i}\n")).collect();
    let mut all = vec!["produce", "bulk", "--progress", "--server", addr];
    let (code, out, err) = run_full(&all, input.as_bytes(), &[]);
    all.clear();
    assert_eq!(code, Some(0), "{err}");
    let out = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 10_000);
    assert_eq!(
        (lines[0], lines[9_999]),
        ("bulk-0 offset 0", "bulk-0 offset 9999")
    );
    assert!(err.ends_with("produced 10000 record(s)\n"), "{err}");
    // Far fewer requests than records: the lines went in batches.
    let s: serde_json::Value =
        serde_json::from_str(ok_at(addr, &["stats", "--json"], b"").trim()).unwrap();
    let requests = s["requests"].as_u64().unwrap();
    assert!(requests < 1_000, "{requests} requests for 10000 records");
}

#[test]
fn a_prometheus_scrape_parses_and_counts_what_was_produced() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = BrokerBuilder::new()
        .data_dir(&data)
        .args(["--metrics-listen", "127.0.0.1:0"])
        .spawn(BIN)
        .unwrap();
    let listening = server.listening();
    let json_addr = listening.json.to_string();
    let kafka_addr = listening.kafka[0].clone();
    let metrics_addr = listening.metrics.expect("metrics on").to_string();
    let mut w = Wire::connect(&json_addr);
    w.ok(serde_json::json!({"operation": "create_topic", "topic": "m", "partitions": 2, "replication_factor": 1}));
    for i in 0..7 {
        w.ok(serde_json::json!({"operation": "produce", "topic": "m", "partition": i % 2, "value_b64": "eA=="}));
    }
    w.ok(serde_json::json!({"operation": "commit_offsets", "group_id": "g", "member_id": "", "generation": -1, "offsets": [{"topic": "m", "partition": 0, "offset": 1}]}))
        .get("ok");
    // One Kafka request: ApiVersions v0 (key 18), correlation id 7.
    let mut kafka = std::net::TcpStream::connect(&kafka_addr).unwrap();
    assert_eq!(api_versions_correlation(&mut kafka), 7);
    let scrape = http_get(&metrics_addr, "/metrics");
    assert!(scrape.starts_with("HTTP/1.1 200 OK"), "{scrape}");
    let body = scrape.split("\r\n\r\n").nth(1).unwrap();
    let lines = body.lines().map(|l| Ok(l.to_string()));
    let parsed = prometheus_parse::Scrape::parse(lines).unwrap();
    let value = |name: &str, labels: &[(&str, &str)]| -> f64 {
        let sample = parsed
            .samples
            .iter()
            .find(|s| s.metric == name && labels.iter().all(|(k, v)| s.labels.get(k) == Some(v)))
            .unwrap_or_else(|| panic!("no {name} {labels:?} in\n{body}"));
        match sample.value {
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => v,
            ref other => panic!("{name}: {other:?}"),
        }
    };
    type Labels<'a> = &'a [(&'a str, &'a str)];
    let m0: Labels = &[("topic", "m"), ("partition", "0")];
    let exact: [(&str, Labels, f64); 7] = [
        (
            "mk_requests_total",
            &[("protocol", "json"), ("api", "produce")],
            7.0,
        ),
        (
            "mk_requests_total",
            &[("protocol", "kafka"), ("api", "ApiVersions")],
            1.0,
        ),
        ("mk_partition_log_end_offset", m0, 4.0),
        (
            "mk_partition_log_end_offset",
            &[("topic", "m"), ("partition", "1")],
            3.0,
        ),
        ("mk_partition_high_watermark", m0, 4.0),
        ("mk_partition_isr_size", m0, 1.0),
        (
            "kafka_consumergroup_lag",
            &[("consumergroup", "g"), ("topic", "m"), ("partition", "0")],
            3.0,
        ),
    ];
    for (name, labels, expected) in exact {
        assert_eq!(value(name, labels), expected, "{name} {labels:?}");
    }
    assert!(value("mk_partition_size_bytes", m0) > 0.0);
    assert!(value("mk_received_bytes_total", &[("protocol", "kafka")]) > 0.0);
    assert!(
        body.contains("# TYPE mk_request_duration_seconds histogram\n"),
        "{body}"
    );
    let produce = [("protocol", "json"), ("api", "produce")];
    assert_eq!(value("mk_request_duration_seconds_count", &produce), 7.0);
    assert!(http_get(&metrics_addr, "/other").starts_with("HTTP/1.1 404"));
    drop(server);
}
