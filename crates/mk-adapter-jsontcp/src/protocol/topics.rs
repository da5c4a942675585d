//! Topic operations on the wire: `create_topic`, `metadata`, `list_topics`.
//! Each operation is a module with its four directions side by side:
//! `decode` (request, server side), `encode` (request, client side),
//! `encode_response` (server side) and `decode_response` (client side).

use super::common::{partition_infos_of, write_partition_infos, write_strings};
use super::{Request, Response, TopicConfigOverrides};
use crate::wire::{DecodeError, Decoded, Fields, ObjWriter, bad};
use mk_cluster::{CleanupPolicy, TopicConfig, TopicDescription};
use serde_json::{Map, Value};

/// `create_topic`: topic, partitions, replication_factor, optional config
/// (Kafka's topic settings by name) -> topic.
pub(super) mod create_topic {
    use super::*;

    pub fn decode(f: &Fields<'_>) -> Decoded<Request> {
        Ok(Request::CreateTopic {
            topic: f.string("topic")?,
            partitions: f.u32("partitions")?,
            replication_factor: f.int("replication_factor", 0, i64::from(i32::MAX))? as usize,
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

/// `metadata`: topic -> topic, partitions (ascending), config.
pub(super) mod metadata {
    use super::*;

    pub fn decode(f: &Fields<'_>) -> Decoded<Request> {
        Ok(Request::Metadata {
            topic: f.string("topic")?,
        })
    }

    pub fn encode(w: &mut ObjWriter<'_>, topic: &str) {
        w.str("topic", topic);
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
            "retention.ms" => o.retention_ms = Some(nullable(&f, i64::MIN)?),
            "retention.bytes" => o.retention_bytes = Some(nullable(&f, i64::MIN)?),
            "segment.bytes" => o.segment_bytes = Some(nullable(&f, 0)?.map(|n| n as u64)),
            "delete.retention.ms" => o.delete_retention_ms = Some(f.i64(key)?),
            other => {
                return bad(format!(
                    "unknown topic setting {other:?}; known: cleanup.policy, retention.ms, \
                     retention.bytes, segment.bytes, delete.retention.ms"
                ));
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
