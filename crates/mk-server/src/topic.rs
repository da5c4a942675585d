//! The `topic` commands, like kafka-topics: create, list (with partition
//! counts, replication factors and what is unhealthy), describe (one topic
//! or all: settings in force and each partition's leader, ISR and offsets,
//! an offline partition shown as offline with the reason), alter and
//! delete.

use crate::commands::{CmdError, CmdResult, answer, say, usage};
use mk_adapter_jsontcp::{JsonTcpClient, TopicConfigOverrides};
use mk_cluster::{BrokerId, ConfigChange, PartitionInfo};
use serde_json::json;

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
    answer(
        as_json,
        &json!({"topic": name, "partitions": partitions, "replication_factor": replication_factor}),
        format_args!(
            "created topic {name} ({partitions} partition(s), replication factor {replication_factor})"
        ),
    )
}

pub async fn topic_delete(c: &mut JsonTcpClient, name: &str, as_json: bool) -> CmdResult {
    c.delete_topic(name).await?;
    answer(
        as_json,
        &json!({"topic": name, "deleted": true}),
        format_args!("deleted topic {name}"),
    )
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
            say!("topic {} now has {n} partition(s)", a.name);
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
        say!(
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
        say!(
            "topic {} config would be (validate only, nothing changed): {}",
            a.name,
            text.join(" ")
        );
    } else if config.is_some() {
        say!("topic {} config is now: {}", a.name, config_text(&entries));
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

/// How a partition is doing, as an operator reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Status {
    /// Its leader serves and every replica is in sync.
    Ok,
    /// Served, but fewer in-sync replicas than the replication factor
    /// (the replicas a move adds do not count).
    UnderReplicated,
    /// Nobody can serve it; the reason says why.
    Offline(String),
}

impl Status {
    fn of(p: &PartitionInfo, offline_brokers: &[BrokerId]) -> Status {
        if let Some(cause) = &p.damaged {
            return Status::Offline(format!(
                "damaged: {cause}; every read and write of it answers STORAGE_ERROR"
            ));
        }
        if offline_brokers.contains(&p.leader_id) {
            return Status::Offline(format!(
                "its leader, broker {}, is offline and no in-sync replica could take over",
                p.leader_id
            ));
        }
        if p.is_under_replicated() {
            return Status::UnderReplicated;
        }
        Status::Ok
    }

    fn name(&self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::UnderReplicated => "under-replicated",
            Status::Offline(_) => "offline",
        }
    }

    fn reason(&self) -> Option<&str> {
        match self {
            Status::Offline(why) => Some(why),
            _ => None,
        }
    }
}

/// One topic's partitions from `describe_cluster`, in order.
fn partitions_of<'a>(all: &'a [PartitionInfo], topic: &str) -> Vec<&'a PartitionInfo> {
    let mut ps: Vec<&PartitionInfo> = all.iter().filter(|p| p.topic == topic).collect();
    ps.sort_by_key(|p| p.partition);
    ps
}

/// `topic list`: every topic with its partition count, replication factor
/// and how many partitions are offline or under-replicated, then a
/// summary line.
pub async fn topic_list(c: &mut JsonTcpClient, as_json: bool) -> CmdResult {
    let topics = c.list_topics().await?;
    let d = c.describe_cluster().await?;
    let mut rows = Vec::with_capacity(topics.len());
    for t in &topics {
        let ps = partitions_of(&d.partitions, t);
        let statuses: Vec<Status> = ps
            .iter()
            .map(|p| Status::of(p, &d.offline_brokers))
            .collect();
        let count = |name: &str| statuses.iter().filter(|s| s.name() == name).count();
        let rf = ps.iter().map(|p| p.replicas.len()).max().unwrap_or(0);
        rows.push((t, ps.len(), rf, count("offline"), count("under-replicated")));
    }
    let total: usize = rows.iter().map(|r| r.1).sum();
    let offline: usize = rows.iter().map(|r| r.3).sum();
    let under: usize = rows.iter().map(|r| r.4).sum();
    if as_json {
        let list: Vec<_> = rows
            .iter()
            .map(|(t, n, rf, off, ur)| {
                json!({"topic": t, "partitions": n, "replication_factor": rf,
                       "offline_partitions": off, "under_replicated_partitions": ur})
            })
            .collect();
        say!(
            "{}",
            json!({"topics": list, "summary": {"topics": rows.len(), "partitions": total,
                   "offline_partitions": offline, "under_replicated_partitions": under}})
        );
        return Ok(());
    }
    if rows.is_empty() {
        say!("(no topics)");
        return Ok(());
    }
    let width = rows.iter().map(|r| r.0.len()).max().unwrap_or(5).max(5);
    say!(
        "{:<width$}  partitions  replication  offline  under-replicated",
        "topic"
    );
    for (t, n, rf, off, ur) in &rows {
        say!("{t:<width$}  {n:>10}  {rf:>11}  {off:>7}  {ur:>16}");
    }
    say!(
        "{} topic(s), {total} partition(s): {offline} offline, {under} under-replicated",
        rows.len()
    );
    Ok(())
}

/// `topic describe [NAME]`: one topic, or every topic without a name.
pub async fn topic_describe(c: &mut JsonTcpClient, name: Option<&str>, as_json: bool) -> CmdResult {
    let names = match name {
        Some(n) => {
            // UNKNOWN_TOPIC for a missing name, before anything is printed.
            c.metadata(n).await?;
            vec![n.to_string()]
        }
        None => c.list_topics().await?,
    };
    let d = c.describe_cluster().await?;
    if names.is_empty() && !as_json {
        say!("(no topics)");
    }
    let mut all = Vec::new();
    for (i, t) in names.iter().enumerate() {
        let entries = c.describe_topic_config(t).await?;
        let ps = partitions_of(&d.partitions, t);
        if as_json {
            let one = describe_json(t, &ps, &entries, &d.offline_brokers);
            match name {
                Some(_) => say!("{one}"),
                None => all.push(one),
            }
            continue;
        }
        if i > 0 {
            say!("");
        }
        describe_text(t, &ps, &entries, &d.offline_brokers)?;
    }
    if as_json && name.is_none() {
        say!("{}", json!({ "topics": all }));
    }
    Ok(())
}

fn describe_json(
    topic: &str,
    ps: &[&PartitionInfo],
    entries: &[mk_cluster::TopicConfigEntry],
    offline_brokers: &[BrokerId],
) -> serde_json::Value {
    let partitions: Vec<_> = ps
        .iter()
        .map(|p| {
            let status = Status::of(p, offline_brokers);
            let offline = status.reason().is_some();
            json!({
                "partition": p.partition,
                // -1 is Kafka's "no leader".
                "leader_id": if offline { -1 } else { p.leader_id },
                "leader_epoch": p.leader_epoch, "replicas": p.replicas,
                "isr": if p.damaged.is_some() { Vec::new() } else { p.isr.clone() },
                "high_watermark": p.high_watermark,
                "last_stable_offset": p.last_stable_offset,
                "log_start_offset": p.log_start_offset,
                "log_end_offset": p.log_end_offset,
                "status": status.name(), "offline_reason": status.reason(),
            })
        })
        .collect();
    json!({"topic": topic, "partitions": partitions, "config": config_json(entries)})
}

fn describe_text(
    topic: &str,
    ps: &[&PartitionInfo],
    entries: &[mk_cluster::TopicConfigEntry],
    offline_brokers: &[BrokerId],
) -> CmdResult {
    let rf = ps.iter().map(|p| p.replicas.len()).max().unwrap_or(0);
    say!(
        "topic {topic} ({} partition(s), replication factor {rf}): {}",
        ps.len(),
        config_text(entries)
    );
    say!("partition  leader  epoch  replicas  isr    log-start  high-watermark  log-end  status");
    let mut reasons = Vec::new();
    for p in ps {
        let status = Status::of(p, offline_brokers);
        let damaged = p.damaged.is_some();
        let (leader, isr) = match (&status, damaged) {
            (Status::Offline(_), true) => ("none".to_string(), "-".to_string()),
            (Status::Offline(_), false) => ("none".to_string(), ids(&p.isr)),
            _ => (p.leader_id.to_string(), ids(&p.isr)),
        };
        let offset = |o: i64| {
            if damaged && o < 0 {
                "-".to_string()
            } else {
                o.to_string()
            }
        };
        say!(
            "{:>9}  {:>6}  {:>5}  {:<8}  {:<5}  {:>9}  {:>14}  {:>7}  {}",
            p.partition,
            leader,
            p.leader_epoch,
            ids(&p.replicas),
            isr,
            offset(p.log_start_offset),
            offset(p.high_watermark),
            offset(p.log_end_offset),
            status.name()
        );
        if let Some(why) = status.reason() {
            reasons.push(format!("  {topic}-{} is offline: {why}", p.partition));
        }
    }
    for r in reasons {
        say!("{r}");
    }
    Ok(())
}

fn ids(v: &[i32]) -> String {
    if v.is_empty() {
        return "-".to_string();
    }
    v.iter().map(i32::to_string).collect::<Vec<_>>().join(",")
}
