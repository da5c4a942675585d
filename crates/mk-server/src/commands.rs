//! The client subcommands' shared pieces — the connection (with its
//! request timeout), the error type and how errors are printed (text or
//! `--json`, exit 2 for usage errors) — and the small commands: topic
//! administration, broker offline/online, stats and the in-process labs.
//! Produce, consume and the group commands have their own modules.

use mk_adapter_jsontcp::{ClientError, JsonTcpClient, TopicConfigOverrides};
use mk_cluster::{ConfigChange, ErrorCode};
use serde_json::json;
use std::process::ExitCode;
use std::time::Duration;

/// Why a client subcommand failed.
#[derive(Debug)]
pub enum CmdError {
    /// The command line is wrong in a way clap could not see (exit 2, as
    /// clap's own usage errors).
    Usage(String),
    /// The server answered with an error, the connection broke or the
    /// request timed out.
    Client(ClientError),
    /// Something local: stdin, stdout, a bad input line.
    Failed(String),
}

impl From<ClientError> for CmdError {
    fn from(e: ClientError) -> Self {
        CmdError::Client(e)
    }
}

pub type CmdResult = Result<(), CmdError>;

pub fn usage<T>(msg: impl Into<String>) -> Result<T, CmdError> {
    Err(CmdError::Usage(msg.into()))
}

impl CmdError {
    /// The stable code of the error: the server's, INVALID_REQUEST for a
    /// usage error, REQUEST_TIMED_OUT for the client's timeout, none for a
    /// local failure.
    fn code(&self) -> Option<&'static str> {
        match self {
            CmdError::Usage(_) => Some(ErrorCode::InvalidRequest.as_str()),
            CmdError::Client(ClientError::Server(e)) => Some(e.code.as_str()),
            CmdError::Client(ClientError::TimedOut(_)) => Some(ErrorCode::RequestTimedOut.as_str()),
            CmdError::Client(_) | CmdError::Failed(_) => None,
        }
    }

    /// The message without a prefix that only repeats the code: the core's
    /// messages start with a readable form of their code ("unknown topic:
    /// ..."), which after `UNKNOWN_TOPIC:` says the same thing twice.
    fn message(&self) -> String {
        match self {
            CmdError::Usage(m) | CmdError::Failed(m) => m.clone(),
            CmdError::Client(ClientError::Server(e)) => {
                let spoken = format!("{}: ", e.code.as_str().to_lowercase().replace('_', " "));
                e.message
                    .strip_prefix(&spoken)
                    .unwrap_or(&e.message)
                    .to_string()
            }
            CmdError::Client(e) => e.to_string(),
        }
    }

    /// Prints the error on stderr (one JSON object with `--json`) and
    /// returns the exit code: 2 for usage errors, 1 otherwise.
    pub fn report(&self, as_json: bool) -> ExitCode {
        let (code, message) = (self.code(), self.message());
        if as_json {
            eprintln!("{}", json!({"ok": false, "code": code, "message": message}));
        } else {
            match code {
                Some(c) => eprintln!("mk-server: {c}: {message}"),
                None => eprintln!("mk-server: {message}"),
            }
        }
        match self {
            CmdError::Usage(_) => ExitCode::from(2),
            _ => ExitCode::FAILURE,
        }
    }
}

/// Connects to `server`; every call is bounded by `timeout` (none when 0).
pub async fn connect(server: &str, timeout_ms: u64) -> Result<JsonTcpClient, CmdError> {
    let mut c = JsonTcpClient::connect(server).await.map_err(|e| {
        CmdError::Failed(format!(
            "cannot connect to {server}: {e} (is `mk-server` running? --server or MK_SERVER says where)"
        ))
    })?;
    c.set_request_timeout((timeout_ms > 0).then(|| Duration::from_millis(timeout_ms)));
    Ok(c)
}

/// `key=value` pairs into `create_topic`'s settings. The wire decoder is
/// the one place that knows the setting names, so the pairs go through it.
fn parse_config(pairs: &[String]) -> Result<Option<TopicConfigOverrides>, CmdError> {
    if pairs.is_empty() {
        return Ok(None);
    }
    let mut object = serde_json::Map::new();
    for pair in pairs {
        let Some((k, v)) = pair.split_once('=') else {
            return usage(format!("--config expects key=value, got {pair:?}"));
        };
        let value = match v.parse::<i64>() {
            Ok(n) => json!(n),
            Err(_) if v == "null" => serde_json::Value::Null,
            Err(_) => json!(v),
        };
        object.insert(k.to_string(), value);
    }
    let request = json!({
        "operation": "create_topic", "topic": "x", "partitions": 1,
        "replication_factor": 1, "config": object,
    });
    match mk_adapter_jsontcp::decode_request_line(request.to_string().as_bytes()).request {
        Ok(mk_adapter_jsontcp::Request::CreateTopic { config, .. }) => Ok(config),
        Ok(_) => Err(CmdError::Failed("internal error decoding --config".into())),
        Err(e) => usage(format!("--config: {e}")),
    }
}

pub async fn topic_create(
    c: &mut JsonTcpClient,
    name: &str,
    partitions: u32,
    replication_factor: usize,
    config: &[String],
    as_json: bool,
) -> CmdResult {
    let config = parse_config(config)?;
    c.create_topic_with_config(name, partitions, replication_factor, config)
        .await?;
    if as_json {
        println!(
            "{}",
            json!({"topic": name, "partitions": partitions, "replication_factor": replication_factor})
        );
    } else {
        println!(
            "created topic {name} ({partitions} partition(s), replication factor {replication_factor})"
        );
    }
    Ok(())
}

pub async fn topic_delete(c: &mut JsonTcpClient, name: &str, as_json: bool) -> CmdResult {
    c.delete_topic(name).await?;
    if as_json {
        println!("{}", json!({"topic": name, "deleted": true}));
    } else {
        println!("deleted topic {name}");
    }
    Ok(())
}

/// What `topic alter` changes.
pub struct TopicAlter<'a> {
    pub name: &'a str,
    pub partitions: Option<u32>,
    pub set: &'a [String],
    pub delete: &'a [String],
    pub validate_only: bool,
}

/// `topic alter`: grows the partition count and/or sets and resets
/// settings (Kafka's names and spellings, `retention.ms=-1` is forever).
pub async fn topic_alter(c: &mut JsonTcpClient, a: TopicAlter<'_>, as_json: bool) -> CmdResult {
    let mut changes = Vec::new();
    for pair in a.set {
        let Some((key, value)) = pair.split_once('=') else {
            return usage(format!("--config expects key=value, got {pair:?}"));
        };
        changes.push(ConfigChange::Set {
            key: key.into(),
            value: value.into(),
        });
    }
    changes.extend(
        a.delete
            .iter()
            .map(|k| ConfigChange::Delete { key: k.clone() }),
    );
    if changes.is_empty() && a.partitions.is_none() {
        return usage("topic alter needs --partitions, --config or --delete-config");
    }
    if a.validate_only && a.partitions.is_some() {
        return usage("--validate-only checks config changes only; leave out --partitions");
    }
    if let Some(n) = a.partitions {
        c.create_partitions(a.name, n).await?;
        if !as_json {
            println!("topic {} now has {n} partition(s)", a.name);
        }
    }
    let config = if changes.is_empty() {
        None
    } else {
        Some(
            c.alter_topic_config(a.name, changes, a.validate_only)
                .await?,
        )
    };
    let entries = c.describe_topic_config(a.name).await?;
    if as_json {
        println!(
            "{}",
            json!({"topic": a.name, "partitions": a.partitions, "validate_only": a.validate_only,
                   "config": config_json(&entries)})
        );
    } else if let Some(config) = config.as_ref().filter(|_| a.validate_only) {
        // Nothing changed, so the answer of the check is what it would be.
        let text: Vec<String> = mk_cluster::TOPIC_CONFIG_KEYS
            .iter()
            .map(|k| {
                let v = match (*k, config.segment_bytes) {
                    ("segment.bytes", None) => "broker default".to_string(),
                    _ => config.get(k, 0).unwrap_or_default(),
                };
                format!("{k}={v}")
            })
            .collect();
        println!(
            "topic {} config would be (validate only, nothing changed): {}",
            a.name,
            text.join(" ")
        );
    } else if config.is_some() {
        println!("topic {} config is now: {}", a.name, config_text(&entries));
    }
    Ok(())
}

fn config_json(entries: &[mk_cluster::TopicConfigEntry]) -> serde_json::Value {
    let mut m = serde_json::Map::new();
    for e in entries {
        m.insert(e.name.clone(), json!(e.value));
    }
    serde_json::Value::Object(m)
}

fn config_text(entries: &[mk_cluster::TopicConfigEntry]) -> String {
    entries
        .iter()
        .map(|e| format!("{}={}", e.name, e.value))
        .collect::<Vec<_>>()
        .join(" ")
}

pub async fn broker_offline(c: &mut JsonTcpClient, broker_id: i32, as_json: bool) -> CmdResult {
    let moved = c.broker_offline(broker_id).await?;
    if as_json {
        let moved: Vec<_> = moved
            .iter()
            .map(|(tp, le)| {
                json!({"topic": tp.topic, "partition": tp.partition,
                       "leader_id": le.leader_id, "leader_epoch": le.leader_epoch})
            })
            .collect();
        println!("{}", json!({ "broker_id": broker_id, "moved": moved }));
    } else {
        println!("broker {broker_id} is offline");
        for (tp, le) in moved {
            println!(
                "  {tp}: leader now broker {} (epoch {})",
                le.leader_id, le.leader_epoch
            );
        }
    }
    Ok(())
}

pub async fn broker_online(c: &mut JsonTcpClient, broker_id: i32, as_json: bool) -> CmdResult {
    c.broker_online(broker_id).await?;
    if as_json {
        println!("{}", json!({ "broker_id": broker_id, "online": true }));
    } else {
        println!("broker {broker_id} is online; its replicas catch up as followers");
    }
    Ok(())
}

pub async fn topic_list(c: &mut JsonTcpClient, as_json: bool) -> CmdResult {
    let topics = c.list_topics().await?;
    if as_json {
        println!("{}", json!({ "topics": topics }));
    } else if topics.is_empty() {
        println!("(no topics)");
    } else {
        for t in topics {
            println!("{t}");
        }
    }
    Ok(())
}

/// `topic describe`: partitions and the settings in force (the broker's
/// segment size where the topic sets none, `-1` for no limit).
pub async fn topic_describe(c: &mut JsonTcpClient, name: &str, as_json: bool) -> CmdResult {
    let d = c.metadata(name).await?;
    let entries = c.describe_topic_config(name).await?;
    if as_json {
        let partitions: Vec<_> = d
            .partitions
            .iter()
            .map(|p| {
                json!({
                    "partition": p.partition, "leader_id": p.leader_id,
                    "leader_epoch": p.leader_epoch, "replicas": p.replicas, "isr": p.isr,
                    "high_watermark": p.high_watermark,
                    "last_stable_offset": p.last_stable_offset,
                    "log_start_offset": p.log_start_offset,
                    "log_end_offset": p.log_end_offset,
                })
            })
            .collect();
        println!(
            "{}",
            json!({"topic": d.name, "partitions": partitions, "config": config_json(&entries)})
        );
        return Ok(());
    }
    println!("topic {}: {}", d.name, config_text(&entries));
    println!("partition  leader  epoch  replicas  isr  log-start  high-watermark  log-end");
    for p in &d.partitions {
        println!(
            "{:>9}  {:>6}  {:>5}  {:<8}  {:<3}  {:>9}  {:>14}  {:>7}",
            p.partition,
            p.leader_id,
            p.leader_epoch,
            ids(&p.replicas),
            ids(&p.isr),
            p.log_start_offset,
            p.high_watermark,
            p.log_end_offset
        );
    }
    Ok(())
}

fn ids(v: &[i32]) -> String {
    v.iter().map(i32::to_string).collect::<Vec<_>>().join(",")
}

/// `stats`: the wire `stats` operation.
pub async fn stats(c: &mut JsonTcpClient, as_json: bool) -> CmdResult {
    let s = c.stats().await?;
    let k = &s.cluster;
    if as_json {
        println!(
            "{}",
            json!({
                "uptime_ms": k.uptime_ms, "connections": s.connections, "requests": s.requests,
                "topics": k.topics, "partitions": k.partitions, "groups": k.groups,
                "transactions": k.transactions, "records": k.records, "log_bytes": k.log_bytes,
                "owned_tasks": k.owned_tasks, "in_flight": s.in_flight,
            })
        );
    } else {
        println!("uptime        {} s", k.uptime_ms / 1000);
        println!(
            "connections   {} (JSON-TCP, this one included)",
            s.connections
        );
        println!("requests      {} (JSON-TCP, answered)", s.requests);
        println!("topics        {}", k.topics);
        println!("partitions    {}", k.partitions);
        println!("groups        {}", k.groups);
        println!("transactions  {}", k.transactions);
        println!("records       {}", k.records);
        println!("log bytes     {}", k.log_bytes);
    }
    Ok(())
}

pub async fn lab(name: &str, as_json: bool) -> CmdResult {
    if !mk_labs::LAB_NAMES.contains(&name) {
        return usage(format!(
            "unknown lab {name:?}; available: {}",
            mk_labs::LAB_NAMES.join(", ")
        ));
    }
    let dir = tempfile::tempdir()
        .map_err(|e| CmdError::Failed(format!("cannot create a temp dir: {e}")))?;
    let report = mk_labs::run_lab(name, dir.path())
        .await
        .map_err(|e| CmdError::Failed(format!("lab {name} failed: {e}")))?;
    if as_json {
        println!(
            "{}",
            json!({"name": report.name, "steps": report.steps, "facts": report.facts})
        );
    } else {
        println!(
            "lab {} (in-process, on a temporary data directory)",
            report.name
        );
        for step in &report.steps {
            println!("{step}");
        }
    }
    Ok(())
}
