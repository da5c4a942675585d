//! Topic operations on the wire: `create_topic`, `metadata`, `list_topics`,
//! `delete_topic`, `create_partitions`, `alter_topic_config` and
//! `describe_topic_config`.
//! Each operation is a module with its four directions side by side:
//! `decode` (request, server side), `encode` (request, client side),
//! `encode_response` (server side) and `decode_response` (client side).

use super::common::{
    objects, one_string_request, partition_infos_of, write_partition_infos, write_strings,
};
use super::{Request, Response, TopicConfigOverrides};
use crate::wire::{DecodeError, Decoded, Fields, ObjWriter, bad, push_array, type_name};
use mk_cluster::{
    CleanupPolicy, ConfigChange, TopicConfig, TopicConfigEntry, TopicDescription, kafka_limit,
};
use serde_json::{Map, Value};

/// `create_topic`: topic, partitions, replication_factor, optional config
/// (Kafka's topic settings by name) -> topic.
pub(super) mod create_topic {
    use super::*;

    pub fn decode(f: &Fields<'_>) -> Decoded<Request> {
        Ok(Request::CreateTopic {
            topic: f.string("topic")?,
            partitions: f.u32("partitions")?,
            replication_factor: f.int_as("replication_factor", 0, i64::from(i32::MAX))?,
            config: match f.get("config") {
                None => None,
                Some(_) => Some(overrides_of(f.object("config")?)?),
            },
        })
    }

    pub fn encode(
        w: &mut ObjWriter<'_>,
        topic: &str,
        partitions: u32,
        replication_factor: usize,
        config: Option<&TopicConfigOverrides>,
    ) {
        w.str("topic", topic)
            .int("partitions", i64::from(partitions))
            .int("replication_factor", replication_factor as i64);
        if let Some(c) = config {
            w.with("config", |out| write_overrides(out, c));
        }
    }

    pub fn encode_response(w: &mut ObjWriter<'_>, topic: &str) {
        w.str("topic", topic);
    }

    pub fn decode_response(f: &Fields<'_>) -> Decoded<Response> {
        Ok(Response::CreateTopic {
            topic: f.string("topic")?,
        })
    }
}

/// `metadata`: topic, optional allow_auto_create (default false) -> topic,
/// partitions (ascending), config.
pub(super) mod metadata {
    use super::*;

    pub fn decode(f: &Fields<'_>) -> Decoded<Request> {
        Ok(Request::Metadata {
            topic: f.string("topic")?,
            allow_auto_create: f.get("allow_auto_create").is_some()
                && f.bool("allow_auto_create")?,
        })
    }

    pub fn encode(w: &mut ObjWriter<'_>, topic: &str, allow_auto_create: bool) {
        w.str("topic", topic);
        if allow_auto_create {
            w.bool("allow_auto_create", true);
        }
    }

    pub fn encode_response(w: &mut ObjWriter<'_>, d: &TopicDescription) {
        w.str("topic", &d.name);
        write_partition_infos(w, &d.partitions, false);
        w.with("config", |out| write_config(out, &d.config));
    }

    pub fn decode_response(f: &Fields<'_>) -> Decoded<Response> {
        let name = f.string("topic")?;
        let partitions = partition_infos_of(f, Some(&name))?;
        Ok(Response::Metadata(TopicDescription {
            config: config_of(f.object("config")?)?,
            name,
            partitions,
        }))
    }
}

/// `list_topics`: nothing -> topics (sorted; internal topics hidden).
pub(super) mod list_topics {
    use super::*;

    pub fn encode_response(w: &mut ObjWriter<'_>, topics: &[String]) {
        w.with("topics", |out| write_strings(out, topics));
    }

    pub fn decode_response(f: &Fields<'_>) -> Decoded<Response> {
        Ok(Response::ListTopics(f.strings("topics")?))
    }
}

/// `delete_topic`: topic -> nothing (the topic, its records and every
/// group's committed offsets for it are gone).
pub(super) mod delete_topic {
    use super::*;

    one_string_request!(DeleteTopic, topic);
}

/// `create_partitions`: topic, partitions (the new total, as in Kafka's
/// CreatePartitions) -> nothing.
pub(super) mod create_partitions {
    use super::*;

    pub fn decode(f: &Fields<'_>) -> Decoded<Request> {
        Ok(Request::CreatePartitions {
            topic: f.string("topic")?,
            partitions: f.u32("partitions")?,
        })
    }

    pub fn encode(w: &mut ObjWriter<'_>, topic: &str, partitions: u32) {
        w.str("topic", topic)
            .int("partitions", i64::from(partitions));
    }
}

/// `alter_topic_config`: topic, optional `set` ({key: value} in Kafka's
/// spelling, a string or an integer; `-1` is no limit), optional `delete`
/// (keys back to the cluster default), optional validate_only (default
/// false) -> config (the whole resulting config, as `metadata` shows it).
/// Sets apply in key order, then deletes; all or nothing.
pub(super) mod alter_topic_config {
    use super::*;

    pub fn decode(f: &Fields<'_>) -> Decoded<Request> {
        let mut changes = Vec::new();
        if let Some(set) = f.get("set") {
            let Some(map) = set.as_object() else {
                return bad(format!(
                    "field \"set\" must be an object, got {}",
                    type_name(set)
                ));
            };
            for (key, v) in map {
                let value = match v {
                    serde_json::Value::String(s) => s.clone(),
                    serde_json::Value::Number(n) if n.is_i64() => n.to_string(),
                    other => {
                        return bad(format!(
                            "set.{key} must be a string or an integer, got {}",
                            type_name(other)
                        ));
                    }
                };
                changes.push(ConfigChange::Set {
                    key: key.clone(),
                    value,
                });
            }
        }
        if f.get("delete").is_some() {
            for key in f.strings("delete")? {
                changes.push(ConfigChange::Delete { key });
            }
        }
        Ok(Request::AlterTopicConfig {
            topic: f.string("topic")?,
            changes,
            validate_only: f.get("validate_only").is_some() && f.bool("validate_only")?,
        })
    }

    pub fn encode(
        w: &mut ObjWriter<'_>,
        topic: &str,
        changes: &[ConfigChange],
        validate_only: bool,
    ) {
        w.str("topic", topic);
        let sets: Vec<(&str, &str)> = changes
            .iter()
            .filter_map(|c| match c {
                ConfigChange::Set { key, value } => Some((key.as_str(), value.as_str())),
                ConfigChange::Delete { .. } => None,
            })
            .collect();
        let deletes: Vec<String> = changes
            .iter()
            .filter_map(|c| match c {
                ConfigChange::Delete { key } => Some(key.clone()),
                ConfigChange::Set { .. } => None,
            })
            .collect();
        if !sets.is_empty() {
            w.with("set", |out| {
                let mut m = ObjWriter::new(out);
                for (k, v) in &sets {
                    m.str(k, v);
                }
                m.end();
            });
        }
        if !deletes.is_empty() {
            w.with("delete", |out| write_strings(out, &deletes));
        }
        if validate_only {
            w.bool("validate_only", true);
        }
    }

    pub fn encode_response(w: &mut ObjWriter<'_>, config: &TopicConfig) {
        w.with("config", |out| write_config(out, config));
    }

    pub fn decode_response(f: &Fields<'_>) -> Decoded<Response> {
        Ok(Response::AlterTopicConfig(config_of(f.object("config")?)?))
    }
}

/// `describe_topic_config`: topic -> configs [{name, value, default}]:
/// every setting in Kafka's spelling with the value in force (`-1` for no
/// limit, the broker's segment size where the topic sets none) and whether
/// it is the cluster default.
pub(super) mod describe_topic_config {
    use super::*;

    one_string_request!(DescribeTopicConfig, topic);

    pub fn encode_response(w: &mut ObjWriter<'_>, entries: &[TopicConfigEntry]) {
        w.with("configs", |out| {
            push_array(out, entries, |out, e| {
                let mut m = ObjWriter::new(out);
                m.str("name", &e.name)
                    .str("value", &e.value)
                    .bool("default", e.is_default);
                m.end();
            })
        });
    }

    pub fn decode_response(f: &Fields<'_>) -> Decoded<Response> {
        Ok(Response::DescribeTopicConfig(objects(f, "configs", |e| {
            Ok(TopicConfigEntry {
                name: e.string("name")?,
                value: e.string("value")?,
                is_default: e.bool("default")?,
            })
        })?))
    }
}

// ----- topic settings ---------------------------------------------------

/// The settings of a `config` object; keys it does not name stay `None`.
fn overrides_of(map: &Map<String, Value>) -> Decoded<TopicConfigOverrides> {
    let f = Fields::new(map, "config");
    let mut o = TopicConfigOverrides::default();
    for (key, v) in map {
        let nullable = |f: &Fields<'_>, min: i64| -> Decoded<Option<i64>> {
            if v.is_null() {
                Ok(None)
            } else {
                f.int(key, min, i64::MAX).map(Some)
            }
        };
        match key.as_str() {
            "cleanup.policy" => {
                o.cleanup_policy = Some(
                    CleanupPolicy::parse(f.str(key)?).map_err(|e| DecodeError(e.to_string()))?,
                )
            }
            // Kafka spells "no limit" -1; null says the same.
            "retention.ms" => o.retention_ms = Some(nullable(&f, i64::MIN)?.and_then(kafka_limit)),
            "retention.bytes" => {
                o.retention_bytes = Some(nullable(&f, i64::MIN)?.and_then(kafka_limit))
            }
            "segment.bytes" => o.segment_bytes = Some(nullable(&f, 0)?.map(|n| n as u64)),
            "delete.retention.ms" => o.delete_retention_ms = Some(f.i64(key)?),
            // Any other of Kafka's topic configs, as `alter_topic_config`'s
            // `set` takes them (the catalog checks name and value).
            other => {
                let value = match v {
                    Value::String(s) => s.clone(),
                    Value::Number(n) => n.to_string(),
                    Value::Bool(b) => b.to_string(),
                    _ => {
                        return bad(format!(
                            "{other} must be a string, a number or a boolean in Kafka's spelling"
                        ));
                    }
                };
                o.others.insert(other.to_string(), value);
            }
        }
    }
    Ok(o)
}

fn write_overrides(out: &mut Vec<u8>, c: &TopicConfigOverrides) {
    let mut w = ObjWriter::new(out);
    if let Some(p) = c.cleanup_policy {
        w.str("cleanup.policy", p.as_str());
    }
    if let Some(v) = c.retention_ms {
        w.opt_int("retention.ms", v);
    }
    if let Some(v) = c.retention_bytes {
        w.opt_int("retention.bytes", v);
    }
    if let Some(v) = c.segment_bytes {
        w.opt_int("segment.bytes", v.map(|n| n as i64));
    }
    if let Some(v) = c.delete_retention_ms {
        w.int("delete.retention.ms", v);
    }
    for (key, value) in &c.others {
        w.str(key, value);
    }
    w.end();
}

/// A topic's whole configuration (`metadata`): every setting present.
fn config_of(map: &Map<String, Value>) -> Decoded<TopicConfig> {
    let o = overrides_of(map)?;
    let missing = || DecodeError("config lacks a setting".into());
    Ok(TopicConfig {
        cleanup_policy: o.cleanup_policy.ok_or_else(missing)?,
        retention_ms: o.retention_ms.ok_or_else(missing)?,
        retention_bytes: o.retention_bytes.ok_or_else(missing)?,
        segment_bytes: o.segment_bytes.ok_or_else(missing)?,
        delete_retention_ms: o.delete_retention_ms.ok_or_else(missing)?,
        // A `metadata` answer's config object carries the five typed settings; the
        // other Kafka configs are described by `describe_topic_config`.
        others: Default::default(),
    })
}

fn write_config(out: &mut Vec<u8>, c: &TopicConfig) {
    let mut w = ObjWriter::new(out);
    w.str("cleanup.policy", c.cleanup_policy.as_str())
        .opt_int("retention.ms", c.retention_ms)
        .opt_int("retention.bytes", c.retention_bytes)
        .opt_int("segment.bytes", c.segment_bytes.map(|n| n as i64))
        .int("delete.retention.ms", c.delete_retention_ms);
    w.end();
}
