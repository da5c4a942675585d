//! The real `mk-server` binary: it starts and prints where it listens,
//! refuses to start (non-zero, clear message, nothing left behind) when the
//! port is taken, the data directory is locked or metadata is unreadable,
//! shuts down gracefully on SIGTERM, keeps every acknowledged record across
//! a SIGKILL, and its client subcommands work against it.

use mk_adapter_jsontcp::JsonTcpClient;
use mk_adapter_jsontcp::mk_cluster::{AckMode, Bytes, FetchRequest, TopicPartition};
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_mk-server");
const PATIENCE: Duration = Duration::from_secs(30);

/// A running server process, killed when dropped.
struct ServerProcess {
    child: Child,
    addr: String,
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(data_dir: &Path, extra: &[&str]) -> ServerProcess {
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
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx
        .recv_timeout(PATIENCE)
        .expect("the server printed its address");
    assert!(line.contains(&data_dir.display().to_string()), "{line}");
    // "... listening on <kafka> (Kafka) and <json> (JSON-TCP), data in ..."
    let addr = line
        .split(" (JSON-TCP)")
        .next()
        .and_then(|head| head.split_whitespace().last())
        .filter(|_| line.contains(" (Kafka) and "))
        .unwrap_or_else(|| panic!("no JSON-TCP address in {line:?}"))
        .to_string();
    ServerProcess { child, addr }
}

/// Runs the binary to completion; returns (success, stdout, stderr).
fn run(args: &[&str], stdin: &str) -> (bool, String, String) {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

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
            server.child.kill().unwrap();
        }
        assert!(i < 1_000_000, "the connection never broke after the kill");
    }
    assert!(acked.len() >= 300);
    drop(server);
    let server = start(&data, &[]);
    let stored = fetch_all(&server.addr, "crash").await;
    for (offset, value) in &acked {
        assert_eq!(
            stored.get(*offset as usize),
            Some(&(*offset, value.clone())),
            "acknowledged record at offset {offset} is there"
        );
    }
}

#[tokio::test]
async fn sigterm_shuts_down_gracefully_and_a_restart_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut server = start(&data, &["--brokers", "1,2,3", "--min-insync-replicas", "2"]);
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
    let status = Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = server.child.wait().unwrap();
    assert!(exit.success(), "graceful shutdown exits 0, got {exit}");
    drop(server);
    let server = start(&data, &["--brokers", "1,2,3"]);
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
    let (ok, stdout, stderr) = run(
        &[
            "--listen",
            &addr,
            "--kafka-listen",
            "127.0.0.1:0",
            "--data-dir",
            data.to_str().unwrap(),
        ],
        "",
    );
    assert!(!ok);
    assert!(stdout.is_empty(), "{stdout}");
    assert!(stderr.contains("cannot listen on"), "{stderr}");
    assert!(!data.exists(), "a refused start leaves no data directory");
}

/// Runs `mk-server` on `data` (any free port) until it exits by itself:
/// (success, stdout, stderr).
fn serve_until_exit(data: &Path) -> (bool, String, String) {
    run(
        &[
            "--listen",
            "127.0.0.1:0",
            "--kafka-listen",
            "127.0.0.1:0",
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
    let (ok, stdout, stderr) = serve_until_exit(&data);
    assert!(!ok);
    assert!(stdout.is_empty(), "{stdout}");
    assert!(stderr.contains("in use by another process"), "{stderr}");
    drop(first);
    std::fs::write(data.join("metadata.json"), b"{ not json").unwrap();
    let (ok, stdout, stderr) = serve_until_exit(&data);
    assert!(!ok);
    assert!(stdout.is_empty(), "{stdout}");
    assert!(
        stderr.contains("STORAGE") || stderr.contains("storage"),
        "{stderr}"
    );
}

#[test]
fn client_subcommands_work_against_a_running_server() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(&dir.path().join("data"), &[]);
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
    assert_eq!(call(&["topic", "list"], ""), "events\n");
    assert!(call(&["topic", "describe", "events"], "").contains("high-watermark"));
    assert_eq!(
        call(&["produce", "events"], "hello\nworld\n"),
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
    let server = start(
        &dir.path().join("data"),
        &["--brokers", "1,2,3", "--min-insync-replicas", "2"],
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
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
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
    let dir = tempfile::tempdir().unwrap();
    let server = start(&dir.path().join("data"), &[]);
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
