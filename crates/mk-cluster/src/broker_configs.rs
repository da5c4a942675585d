//! Broker configs under Kafka's names: what DescribeConfigs of a BROKER
//! resource answers (the server's settings, the topic defaults they
//! carry), and the run-time alteration of the dynamic ones, persisted in
//! metadata.json and read by every topic that does not set its own value.

use crate::cluster::BrokerCluster;
use crate::config::{IncrementalChange, IncrementalOp, MiniKafkaConfig};
use crate::error::{ClusterError, Result};
use crate::topic_configs::{
    BrokerDefaults, ConfigSource, ConfigSynonym, ConfigType, DescribedConfig, TOPIC_CONFIGS,
    TopicConfigDef, topic_config_of_broker,
};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The topic defaults whose broker configs are read only here: the typed
/// topic settings are resolved when a topic is created, and the index and
/// flush settings are the server's `--index-interval-bytes`,
/// `--flush-messages` and `--flush-interval-ms` (a topic's own
/// `index.interval.bytes` and `flush.*` override them).
const READ_ONLY_SYNONYMS: [&str; 8] = [
    "log.cleanup.policy",
    "log.retention.ms",
    "log.retention.bytes",
    "log.segment.bytes",
    "log.cleaner.delete.retention.ms",
    "log.index.interval.bytes",
    "log.flush.interval.messages",
    "log.flush.interval.ms",
];

/// The broker-level values the server's settings give the topic configs'
/// broker synonyms, where they differ from Kafka's defaults (Kafka reports
/// those as STATIC_BROKER_CONFIG; the others are DEFAULT_CONFIG).
pub fn static_topic_defaults(c: &MiniKafkaConfig) -> BTreeMap<&'static str, String> {
    let t = &c.default_topic_config;
    let mut values: Vec<(&'static str, String)> = vec![
        ("log.cleanup.policy", t.cleanup_policy.as_str().to_string()),
        ("log.retention.ms", t.retention_ms.unwrap_or(-1).to_string()),
        (
            "log.retention.bytes",
            t.retention_bytes.unwrap_or(-1).to_string(),
        ),
        (
            "log.segment.bytes",
            t.segment_bytes.unwrap_or(c.segment_max_bytes).to_string(),
        ),
        (
            "log.cleaner.delete.retention.ms",
            t.delete_retention_ms.to_string(),
        ),
        (
            "log.index.interval.bytes",
            c.index_interval_bytes.to_string(),
        ),
        ("min.insync.replicas", c.min_insync_replicas.to_string()),
    ];
    if let Some(n) = c.flush.messages {
        values.push(("log.flush.interval.messages", n.to_string()));
    }
    if let Some(ms) = c.flush.interval_ms {
        values.push(("log.flush.interval.ms", ms.to_string()));
    }
    values
        .into_iter()
        .filter(|(name, value)| {
            topic_config_of_broker(name).is_none_or(|d| d.default != value.as_str())
        })
        .collect()
}

/// The server's own settings under Kafka's broker config names (read
/// only: they are fixed when the server starts).
fn server_settings(c: &MiniKafkaConfig) -> Vec<(&'static str, String, ConfigType)> {
    vec![
        (
            "auto.create.topics.enable",
            c.auto_create_topics.to_string(),
            ConfigType::Boolean,
        ),
        (
            "num.partitions",
            c.auto_create_partitions.to_string(),
            ConfigType::Int,
        ),
        (
            "default.replication.factor",
            c.auto_create_replication_factor.to_string(),
            ConfigType::Int,
        ),
        (
            "log.dirs",
            c.data_dir.display().to_string(),
            ConfigType::String,
        ),
        (
            "fetch.max.bytes",
            c.fetch_max_bytes.to_string(),
            ConfigType::Int,
        ),
        (
            "group.initial.rebalance.delay.ms",
            c.group_initial_rebalance_delay_ms.to_string(),
            ConfigType::Int,
        ),
        (
            "group.min.session.timeout.ms",
            c.group_min_session_timeout_ms.to_string(),
            ConfigType::Int,
        ),
        (
            "group.max.session.timeout.ms",
            c.group_max_session_timeout_ms.to_string(),
            ConfigType::Int,
        ),
        (
            "group.max.size",
            c.group_max_size.to_string(),
            ConfigType::Int,
        ),
        (
            "offsets.retention.minutes",
            (c.offsets_retention_ms / 60_000).to_string(),
            ConfigType::Int,
        ),
        (
            "replica.lag.time.max.ms",
            c.replica_lag_time_ms.to_string(),
            ConfigType::Long,
        ),
        (
            "replica.fetch.max.bytes",
            c.replica_fetch_max_bytes.to_string(),
            ConfigType::Int,
        ),
        (
            "transaction.max.timeout.ms",
            c.max_transaction_timeout_ms.to_string(),
            ConfigType::Int,
        ),
    ]
}

/// The broker configs that can be altered at run time: the broker
/// synonyms of topic configs that topics read when they act.
pub fn is_dynamic(name: &str) -> bool {
    topic_config_of_broker(name).is_some() && !READ_ONLY_SYNONYMS.contains(&name)
}

/// The scope an alteration of a BROKER resource applies to: "" is every
/// broker (Kafka's cluster-wide default), else a hosted broker id.
fn scope_key(broker: Option<crate::config::BrokerId>) -> String {
    broker.map(|b| b.to_string()).unwrap_or_default()
}

/// The broker defaults for `config` with the run-time values `dynamic`
/// (by scope, as metadata.json keeps them).
pub(crate) fn broker_defaults(
    config: &MiniKafkaConfig,
    dynamic: &BTreeMap<String, BTreeMap<String, String>>,
) -> BrokerDefaults {
    let mut d = BrokerDefaults {
        statics: static_topic_defaults(config),
        ..BrokerDefaults::default()
    };
    for (scope, values) in dynamic {
        let target = if scope.is_empty() {
            &mut d.dynamic_default
        } else {
            &mut d.dynamic_broker
        };
        target.extend(values.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    d
}

impl BrokerCluster {
    /// The broker layers topic configs default from (static settings and
    /// run-time alterations).
    pub fn broker_defaults(&self) -> Arc<BrokerDefaults> {
        crate::locks::plain_read(&self.broker_defaults).clone()
    }

    /// Every broker config of `broker` (or of every broker, `None`) as
    /// DescribeConfigs reports it: the server's settings (read only), then
    /// every topic default's broker config with its layers.
    pub fn describe_broker_configs(
        &self,
        broker: Option<crate::config::BrokerId>,
    ) -> Result<Vec<DescribedConfig>> {
        self.check_hosted(broker)?;
        let defaults = self.broker_defaults();
        let mut out: Vec<DescribedConfig> = server_settings(&self.config)
            .into_iter()
            .map(|(name, value, ty)| DescribedConfig {
                name: name.to_string(),
                synonyms: vec![ConfigSynonym {
                    name: name.to_string(),
                    value: value.clone(),
                    source: ConfigSource::StaticBroker,
                }],
                value,
                source: ConfigSource::StaticBroker,
                ty,
                read_only: true,
                doc: "",
            })
            .collect();
        if let Some(id) = broker {
            out.insert(
                0,
                DescribedConfig {
                    name: "broker.id".into(),
                    value: id.to_string(),
                    source: ConfigSource::StaticBroker,
                    ty: ConfigType::Int,
                    read_only: true,
                    synonyms: Vec::new(),
                    doc: "",
                },
            );
        }
        for def in TOPIC_CONFIGS.iter() {
            let Some(name) = def.broker else { continue };
            let mut synonyms = defaults.layers(name);
            synonyms.push(ConfigSynonym {
                name: name.to_string(),
                value: def.default.to_string(),
                source: ConfigSource::Default,
            });
            let top = synonyms[0].clone();
            out.push(DescribedConfig {
                name: name.to_string(),
                value: top.value,
                source: top.source,
                ty: def.ty,
                read_only: !is_dynamic(name),
                synonyms,
                doc: def.doc,
            });
        }
        Ok(out)
    }

    /// INVALID_REQUEST unless `broker` (when named) is hosted here.
    fn check_hosted(&self, broker: Option<crate::config::BrokerId>) -> Result<()> {
        match broker {
            Some(id) if !self.config.broker_ids.contains(&id) => {
                Err(ClusterError::InvalidRequest(format!(
                    "broker {id} is not hosted here (hosted: {:?})",
                    self.config.broker_ids
                )))
            }
            _ => Ok(()),
        }
    }

    /// Alters the dynamic broker configs of one scope (`None`: every
    /// broker), all or nothing: SET and DELETE of dynamic configs with the
    /// validation of the topic config they default (INVALID_CONFIG), a
    /// read-only or unknown name refused (INVALID_REQUEST for read-only,
    /// as Kafka), APPEND/SUBTRACT on list configs. With `replace_all` the
    /// scope's previous values not named go (Kafka's AlterConfigs).
    /// Persisted, then in force for every topic that does not set its own.
    pub fn alter_broker_configs(
        &self,
        broker: Option<crate::config::BrokerId>,
        changes: &[IncrementalChange],
        replace_all: bool,
        validate_only: bool,
    ) -> Result<()> {
        self.check_running()?;
        self.check_hosted(broker)?;
        let scope = scope_key(broker);
        let mut metadata = self.store(&self.metadata, "metadata store")?;
        let mut values = if replace_all {
            BTreeMap::new()
        } else {
            metadata
                .broker_configs()
                .get(&scope)
                .cloned()
                .unwrap_or_default()
        };
        let defaults = self.broker_defaults();
        for change in changes {
            let name = change.key.as_str();
            let def = self.dynamic_config(name)?;
            let current = values
                .get(name)
                .cloned()
                .unwrap_or_else(|| defaults.topic_default(def).0);
            match altered_value(def, name, &change.op, &current)? {
                None => values.remove(name),
                Some(v) => values.insert(name.to_string(), v),
            };
        }
        if validate_only {
            return Ok(());
        }
        self.guard(metadata.put_broker_configs(&scope, values))?;
        let next = broker_defaults(&self.config, metadata.broker_configs());
        *crate::locks::plain_write(&self.broker_defaults) = Arc::new(next);
        tracing::info!(scope, ?changes, "broker configs altered");
        // A promotion persists under its partition's lock, which comes
        // before the metadata lock: release it first. Turning the broker
        // default of unclean elections on elects leaderless partitions.
        drop(metadata);
        self.brokers().elect_offline_uncleanly(None)?;
        Ok(())
    }

    /// The topic config whose broker default `name` is, when it can be
    /// altered at run time: INVALID_REQUEST for a read-only broker config
    /// (as Kafka), INVALID_CONFIG for an unknown one.
    fn dynamic_config(&self, name: &str) -> Result<&'static TopicConfigDef> {
        let Some(def) = topic_config_of_broker(name) else {
            let known = server_settings(&self.config)
                .iter()
                .any(|(n, _, _)| *n == name);
            return Err(if known {
                ClusterError::InvalidRequest(format!(
                    "broker config {name} cannot be updated dynamically"
                ))
            } else {
                ClusterError::InvalidConfig(format!("unknown broker config {name:?}"))
            });
        };
        if !is_dynamic(name) {
            return Err(ClusterError::InvalidRequest(format!(
                "broker config {name} cannot be updated dynamically here \
                 (set it with mk-server's flags)"
            )));
        }
        Ok(def)
    }
}

/// The value broker config `name` (the default of `def`) has after `op`
/// on its `current` value, validated as the topic config (`None`: deleted).
fn altered_value(
    def: &TopicConfigDef,
    name: &str,
    op: &IncrementalOp,
    current: &str,
) -> Result<Option<String>> {
    let list_op = |v: &str, append: bool| -> Result<String> {
        if def.ty != ConfigType::List {
            return Err(ClusterError::InvalidConfig(format!(
                "{name} is not a list config: APPEND and SUBTRACT are only for lists"
            )));
        }
        let mut items: Vec<&str> = crate::topic_configs::list_items(current);
        for item in crate::topic_configs::list_items(v) {
            if append && !items.contains(&item) {
                items.push(item);
            } else if !append {
                items.retain(|i| *i != item);
            }
        }
        Ok(items.join(","))
    };
    let new = match op {
        IncrementalOp::Delete => return Ok(None),
        IncrementalOp::Set(v) => v.clone(),
        IncrementalOp::Append(v) => list_op(v, true)?,
        IncrementalOp::Subtract(v) => list_op(v, false)?,
    };
    def.normalize(&new)
        .map(Some)
        .map_err(|e| ClusterError::InvalidConfig(e.to_string().replace(def.name, name)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statics_name_only_what_differs_from_kafka() {
        let c = MiniKafkaConfig::new("/tmp/x");
        let s = static_topic_defaults(&c);
        assert_eq!(
            s.get("log.segment.bytes").map(String::as_str),
            Some("1048576")
        );
        assert!(
            !s.contains_key("log.retention.ms"),
            "7 days is Kafka's default"
        );
        assert!(is_dynamic("message.max.bytes"));
        assert!(!is_dynamic("log.retention.ms"));
        assert!(!is_dynamic("num.partitions"));
    }
}
