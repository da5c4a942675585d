//! `MiniKafkaConfig` (spec 00) and per-topic configuration. Every field has a
//! default and a validation rule; invalid values are INVALID_REQUEST at
//! construction.

use crate::error::{ClusterError, Result};
use crate::topic_configs::{
    BrokerDefaults, ConfigSource, ConfigSynonym, DescribedConfig, topic_config_def,
};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Broker ids are non-negative integers.
pub type BrokerId = i32;

/// How appends reach the disk (Kafka's `flush.messages` / `flush.ms`).
/// Appends always reach the OS before they return; fsync happens on flush
/// cycles, and additionally after every `messages` appended records or when
/// `interval_ms` has passed since a partition's last fsync, if set.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FlushPolicy {
    pub messages: Option<u64>,
    pub interval_ms: Option<i64>,
}

/// The configuration of one cluster (all brokers of one process).
#[derive(Debug, Clone)]
pub struct MiniKafkaConfig {
    pub data_dir: PathBuf,
    pub broker_ids: Vec<BrokerId>,
    pub segment_max_bytes: u64,
    pub index_interval_bytes: u64,
    /// The session timeout of JSON-TCP (coordinator-assigned) group
    /// members; Kafka clients bring their own.
    pub group_session_timeout_ms: i64,
    /// Bounds of a Kafka client's session timeout (Kafka's
    /// `group.min.session.timeout.ms` / `group.max.session.timeout.ms`).
    pub group_min_session_timeout_ms: i64,
    pub group_max_session_timeout_ms: i64,
    /// Most members of one group (Kafka's `group.max.size`).
    pub group_max_size: usize,
    /// How long a group without members keeps its committed offsets
    /// (Kafka's `offsets.retention.minutes`, 7 days).
    pub offsets_retention_ms: i64,
    /// How long the classic coordinator waits for more members before the
    /// first rebalance of a new group (Kafka's
    /// `group.initial.rebalance.delay.ms`). 0 here, so embedded clusters and
    /// tests form groups at once; mk-server's default is Kafka's 3000.
    pub group_initial_rebalance_delay_ms: i64,
    pub replica_lag_max_offsets: i64,
    pub replica_lag_time_ms: i64,
    pub replica_fetch_max_bytes: u64,
    pub min_insync_replicas: usize,
    pub max_batch_bytes: u32,
    /// The timeout of transactions begun through the teaching model's
    /// `transactions().begin` (Kafka producers send their own
    /// `transaction.timeout.ms` in InitProducerId). Ongoing transactions
    /// older than their timeout are aborted by `transactions().expire`.
    pub transaction_timeout_ms: i64,
    /// The largest timeout a producer may ask for (Kafka's
    /// `transaction.max.timeout.ms`, default 15 minutes); a larger one is
    /// INVALID_TRANSACTION_TIMEOUT.
    pub max_transaction_timeout_ms: i64,
    pub flush: FlushPolicy,
    /// Defaults for topics created without explicit settings.
    pub default_topic_config: TopicConfig,
    /// Create a topic when a Kafka client asks for metadata of an unknown
    /// one (Kafka's `auto.create.topics.enable`, default true).
    pub auto_create_topics: bool,
    /// Partitions of an auto-created topic (Kafka's `num.partitions`).
    pub auto_create_partitions: u32,
    /// Replication factor of an auto-created topic, capped at the number of
    /// brokers (Kafka's `default.replication.factor`).
    pub auto_create_replication_factor: usize,
    /// The most record bytes one fetch answer may carry, whatever the
    /// client asks for (Kafka's broker-side `fetch.max.bytes`). At least one
    /// batch is always returned so a consumer can make progress.
    pub fetch_max_bytes: u64,
    /// The ACL authorizer (`--authorizer acl`): `None` allows everything,
    /// as before security existed.
    pub authorizer: Option<mk_auth::AuthorizerConfig>,
}

impl MiniKafkaConfig {
    /// The defaults of spec 00 for `data_dir`.
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        Self {
            data_dir: data_dir.into(),
            broker_ids: vec![1],
            segment_max_bytes: 1_048_576,
            index_interval_bytes: 4_096,
            group_session_timeout_ms: 10_000,
            group_min_session_timeout_ms: 6_000,
            group_max_session_timeout_ms: 1_800_000,
            group_max_size: 1_000,
            offsets_retention_ms: 604_800_000,
            group_initial_rebalance_delay_ms: 0,
            replica_lag_max_offsets: 10_000,
            replica_lag_time_ms: 10_000,
            replica_fetch_max_bytes: 1_048_576,
            min_insync_replicas: 1,
            max_batch_bytes: 16_777_216,
            transaction_timeout_ms: 60_000,
            max_transaction_timeout_ms: 900_000,
            flush: FlushPolicy::default(),
            default_topic_config: TopicConfig::default(),
            auto_create_topics: true,
            auto_create_partitions: 1,
            auto_create_replication_factor: 1,
            fetch_max_bytes: 8 * 1_048_576,
            authorizer: None,
        }
    }

    pub fn with_brokers(mut self, broker_ids: Vec<BrokerId>) -> Self {
        self.broker_ids = broker_ids;
        self
    }

    pub fn with_min_insync_replicas(mut self, n: usize) -> Self {
        self.min_insync_replicas = n;
        self
    }

    /// Checks every rule of the configuration table.
    pub fn validate(&self) -> Result<()> {
        self.check_broker_ids()?;
        self.check_positive()?;
        self.check_relations()?;
        self.check_flush()?;
        self.default_topic_config.validate()
    }

    /// Broker ids: at least one, none negative, none twice.
    fn check_broker_ids(&self) -> Result<()> {
        if self.broker_ids.is_empty() {
            return bad("broker_ids must not be empty".into());
        }
        let mut seen = std::collections::BTreeSet::new();
        for id in &self.broker_ids {
            if *id < 0 {
                return bad(format!("broker id {id} is negative"));
            }
            if !seen.insert(*id) {
                return bad(format!("broker id {id} appears twice"));
            }
        }
        Ok(())
    }

    /// The sizes, counts and timeouts that must be above zero.
    fn check_positive(&self) -> Result<()> {
        let positive: [(&str, i64); 15] = [
            (
                "auto_create_partitions",
                i64::from(self.auto_create_partitions),
            ),
            (
                "auto_create_replication_factor",
                self.auto_create_replication_factor as i64,
            ),
            ("fetch_max_bytes", self.fetch_max_bytes as i64),
            ("segment_max_bytes", self.segment_max_bytes as i64),
            ("index_interval_bytes", self.index_interval_bytes as i64),
            ("group_session_timeout_ms", self.group_session_timeout_ms),
            (
                "group_min_session_timeout_ms",
                self.group_min_session_timeout_ms,
            ),
            (
                "group_max_session_timeout_ms",
                self.group_max_session_timeout_ms,
            ),
            ("group_max_size", self.group_max_size as i64),
            ("offsets_retention_ms", self.offsets_retention_ms),
            ("replica_lag_time_ms", self.replica_lag_time_ms),
            (
                "replica_fetch_max_bytes",
                self.replica_fetch_max_bytes as i64,
            ),
            ("max_batch_bytes", i64::from(self.max_batch_bytes)),
            ("transaction_timeout_ms", self.transaction_timeout_ms),
            (
                "max_transaction_timeout_ms",
                self.max_transaction_timeout_ms,
            ),
        ];
        for (name, v) in positive {
            if v <= 0 {
                return bad(format!("{name} must be > 0, got {v}"));
            }
        }
        Ok(())
    }

    /// The non-negative settings and the pairs that bound each other
    /// (session timeouts, transaction timeouts).
    fn check_relations(&self) -> Result<()> {
        if self.group_initial_rebalance_delay_ms < 0 {
            return bad(format!(
                "group_initial_rebalance_delay_ms must be >= 0, got {}",
                self.group_initial_rebalance_delay_ms
            ));
        }
        if self.group_max_session_timeout_ms < self.group_min_session_timeout_ms {
            return bad(format!(
                "group_max_session_timeout_ms ({}) must be >= group_min_session_timeout_ms ({})",
                self.group_max_session_timeout_ms, self.group_min_session_timeout_ms
            ));
        }
        if self.replica_lag_max_offsets < 0 {
            return bad(format!(
                "replica_lag_max_offsets must be >= 0, got {}",
                self.replica_lag_max_offsets
            ));
        }
        if self.min_insync_replicas == 0 {
            return bad("min_insync_replicas must be > 0".into());
        }
        if self.transaction_timeout_ms > self.max_transaction_timeout_ms {
            return bad(format!(
                "transaction_timeout_ms ({}) must be <= max_transaction_timeout_ms ({})",
                self.transaction_timeout_ms, self.max_transaction_timeout_ms
            ));
        }
        Ok(())
    }

    /// The flush policy: a set bound must be above zero.
    fn check_flush(&self) -> Result<()> {
        if self.flush.messages == Some(0) {
            return bad("flush messages must be > 0 when set".into());
        }
        if self.flush.interval_ms.is_some_and(|ms| ms <= 0) {
            return bad("flush interval_ms must be > 0 when set".into());
        }
        Ok(())
    }
}

/// A configuration refused with `msg` (INVALID_REQUEST).
fn bad(msg: String) -> Result<()> {
    Err(ClusterError::InvalidRequest(msg))
}

/// `cleanup.policy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CleanupPolicy {
    #[default]
    Delete,
    Compact,
    /// `compact,delete`: compacted, and old segments also go by retention.
    CompactDelete,
}

impl CleanupPolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            CleanupPolicy::Delete => "delete",
            CleanupPolicy::Compact => "compact",
            CleanupPolicy::CompactDelete => "compact,delete",
        }
    }

    /// True when the topic is compacted (Kafka: `cleanup.policy` contains
    /// `compact`): its records need keys.
    pub fn compacts(self) -> bool {
        matches!(self, CleanupPolicy::Compact | CleanupPolicy::CompactDelete)
    }

    /// True when retention deletes old segments (the policy contains
    /// `delete`).
    pub fn deletes(self) -> bool {
        matches!(self, CleanupPolicy::Delete | CleanupPolicy::CompactDelete)
    }

    /// Parses Kafka's list spelling: `delete`, `compact`, or both in
    /// either order.
    pub fn parse(s: &str) -> Result<Self> {
        let items = crate::topic_configs::list_items(s);
        let has = |w: &str| items.contains(&w);
        let known = items.iter().all(|i| *i == "delete" || *i == "compact");
        match (known, has("compact"), has("delete")) {
            (true, true, true) => Ok(CleanupPolicy::CompactDelete),
            (true, true, false) => Ok(CleanupPolicy::Compact),
            (true, false, true) => Ok(CleanupPolicy::Delete),
            _ => Err(ClusterError::InvalidRequest(format!(
                "cleanup.policy must be delete, compact or compact,delete, got {s:?}"
            ))),
        }
    }
}

/// Per-topic settings, stored in metadata.json (Kafka's topic configs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicConfig {
    pub cleanup_policy: CleanupPolicy,
    /// `retention.ms`; `None` keeps data forever.
    pub retention_ms: Option<i64>,
    /// `retention.bytes` per partition; `None` is unlimited.
    pub retention_bytes: Option<i64>,
    /// `segment.bytes`; `None` uses the cluster's `segment_max_bytes`.
    pub segment_bytes: Option<u64>,
    /// `delete.retention.ms`: how long compaction keeps tombstones.
    pub delete_retention_ms: i64,
    /// Every other catalog config the topic sets, normalized (see
    /// `topic_configs::TOPIC_CONFIGS`); a config absent here takes its
    /// broker default.
    pub others: BTreeMap<String, String>,
}

impl Default for TopicConfig {
    fn default() -> Self {
        Self {
            cleanup_policy: CleanupPolicy::Delete,
            retention_ms: Some(7 * 24 * 3_600_000),
            retention_bytes: None,
            segment_bytes: None,
            delete_retention_ms: 24 * 3_600_000,
            others: BTreeMap::new(),
        }
    }
}

/// The smallest `segment.bytes` a topic may have. Kafka's floor is 1 MiB
/// since 4.0 (KIP-1030; 14 bytes before, which let a typo create a file per
/// record); 1 KiB lets labs and tests roll segments after a few records.
pub const MIN_SEGMENT_BYTES: u64 = 1024;

/// Kafka's spelling of "no limit" for `retention.ms` and `retention.bytes`:
/// `-1` is `None`, any other value is itself (and validated as such).
pub fn kafka_limit(value: i64) -> Option<i64> {
    (value != -1).then_some(value)
}

/// One topic setting as an operator sees it: its Kafka name, its value in
/// Kafka's spelling (`-1` for no limit, the cluster's segment size where
/// the topic sets none) and whether it is the cluster default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicConfigEntry {
    pub name: String,
    pub value: String,
    pub is_default: bool,
}

pub use crate::topic_configs::TOPIC_CONFIG_KEYS;

/// The five configs `TopicConfig` keeps as typed fields; every other
/// catalog config lives in `TopicConfig::others`.
const TYPED_KEYS: [&str; 5] = [
    "cleanup.policy",
    "retention.ms",
    "retention.bytes",
    "segment.bytes",
    "delete.retention.ms",
];

/// One change of an alter-configs request: set a key, or delete it (back
/// to the cluster default).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigChange {
    Set { key: String, value: String },
    Delete { key: String },
}

impl ConfigChange {
    /// The changes that replace a topic's whole config with `configs`
    /// (Kafka's AlterConfigs): every named key is set (a `None` value
    /// resets it) and every key not named goes back to the cluster default.
    pub fn replacing_all(configs: &[(String, Option<String>)]) -> Vec<ConfigChange> {
        let mut changes: Vec<ConfigChange> = TOPIC_CONFIG_KEYS
            .iter()
            .filter(|k| !configs.iter().any(|(name, _)| name == *k))
            .map(|k| ConfigChange::Delete { key: k.to_string() })
            .collect();
        changes.extend(configs.iter().map(|(key, value)| match value {
            Some(value) => ConfigChange::Set {
                key: key.clone(),
                value: value.clone(),
            },
            None => ConfigChange::Delete { key: key.clone() },
        }));
        changes
    }
}

/// One operation of Kafka's IncrementalAlterConfigs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IncrementalOp {
    Set(String),
    Delete,
    /// Add items to a list config.
    Append(String),
    /// Remove items from a list config.
    Subtract(String),
}

/// An incremental change of one config key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IncrementalChange {
    pub key: String,
    pub op: IncrementalOp,
}

fn config_int(key: &str, value: &str) -> Result<i64> {
    value.trim().parse::<i64>().map_err(|_| {
        ClusterError::InvalidConfig(format!("{key} must be an integer, got {value:?}"))
    })
}

impl TopicConfig {
    /// The value of one key as Kafka reports it (`-1` for "no limit"), or
    /// `None` for a key topics do not have. `cluster_segment_bytes` is what
    /// an unset `segment.bytes` means; another config the topic does not
    /// set is Kafka's default (without the broker layers: see `effective`).
    pub fn get(&self, key: &str, cluster_segment_bytes: u64) -> Option<String> {
        Some(match key {
            "cleanup.policy" => self.cleanup_policy.as_str().to_string(),
            "retention.ms" => self.retention_ms.unwrap_or(-1).to_string(),
            "retention.bytes" => self.retention_bytes.unwrap_or(-1).to_string(),
            "segment.bytes" => self
                .segment_bytes
                .unwrap_or(cluster_segment_bytes)
                .to_string(),
            "delete.retention.ms" => self.delete_retention_ms.to_string(),
            other => match self.others.get(other) {
                Some(v) => v.clone(),
                None => topic_config_def(other).ok()?.default.to_string(),
            },
        })
    }

    /// The age past which the active segment rolls (Kafka's
    /// `maxSegmentMs`): the effective `segment.ms`, or a compacted topic's
    /// `max.compaction.lag.ms` when that is shorter, so that no record waits
    /// in the active segment, which is never cleaned, past its deadline.
    pub fn roll_ms(&self, broker: &BrokerDefaults) -> i64 {
        let segment_ms = self.effective_i64("segment.ms", broker);
        if self.cleanup_policy.compacts() {
            segment_ms.min(self.effective_i64("max.compaction.lag.ms", broker))
        } else {
            segment_ms
        }
    }

    /// When the cleaner compacts this topic's logs: the effective
    /// `min.compaction.lag.ms`, `max.compaction.lag.ms` and
    /// `min.cleanable.dirty.ratio` (the catalog validated their ranges).
    pub fn cleaner(&self, broker: &BrokerDefaults) -> mk_log::CleanerConfig {
        let kafka = mk_log::CleanerConfig::default();
        mk_log::CleanerConfig {
            min_lag_ms: self.effective_i64("min.compaction.lag.ms", broker),
            max_lag_ms: self.effective_i64("max.compaction.lag.ms", broker),
            min_dirty_ratio: self
                .effective_str("min.cleanable.dirty.ratio", broker)
                .parse()
                .unwrap_or(kafka.min_dirty_ratio),
        }
    }

    /// Sets one key from its Kafka spelling; `-1` means "no limit" for the
    /// retention settings. An unknown key or a value the catalog refuses is
    /// INVALID_CONFIG naming the key; the resulting config is validated.
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        let value = topic_config_def(key)?.normalize(value)?;
        let value = value.as_str();
        match key {
            "cleanup.policy" => {
                self.cleanup_policy =
                    CleanupPolicy::parse(value).map_err(ClusterError::into_invalid_config)?;
            }
            "retention.ms" => self.retention_ms = kafka_limit(config_int(key, value)?),
            "retention.bytes" => self.retention_bytes = kafka_limit(config_int(key, value)?),
            "segment.bytes" => {
                let v = config_int(key, value)?;
                self.segment_bytes = Some(u64::try_from(v).map_err(|_| {
                    ClusterError::InvalidConfig(format!("segment.bytes must be > 0, got {v}"))
                })?);
            }
            "delete.retention.ms" => self.delete_retention_ms = config_int(key, value)?,
            other => {
                self.others.insert(other.to_string(), value.to_string());
            }
        }
        self.validate().map_err(ClusterError::into_invalid_config)
    }

    /// Every setting with its value and whether it equals the default, in
    /// `TOPIC_CONFIG_KEYS` order (what `topic describe` shows).
    pub fn entries(
        &self,
        defaults: &TopicConfig,
        cluster_segment_bytes: u64,
    ) -> Vec<TopicConfigEntry> {
        TOPIC_CONFIG_KEYS
            .iter()
            .filter_map(|key| {
                let value = self.get(key, cluster_segment_bytes)?;
                let is_default = if TYPED_KEYS.contains(key) {
                    defaults.get(key, cluster_segment_bytes).as_ref() == Some(&value)
                } else {
                    !self.others.contains_key(*key)
                };
                Some(TopicConfigEntry {
                    name: key.to_string(),
                    value,
                    is_default,
                })
            })
            .collect()
    }

    /// The effective value of `key` and where it comes from: the topic's
    /// own value, else the most specific broker layer, else Kafka's
    /// default. A typed key equal to its broker default counts as not set
    /// (the typed fields keep no "explicit" bit).
    pub fn effective(
        &self,
        key: &str,
        broker: &BrokerDefaults,
        cluster_segment_bytes: u64,
    ) -> Result<(String, ConfigSource)> {
        let def = topic_config_def(key)?;
        let inherited = broker.topic_default(def);
        if TYPED_KEYS.contains(&key) {
            let own = self.get(key, cluster_segment_bytes).unwrap_or_default();
            return Ok(if own == inherited.0 {
                inherited
            } else {
                (own, ConfigSource::DynamicTopic)
            });
        }
        Ok(match self.others.get(key) {
            Some(v) => (v.clone(), ConfigSource::DynamicTopic),
            None => inherited,
        })
    }

    /// The effective value of an integer config (validated when set, so it
    /// parses; Kafka's default otherwise).
    pub fn effective_i64(&self, key: &str, broker: &BrokerDefaults) -> i64 {
        let parsed = self
            .effective(key, broker, 0)
            .ok()
            .and_then(|(v, _)| v.parse().ok());
        parsed.unwrap_or_else(|| {
            topic_config_def(key)
                .ok()
                .and_then(|d| d.default.parse().ok())
                .unwrap_or(i64::MAX)
        })
    }

    /// The effective value of a string or boolean config.
    pub fn effective_str(&self, key: &str, broker: &BrokerDefaults) -> String {
        self.effective(key, broker, 0)
            .map(|(v, _)| v)
            .unwrap_or_default()
    }

    /// What the broker compresses this topic's batches with
    /// (`compression.type`, with `compression.gzip.level`,
    /// `compression.lz4.level` or `compression.zstd.level`), or `None` for
    /// `producer`: batches are then kept in whatever codec their producer
    /// chose. `uncompressed` is `Codec::None`.
    pub fn compression(&self, broker: &BrokerDefaults) -> Option<mk_log::block::Compression> {
        use mk_log::block::{Codec, Compression};
        let (codec, level_key) = match self.effective_str("compression.type", broker).as_str() {
            "uncompressed" => (Codec::None, None),
            "gzip" => (Codec::Gzip, Some("compression.gzip.level")),
            "snappy" => (Codec::Snappy, None),
            "lz4" => (Codec::Lz4, Some("compression.lz4.level")),
            "zstd" => (Codec::Zstd, Some("compression.zstd.level")),
            _ => return None,
        };
        // Kafka's -1 is gzip's default level; the catalog bounds the rest.
        let level = level_key
            .map(|k| self.effective_i64(k, broker))
            .filter(|l| *l != -1)
            .and_then(|l| i32::try_from(l).ok());
        Some(Compression { codec, level })
    }

    /// Every config as Kafka's DescribeConfigs reports it, in catalog
    /// order, with the chain of layers that have a value (synonyms).
    pub fn described(
        &self,
        broker: &BrokerDefaults,
        cluster_segment_bytes: u64,
    ) -> Vec<DescribedConfig> {
        crate::topic_configs::TOPIC_CONFIGS
            .iter()
            .filter_map(|def| {
                let (value, source) = self
                    .effective(def.name, broker, cluster_segment_bytes)
                    .ok()?;
                let mut synonyms = Vec::new();
                if source == ConfigSource::DynamicTopic {
                    synonyms.push(ConfigSynonym {
                        name: def.name.to_string(),
                        value: value.clone(),
                        source,
                    });
                }
                if let Some(b) = def.broker {
                    synonyms.extend(broker.layers(b));
                }
                synonyms.push(ConfigSynonym {
                    name: def.broker.unwrap_or(def.name).to_string(),
                    value: def.default.to_string(),
                    source: ConfigSource::Default,
                });
                Some(DescribedConfig {
                    name: def.name.to_string(),
                    value,
                    source,
                    ty: def.ty,
                    read_only: false,
                    synonyms,
                    doc: def.doc,
                })
            })
            .collect()
    }

    /// Resets one key to its value in `defaults` (another catalog config
    /// goes back to its broker default).
    pub fn reset(&mut self, key: &str, defaults: &TopicConfig) -> Result<()> {
        topic_config_def(key)?;
        match key {
            "cleanup.policy" => self.cleanup_policy = defaults.cleanup_policy,
            "retention.ms" => self.retention_ms = defaults.retention_ms,
            "retention.bytes" => self.retention_bytes = defaults.retention_bytes,
            "segment.bytes" => self.segment_bytes = defaults.segment_bytes,
            "delete.retention.ms" => self.delete_retention_ms = defaults.delete_retention_ms,
            other => match defaults.others.get(other) {
                Some(v) => {
                    self.others.insert(other.to_string(), v.clone());
                }
                None => {
                    self.others.remove(other);
                }
            },
        }
        Ok(())
    }

    /// Turns Kafka's incremental operations into plain changes against
    /// this config: APPEND adds items missing from a list config's current
    /// value (the topic's own, else Kafka's default), SUBTRACT removes
    /// them; both are INVALID_CONFIG on a config that is not a list.
    pub fn resolve_incremental(
        &self,
        changes: &[IncrementalChange],
        cluster_segment_bytes: u64,
    ) -> Result<Vec<ConfigChange>> {
        let mut seen = std::collections::BTreeSet::new();
        changes
            .iter()
            .map(|c| {
                if !seen.insert(c.key.as_str()) {
                    return Err(ClusterError::InvalidRequest(format!(
                        "config {} appears twice in one request",
                        c.key
                    )));
                }
                let key = c.key.clone();
                let (value, append) = match &c.op {
                    IncrementalOp::Set(v) => {
                        return Ok(ConfigChange::Set {
                            key,
                            value: v.clone(),
                        });
                    }
                    IncrementalOp::Delete => return Ok(ConfigChange::Delete { key }),
                    IncrementalOp::Append(v) => (v, true),
                    IncrementalOp::Subtract(v) => (v, false),
                };
                let def = topic_config_def(&key)?;
                if def.ty != crate::topic_configs::ConfigType::List {
                    return Err(ClusterError::InvalidConfig(format!(
                        "{} is not a list config: APPEND and SUBTRACT are only for lists",
                        key
                    )));
                }
                let current = self.get(&key, cluster_segment_bytes).unwrap_or_default();
                let mut items: Vec<String> = crate::topic_configs::list_items(&current)
                    .into_iter()
                    .map(str::to_string)
                    .collect();
                for item in crate::topic_configs::list_items(value) {
                    if append && !items.iter().any(|i| i == item) {
                        items.push(item.to_string());
                    } else if !append {
                        items.retain(|i| i != item);
                    }
                }
                Ok(ConfigChange::Set {
                    key,
                    value: items.join(","),
                })
            })
            .collect()
    }

    /// This config with `changes` applied (deletes go back to `defaults`).
    pub fn with_changes(&self, changes: &[ConfigChange], defaults: &TopicConfig) -> Result<Self> {
        let mut c = self.clone();
        for change in changes {
            match change {
                ConfigChange::Set { key, value } => c.set(key, value)?,
                ConfigChange::Delete { key } => c.reset(key, defaults)?,
            }
        }
        Ok(c)
    }

    pub fn validate(&self) -> Result<()> {
        let bad = |msg: String| Err(ClusterError::InvalidRequest(msg));
        if let Some(ms) = self.retention_ms
            && ms < 0
        {
            return bad(format!("retention.ms must be >= 0, got {ms}"));
        }
        if let Some(b) = self.retention_bytes
            && b <= 0
        {
            return bad(format!("retention.bytes must be > 0, got {b}"));
        }
        if let Some(b) = self.segment_bytes
            && b < MIN_SEGMENT_BYTES
        {
            return bad(format!(
                "segment.bytes must be >= {MIN_SEGMENT_BYTES}, got {b}"
            ));
        }
        if self.delete_retention_ms < 0 {
            return bad(format!(
                "delete.retention.ms must be >= 0, got {}",
                self.delete_retention_ms
            ));
        }
        Ok(())
    }
}

/// Topic settings given at creation; a setting absent here keeps the
/// cluster's default (`MiniKafkaConfig::default_topic_config`). Nullable
/// settings use `Some(None)` for an explicit "none" (e.g. keep forever).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopicConfigOverrides {
    pub cleanup_policy: Option<CleanupPolicy>,
    pub retention_ms: Option<Option<i64>>,
    pub retention_bytes: Option<Option<i64>>,
    pub segment_bytes: Option<Option<u64>>,
    pub delete_retention_ms: Option<i64>,
    /// Any other of Kafka's topic configs by name, in Kafka's spelling;
    /// checked against the catalog at creation ([`Self::resolve`]).
    pub others: BTreeMap<String, String>,
}

impl TopicConfigOverrides {
    /// `base` with every setting applied, the other configs checked as
    /// `IncrementalAlterConfigs` checks them (INVALID_CONFIG naming the
    /// config). What a creation with these overrides gets.
    pub fn resolve(&self, base: TopicConfig) -> Result<TopicConfig> {
        let changes: Vec<ConfigChange> = self
            .others
            .iter()
            .map(|(key, value)| ConfigChange::Set {
                key: key.clone(),
                value: value.clone(),
            })
            .collect();
        let applied = self.apply(base.clone());
        applied.with_changes(&changes, &base)
    }

    /// `base` with the typed settings applied (not [`Self::others`]).
    pub fn apply(&self, mut base: TopicConfig) -> TopicConfig {
        if let Some(p) = self.cleanup_policy {
            base.cleanup_policy = p;
        }
        if let Some(v) = self.retention_ms {
            base.retention_ms = v;
        }
        if let Some(v) = self.retention_bytes {
            base.retention_bytes = v;
        }
        if let Some(v) = self.segment_bytes {
            base.segment_bytes = v;
        }
        if let Some(v) = self.delete_retention_ms {
            base.delete_retention_ms = v;
        }
        base
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_each_rule_rejects() {
        let ok = MiniKafkaConfig::new("/tmp/x");
        assert!(ok.validate().is_ok());
        type Mutation = Box<dyn Fn(&mut MiniKafkaConfig)>;
        let cases: Vec<Mutation> = vec![
            Box::new(|c| c.broker_ids.clear()),
            Box::new(|c| c.broker_ids = vec![1, 1]),
            Box::new(|c| c.broker_ids = vec![-1]),
            Box::new(|c| c.segment_max_bytes = 0),
            Box::new(|c| c.index_interval_bytes = 0),
            Box::new(|c| c.group_session_timeout_ms = 0),
            Box::new(|c| c.group_min_session_timeout_ms = 0),
            Box::new(|c| c.group_max_session_timeout_ms = 5_000),
            Box::new(|c| c.group_max_size = 0),
            Box::new(|c| c.offsets_retention_ms = 0),
            Box::new(|c| c.replica_lag_max_offsets = -1),
            Box::new(|c| c.replica_lag_time_ms = 0),
            Box::new(|c| c.replica_fetch_max_bytes = 0),
            Box::new(|c| c.min_insync_replicas = 0),
            Box::new(|c| c.max_batch_bytes = 0),
            Box::new(|c| c.transaction_timeout_ms = 0),
            Box::new(|c| c.max_transaction_timeout_ms = 0),
            Box::new(|c| c.transaction_timeout_ms = c.max_transaction_timeout_ms + 1),
            Box::new(|c| c.flush.messages = Some(0)),
            Box::new(|c| c.default_topic_config.retention_bytes = Some(0)),
        ];
        for (i, mutate) in cases.iter().enumerate() {
            let mut c = ok.clone();
            mutate(&mut c);
            let err = c.validate().unwrap_err();
            assert_eq!(err.code(), mk_core::ErrorCode::InvalidRequest, "case {i}");
        }
        let mut zero_lag = ok.clone();
        zero_lag.replica_lag_max_offsets = 0;
        assert!(zero_lag.validate().is_ok(), "0 offsets of lag is allowed");
    }

    #[test]
    fn kafka_spellings_set_get_and_reset() {
        let defaults = TopicConfig::default();
        let mut c = defaults.clone();
        c.set("retention.ms", "-1").unwrap();
        assert_eq!(c.retention_ms, None);
        assert_eq!(c.get("retention.ms", 0).as_deref(), Some("-1"));
        c.set("segment.bytes", "2048").unwrap();
        assert_eq!(c.get("segment.bytes", 99).as_deref(), Some("2048"));
        c.set("cleanup.policy", "compact").unwrap();
        let e = c.set("retention.ms", "soon").unwrap_err();
        assert_eq!(e.code(), mk_core::ErrorCode::InvalidConfig);
        let e = c.set("retention.days", "2").unwrap_err();
        assert_eq!(e.code(), mk_core::ErrorCode::InvalidConfig);
        let e = c.set("retention.bytes", "0").unwrap_err();
        assert_eq!(e.code(), mk_core::ErrorCode::InvalidConfig);
        let back = c
            .with_changes(
                &[ConfigChange::Delete {
                    key: "cleanup.policy".into(),
                }],
                &defaults,
            )
            .unwrap();
        assert_eq!(back.cleanup_policy, defaults.cleanup_policy);
        assert_eq!(
            TopicConfig::default().get("segment.bytes", 77).as_deref(),
            Some("77")
        );
    }

    #[test]
    fn segment_bytes_has_a_sane_minimum_and_entries_show_real_values() {
        let defaults = TopicConfig::default();
        let mut c = defaults.clone();
        let e = c.set("segment.bytes", "10").unwrap_err();
        assert_eq!(e.code(), mk_core::ErrorCode::InvalidConfig);
        assert!(e.to_string().contains("at least 1024, got 10"), "{e}");
        c.set("segment.bytes", &MIN_SEGMENT_BYTES.to_string())
            .unwrap();
        c.set("retention.ms", "-1").unwrap();
        let entries = c.entries(&defaults, 1 << 20);
        let names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, TOPIC_CONFIG_KEYS);
        let find = |n: &str| entries.iter().find(|e| e.name == n).unwrap().clone();
        assert_eq!(
            (
                find("segment.bytes").value.as_str(),
                find("segment.bytes").is_default
            ),
            ("1024", false)
        );
        assert_eq!(find("retention.ms").value, "-1");
        assert!(find("cleanup.policy").is_default);
        let unset = defaults.entries(&defaults, 1 << 20);
        let segment = unset.iter().find(|e| e.name == "segment.bytes").unwrap();
        assert_eq!(
            segment.value, "1048576",
            "the cluster's size, not \"default\""
        );
        assert_eq!(kafka_limit(-1), None);
        assert_eq!(kafka_limit(5), Some(5));
    }

    #[test]
    fn compression_type_names_the_codec_and_its_level_producer_none() {
        use mk_log::block::{Codec, Compression};
        let broker = BrokerDefaults::default();
        let mut c = TopicConfig::default();
        assert_eq!(c.compression(&broker), None, "producer is Kafka's default");
        c.set("compression.type", "gzip").unwrap();
        assert_eq!(c.compression(&broker), Some(Compression::of(Codec::Gzip)));
        c.set("compression.gzip.level", "9").unwrap();
        assert_eq!(c.compression(&broker).unwrap().level, Some(9));
        c.set("compression.type", "zstd").unwrap();
        assert_eq!(
            c.compression(&broker),
            Some(Compression {
                codec: Codec::Zstd,
                level: Some(3)
            })
        );
        c.set("compression.type", "uncompressed").unwrap();
        assert_eq!(c.compression(&broker), Some(Compression::of(Codec::None)));
        let mut broker = BrokerDefaults::default();
        broker
            .dynamic_default
            .insert("compression.type".into(), "lz4".into());
        let mut inherits = TopicConfig::default();
        let lz4 = |level| {
            Some(Compression {
                codec: Codec::Lz4,
                level: Some(level),
            })
        };
        assert_eq!(
            inherits.compression(&broker),
            lz4(9),
            "the broker's compression.type, at Kafka's default lz4 level"
        );
        inherits.set("compression.lz4.level", "12").unwrap();
        assert_eq!(inherits.compression(&broker), lz4(12));
    }

    #[test]
    fn every_catalog_config_is_stored_described_and_reset() {
        let defaults = TopicConfig::default();
        let mut c = defaults.clone();
        c.set("max.message.bytes", " 2048 ").unwrap();
        c.set("cleanup.policy", "delete,compact").unwrap();
        assert_eq!(c.cleanup_policy, CleanupPolicy::CompactDelete);
        assert!(c.cleanup_policy.compacts() && c.cleanup_policy.deletes());
        assert_eq!(c.get("max.message.bytes", 0).as_deref(), Some("2048"));
        assert_eq!(c.get("flush.ms", 0).as_deref(), Some("9223372036854775807"));
        let mut broker = BrokerDefaults::default();
        broker
            .dynamic_default
            .insert("compression.type".into(), "zstd".into());
        let described = c.described(&broker, 1 << 20);
        assert_eq!(described.len(), TOPIC_CONFIG_KEYS.len());
        let find = |n: &str| described.iter().find(|d| d.name == n).unwrap().clone();
        let mmb = find("max.message.bytes");
        assert_eq!(
            (mmb.value.as_str(), mmb.source),
            ("2048", ConfigSource::DynamicTopic)
        );
        assert_eq!(mmb.synonyms[0].source, ConfigSource::DynamicTopic);
        assert_eq!(mmb.synonyms.last().unwrap().name, "message.max.bytes");
        let ct = find("compression.type");
        assert_eq!(
            (ct.value.as_str(), ct.source),
            ("zstd", ConfigSource::DynamicDefaultBroker)
        );
        assert_eq!(find("retention.ms").source, ConfigSource::Default);
        assert_eq!(c.effective_i64("max.message.bytes", &broker), 2048);
        let back = c
            .with_changes(
                &[ConfigChange::Delete {
                    key: "max.message.bytes".into(),
                }],
                &defaults,
            )
            .unwrap();
        assert!(back.others.is_empty());
        assert_eq!(back.effective_i64("max.message.bytes", &broker), 1_048_588);
    }

    #[test]
    fn append_and_subtract_work_on_lists_only() {
        let c = TopicConfig::default();
        let inc = |key: &str, op: IncrementalOp| IncrementalChange {
            key: key.into(),
            op,
        };
        // One incremental change of `key` resolved against `from`.
        let resolve_one = |from: &TopicConfig, key: &str, op: IncrementalOp| {
            from.resolve_incremental(&[inc(key, op)], 0)
        };
        let subtract_delete = || IncrementalOp::Subtract("delete".into());
        let plain = resolve_one(
            &c,
            "cleanup.policy",
            IncrementalOp::Append("compact".into()),
        );
        let appended = c.with_changes(&plain.unwrap(), &c).unwrap();
        assert_eq!(appended.cleanup_policy, CleanupPolicy::CompactDelete);
        let plain = resolve_one(&appended, "cleanup.policy", subtract_delete()).unwrap();
        assert_eq!(
            appended.with_changes(&plain, &c).unwrap().cleanup_policy,
            CleanupPolicy::Compact
        );
        let e = resolve_one(&c, "retention.ms", IncrementalOp::Append("5".into())).unwrap_err();
        assert_eq!(e.code(), mk_core::ErrorCode::InvalidConfig);
        let emptied = resolve_one(&c, "cleanup.policy", subtract_delete()).unwrap();
        let e = c.with_changes(&emptied, &c).unwrap_err();
        assert_eq!(e.code(), mk_core::ErrorCode::InvalidConfig);
        let twice = c.resolve_incremental(
            &[
                inc("retention.ms", IncrementalOp::Delete),
                inc("retention.ms", IncrementalOp::Set("1".into())),
            ],
            0,
        );
        assert_eq!(
            twice.unwrap_err().code(),
            mk_core::ErrorCode::InvalidRequest
        );
    }

    #[test]
    fn replacing_all_resets_every_key_not_named() {
        let defaults = TopicConfig::default();
        let mut c = defaults.clone();
        c.set("segment.bytes", "4096").unwrap();
        c.set("retention.bytes", "77").unwrap();
        let replaced = c
            .with_changes(
                &ConfigChange::replacing_all(&[("retention.bytes".into(), Some("99".into()))]),
                &defaults,
            )
            .unwrap();
        assert_eq!(replaced.retention_bytes, Some(99));
        assert_eq!(replaced.segment_bytes, defaults.segment_bytes);
    }

    #[test]
    fn cleanup_policy_parses_both_spellings_only() {
        assert_eq!(
            CleanupPolicy::parse("compact").unwrap(),
            CleanupPolicy::Compact
        );
        assert_eq!(
            CleanupPolicy::parse("delete").unwrap(),
            CleanupPolicy::Delete
        );
        assert!(CleanupPolicy::parse("both").is_err());
        assert_eq!(
            CleanupPolicy::parse("compact, delete").unwrap(),
            CleanupPolicy::CompactDelete
        );
    }

    #[test]
    fn overrides_replace_only_the_settings_they_name() {
        let base = TopicConfig::default();
        assert_eq!(TopicConfigOverrides::default().apply(base.clone()), base);
        let o = TopicConfigOverrides {
            cleanup_policy: Some(CleanupPolicy::Compact),
            retention_ms: Some(None),
            segment_bytes: Some(Some(4096)),
            ..TopicConfigOverrides::default()
        };
        assert_eq!(
            o.apply(base.clone()),
            TopicConfig {
                cleanup_policy: CleanupPolicy::Compact,
                retention_ms: None,
                segment_bytes: Some(4096),
                ..base
            }
        );
    }
}
