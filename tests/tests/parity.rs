//! Parity of the in-process and the wire path (spec 06): every scenario of
//! the corpus in `tests/parity/*.json` runs in process, each operation
//! through its one mapping to the core (`mk_adapter_jsontcp::execute`), and
//! against a live JsonTcpServer on loopback (through JsonTcpClient), where
//! the same mapping sits behind encoding, pipelining, group-committed
//! produces, long polls and the connection. Each step must give the same
//! observable result on both sides (success value or error code and
//! message), match the corpus's expected outcome, and the final cluster
//! state (topics, partitions with LEOs, HWs, ISR and epochs, every record's
//! bytes, committed offsets) must be identical.
//!
//! The corpus is data: each file is `{"name", "brokers", "min_insync_replicas",
//! "steps": [...]}` where a step is `{"request": <wire request>, "expect":
//! <subset of the wire response>}`, `{"request": .., "expect_error": CODE}`
//! or `{"advance_ms": N}` (moves both manual clocks). Both sides run in lab
//! mode with the background drivers paused, so every step is explicit.
#![allow(
    clippy::too_many_lines,
    reason = "a test scenario reads top to bottom as one story; split, its steps would scatter"
)]

use mk_adapter_jsontcp::mk_cluster::{
    BrokerCluster, ClusterError, ErrorCode, FetchRequest, ManualClock, MiniKafkaConfig,
    TopicPartition,
};
use mk_adapter_jsontcp::{
    ClientError, JsonTcpClient, JsonTcpServer, Request, Response, ServerOptions,
    decode_request_line,
};
use mk_adapter_jsontcp::{execute, json_code};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

const PATIENCE: Duration = Duration::from_secs(20);
const START_MS: i64 = 1_700_000_000_000;

type Outcome = Result<Response, (ErrorCode, String)>;

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("parity")
}

fn scenarios() -> Vec<(String, Value)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            let v: Value = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("{}: invalid JSON: {e}", p.display()));
            (p.file_name().unwrap().to_string_lossy().into_owned(), v)
        })
        .collect()
}

fn open(dir: &Path, scenario: &Value, clock: &ManualClock) -> Arc<BrokerCluster> {
    let brokers: Vec<i32> = scenario["brokers"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|b| i32::try_from(b.as_i64().unwrap()).unwrap())
                .collect()
        })
        .unwrap_or_else(|| vec![1]);
    let min_isr = usize::try_from(scenario["min_insync_replicas"].as_u64().unwrap_or(1)).unwrap();
    let config = MiniKafkaConfig::new(dir)
        .with_brokers(brokers)
        .with_min_insync_replicas(min_isr);
    BrokerCluster::open_with_clock(config, Arc::new(clock.clone())).unwrap()
}

/// A core error as the JSON protocol reports it: through the protocol's
/// own code table (the finer codes for invalid topic arguments are
/// INVALID_REQUEST there), so the comparison is of what a client sees.
fn core_err(e: ClusterError) -> (ErrorCode, String) {
    (json_code(e.code()), e.to_string())
}

/// An in-process outcome as a JSON client would see it: the success value
/// through the wire's encoder and decoder, so values the JSON protocol does
/// not carry (e.g. a group's Kafka protocol details) are compared as the
/// empty values a JSON client decodes, like errors go through `json_code`.
fn as_seen_on_the_wire(request: &Request, outcome: Outcome) -> Outcome {
    outcome.map(|response| {
        let wire = match serde_json::from_slice::<Value>(&response.encode(None)) {
            Ok(Value::Object(map)) => map,
            other => panic!("a response encodes to a JSON object, got {other:?}"),
        };
        Response::decode(request, &wire)
            .unwrap_or_else(|e| panic!("an encoded response decodes again: {e:?}"))
    })
}

/// One request executed in process: the operation's one mapping to the
/// core (`mk_adapter_jsontcp::execute`, what the server's dispatch runs for
/// each line), with no wire, socket or connection in between.
async fn in_process(cluster: &BrokerCluster, request: &Request) -> Outcome {
    assert!(
        !matches!(request, Request::Stats),
        "stats is not part of the parity corpus: uptime and connection counts differ by design"
    );
    execute(cluster, request.clone()).await.map_err(core_err)
}

async fn tcp(client: &mut JsonTcpClient, request: &Request) -> Outcome {
    match tokio::time::timeout(PATIENCE, client.call(request))
        .await
        .expect("a TCP call did not complete")
    {
        Ok(r) => Ok(r),
        Err(ClientError::Server(e)) => Err((e.code, e.message)),
        Err(other) => panic!("transport failure: {other}"),
    }
}

/// True if every field of `expected` is in `actual` with a matching value:
/// objects match as subsets, arrays element by element with equal lengths,
/// scalars exactly.
fn subset(expected: &Value, actual: &Value) -> bool {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => e
            .iter()
            .all(|(k, v)| a.get(k).is_some_and(|av| subset(v, av))),
        (Value::Array(e), Value::Array(a)) => {
            e.len() == a.len() && e.iter().zip(a).all(|(ev, av)| subset(ev, av))
        }
        _ => expected == actual,
    }
}

/// Everything observable about a cluster's final state.
#[derive(Debug, PartialEq)]
struct FinalState {
    topics: Vec<String>,
    partitions: Vec<mk_adapter_jsontcp::mk_cluster::PartitionInfo>,
    records: Vec<(
        TopicPartition,
        Vec<mk_adapter_jsontcp::mk_cluster::ConsumerRecord>,
    )>,
    committed: Vec<(String, Vec<(TopicPartition, i64)>)>,
}

fn final_state(cluster: &BrokerCluster, groups: &BTreeSet<String>) -> FinalState {
    let description = cluster.views().describe_cluster().unwrap();
    let mut records = Vec::new();
    for p in &description.partitions {
        let tp = TopicPartition::new(&p.topic, p.partition);
        let f = cluster
            .data()
            .fetch(&FetchRequest::new(tp.clone(), p.log_start_offset, i64::MAX))
            .unwrap();
        records.push((tp, f.records));
    }
    FinalState {
        topics: cluster.topics().list().unwrap(),
        partitions: description.partitions,
        records,
        committed: groups
            .iter()
            .map(|g| {
                (
                    g.clone(),
                    cluster.groups().committed(g).unwrap().into_iter().collect(),
                )
            })
            .collect(),
    }
}

async fn run_scenario(file: &str, scenario: &Value) -> usize {
    let local_dir = tempfile::tempdir().unwrap();
    let tcp_dir = tempfile::tempdir().unwrap();
    let local_clock = ManualClock::new(START_MS);
    let tcp_clock = ManualClock::new(START_MS);
    let local_cluster = open(local_dir.path(), scenario, &local_clock);
    let tcp_cluster = open(tcp_dir.path(), scenario, &tcp_clock);
    let server = JsonTcpServer::start(
        tcp_cluster.clone(),
        "127.0.0.1:0",
        ServerOptions {
            lab: true,
            ..ServerOptions::default()
        },
    )
    .await
    .unwrap();
    let mut remote = JsonTcpClient::connect(server.local_addr()).await.unwrap();
    let mut groups = BTreeSet::new();
    let steps = scenario["steps"]
        .as_array()
        .unwrap_or_else(|| panic!("{file}: no steps"));
    let mut checked = 0;
    for (i, step) in steps.iter().enumerate() {
        let at = format!("{file} step {i}");
        if let Some(ms) = step.get("advance_ms") {
            let ms = ms.as_i64().unwrap();
            local_clock.advance(ms);
            tcp_clock.advance(ms);
            continue;
        }
        let line = step["request"].to_string();
        let request = decode_request_line(line.as_bytes())
            .request
            .unwrap_or_else(|e| panic!("{at}: the corpus request does not decode: {e}"));
        if let Some(g) = step["request"]["group_id"].as_str() {
            groups.insert(g.to_string());
        }
        let d = as_seen_on_the_wire(&request, in_process(&local_cluster, &request).await);
        let t = tcp(&mut remote, &request).await;
        assert_eq!(d, t, "{at}: in process and JSON-TCP disagree on {line}");
        match (step.get("expect"), step.get("expect_error")) {
            (Some(expected), None) => {
                let response = d.unwrap_or_else(|e| panic!("{at}: expected success, got {e:?}"));
                let wire: Value = serde_json::from_slice(&response.encode(None)).unwrap();
                assert!(
                    subset(expected, &wire),
                    "{at}: {line}\n expected (subset) {expected}\n got {wire}"
                );
            }
            (None, Some(code)) => {
                let code = code.as_str().unwrap();
                match d {
                    Err((c, _)) => assert_eq!(c.as_str(), code, "{at}: {line}"),
                    Ok(r) => panic!("{at}: expected {code}, got {r:?}"),
                }
            }
            _ => panic!("{at}: a request step needs exactly one of expect / expect_error"),
        }
        checked += 1;
    }
    let d_state = final_state(&local_cluster, &groups);
    let t_state = final_state(&tcp_cluster, &groups);
    assert_eq!(d_state, t_state, "{file}: final cluster states differ");
    drop(remote);
    tokio::time::timeout(PATIENCE, server.shutdown())
        .await
        .unwrap();
    local_cluster.lifecycle().close().await.unwrap();
    tcp_cluster.lifecycle().close().await.unwrap();
    checked
}

#[tokio::test]
async fn parity_direct_and_jsontcp_agree_on_the_whole_corpus() {
    let all = scenarios();
    assert!(all.len() >= 6, "the corpus has {} scenarios", all.len());
    let mut steps = 0;
    let mut operations = BTreeSet::new();
    for (file, scenario) in &all {
        for step in scenario["steps"].as_array().unwrap() {
            if let Some(op) = step["request"]["operation"].as_str() {
                operations.insert(op.to_string());
            }
        }
        steps += run_scenario(file, scenario).await;
    }
    assert!(steps > 100, "only {steps} checked steps");
    let missing: Vec<&str> = mk_adapter_jsontcp::Operation::ALL
        .iter()
        .map(|o| o.name())
        .filter(|n| *n != "stats" && !operations.contains(*n))
        .collect();
    assert!(
        missing.is_empty(),
        "operations the corpus never exercises: {missing:?}"
    );
}

#[test]
fn parity_subset_matching_is_strict_where_it_must_be() {
    let actual: Value =
        serde_json::from_str(r#"{"ok":true,"records":[{"offset":0}],"high_watermark":1}"#).unwrap();
    assert!(subset(&serde_json::json!({"high_watermark": 1}), &actual));
    assert!(!subset(&serde_json::json!({"high_watermark": 2}), &actual));
    assert!(!subset(&serde_json::json!({"missing": 1}), &actual));
    assert!(!subset(&serde_json::json!({"records": []}), &actual));
    assert!(subset(&serde_json::json!({"records": [{}]}), &actual));
    assert!(!subset(
        &serde_json::json!({"records": [{"offset": 1}]}),
        &actual
    ));
}
