//! The console's HTTP+JSON API against a real cluster on a temporary
//! directory, over real sockets: every route's answer, the error mapping,
//! the request checks (loopback host, same origin, JSON bodies, body
//! limit), the page's files and shutdown.

use mk_adapter_console::{ConsoleOptions, ConsoleServer};
use mk_cluster::{BrokerCluster, MiniKafkaConfig, TopicPartition};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

struct Console {
    cluster: Arc<BrokerCluster>,
    server: Option<ConsoleServer>,
    addr: SocketAddr,
    _dir: tempfile::TempDir,
}

impl Console {
    async fn start() -> Console {
        Self::start_with(ConsoleOptions::default()).await
    }

    /// `start` with topic `topic` (`partitions` partitions) created.
    async fn with_topic(topic: &str, partitions: u32) -> Console {
        let c = Self::start().await;
        c.cluster.topics().create(topic, partitions, 1).unwrap();
        c
    }

    async fn start_with(options: ConsoleOptions) -> Console {
        let dir = tempfile::tempdir().unwrap();
        let cluster = BrokerCluster::open(MiniKafkaConfig::new(dir.path())).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let server = ConsoleServer::start_on(cluster.clone(), listener, options).unwrap();
        Console {
            addr: server.local_addr(),
            cluster,
            server: Some(server),
            _dir: dir,
        }
    }

    /// One request on a fresh connection: (status, headers, body).
    async fn raw(&self, head: &str, body: &[u8]) -> (u16, String, Vec<u8>) {
        let mut s = TcpStream::connect(self.addr).await.unwrap();
        s.write_all(head.as_bytes()).await.unwrap();
        s.write_all(body).await.unwrap();
        let mut out = Vec::new();
        s.read_to_end(&mut out).await.unwrap();
        let split = out
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .expect("a response head");
        let head = String::from_utf8(out[..split].to_vec()).unwrap();
        let status = head.split(' ').nth(1).unwrap().parse().unwrap();
        (status, head, out[split + 4..].to_vec())
    }

    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        let (status, _, bytes) = self.raw(&head, body.as_bytes()).await;
        let value = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).unwrap()
        };
        (status, value)
    }

    /// POST /api/groups/g/reset-offsets with `body`.
    async fn reset_group_g(&self, body: Value) -> (u16, Value) {
        self.call("POST", "/api/groups/g/reset-offsets", Some(body))
            .await
    }

    /// A GET of `path` sent with `Host: host`, on a fresh connection.
    async fn get_from(&self, host: &str, path: &str) -> (u16, String, Vec<u8>) {
        let head = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
        self.raw(&head, b"").await
    }

    async fn get(&self, path: &str) -> Value {
        let (status, v) = self.call("GET", path, None).await;
        assert_eq!(status, 200, "GET {path}: {v}");
        v
    }
}

/// The `retention.ms` entry of a topic's configs.
fn retention(t: &Value) -> Value {
    t["configs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "retention.ms")
        .cloned()
        .unwrap()
}

fn error_code(v: &Value) -> &str {
    v["error"]["code"].as_str().unwrap_or("")
}

#[tokio::test]
async fn topics_are_created_and_listed_and_bad_requests_answer_their_codes() {
    let c = Console::start().await;
    let (status, t) = c
        .call(
            "POST",
            "/api/topics",
            Some(
                json!({"name": "orders", "partitions": 3, "replication_factor": 1,
                        "configs": {"retention.ms": "3600000"}}),
            ),
        )
        .await;
    assert_eq!(status, 201, "{t}");
    assert_eq!(t["partitions"].as_array().unwrap().len(), 3);
    assert_eq!(
        retention(&t),
        json!({"name": "retention.ms", "value": "3600000", "is_default": false})
    );

    let (status, e) = c
        .call("POST", "/api/topics", Some(json!({"name": "orders"})))
        .await;
    assert_eq!((status, error_code(&e)), (409, "TOPIC_ALREADY_EXISTS"));
    let (status, e) = c
        .call("POST", "/api/topics", Some(json!({"name": "bad name"})))
        .await;
    assert_eq!(status, 400, "{e}");
    let (status, e) = c
        .call(
            "POST",
            "/api/topics",
            Some(json!({"name": "x", "configs": {"nope": "1"}})),
        )
        .await;
    assert_eq!((status, error_code(&e)), (400, "INVALID_CONFIG"));

    let list = c.get("/api/topics").await;
    assert_eq!(list["topics"][0]["name"], "orders");
}

#[tokio::test]
async fn topic_configs_are_altered_all_at_once_and_deletion_asks_the_name_twice() {
    let c = Console::start().await;
    c.call(
        "POST",
        "/api/topics",
        Some(json!({"name": "orders", "partitions": 3, "configs": {"retention.ms": "3600000"}})),
    )
    .await;
    let list = c.get("/api/topics").await;
    assert_eq!(list["topics"][0]["partitions"], 3);
    assert_eq!(list["topics"][0]["under_replicated"], 0);

    let (status, t) = c
        .call(
            "PATCH",
            "/api/topics/orders/configs",
            Some(json!({"set": {"cleanup.policy": "compact"}, "reset": ["retention.ms"]})),
        )
        .await;
    assert_eq!(status, 200, "{t}");
    assert_eq!(retention(&t)["is_default"], true);
    let config = c.cluster.topics().describe("orders").unwrap().config;
    assert_eq!(config.cleanup_policy.as_str(), "compact");

    let (status, e) = c.call("DELETE", "/api/topics/orders", None).await;
    assert_eq!(status, 400, "deleting needs the name twice: {e}");
    assert!(
        c.cluster
            .topics()
            .list()
            .unwrap()
            .contains(&"orders".to_string())
    );
    let (status, _) = c
        .call("DELETE", "/api/topics/orders?confirm=orders", None)
        .await;
    assert_eq!(status, 200);
    let (status, e) = c.call("GET", "/api/topics/orders", None).await;
    assert_eq!((status, error_code(&e)), (404, "UNKNOWN_TOPIC"));
}

#[tokio::test]
async fn a_produced_record_is_browsed_back_with_its_headers_and_the_partition_internals_show() {
    let c = Console::with_topic("t", 2).await;
    let (status, r) = c
        .call(
            "POST",
            "/api/topics/t/records",
            Some(json!({"partition": 1, "key": "k", "value": "{\"a\":1}",
                        "headers": [{"key": "trace", "value": "abc"}, {"key": "none", "value": null}]})),
        )
        .await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(
        (r["partition"].as_i64(), r["offset"].as_i64()),
        (Some(1), Some(0))
    );
    let (status, _) = c
        .call(
            "POST",
            "/api/topics/t/records",
            Some(json!({"partition": 1, "key": "AAE=", "value": null, "encoding": "base64"})),
        )
        .await;
    assert_eq!(status, 200);

    let page = c
        .get("/api/topics/t/partitions/1/records?offset=0&limit=10")
        .await;
    assert_eq!(page["high_watermark"], 2);
    let records = page["records"].as_array().unwrap();
    assert_eq!(records.len(), 2);
    assert_eq!(records[0]["key"], "aw=="); // "k"
    assert_eq!(records[0]["value"], "eyJhIjoxfQ=="); // {"a":1}
    assert_eq!(
        records[0]["headers"],
        json!([{"key": "trace", "value": "YWJj"}, {"key": "none", "value": null}])
    );
    assert_eq!(records[1]["key"], "AAE=");
    assert_eq!(records[1]["value"], Value::Null, "a tombstone");
    assert_eq!(records[0]["control"], Value::Null);
    assert_eq!(records[0]["aborted"], false);
}

#[tokio::test]
async fn browsing_by_time_and_the_partition_internals_answer() {
    let c = Console::with_topic("t", 2).await;
    for value in ["a", "b"] {
        let (status, _) = c
            .call(
                "POST",
                "/api/topics/t/records",
                Some(json!({"partition": 1, "value": value})),
            )
            .await;
        assert_eq!(status, 200);
    }
    let page = c
        .get("/api/topics/t/partitions/1/records?offset=0&limit=10")
        .await;
    let records = page["records"].as_array().unwrap();
    // Browsing by time starts at the first record at or after it (two
    // records may share a millisecond), or at the end after the last one.
    let stamps: Vec<i64> = records
        .iter()
        .map(|r| r["timestamp_ms"].as_i64().unwrap())
        .collect();
    for (ts, start) in [
        (
            stamps[1],
            stamps.iter().position(|s| *s >= stamps[1]).unwrap(),
        ),
        (stamps[1] + 1, 2),
        (0, 0),
    ] {
        let by_time = c
            .get(&format!(
                "/api/topics/t/partitions/1/records?timestamp={ts}&limit=1"
            ))
            .await;
        assert_eq!(by_time["start_offset"], start, "timestamp {ts}");
    }
    let (status, e) = c
        .call(
            "GET",
            "/api/topics/t/partitions/1/records?offset=0&timestamp=1",
            None,
        )
        .await;
    assert_eq!(status, 400, "{e}");

    let p = c.get("/api/topics/t/partitions/1").await;
    assert_eq!(p["health"], "online");
    assert_eq!(p["log_end_offset"], 2);
    assert_eq!(p["epochs"], json!([{"epoch": 0, "start_offset": 0}]));
    assert_eq!(p["segments"][0]["base_offset"], 0);
    assert_eq!(p["segments"][0]["active"], true);
    assert_eq!(p["traffic"]["produced_records"], 2);
    assert_eq!(
        p["traffic"]["fetched_records"], 0,
        "browsing is not a client fetch"
    );
    let (status, e) = c.call("GET", "/api/topics/t/partitions/9", None).await;
    assert_eq!((status, error_code(&e)), (404, "UNKNOWN_PARTITION"));
    let (status, _) = c.call("GET", "/api/topics/t/partitions/x", None).await;
    assert_eq!(status, 400);
}

#[tokio::test]
async fn groups_show_lag_and_a_reset_is_a_dry_run_until_executed() {
    let c = Console::with_topic("t", 1).await;
    for i in 0..5 {
        c.call(
            "POST",
            "/api/topics/t/records",
            Some(json!({"partition": 0, "value": format!("{i}")})),
        )
        .await;
    }
    let tp = TopicPartition::new("t", 0);
    c.cluster
        .groups()
        .alter_offsets("g", &BTreeMap::from([(tp.clone(), 2)]))
        .unwrap();
    let groups = c.get("/api/groups").await;
    assert_eq!(groups["groups"][0]["group_id"], "g");
    assert_eq!(groups["groups"][0]["lag"], 3);
    let g = c.get("/api/groups/g").await;
    assert_eq!(g["total_lag"], 3);
    assert_eq!(g["partitions"][0]["committed"], 2);
    assert_eq!(g["partitions"][0]["high_watermark"], 5);

    let (status, plan) = c.reset_group_g(json!({"to": "latest"})).await;
    assert_eq!(status, 200, "{plan}");
    assert_eq!(plan["executed"], false);
    assert_eq!(
        plan["plan"],
        json!([{"topic": "t", "partition": 0, "current": 2, "target": 5}])
    );
    assert_eq!(
        c.cluster.groups().fetch_committed("g", &tp).unwrap(),
        Some(2)
    );
    let (status, done) = c
        .reset_group_g(json!({"to": "shift", "value": -1, "topics": ["t"], "execute": true}))
        .await;
    assert_eq!((status, &done["executed"]), (200, &json!(true)));
    assert_eq!(
        c.cluster.groups().fetch_committed("g", &tp).unwrap(),
        Some(1)
    );
    let (status, e) = c.reset_group_g(json!({"to": "sideways"})).await;
    assert_eq!(status, 400, "{e}");
    let (status, _) = c.call("GET", "/api/groups/nobody", None).await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn consumer_protocol_and_share_groups_are_described_with_their_type_and_members() {
    use mk_cluster::{ConsumerHeartbeat, ShareHeartbeat};
    let c = Console::with_topic("t", 2).await;
    let joined = c
        .cluster
        .groups()
        .consumer_heartbeat(ConsumerHeartbeat {
            group_id: "kip848".into(),
            member_id: "m-1".into(),
            member_epoch: 0,
            rebalance_timeout_ms: 30_000,
            subscribed_topic_names: Some(vec!["t".into()]),
            server_assignor: Some("range".into()),
            owned_partitions: Some(Vec::new()),
            client_id: "cli".into(),
            client_host: "/127.0.0.1".into(),
            ..ConsumerHeartbeat::default()
        })
        .unwrap();
    assert_eq!(joined.member_id, "m-1");
    c.cluster
        .groups()
        .share_heartbeat(ShareHeartbeat {
            group_id: "queue".into(),
            member_id: "s-1".into(),
            member_epoch: 0,
            subscribed_topic_names: Some(vec!["t".into()]),
            client_id: "share-cli".into(),
            client_host: "/127.0.0.1".into(),
            ..ShareHeartbeat::default()
        })
        .unwrap();

    let list = c.get("/api/groups").await;
    let row = |id: &str| {
        list["groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["group_id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("{id} listed: {list}"))
    };
    assert_eq!(row("kip848")["group_type"], "consumer");
    assert_eq!(row("kip848")["members"], 1);
    assert_eq!(row("queue")["group_type"], "share");
    assert_eq!(row("queue")["members"], 1);

    let g = c.get("/api/groups/kip848").await;
    assert_eq!(g["group_type"], "consumer", "{g}");
    assert_ne!(g["state"], "Dead", "{g}");
    assert_eq!(g["coordinator_assignor"], "range");
    let m = &g["members"][0];
    assert_eq!(
        (&m["member_id"], &m["client_id"]),
        (&json!("m-1"), &json!("cli"))
    );
    let both = json!([{"topic": "t", "partition": 0}, {"topic": "t", "partition": 1}]);
    assert_eq!(m["target"], both, "{g}");
    assert_eq!(m["assignment"], both, "{g}");

    let g = c.get("/api/groups/queue").await;
    assert_eq!(g["group_type"], "share", "{g}");
    assert_ne!(g["state"], "Dead", "{g}");
    assert_eq!(g["members"][0]["member_id"], "s-1");
    assert_eq!(g["members"][0]["assignment"], both, "{g}");
}

#[tokio::test]
async fn overview_and_transactions_answer_and_the_page_is_served() {
    let c = Console::with_topic("t", 2).await;
    let o = c.get("/api/overview").await;
    assert_eq!(o["brokers"], json!([{"id": 1, "online": true}]));
    assert_eq!(o["partitions"]["total"], 2);
    assert_eq!(o["partitions"]["online"], 2);
    assert_eq!(o["disk_full"], Value::Null);
    assert!(o["disk"]["total_bytes"].as_u64().unwrap() > 0);
    let t = c.get("/api/transactions").await;
    assert_eq!(t, json!({"transactions": [], "recent": []}));

    let (status, head, body) = c.get_from("localhost:9080", "/").await;
    assert_eq!(status, 200);
    let head = head.to_ascii_lowercase();
    assert!(head.contains("content-type: text/html"), "{head}");
    assert!(
        head.contains("content-security-policy: default-src 'self'"),
        "{head}"
    );
    assert!(
        String::from_utf8(body)
            .unwrap()
            .contains("/assets/js/app.js")
    );
    let (status, _, body) = c
        .get_from("[::1]", "/assets/vendor/uplot/uPlot.iife.min.js")
        .await;
    assert_eq!(status, 200);
    assert!(body.len() > 40_000);
    let (status, e) = c.call("GET", "/api/nothing", None).await;
    assert_eq!((status, error_code(&e)), (404, "NOT_FOUND"));
}

#[tokio::test]
async fn requests_from_other_sites_or_names_and_oversized_bodies_are_refused() {
    let c = Console::start_with(ConsoleOptions {
        max_body_bytes: 1024,
        ..ConsoleOptions::default()
    })
    .await;
    let (status, _, _) = c.get_from("rebound.example:9080", "/api/overview").await;
    assert_eq!(status, 403, "a DNS-rebound name is refused");
    let (status, _, _) = c.get_from("localhost:9080", "/api/overview").await;
    assert_eq!(status, 200);

    let body = json!({"name": "t"}).to_string();
    let post = |extra: &str| {
        format!(
            "POST /api/topics HTTP/1.1\r\nHost: 127.0.0.1:9080\r\nConnection: close\r\n{extra}\
             Content-Length: {}\r\n\r\n",
            body.len()
        )
    };
    // (extra headers, expected status, why): refused ones first, so the
    // topic exists only after the last.
    let posts = [
        (
            "Content-Type: text/plain\r\n",
            400,
            "a form post from another page is not JSON",
        ),
        (
            "Content-Type: application/json\r\nOrigin: http://evil.example\r\n",
            403,
            "another origin",
        ),
        (
            "Content-Type: application/json\r\nOrigin: http://127.0.0.1:9080\r\n",
            201,
            "the console's own page",
        ),
    ];
    for (extra, expected, why) in posts {
        assert!(
            c.cluster.topics().list().unwrap().is_empty(),
            "nothing was created before: {why}"
        );
        let (status, _, _) = c.raw(&post(extra), body.as_bytes()).await;
        assert_eq!(status, expected, "{why}");
    }

    let big = json!({"value": "x".repeat(2048)}).to_string();
    let (status, _, _) = c
        .raw(
            &format!(
                "POST /api/topics/t/records HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\
                 Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                big.len()
            ),
            big.as_bytes(),
        )
        .await;
    assert_eq!(status, 400, "over the body limit");
    assert_eq!(
        c.cluster
            .data()
            .log_end_offset(&TopicPartition::new("t", 0))
            .unwrap(),
        0
    );
}

#[tokio::test]
async fn shutdown_closes_the_listener() {
    let mut c = Console::start().await;
    c.get("/api/overview").await;
    c.server.take().unwrap().shutdown().await;
    assert!(
        TcpStream::connect(c.addr).await.is_err(),
        "nothing listens any more"
    );
}
