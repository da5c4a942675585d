//! The command line tells the truth (issue 26): each test runs the real
//! `mk-server` binary against a real server and failed on the code before
//! it. Stats and describe show damage, a full disk, offline partitions and
//! both protocols' connections; topic list and describe cover every topic;
//! group describe names the assignor in use; keyless records spread as a
//! Kafka producer spreads them; `--from -N` is the last N; a closed stdout
//! ends quietly; reset-offsets is a dry run unless `--execute`; a huge
//! record gets FRAME_TOO_LARGE; produce creates a missing topic as a Kafka
//! producer does; the version is real; broker online says when nothing
//! changed.
#![allow(
    clippy::too_many_lines,
    reason = "a test scenario reads top to bottom as one story; split, its steps would scatter"
)]

use std::io::{Read, Write};
use std::process::{Command, Stdio};

mod common;
use common::*;

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("{e}: {text:?}"))
}

/// Runs the binary with a stdout whose reader is already gone, so its
/// first write fails with a broken pipe; returns (exit code, stderr).
fn run_with_closed_stdout(args: &[&str], stdin: &[u8]) -> (Option<i32>, String) {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(writer)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    let status = exits_within(&mut child, &format!("{args:?}"));
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    (status.code(), err)
}

/// A server hosting brokers 1, 2 and 3, its data under `dir`, with a
/// topic of one partition and one replica; returns the topic's
/// `topic describe --json`.
fn three_brokers_with_topic(
    dir: &std::path::Path,
    topic: &str,
) -> (ServerProcess, serde_json::Value) {
    let server = spawn(
        mk_server::embedded::BrokerBuilder::new().brokers([1, 2, 3]),
        &dir.join("data"),
    );
    ok_at(&server.addr, &["topic", "create", topic], b"");
    let d = json(&ok_at(
        &server.addr,
        &["topic", "describe", topic, "--json"],
        b"",
    ));
    (server, d)
}

/// Sends SIGTERM and waits for a clean exit.
fn stop(mut server: ServerProcess) {
    let status = server.broker.terminate().unwrap();
    assert!(status.success(), "{status}");
}

#[test]
fn stats_and_describe_show_damage_and_both_protocols_and_list_covers_every_topic() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = start(&data, &["--segment-bytes", "1024"]);
    let addr = server.addr.clone();
    ok_at(&addr, &["topic", "create", "c"], b"");
    ok_at(&addr, &["topic", "create", "d", "--partitions", "2"], b"");
    let lines: String = (0..60).map(|i| format!("c-value-{i:04}\n")).collect();
    ok_at(&addr, &["produce", "c"], lines.as_bytes());
    stop(server);
    // One flipped byte in a closed segment the clean shutdown vouched for:
    // the first read that reaches it takes the partition offline.
    let segment = data.join("broker-1/c-0/00000000000000000000.log");
    let mut bytes = std::fs::read(&segment).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x20;
    std::fs::write(&segment, bytes).unwrap();
    let server = start(&data, &[]);
    let addr = server.addr.clone();
    let (_, _, err) = fails_at(&addr, &["consume", "c"], b"");
    assert!(err.contains("STORAGE_ERROR"), "{err}");

    // A Kafka client connected (one ApiVersions request) while stats runs.
    let mut kafka = std::net::TcpStream::connect(&server.broker.listening().kafka[0]).unwrap();
    assert_eq!(api_versions_correlation(&mut kafka), 7);
    let s = json(&ok_at(&addr, &["stats", "--json"], b""));
    assert_eq!(s["damaged_partitions"], 1, "{s}");
    assert_eq!(s["disk_full"], false, "{s}");
    assert_eq!(s["damaged"][0]["partition"], "c-0", "{s}");
    assert_eq!(s["protocols"]["kafka"]["connections"], 1, "{s}");
    assert_eq!(s["protocols"]["kafka"]["listeners"], 1, "{s}");
    assert!(
        s["protocols"]["kafka"]["requests"].as_u64() >= Some(1),
        "{s}"
    );
    assert_eq!(s["protocols"]["json"]["connections"], 1, "this one: {s}");
    assert_eq!(
        s["connections"], 2,
        "the top level counts both protocols: {s}"
    );
    let text = ok_at(&addr, &["stats"], b"");
    assert!(text.contains("health        DEGRADED"), "{text}");
    assert!(text.contains("damaged       1 partition(s)"), "{text}");
    assert!(text.contains("  c-0 is offline: "), "{text}");
    assert!(
        text.contains("connections   2 open (Kafka 1, JSON-TCP 1"),
        "{text}"
    );
    drop(kafka);

    // describe: offline, no leader, no ISR, and why.
    let c = json(&ok_at(&addr, &["topic", "describe", "c", "--json"], b""));
    let p = &c["partitions"][0];
    assert_eq!(
        (&p["status"], &p["leader_id"], &p["isr"]),
        (&json("\"offline\""), &json("-1"), &json("[]")),
        "{c}"
    );
    assert!(
        p["offline_reason"].as_str().unwrap().contains("damaged"),
        "{c}"
    );
    let text = ok_at(&addr, &["topic", "describe", "c"], b"");
    let row: Vec<&str> = text.lines().nth(2).unwrap().split_whitespace().collect();
    assert_eq!(
        (row[0], row[1], row[4], row.last().copied()),
        ("0", "none", "-", Some("offline")),
        "{text}"
    );
    assert!(text.contains("c-0 is offline: damaged: "), "{text}");
    // Without a name, every topic; the healthy one is ok.
    let all = ok_at(&addr, &["topic", "describe"], b"");
    assert!(
        all.contains("topic c (1 partition(s)") && all.contains("topic d (2 partition(s)"),
        "{all}"
    );
    let all = json(&ok_at(&addr, &["topic", "describe", "--json"], b""));
    let topics: Vec<&str> = all["topics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["topic"].as_str().unwrap())
        .collect();
    assert_eq!(topics, ["c", "d"]);
    assert_eq!(all["topics"][1]["partitions"][1]["status"], "ok", "{all}");
    // list: partitions, replication factor, what is unhealthy, a summary.
    let list = ok_at(&addr, &["topic", "list"], b"");
    let rows: Vec<Vec<&str>> = list
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows[1], ["c", "1", "1", "1", "0"], "{list}");
    assert_eq!(rows[2], ["d", "2", "1", "0", "0"], "{list}");
    assert_eq!(
        list.lines().last(),
        Some("2 topic(s), 3 partition(s): 1 offline, 0 under-replicated"),
        "{list}"
    );
    let list = json(&ok_at(&addr, &["topic", "list", "--json"], b""));
    assert_eq!(list["summary"]["offline_partitions"], 1, "{list}");
    assert_eq!(list["topics"][1]["partitions"], 2, "{list}");
}

#[test]
fn an_offline_leader_shows_its_partition_offline_and_online_says_when_nothing_changed() {
    let dir = tempfile::tempdir().unwrap();
    let (server, d) = three_brokers_with_topic(dir.path(), "solo");
    let addr = server.addr.as_str();
    let leader = d["partitions"][0]["leader_id"]
        .as_i64()
        .unwrap()
        .to_string();
    // No other replica can take over a replication factor of one.
    ok_at(addr, &["broker", "offline", &leader], b"");
    let d = json(&ok_at(addr, &["topic", "describe", "solo", "--json"], b""));
    let p = &d["partitions"][0];
    assert_eq!(
        (&p["status"], &p["leader_id"]),
        (&json("\"offline\""), &json("-1")),
        "{d}"
    );
    let why = p["offline_reason"].as_str().unwrap();
    assert!(
        why.contains(&format!("its leader, broker {leader}, is offline")),
        "{why}"
    );
    let text = ok_at(addr, &["topic", "describe", "solo"], b"");
    assert!(
        text.contains(&format!("solo-0 is offline: its leader, broker {leader}")),
        "{text}"
    );
    let s = json(&ok_at(addr, &["stats", "--json"], b""));
    assert_eq!(s["offline_brokers"][0].to_string(), leader, "{s}");
    // Back online, then again: the second time nothing changed, and it says so.
    let out = ok_at(addr, &["broker", "online", &leader], b"");
    assert!(out.contains("is online again"), "{out}");
    let out = ok_at(addr, &["broker", "online", &leader], b"");
    assert_eq!(
        out,
        format!("broker {leader} was not offline; nothing changed\n")
    );
    let v = json(&ok_at(addr, &["broker", "online", &leader, "--json"], b""));
    assert_eq!(v["was_offline"], false, "{v}");
    let d = json(&ok_at(addr, &["topic", "describe", "solo", "--json"], b""));
    assert_eq!(d["partitions"][0]["status"], "ok", "{d}");
}

/// `partition reassign|reassignments` against a real three-broker server:
/// a move to an offline broker stays pending (and the partition is not
/// under-replicated for it), cancels, refusals, and a move that completes
/// by itself with every record on the new replicas.
#[test]
fn partition_reassign_moves_lists_and_cancels_over_json_tcp() {
    let dir = tempfile::tempdir().unwrap();
    let (server, d) = three_brokers_with_topic(dir.path(), "mv");
    let addr = server.addr.as_str();
    ok_at(addr, &["produce", "mv"], b"a\nb\nc\n");
    let first = d["partitions"][0]["replicas"][0].as_i64().unwrap();
    let (others, offline): (Vec<i64>, i64) = match first {
        1 => (vec![2, 3], 3),
        2 => (vec![3, 1], 1),
        _ => (vec![1, 2], 2),
    };
    let target = format!("{},{}", others[0], others[1]);
    // The second target broker offline keeps the move pending.
    ok_at(addr, &["broker", "offline", &offline.to_string()], b"");
    let mv = ["partition", "reassign", "--topic", "mv", "--partition", "0"];
    let out = ok_at(addr, &[&mv[..], &["--replicas", &target]].concat(), b"");
    assert!(out.contains("mv-0: reassignment started"), "{out}");
    assert!(
        out.contains(&format!("adding {target}, removing {first}")),
        "{out}"
    );
    let l = json(&ok_at(addr, &["partition", "reassignments", "--json"], b""));
    assert_eq!(
        l["reassignments"],
        serde_json::json!([{"topic": "mv", "partition": 0,
            "replicas": [others[0], others[1], first],
            "adding_replicas": others, "removing_replicas": [first]}]),
        "{l}"
    );
    let d = json(&ok_at(addr, &["topic", "describe", "mv", "--json"], b""));
    assert_eq!(
        d["partitions"][0]["status"], "ok",
        "the adding replicas do not make it under-replicated: {d}"
    );
    // Refusals: an unknown broker, a size change when forbidden, a typo.
    let (code, _, err) = fails_at(addr, &[&mv[..], &["--replicas", "1,9"]].concat(), b"");
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("INVALID_REQUEST") && err.contains("broker 9"),
        "{err}"
    );
    let keep = [
        &mv[..],
        &["--replicas", "1,2,3", "--keep-replication-factor"],
    ]
    .concat();
    let (_, _, err) = fails_at(addr, &keep, b"");
    assert!(
        err.contains("replication factor would change from 1 to 3"),
        "{err}"
    );
    let (code, _, err) = fails_at(addr, &[&mv[..], &["--replicas", "1,x"]].concat(), b"");
    assert_eq!(code, Some(2), "a usage error: {err}");
    let (code, _, err) = fails_at(addr, &mv, b"");
    assert_eq!(code, Some(2), "--replicas or --cancel: {err}");

    let out = ok_at(addr, &[&mv[..], &["--cancel"]].concat(), b"");
    assert!(out.contains("mv-0: reassignment cancelled"), "{out}");
    let out = ok_at(addr, &["partition", "reassignments"], b"");
    assert_eq!(out, "no reassignment in progress\n");
    let (_, _, err) = fails_at(addr, &[&mv[..], &["--cancel"]].concat(), b"");
    assert!(err.contains("no reassignment in progress"), "{err}");

    // With every broker online the move completes by itself.
    ok_at(addr, &["broker", "online", &offline.to_string()], b"");
    let v = json(&ok_at(
        addr,
        &[&mv[..], &["--replicas", &target, "--json"]].concat(),
        b"",
    ));
    assert_eq!(v["state"], "in_progress", "{v}");
    let deadline = std::time::Instant::now() + PATIENCE;
    loop {
        let l = json(&ok_at(
            addr,
            &["partition", "reassignments", "--topic", "mv", "--json"],
            b"",
        ));
        if l["reassignments"].as_array().unwrap().is_empty() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the move never completed: {l}"
        );
        std::thread::yield_now();
    }
    let d = json(&ok_at(addr, &["topic", "describe", "mv", "--json"], b""));
    assert_eq!(
        d["partitions"][0]["replicas"],
        serde_json::json!(others),
        "{d}"
    );
    let records = ok_at(addr, &["consume", "mv", "--format", "%s "], b"");
    assert_eq!(records, "a b c ");
    stop(server);
}

#[test]
fn from_minus_n_is_the_last_n_records_and_past_the_end_starts_at_the_end() {
    let (_dir, server) = start_with_topic(&["t", "--partitions", "2"]);
    let addr = server.addr.as_str();
    let ten: String = (0..10).map(|i| format!("a{i}\n")).collect();
    ok_at(addr, &["produce", "t", "--partition", "0"], ten.as_bytes());
    ok_at(addr, &["produce", "t", "--partition", "1"], b"b0\nb1\n");
    let fmt = ["--format", "%p@%o "];
    let consume = |from: &str| {
        let mut args = vec!["consume", "t", "--from", from];
        args.extend(fmt);
        ok_at(addr, &args, b"")
    };
    // kcat's -o -3: the last three of each partition (all of a shorter one).
    assert_eq!(consume("-3"), "0@7 0@8 0@9 1@0 1@1 ");
    assert_eq!(consume("-1"), "0@9 1@1 ");
    // An offset past the end starts at the end (nothing yet), not at 0.
    assert_eq!(consume("100"), "");
    assert_eq!(consume("8"), "0@8 0@9 ");
    let (code, _, err) = fails_at(addr, &["consume", "t", "--from", "-x"], b"");
    assert_eq!(code, Some(2), "{err}");
    // Following from past the end waits at the end: what comes next prints
    // (records are produced until it does, since the follower's start and
    // the first produce race), never the records before.
    let mut child = Command::new(BIN)
        .args([
            "consume",
            "t",
            "--partition",
            "1",
            "--from",
            "100",
            "--follow",
        ])
        .args(["--format", "%o\n", "--server", addr])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut first = String::new();
        let _ = std::io::BufRead::read_line(&mut out, &mut first);
        let _ = tx.send(first);
    });
    let deadline = std::time::Instant::now() + PATIENCE;
    let first = loop {
        assert!(
            std::time::Instant::now() < deadline,
            "the follower printed nothing"
        );
        ok_at(addr, &["produce", "t", "--partition", "1"], b"more\n");
        if let Ok(first) = rx.recv_timeout(std::time::Duration::from_millis(200)) {
            break first;
        }
    };
    let first: i64 = first.trim().parse().unwrap();
    assert!(first >= 2, "started at the end (2), not at {first}");
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_closed_stdout_ends_every_command_quietly_with_exit_0() {
    let (_dir, server) = start_with_topic(&["t", "--partitions", "3"]);
    let addr = server.addr.as_str();
    let lines: String = (0..2_000).map(|i| format!("line-{i}\n")).collect();
    ok_at(addr, &["produce", "t"], lines.as_bytes());
    ok_at(
        addr,
        &["consume", "t", "--group", "g", "--max-records", "1"],
        b"",
    );
    for args in [
        &["topic", "describe"][..],
        &["topic", "describe", "t"],
        &["topic", "list"],
        &["consume", "t", "--json"],
        &["consume", "t"],
        &["stats"],
        &["group", "describe", "g"],
        &["group", "list"],
    ] {
        let mut all = args.to_vec();
        all.extend(["--server", addr]);
        let (code, err) = run_with_closed_stdout(&all, b"");
        assert_eq!((code, err.as_str()), (Some(0), ""), "{args:?}");
    }
    let (code, err) = run_with_closed_stdout(&["completions", "bash"], b"");
    assert_eq!((code, err.as_str()), (Some(0), ""), "completions");
    // produce still produces every line: only the printing stops.
    let (code, err) = run_with_closed_stdout(&["produce", "t", "--server", addr], b"x\ny\nz\n");
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(err, "produced 3 record(s)\n");
    let s = json(&ok_at(addr, &["stats", "--json"], b""));
    assert_eq!(s["records"], 2_003, "{s}");
}

#[test]
fn reset_offsets_is_a_dry_run_unless_execute() {
    let (_dir, server) = start_with_topic(&["t"]);
    let addr = server.addr.as_str();
    ok_at(addr, &["produce", "t"], b"a\nb\nc\n");
    ok_at(addr, &["consume", "t", "--group", "g"], b"");
    let committed = || {
        let d = json(&ok_at(addr, &["group", "describe", "g", "--json"], b""));
        d["offsets"][0]["committed"].as_i64().unwrap()
    };
    assert_eq!(committed(), 3);
    let plan = ok_at(addr, &["group", "reset-offsets", "g", "--to-earliest"], b"");
    assert!(plan.contains("t-0: 3 -> 0"), "{plan}");
    assert!(
        plan.contains("dry run, nothing changed (add --execute to apply)"),
        "{plan}"
    );
    assert_eq!(committed(), 3, "the plan alone changes nothing");
    let v = json(&ok_at(
        addr,
        &["group", "reset-offsets", "g", "--to-earliest", "--json"],
        b"",
    ));
    assert_eq!(v["dry_run"], true, "{v}");
    ok_at(
        addr,
        &["group", "reset-offsets", "g", "--to-earliest", "--dry-run"],
        b"",
    );
    assert_eq!(committed(), 3, "--dry-run is still accepted");
    let out = ok_at(
        addr,
        &["group", "reset-offsets", "g", "--to-earliest", "--execute"],
        b"",
    );
    assert!(out.contains("offsets reset"), "{out}");
    assert_eq!(committed(), 0);
    let (code, _, err) = fails_at(
        addr,
        &[
            "group",
            "reset-offsets",
            "g",
            "--to-latest",
            "--execute",
            "--dry-run",
        ],
        b"",
    );
    assert_eq!(code, Some(2), "both is a usage error: {err}");
}

#[test]
fn a_record_beyond_the_frame_limit_gets_frame_too_large_at_any_size() {
    let (_dir, server) = start_with_topic(&["t"]);
    let addr = server.addr.as_str();
    for size in [2_000_000, 20_000_000] {
        let mut line = vec![b'x'; size];
        line.push(b'\n');
        let (code, _, err) = fails_at(addr, &["produce", "t"], &line);
        assert_eq!(code, Some(1), "{size}: {err}");
        assert!(
            err.contains("FRAME_TOO_LARGE: request line exceeds max_frame_bytes"),
            "{size}: {err}"
        );
        assert!(
            !err.contains("Broken pipe") && !err.contains("reset"),
            "{size}: {err}"
        );
    }
    // The server is unharmed.
    assert_eq!(ok_at(addr, &["produce", "t"], b"small\n"), "t-0 offset 0\n");
}

#[test]
fn produce_creates_a_missing_topic_as_a_kafka_producer_does_when_the_broker_allows() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(&dir.path().join("data"), &["--num-partitions", "3"]);
    let addr = server.addr.as_str();
    let out = ok_at(addr, &["produce", "fresh", "--partition", "2"], b"v\n");
    assert_eq!(out, "fresh-2 offset 0\n");
    let list = json(&ok_at(addr, &["topic", "list", "--json"], b""));
    assert_eq!(
        list["topics"][0]["partitions"], 3,
        "the broker's num.partitions: {list}"
    );
    drop(server);
    let dir = tempfile::tempdir().unwrap();
    let server = start(&dir.path().join("data"), &["--auto-create-topics", "false"]);
    let (_, _, err) = fails_at(&server.addr, &["produce", "fresh"], b"v\n");
    assert!(err.contains("UNKNOWN_TOPIC"), "{err}");
}

#[test]
fn the_version_is_the_package_version_and_the_commit_it_was_built_from() {
    for flag in ["-V", "--version"] {
        let (code, out, err) = run_full(&[flag], b"", &[]);
        assert_eq!(code, Some(0), "{err}");
        let out = String::from_utf8(out).unwrap();
        let version = out.trim().strip_prefix("mk-server ").unwrap();
        let (number, commit) = match version.split_once(" (commit ") {
            Some((n, c)) => (n, Some(c.trim_end_matches(')'))),
            None => (version, None),
        };
        assert_eq!(number, env!("CARGO_PKG_VERSION"));
        assert_ne!(number, "0.0.0", "a real version");
        // Built from a checkout (as this test is), the commit is HEAD's.
        let head = Command::new("git")
            .args(["rev-parse", "HEAD"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8(o.stdout).unwrap());
        if let Some(head) = head {
            let commit = commit.unwrap_or_else(|| panic!("no commit in {out:?}"));
            assert_eq!(commit.len(), 12, "{out}");
            assert!(head.starts_with(commit), "{out} vs HEAD {head}");
        }
    }
}

#[test]
fn keyless_records_stick_to_a_partition_for_a_batch_and_spread_over_every_partition() {
    let (_dir, server) = start_with_topic(&["k", "--partitions", "4"]);
    let addr = server.addr.as_str();
    // 1000-byte values: 17 fill Kafka's 16 KiB batch.size, then the next
    // partition takes over.
    let value = "v".repeat(1_000);
    let input: String = (0..17 * 8).map(|_| format!("{value}\n")).collect();
    let out = ok_at(addr, &["produce", "k"], input.as_bytes());
    let partitions: Vec<u32> = out
        .lines()
        .map(|l| {
            l.split_whitespace().next().unwrap()["k-".len()..]
                .parse()
                .unwrap()
        })
        .collect();
    let runs: Vec<&[u32]> = partitions.chunk_by(|a, b| a == b).collect();
    assert_eq!(runs.len(), 8, "{partitions:?}");
    assert!(runs.iter().all(|r| r.len() == 17), "{partitions:?}");
    let mut per_partition = [0; 4];
    for p in &partitions {
        per_partition[*p as usize] += 1;
    }
    assert_eq!(
        per_partition, [34; 4],
        "every partition gets the same share"
    );
    // Keys still pick by murmur2 and --partition still wins.
    let keyed = ok_at(
        addr,
        &["produce", "k", "--keyed"],
        b"user-1\tx\nuser-1\ty\n",
    );
    let first: Vec<&str> = keyed
        .lines()
        .map(|l| l.split(' ').next().unwrap())
        .collect();
    assert_eq!(first[0], first[1], "{keyed}");
}

/// A Kafka-protocol consumer group member joined with the classic
/// protocol, offering `assignor` (JoinGroup v0 and SyncGroup v0 by hand).
fn join_classic_group(
    kafka_addr: &str,
    group: &str,
    topic: &str,
    assignor: &str,
) -> std::net::TcpStream {
    fn string(out: &mut Vec<u8>, s: &str) {
        out.extend_from_slice(&i16::try_from(s.len()).unwrap().to_be_bytes());
        out.extend_from_slice(s.as_bytes());
    }
    fn bytes(out: &mut Vec<u8>, b: &[u8]) {
        out.extend_from_slice(&i32::try_from(b.len()).unwrap().to_be_bytes());
        out.extend_from_slice(b);
    }
    fn call(s: &mut std::net::TcpStream, api_key: i16, body: &[u8]) -> Vec<u8> {
        let (correlation_id, answer) = kafka_call(s, api_key, 0, 1, body);
        assert_eq!(correlation_id, 1);
        answer
    }
    fn read_string(b: &[u8], at: &mut usize) -> String {
        let n = i16::from_be_bytes([b[*at], b[*at + 1]]) as usize;
        let s = String::from_utf8(b[*at + 2..*at + 2 + n].to_vec()).unwrap();
        *at += 2 + n;
        s
    }
    let mut s = std::net::TcpStream::connect(kafka_addr).unwrap();
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    // ConsumerProtocolSubscription v0: version, topics, no user data.
    let mut subscription = 0i16.to_be_bytes().to_vec();
    subscription.extend_from_slice(&1i32.to_be_bytes());
    string(&mut subscription, topic);
    subscription.extend_from_slice(&(-1i32).to_be_bytes());
    let mut join = Vec::new();
    string(&mut join, group);
    join.extend_from_slice(&30_000i32.to_be_bytes());
    string(&mut join, "");
    string(&mut join, "consumer");
    join.extend_from_slice(&1i32.to_be_bytes());
    string(&mut join, assignor);
    bytes(&mut join, &subscription);
    let answer = call(&mut s, 11, &join);
    assert_eq!(&answer[..2], &[0, 0], "JoinGroup error {answer:?}");
    let generation = i32::from_be_bytes(answer[2..6].try_into().unwrap());
    let mut at = 6;
    assert_eq!(
        read_string(&answer, &mut at),
        assignor,
        "the chosen protocol"
    );
    let _leader = read_string(&answer, &mut at);
    let member = read_string(&answer, &mut at);
    // ConsumerProtocolAssignment v0: the whole topic's partition 0.
    let mut assignment = 0i16.to_be_bytes().to_vec();
    assignment.extend_from_slice(&1i32.to_be_bytes());
    string(&mut assignment, topic);
    assignment.extend_from_slice(&1i32.to_be_bytes());
    assignment.extend_from_slice(&0i32.to_be_bytes());
    assignment.extend_from_slice(&(-1i32).to_be_bytes());
    let mut sync = Vec::new();
    string(&mut sync, group);
    sync.extend_from_slice(&generation.to_be_bytes());
    string(&mut sync, &member);
    sync.extend_from_slice(&1i32.to_be_bytes());
    string(&mut sync, &member);
    bytes(&mut sync, &assignment);
    let answer = call(&mut s, 14, &sync);
    assert_eq!(&answer[..2], &[0, 0], "SyncGroup error {answer:?}");
    s
}

#[test]
fn group_describe_names_the_assignor_the_group_actually_uses() {
    let (_dir, server) = start_with_topic(&["t"]);
    let addr = server.addr.as_str();
    // A Kafka consumer group whose members chose `range` (what
    // confluent-kafka offers by default): the coordinator's own assignor
    // for JSON-TCP members is round-robin, which it must not show.
    let _member = join_classic_group(
        &server.broker.listening().kafka[0],
        "kafka-group",
        "t",
        "range",
    );
    let text = ok_at(addr, &["group", "describe", "kafka-group"], b"");
    assert!(
        text.starts_with("group kafka-group: state Stable, generation 1, assignor range\n"),
        "{text}"
    );
    let v = json(&ok_at(
        addr,
        &["group", "describe", "kafka-group", "--json"],
        b"",
    ));
    assert_eq!(
        (&v["assignor"], &v["protocol_type"]),
        (&json("\"range\""), &json("\"consumer\"")),
        "{v}"
    );
    // A JSON-TCP group assigned by the coordinator with the sticky assignor.
    let mut w = Wire::connect(addr);
    w.ok(
        serde_json::json!({"operation": "join_group", "group_id": "json-group",
        "member_id": "m1", "topics": ["t"], "assignor": "sticky"}),
    );
    let v = json(&ok_at(
        addr,
        &["group", "describe", "json-group", "--json"],
        b"",
    ));
    assert_eq!(v["assignor"], "sticky", "{v}");
    // Without members there is no assignor in use.
    w.ok(serde_json::json!({"operation": "leave_group", "group_id": "json-group", "member_id": "m1"}));
    let text = ok_at(addr, &["group", "describe", "json-group"], b"");
    assert!(text.contains("assignor none (no members)"), "{text}");
    let v = json(&ok_at(
        addr,
        &["group", "describe", "json-group", "--json"],
        b"",
    ));
    assert_eq!(v["assignor"], serde_json::Value::Null, "{v}");
}

#[test]
fn topic_create_takes_any_kafka_topic_config_and_creates_nothing_on_a_bad_one() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(&dir.path().join("data"), &[]);
    let a = server.addr.as_str();
    ok_at(
        a,
        &[
            "topic",
            "create",
            "zipped",
            "--config",
            "compression.type=zstd",
            "--config",
            "max.message.bytes=2048",
            "--config",
            "retention.ms=-1",
        ],
        b"",
    );
    let d = json(&ok_at(a, &["topic", "describe", "zipped", "--json"], b""));
    let config = &d["config"];
    assert_eq!(config["compression.type"], "zstd", "{d}");
    assert_eq!(config["max.message.bytes"], "2048", "{d}");
    assert_eq!(config["retention.ms"], "-1", "{d}");
    assert_eq!(config["cleanup.policy"], "delete", "{d}");
    let (code, _, err) = fails_at(
        a,
        &[
            "topic",
            "create",
            "zapped",
            "--config",
            "compression.type=brotli",
        ],
        b"",
    );
    assert_ne!(code, Some(0));
    assert!(err.contains("compression.type"), "{err}");
    let (_, _, err) = fails_at(a, &["topic", "describe", "zapped"], b"");
    assert!(err.contains("does not exist"), "{err}");
    stop(server);
}
