//! Topics: list, create, describe, alter configs, delete, and one
//! partition's internals.

use super::partition_of;
use crate::http::{ApiError, Query, opt_int, str_field};
use mk_cluster::{
    BrokerCluster, ConfigChange, PartitionInfo, PartitionInternals, TopicConfigEntry,
    TopicPartition, Traffic,
};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// `GET /api/topics`: every topic with its partition count, replication
/// factor, size and the health of its partitions.
pub(super) fn list(c: &BrokerCluster) -> Result<Value, ApiError> {
    let mut sizes: BTreeMap<String, u64> = BTreeMap::new();
    for (tp, bytes) in c.views().partition_log_bytes()? {
        *sizes.entry(tp.topic).or_default() += bytes;
    }
    let mut topics = Vec::new();
    for name in c.topics().list()? {
        let d = c.topics().describe(&name)?;
        let partitions: Vec<Value> = d.partitions.iter().map(|p| partition_json(c, p)).collect();
        let configs = c.topics().describe_config(&name)?;
        topics.push(json!({
            "name": name,
            "partitions": d.partitions.len(),
            "replication_factor": d.partitions.first().map_or(0, |p| p.replicas.len()),
            "size_bytes": sizes.get(&name).copied().unwrap_or(0),
            "offline": count(&partitions, "offline"),
            "damaged": count(&partitions, "damaged"),
            "under_replicated": partitions.iter().filter(|p| p["under_replicated"] == true).count(),
            "configs": configs_json(&configs),
        }));
    }
    Ok(json!({ "topics": topics }))
}

fn count(partitions: &[Value], health: &str) -> usize {
    partitions.iter().filter(|p| p["health"] == health).count()
}

/// `POST /api/topics` `{name, partitions, replication_factor, configs}`.
pub(super) fn create(c: &BrokerCluster, body: &Value) -> Result<Value, ApiError> {
    let name = str_field(body, "name")?;
    let partitions = opt_int(body, "partitions")?.unwrap_or(1);
    let replication_factor = opt_int(body, "replication_factor")?.unwrap_or(1);
    let partitions = u32::try_from(partitions)
        .map_err(|_| ApiError::bad_request(format!("partitions must be > 0, got {partitions}")))?;
    let replication_factor = usize::try_from(replication_factor).map_err(|_| {
        ApiError::bad_request(format!(
            "replication_factor must be > 0, got {replication_factor}"
        ))
    })?;
    let changes = config_sets(body.get("configs"))?;
    let defaults = &c.config().default_topic_config;
    let config = defaults.with_changes(&changes, defaults)?;
    c.topics()
        .create_with_config(name, partitions, replication_factor, config)?;
    describe(c, name)
}

/// `{"key": "value", ...}` as config changes that set each key.
fn config_sets(v: Option<&Value>) -> Result<Vec<ConfigChange>, ApiError> {
    let Some(v) = v.filter(|v| !v.is_null()) else {
        return Ok(Vec::new());
    };
    let map = v
        .as_object()
        .ok_or_else(|| ApiError::bad_request("configs must be an object of strings"))?;
    map.iter()
        .map(|(key, value)| {
            let value = match value {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                _ => {
                    return Err(ApiError::bad_request(format!(
                        "config {key} must be a string"
                    )));
                }
            };
            Ok(ConfigChange::Set {
                key: key.clone(),
                value,
            })
        })
        .collect()
}

/// `GET /api/topics/{t}`: configs and every partition.
pub(super) fn describe(c: &BrokerCluster, name: &str) -> Result<Value, ApiError> {
    let d = c.topics().describe(name)?;
    let configs = c.topics().describe_config(name)?;
    let partitions: Vec<Value> = d.partitions.iter().map(|p| partition_json(c, p)).collect();
    Ok(json!({
        "name": d.name,
        "configs": configs_json(&configs),
        "partitions": partitions,
    }))
}

/// `PATCH /api/topics/{t}/configs` `{set: {k: v}, reset: [k]}`: all or
/// nothing.
pub(super) fn alter_configs(
    c: &BrokerCluster,
    name: &str,
    body: &Value,
) -> Result<Value, ApiError> {
    let mut changes = config_sets(body.get("set"))?;
    if let Some(reset) = body.get("reset").filter(|v| !v.is_null()) {
        let keys = reset
            .as_array()
            .ok_or_else(|| ApiError::bad_request("reset must be a list of config names"))?;
        for k in keys {
            let key = k
                .as_str()
                .ok_or_else(|| ApiError::bad_request("reset must be a list of config names"))?;
            changes.push(ConfigChange::Delete {
                key: key.to_string(),
            });
        }
    }
    c.topics().alter_config(name, &changes, false)?;
    describe(c, name)
}

/// `DELETE /api/topics/{t}?confirm={t}`: the name is asked twice, so a
/// stray request deletes nothing.
pub(super) fn delete(c: &BrokerCluster, name: &str, q: &Query) -> Result<Value, ApiError> {
    if q.get("confirm") != Some(name) {
        return Err(ApiError::bad_request(format!(
            "deleting a topic needs ?confirm={name}"
        )));
    }
    c.topics().delete(name)?;
    Ok(json!({ "deleted": name }))
}

/// `GET /api/topics/{t}/partitions/{p}`: leader, replicas, ISR, offsets,
/// the leader-epoch history, segments and open transactions.
pub(super) fn partition(c: &BrokerCluster, topic: &str, p: &str) -> Result<Value, ApiError> {
    let tp = TopicPartition::new(topic, partition_of(p)?);
    let i: PartitionInternals = c.views().partition_internals(&tp)?;
    let mut v = partition_json(c, &i.info);
    v["segments"] = i
        .segments
        .iter()
        .map(|s| {
            json!({
                "base_offset": s.base_offset,
                "next_offset": s.next_offset,
                "size_bytes": s.size_bytes,
                "log_bytes": s.log_bytes,
                "max_timestamp_ms": s.max_timestamp_ms,
                "active": s.active,
            })
        })
        .collect();
    v["epochs"] = i
        .epochs
        .iter()
        .map(|e| json!({"epoch": e.epoch, "start_offset": e.start_offset}))
        .collect();
    v["open_transactions"] = i
        .open_transactions
        .iter()
        .map(|(pid, first)| json!({"producer_id": pid, "first_offset": first}))
        .collect();
    Ok(v)
}

/// One partition's live state, its health and its traffic.
fn partition_json(c: &BrokerCluster, p: &PartitionInfo) -> Value {
    let tp = TopicPartition::new(&p.topic, p.partition);
    let traffic = c.views().partition_traffic(&tp).unwrap_or_default();
    json!({
        "topic": p.topic,
        "partition": p.partition,
        "leader": p.leader_id,
        "leader_epoch": p.leader_epoch,
        "replicas": p.replicas,
        "isr": p.isr,
        "log_start_offset": p.log_start_offset,
        "high_watermark": p.high_watermark,
        "last_stable_offset": p.last_stable_offset,
        "log_end_offset": p.log_end_offset,
        "replica_log_end_offsets": p.log_end_offsets.iter()
            .map(|(b, leo)| json!({"broker": b, "log_end_offset": leo}))
            .collect::<Vec<_>>(),
        "health": c.views().health_of(p).as_str(),
        "under_replicated": p.is_under_replicated(),
        "damaged": p.damaged,
        "traffic": traffic_json(traffic),
    })
}

fn traffic_json(t: Traffic) -> Value {
    json!({
        "produced_records": t.produced_records,
        "fetched_records": t.fetched_records,
        "fetched_bytes": t.fetched_bytes,
    })
}

fn configs_json(configs: &[TopicConfigEntry]) -> Value {
    configs
        .iter()
        .map(|e| json!({"name": e.name, "value": e.value, "is_default": e.is_default}))
        .collect()
}
