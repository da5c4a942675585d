//! docs/metrics.md against a live broker: the binary serves metrics, a few
//! requests make every kind of series appear, and the families of the
//! scrape (name and type) must be exactly the page's table. Also: HELP for
//! every family, a stable order between scrapes, histograms for latency,
//! process metrics with values, the health probes.
#![allow(
    clippy::too_many_lines,
    reason = "a test scenario reads top to bottom as one story; split, its steps would scatter"
)]

use mk_server::embedded::BrokerBuilder;
use std::collections::BTreeMap;
use std::io::Write;

mod common;
use common::*;

/// The page's table: family name -> type.
fn documented() -> BTreeMap<String, String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/metrics.md");
    let page = std::fs::read_to_string(path).expect("docs/metrics.md");
    let mut families = BTreeMap::new();
    for line in page.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // | `name` | type | labels | meaning |
        if cells.len() >= 5
            && let Some(name) = cells[1].strip_prefix('`').and_then(|c| c.strip_suffix('`'))
            && ["counter", "gauge", "histogram", "summary"].contains(&cells[2])
        {
            families.insert(name.to_string(), cells[2].to_string());
        }
    }
    families
}

fn body_of(response: &str) -> &str {
    response.split("\r\n\r\n").nth(1).unwrap_or_default()
}

/// (name, type) of each `# TYPE` line, in scrape order.
fn types_of(body: &str) -> Vec<(String, String)> {
    body.lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .map(|l| {
            let (n, t) = l.split_once(' ').unwrap();
            (n.to_string(), t.to_string())
        })
        .collect()
}

/// The value of the first series of `name` whose labels contain `labels`.
fn value(body: &str, name: &str, labels: &str) -> Option<f64> {
    body.lines()
        .filter(|l| !l.starts_with('#'))
        .find(|l| {
            let series = l.rsplit_once(' ').map_or("", |(s, _)| s);
            (series == name || series.starts_with(&format!("{name}{{"))) && series.contains(labels)
        })
        .and_then(|l| l.rsplit_once(' ')?.1.parse().ok())
}

#[test]
fn every_family_of_a_live_scrape_is_documented_and_every_documented_family_is_served() {
    let dir = tempfile::tempdir().unwrap();
    let server = BrokerBuilder::new()
        .data_dir(dir.path().join("data"))
        .args(["--metrics-listen", "127.0.0.1:0"])
        .spawn(BIN)
        .unwrap();
    let listening = server.listening();
    let metrics = listening.metrics.expect("metrics on").to_string();
    let mut w = Wire::connect(&listening.json.to_string());
    w.ok(serde_json::json!({"operation": "create_topic", "topic": "m", "partitions": 2, "replication_factor": 1}));
    for i in 0..5 {
        w.ok(serde_json::json!({"operation": "produce", "topic": "m", "partition": i % 2, "value_b64": "eA=="}));
    }
    w.ok(serde_json::json!({"operation": "commit_offsets", "group_id": "g", "member_id": "", "generation": -1, "offsets": [{"topic": "m", "partition": 0, "offset": 1}]}));
    // An error answer, so the error counter has a series.
    let mut s = std::net::TcpStream::connect(listening.json.to_string()).unwrap();
    writeln!(
        s,
        "{}",
        serde_json::json!({"operation": "fetch", "topic": "nope", "partition": 0, "offset": 0})
    )
    .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(&s), &mut line).unwrap();
    assert!(line.contains("\"ok\":false"), "{line}");

    assert!(http_get(&metrics, "/healthz").starts_with("HTTP/1.1 200"));
    assert!(http_get(&metrics, "/readyz").starts_with("HTTP/1.1 200"));
    let first = http_get(&metrics, "/metrics");
    assert!(first.starts_with("HTTP/1.1 200 OK"), "{first}");
    let body = body_of(&first);

    let served: BTreeMap<String, String> = types_of(body).into_iter().collect();
    let documented = documented();
    assert!(documented.len() >= 40, "the table parsed to {documented:?}");
    let undocumented: Vec<_> = served
        .keys()
        .filter(|n| !documented.contains_key(*n))
        .collect();
    let absent: Vec<_> = documented
        .keys()
        .filter(|n| !served.contains_key(*n))
        .collect();
    assert!(
        undocumented.is_empty(),
        "served but not in docs/metrics.md: {undocumented:?}"
    );
    assert!(
        absent.is_empty(),
        "in docs/metrics.md but not served: {absent:?}"
    );
    for (name, kind) in &served {
        assert_eq!(Some(kind), documented.get(name), "{name}'s type");
        assert!(
            body.contains(&format!("# HELP {name} ")),
            "no HELP for {name}"
        );
    }
    assert_eq!(served["mk_request_duration_seconds"], "histogram");
    assert!(!body.contains(" summary\n"), "{body}");

    // Values: the process, the requests, the partition health, the lag.
    for name in [
        "process_cpu_seconds_total",
        "process_resident_memory_bytes",
        "process_open_fds",
        "process_start_time_seconds",
    ] {
        assert!(
            value(body, name, "").unwrap_or(0.0) > 0.0,
            "{name} in\n{body}"
        );
    }
    assert_eq!(value(body, "mk_ready", ""), Some(1.0));
    assert_eq!(value(body, "mk_partitions_damaged", ""), Some(0.0));
    assert_eq!(value(body, "mk_partitions_offline", ""), Some(0.0));
    assert_eq!(value(body, "mk_partitions_under_replicated", ""), Some(0.0));
    assert_eq!(value(body, "mk_disk_full", ""), Some(0.0));
    assert_eq!(
        value(
            body,
            "kafka_consumergroup_lag",
            "consumergroup=\"g\",topic=\"m\",partition=\"0\""
        ),
        Some(2.0)
    );
    assert_eq!(
        value(
            body,
            "kafka_consumergroup_lag_sum",
            "consumergroup=\"g\",topic=\"m\""
        ),
        Some(2.0)
    );
    assert_eq!(
        value(body, "mk_request_errors_total", "api=\"fetch\""),
        Some(1.0),
        "{body}"
    );
    assert_eq!(
        value(
            body,
            "mk_request_duration_seconds_bucket",
            "api=\"produce\",le=\"+Inf\""
        ),
        Some(5.0)
    );

    // Stable order: a second scrape lists the same families and series in
    // the same order (values may move: CPU time, memory).
    let second = http_get(&metrics, "/metrics");
    let series = |b: &str| -> Vec<String> {
        b.lines()
            .map(|l| l.rsplit_once(' ').map_or(l, |(s, _)| s).to_string())
            .collect()
    };
    assert_eq!(series(body), series(body_of(&second)));
    drop(server);
}

#[test]
fn an_embedded_broker_keeps_its_metrics_address_across_a_restart_and_is_ready_again() {
    let mut broker = BrokerBuilder::new()
        .args(["--metrics-listen", "127.0.0.1:0"])
        .start()
        .unwrap();
    let addr = broker.listening().metrics.expect("metrics on");
    broker.create_topic("t", 2, 1).unwrap();
    let before = http_get(&addr.to_string(), "/metrics");
    assert!(body_of(&before).contains("\nmk_partitions 2\n"), "{before}");

    broker.restart().unwrap();
    assert_eq!(broker.listening().metrics, Some(addr));
    assert!(http_get(&addr.to_string(), "/readyz").starts_with("HTTP/1.1 200"));
    let after = http_get(&addr.to_string(), "/metrics");
    assert!(body_of(&after).contains("\nmk_partitions 2\n"), "{after}");
    assert!(body_of(&after).contains("\nmk_ready 1\n"), "{after}");
}
