//! The catalog of topic configs: one entry of data per Kafka 4.1 topic
//! config (name, type, default, validation, whether mk enforces it or only
//! stores it, and the broker config it defaults from), and the layers a
//! topic's effective value comes from (topic, dynamic broker default,
//! static broker setting, Kafka's default), as DescribeConfigs reports them.

use crate::error::{ClusterError, Result};
use std::collections::BTreeMap;

/// A config's type as Kafka's DescribeConfigs (v3+) names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigType {
    Boolean,
    Int,
    Long,
    Double,
    String,
    List,
}

impl ConfigType {
    /// Kafka's wire number of the type.
    pub fn kafka_code(self) -> i8 {
        match self {
            ConfigType::Boolean => 1,
            ConfigType::String => 2,
            ConfigType::Int => 3,
            ConfigType::Long => 5,
            ConfigType::Double => 6,
            ConfigType::List => 7,
        }
    }
}

/// The rule a value must satisfy beyond its type.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Validator {
    /// Any value of the type.
    Any,
    /// An integer of at least this.
    AtLeast(i64),
    /// An integer in `[min, max]`, or exactly `or` (a "use the codec's
    /// default" sentinel, like gzip's -1).
    Between { min: i64, max: i64, or: Option<i64> },
    /// A fraction in `[0, 1]`.
    Ratio,
    /// One of these words (case-sensitive, as Kafka).
    OneOf(&'static [&'static str]),
    /// A non-empty comma-separated list of these words, each at most once.
    ListOf(&'static [&'static str]),
    /// Kafka's throttled-replicas list: empty, `*`, or `partition:broker`
    /// pairs.
    ThrottledReplicas,
    /// A boolean that can only be false here (tiered storage is not
    /// available).
    OnlyFalse(&'static str),
}

/// Whether mk acts on a config or keeps it for clients to read back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    Enforced,
    /// Accepted, validated, persisted and described, without effect.
    Stored,
}

/// One topic config.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TopicConfigDef {
    pub name: &'static str,
    pub ty: ConfigType,
    /// Kafka 4.1's default, in Kafka's spelling.
    pub default: &'static str,
    pub validator: Validator,
    pub effect: Effect,
    /// The broker config a topic without its own value takes it from.
    pub broker: Option<&'static str>,
    pub doc: &'static str,
}

const LONG_MAX: &str = "9223372036854775807";

const fn def(
    name: &'static str,
    ty: ConfigType,
    default: &'static str,
    validator: Validator,
    effect: Effect,
    broker: Option<&'static str>,
    doc: &'static str,
) -> TopicConfigDef {
    TopicConfigDef {
        name,
        ty,
        default,
        validator,
        effect,
        broker,
        doc,
    }
}

/// A tiered-storage switch of Kafka's (default false): stored, never in
/// force, since mk has no tiered storage.
const fn tiered_storage_flag(name: &'static str) -> TopicConfigDef {
    def(
        name,
        ConfigType::Boolean,
        "false",
        Validator::Any,
        Effect::Stored,
        None,
        "Tiered storage (not available in mk).",
    )
}

use ConfigType as T;
use Effect::{Enforced, Stored};
use Validator as V;

/// Every topic config of Kafka 4.1, in the order describe lists them.
pub const TOPIC_CONFIGS: [TopicConfigDef; 35] = [
    def(
        "cleanup.policy",
        T::List,
        "delete",
        V::ListOf(&["compact", "delete"]),
        Enforced,
        Some("log.cleanup.policy"),
        "delete: old segments go by retention; compact: the latest record per key is kept; \
         compact,delete: both.",
    ),
    def(
        "compression.type",
        T::String,
        "producer",
        V::OneOf(&["uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"]),
        Enforced,
        Some("compression.type"),
        "The codec batches are kept in: producer keeps each batch as its producer compressed it; \
         uncompressed, gzip, snappy, lz4 or zstd make the broker recompress a produced batch of \
         another codec.",
    ),
    def(
        "compression.gzip.level",
        T::Int,
        "-1",
        V::Between {
            min: 1,
            max: 9,
            or: Some(-1),
        },
        Enforced,
        Some("compression.gzip.level"),
        "Level used when the broker compresses with gzip.",
    ),
    def(
        "compression.lz4.level",
        T::Int,
        "9",
        V::Between {
            min: 1,
            max: 17,
            or: None,
        },
        Enforced,
        Some("compression.lz4.level"),
        "Level used when the broker compresses with lz4: 9 (the default) is LZ4's fast mode, as \
         in Kafka; any other level is LZ4 HC at that level (the LZ4 library caps it at 12 and \
         takes 1 and 2 as its fast mode).",
    ),
    def(
        "compression.zstd.level",
        T::Int,
        "3",
        V::Between {
            min: -131_072,
            max: 22,
            or: None,
        },
        Enforced,
        Some("compression.zstd.level"),
        "Level used when the broker compresses with zstd.",
    ),
    def(
        "delete.retention.ms",
        T::Long,
        "86400000",
        V::AtLeast(0),
        Enforced,
        Some("log.cleaner.delete.retention.ms"),
        "How long compaction keeps tombstones, and transaction markers whose transaction has no record left.",
    ),
    def(
        "file.delete.delay.ms",
        T::Long,
        "60000",
        V::AtLeast(0),
        Stored,
        Some("log.segment.delete.delay.ms"),
        "Delay before a deleted segment's file is removed (mk removes at once).",
    ),
    def(
        "flush.messages",
        T::Long,
        LONG_MAX,
        V::AtLeast(1),
        Enforced,
        Some("log.flush.interval.messages"),
        "Records appended to a partition between forced fsyncs (default: the broker's --flush-messages, else never).",
    ),
    def(
        "flush.ms",
        T::Long,
        LONG_MAX,
        V::AtLeast(0),
        Enforced,
        Some("log.flush.interval.ms"),
        "An append this long after a partition's last fsync forces one (default: the broker's --flush-interval-ms, else never).",
    ),
    def(
        "follower.replication.throttled.replicas",
        T::List,
        "",
        V::ThrottledReplicas,
        Stored,
        None,
        "Replicas whose follower fetches are throttled (no quotas in mk).",
    ),
    def(
        "index.interval.bytes",
        T::Int,
        "4096",
        V::AtLeast(0),
        Enforced,
        Some("log.index.interval.bytes"),
        "Bytes between sparse index entries (0: an entry for every batch); default: the broker's --index-interval-bytes.",
    ),
    def(
        "leader.replication.throttled.replicas",
        T::List,
        "",
        V::ThrottledReplicas,
        Stored,
        None,
        "Replicas whose leader side is throttled (no quotas in mk).",
    ),
    def(
        "local.retention.bytes",
        T::Long,
        "-2",
        V::AtLeast(-2),
        Stored,
        Some("log.local.retention.bytes"),
        "Local retention under tiered storage (not available in mk).",
    ),
    def(
        "local.retention.ms",
        T::Long,
        "-2",
        V::AtLeast(-2),
        Stored,
        Some("log.local.retention.ms"),
        "Local retention under tiered storage (not available in mk).",
    ),
    def(
        "max.compaction.lag.ms",
        T::Long,
        LONG_MAX,
        V::AtLeast(1),
        Enforced,
        Some("log.cleaner.max.compaction.lag.ms"),
        "Longest a record may stay uncompacted: a dirty closed segment whose first batch is older makes the cleaner compact the partition whatever its dirty ratio, and a compacted topic's active segment rolls at this age when it is shorter than segment.ms.",
    ),
    def(
        "max.message.bytes",
        T::Int,
        "1048588",
        V::AtLeast(0),
        Enforced,
        Some("message.max.bytes"),
        "Largest record batch the topic accepts, measured as Kafka does (61 header bytes and the records section as produced; MESSAGE_TOO_LARGE above it).",
    ),
    def(
        "message.timestamp.after.max.ms",
        T::Long,
        "3600000",
        V::AtLeast(0),
        Enforced,
        Some("log.message.timestamp.after.max.ms"),
        "How far after the broker's time a CreateTime record's timestamp may be (INVALID_TIMESTAMP beyond; a kept batch is judged by its first and max timestamps).",
    ),
    def(
        "message.timestamp.before.max.ms",
        T::Long,
        LONG_MAX,
        V::AtLeast(0),
        Enforced,
        Some("log.message.timestamp.before.max.ms"),
        "How far before the broker's time a CreateTime record's timestamp may be (INVALID_TIMESTAMP beyond).",
    ),
    def(
        "message.timestamp.type",
        T::String,
        "CreateTime",
        V::OneOf(&["CreateTime", "LogAppendTime"]),
        Enforced,
        Some("log.message.timestamp.type"),
        "CreateTime keeps the producer's timestamps; LogAppendTime stamps the broker's time into the batch header (max timestamp and attribute, CRC recomputed; records untouched).",
    ),
    def(
        "min.cleanable.dirty.ratio",
        T::Double,
        "0.5",
        V::Ratio,
        Enforced,
        Some("log.cleaner.min.cleanable.ratio"),
        "The cleaner compacts a partition when its dirty bytes (closed segments written since the last compaction) are more than this share of its closed bytes.",
    ),
    def(
        "min.compaction.lag.ms",
        T::Long,
        "0",
        V::AtLeast(0),
        Enforced,
        Some("log.cleaner.min.compaction.lag.ms"),
        "Records newer than now minus this are not compacted: cleaning stops at the first dirty closed segment holding one, and their keys do not clean older records yet.",
    ),
    def(
        "min.insync.replicas",
        T::Int,
        "1",
        V::AtLeast(1),
        Enforced,
        Some("min.insync.replicas"),
        "In-sync replicas an acks=all produce needs (the topic's own value, else the broker's --min-insync-replicas): fewer is NOT_ENOUGH_REPLICAS before the append, and an ISR that shrinks below it while an append waits is NOT_ENOUGH_REPLICAS_AFTER_APPEND.",
    ),
    def(
        "preallocate",
        T::Boolean,
        "false",
        V::Any,
        Stored,
        Some("log.preallocate"),
        "Preallocate segment files (mk never does).",
    ),
    tiered_storage_flag("remote.log.copy.disable"),
    tiered_storage_flag("remote.log.delete.on.disable"),
    def(
        "remote.storage.enable",
        T::Boolean,
        "false",
        V::OnlyFalse("tiered storage is not available on this broker"),
        Stored,
        None,
        "Tiered storage: only false is accepted.",
    ),
    def(
        "retention.bytes",
        T::Long,
        "-1",
        V::Any,
        Enforced,
        Some("log.retention.bytes"),
        "Bytes a partition keeps before its oldest segments go (-1: no limit).",
    ),
    def(
        "retention.ms",
        T::Long,
        "604800000",
        V::AtLeast(-1),
        Enforced,
        Some("log.retention.ms"),
        "How long segments are kept (-1: forever).",
    ),
    def(
        "segment.bytes",
        T::Int,
        "1073741824",
        V::AtLeast(crate::config::MIN_SEGMENT_BYTES as i64),
        Enforced,
        Some("log.segment.bytes"),
        "Size at which a segment rolls.",
    ),
    def(
        "segment.index.bytes",
        T::Int,
        "10485760",
        V::AtLeast(4),
        Stored,
        Some("log.index.size.max.bytes"),
        "Most bytes of an offset index (mk's indexes grow as needed).",
    ),
    def(
        "segment.jitter.ms",
        T::Long,
        "0",
        V::AtLeast(0),
        Enforced,
        Some("log.roll.jitter.ms"),
        "Up to this much is subtracted from segment.ms for each segment (a hash of the partition and the segment's base offset, below min(segment.jitter.ms, segment.ms)).",
    ),
    def(
        "segment.ms",
        T::Long,
        "604800000",
        V::AtLeast(1),
        Enforced,
        Some("log.roll.ms"),
        "An append rolls the active segment first when its batch's max timestamp is more than this past the max timestamp of the segment's first batch (by the broker clock since the segment started when that batch has no timestamp).",
    ),
    def(
        "unclean.leader.election.enable",
        T::Boolean,
        "false",
        V::Any,
        Enforced,
        Some("unclean.leader.election.enable"),
        "Whether a replica outside the ISR may lead when the leader is lost and no in-sync replica is online (the topic's value, else the broker's): true elects the first online replica in a new epoch, and records above its log end are lost (the other replicas truncate to it); false (the default) leaves the partition without a leader (LEADER_NOT_AVAILABLE) until an in-sync replica returns. Turning it on elects at once; ElectLeaders UNCLEAN elects whatever it says.",
    ),
    def(
        "message.timestamp.difference.max.ms",
        T::Long,
        LONG_MAX,
        V::AtLeast(0),
        Stored,
        None,
        "Removed in Kafka 4.0 (use the before/after bounds); accepted for old tools.",
    ),
    def(
        "message.downconversion.enable",
        T::Boolean,
        "true",
        V::Any,
        Stored,
        None,
        "Removed in Kafka 4.0; accepted for old tools.",
    ),
];

/// The topic config keys, in describe order (derived from the catalog).
pub const TOPIC_CONFIG_KEYS: [&str; TOPIC_CONFIGS.len()] = {
    let mut keys = [""; TOPIC_CONFIGS.len()];
    let mut i = 0;
    while i < TOPIC_CONFIGS.len() {
        keys[i] = TOPIC_CONFIGS[i].name;
        i += 1;
    }
    keys
};

/// The catalog entry of `name`, or INVALID_CONFIG naming it.
pub fn topic_config_def(name: &str) -> Result<&'static TopicConfigDef> {
    TOPIC_CONFIGS.iter().find(|d| d.name == name).ok_or_else(|| {
        ClusterError::InvalidConfig(format!(
            "unknown topic config {name:?} (topics have Kafka's topic configs, e.g. retention.ms)"
        ))
    })
}

/// The topic config a broker config is the default of.
pub fn topic_config_of_broker(broker: &str) -> Option<&'static TopicConfigDef> {
    TOPIC_CONFIGS.iter().find(|d| d.broker == Some(broker))
}

fn invalid(name: &str, msg: String) -> ClusterError {
    ClusterError::InvalidConfig(format!("Invalid value for configuration {name}: {msg}"))
}

/// The items of a Kafka list value: comma-separated, trimmed, empty items
/// dropped.
pub fn list_items(value: &str) -> Vec<&str> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect()
}

impl TopicConfigDef {
    /// Checks `value` against the type and rule and returns it in the
    /// spelling it is stored and described in (trimmed numbers, lowercase
    /// booleans, lists joined by commas), or INVALID_CONFIG saying what was
    /// expected and what was found.
    pub fn normalize(&self, value: &str) -> Result<String> {
        let v = value.trim();
        match self.ty {
            T::Boolean => self.normalize_boolean(v, value),
            T::Int | T::Long => self.normalize_integer(v, value),
            T::Double => self.normalize_double(v, value),
            T::String => match self.validator {
                V::OneOf(words) if !words.contains(&v) => Err(invalid(
                    self.name,
                    format!("expected one of {}, got {value:?}", words.join(", ")),
                )),
                _ => Ok(v.to_string()),
            },
            T::List => self.normalize_list(v, value),
        }
    }

    /// `v` is `value` trimmed (the messages quote what was sent).
    fn normalize_boolean(&self, v: &str, value: &str) -> Result<String> {
        let name = self.name;
        let b = if v.eq_ignore_ascii_case("true") {
            true
        } else if v.eq_ignore_ascii_case("false") {
            false
        } else {
            return Err(invalid(
                name,
                format!("expected true or false, got {value:?}"),
            ));
        };
        if let V::OnlyFalse(why) = self.validator
            && b
        {
            return Err(invalid(name, format!("true is not accepted: {why}")));
        }
        Ok(b.to_string())
    }

    fn normalize_integer(&self, v: &str, value: &str) -> Result<String> {
        let name = self.name;
        let n: i64 = v
            .parse()
            .map_err(|_| invalid(name, format!("expected an integer, got {value:?}")))?;
        if self.ty == T::Int && i32::try_from(n).is_err() {
            return Err(invalid(name, format!("expected a 32-bit integer, got {n}")));
        }
        match self.validator {
            V::AtLeast(min) if n < min => {
                Err(invalid(name, format!("must be at least {min}, got {n}")))
            }
            V::Between { min, max, or } if !(min..=max).contains(&n) && Some(n) != or => {
                let also = or.map(|o| format!(" or {o}")).unwrap_or_default();
                Err(invalid(
                    name,
                    format!("must be in [{min}, {max}]{also}, got {n}"),
                ))
            }
            _ => Ok(n.to_string()),
        }
    }

    fn normalize_double(&self, v: &str, value: &str) -> Result<String> {
        let name = self.name;
        let x: f64 = v
            .parse()
            .ok()
            .filter(|x: &f64| x.is_finite())
            .ok_or_else(|| invalid(name, format!("expected a number, got {value:?}")))?;
        if self.validator == V::Ratio && !(0.0..=1.0).contains(&x) {
            return Err(invalid(name, format!("must be in [0, 1], got {x}")));
        }
        Ok(x.to_string())
    }

    fn normalize_list(&self, v: &str, value: &str) -> Result<String> {
        let name = self.name;
        let items = list_items(v);
        match self.validator {
            V::ListOf(words) => check_list_of(name, words, &items, value)?,
            V::ThrottledReplicas => check_throttled(name, &items)?,
            _ => {}
        }
        Ok(items.join(","))
    }
}

/// A non-empty list of `words`, each at most once.
fn check_list_of(name: &str, words: &[&str], items: &[&str], value: &str) -> Result<()> {
    if items.is_empty() {
        return Err(invalid(
            name,
            format!("expected a list of {}, got {value:?}", words.join(", ")),
        ));
    }
    for (i, item) in items.iter().enumerate() {
        if !words.contains(item) {
            return Err(invalid(
                name,
                format!("expected items of {}, got {item:?}", words.join(", ")),
            ));
        }
        if items[..i].contains(item) {
            return Err(invalid(name, format!("{item:?} appears twice")));
        }
    }
    Ok(())
}

fn check_throttled(name: &str, items: &[&str]) -> Result<()> {
    if items == ["*"] {
        return Ok(());
    }
    for item in items {
        let pair = item.split_once(':').and_then(|(p, b)| {
            Some((p.trim().parse::<u32>().ok()?, b.trim().parse::<i32>().ok()?))
        });
        if pair.is_none() {
            return Err(invalid(
                name,
                format!("expected * or partition:broker pairs, got {item:?}"),
            ));
        }
    }
    Ok(())
}

/// Where an effective config value comes from (Kafka's config sources).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigSource {
    /// Set on the topic.
    DynamicTopic,
    /// Set on a broker at run time (IncrementalAlterConfigs of a BROKER
    /// resource naming a hosted broker).
    DynamicBroker,
    /// Set at run time for every broker (a BROKER resource named "").
    DynamicDefaultBroker,
    /// Set by mk-server's flags or config file.
    StaticBroker,
    /// Kafka's default.
    Default,
}

impl ConfigSource {
    /// Kafka's wire number of the source.
    pub fn kafka_code(self) -> i8 {
        match self {
            ConfigSource::DynamicTopic => 1,
            ConfigSource::DynamicBroker => 2,
            ConfigSource::DynamicDefaultBroker => 3,
            ConfigSource::StaticBroker => 4,
            ConfigSource::Default => 5,
        }
    }
}

/// One value in the chain of a config (Kafka's synonyms): the config or
/// broker config name, its value there, and that layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigSynonym {
    pub name: String,
    pub value: String,
    pub source: ConfigSource,
}

/// A config as DescribeConfigs reports it: its effective value, where
/// that comes from, and every layer that has a value, most specific first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribedConfig {
    pub name: String,
    pub value: String,
    pub source: ConfigSource,
    pub ty: ConfigType,
    pub read_only: bool,
    pub synonyms: Vec<ConfigSynonym>,
    pub doc: &'static str,
}

/// The broker layers under topic configs: values the server's flags set
/// (static) and values altered at run time (dynamic, persisted), both
/// keyed by broker config name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BrokerDefaults {
    pub statics: BTreeMap<&'static str, String>,
    /// Altered for every broker (resource name "").
    pub dynamic_default: BTreeMap<String, String>,
    /// Altered through a broker id; mk applies these to every hosted
    /// broker, since they share one configuration.
    pub dynamic_broker: BTreeMap<String, String>,
}

impl BrokerDefaults {
    /// The broker layers of a broker config, most specific first.
    pub fn layers(&self, broker: &str) -> Vec<ConfigSynonym> {
        let mut out = Vec::new();
        let mut push = |v: Option<&String>, source| {
            if let Some(v) = v {
                out.push(ConfigSynonym {
                    name: broker.to_string(),
                    value: v.clone(),
                    source,
                });
            }
        };
        push(self.dynamic_broker.get(broker), ConfigSource::DynamicBroker);
        push(
            self.dynamic_default.get(broker),
            ConfigSource::DynamicDefaultBroker,
        );
        push(self.statics.get(broker), ConfigSource::StaticBroker);
        out
    }

    /// The effective value and source of a topic config for a topic that
    /// does not set it.
    pub fn topic_default(&self, def: &TopicConfigDef) -> (String, ConfigSource) {
        def.broker
            .and_then(|b| self.layers(b).into_iter().next())
            .map(|s| (s.value, s.source))
            .unwrap_or_else(|| (def.default.to_string(), ConfigSource::Default))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_is_unique_and_its_default_passes_its_own_rule() {
        for (i, d) in TOPIC_CONFIGS.iter().enumerate() {
            assert!(
                !TOPIC_CONFIGS[..i].iter().any(|o| o.name == d.name),
                "{} twice",
                d.name
            );
            if d.name == "segment.bytes" {
                continue;
            }
            assert_eq!(d.normalize(d.default).unwrap(), d.default, "{}", d.name);
        }
        assert_eq!(TOPIC_CONFIG_KEYS[0], "cleanup.policy");
    }

    #[test]
    fn values_are_checked_and_normalized_as_kafka() {
        let d = |n| topic_config_def(n).unwrap();
        assert_eq!(
            d("cleanup.policy").normalize(" compact , delete ").unwrap(),
            "compact,delete"
        );
        for (name, bad, says) in [
            ("cleanup.policy", "shred", "got \"shred\""),
            ("cleanup.policy", "", "expected a list"),
            ("cleanup.policy", "compact,compact", "twice"),
            ("max.message.bytes", "-5", "at least 0, got -5"),
            ("max.message.bytes", "4294967296", "32-bit"),
            ("retention.ms", "-2", "at least -1"),
            ("compression.type", "brotli", "expected one of"),
            ("compression.gzip.level", "0", "[1, 9] or -1"),
            ("min.cleanable.dirty.ratio", "1.5", "[0, 1]"),
            ("preallocate", "yes", "true or false"),
            ("remote.storage.enable", "true", "tiered storage"),
            (
                "leader.replication.throttled.replicas",
                "0-1",
                "partition:broker",
            ),
            ("message.timestamp.type", "logappendtime", "CreateTime"),
        ] {
            let e = d(name).normalize(bad).unwrap_err();
            assert_eq!(e.code(), mk_core::ErrorCode::InvalidConfig, "{name}");
            let text = e.to_string();
            assert!(text.contains(name) && text.contains(says), "{text}");
        }
        assert_eq!(d("preallocate").normalize("TRUE").unwrap(), "true");
        assert_eq!(d("compression.gzip.level").normalize("-1").unwrap(), "-1");
        assert_eq!(
            d("leader.replication.throttled.replicas")
                .normalize("0:1, 1:2")
                .unwrap(),
            "0:1,1:2"
        );
        assert!(topic_config_def("retention.weeks").is_err());
        assert_eq!(
            topic_config_of_broker("message.max.bytes").unwrap().name,
            "max.message.bytes"
        );
    }

    #[test]
    fn a_topic_default_comes_from_the_most_specific_broker_layer() {
        let d = topic_config_def("max.message.bytes").unwrap();
        let mut b = BrokerDefaults::default();
        assert_eq!(
            b.topic_default(d),
            ("1048588".to_string(), ConfigSource::Default)
        );
        b.statics.insert("message.max.bytes", "2000".into());
        assert_eq!(b.topic_default(d).1, ConfigSource::StaticBroker);
        b.dynamic_default
            .insert("message.max.bytes".into(), "3000".into());
        assert_eq!(
            b.topic_default(d),
            ("3000".to_string(), ConfigSource::DynamicDefaultBroker)
        );
        assert_eq!(b.layers("message.max.bytes").len(), 2);
    }
}
