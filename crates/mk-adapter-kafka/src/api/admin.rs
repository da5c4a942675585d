//! Topic administration as Kafka's admin clients drive it: CreateTopics
//! (with configs and validate_only), DeleteTopics (by name, or by topic id
//! from v6), CreatePartitions, DescribeConfigs and IncrementalAlterConfigs
//! for the topic configs the core has (and the broker's settings, read
//! only). Each is a translation of one core operation per topic.

use super::{Ctx, Message};
use crate::codec::{DecodeResult, Reader, Uuid, Writer};
use crate::errors::{self, KafkaCode};
use mk_cluster::{ClusterError, ConfigChange, TopicConfig, TopicId};

/// Kafka's config resource types.
pub const RESOURCE_TOPIC: i8 = 2;
pub const RESOURCE_BROKER: i8 = 4;

/// Kafka's config sources.
const SOURCE_DYNAMIC_TOPIC: i8 = 1;
const SOURCE_STATIC_BROKER: i8 = 4;
const SOURCE_DEFAULT: i8 = 5;

/// Kafka's config types (DescribeConfigs v3+).
const TYPE_STRING: i8 = 2;
const TYPE_LONG: i8 = 5;
const TYPE_LIST: i8 = 7;

/// One configuration entry as admin clients show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigEntry {
    pub name: String,
    pub value: Option<String>,
    pub read_only: bool,
    pub config_source: i8,
    pub is_sensitive: bool,
}

fn config_type(key: &str) -> i8 {
    match key {
        "cleanup.policy" => TYPE_LIST,
        "retention.ms" | "retention.bytes" | "delete.retention.ms" => TYPE_LONG,
        "segment.bytes" => 3, // INT
        _ => TYPE_STRING,
    }
}

/// The entries of a topic config: keys equal to the cluster default are
/// DEFAULT_CONFIG, the others DYNAMIC_TOPIC_CONFIG (which is which is the
/// core's `TopicConfig::entries`).
fn topic_entries(ctx: &Ctx<'_>, config: &TopicConfig) -> Vec<ConfigEntry> {
    let cluster = ctx.cluster.config();
    config
        .entries(&cluster.default_topic_config, cluster.segment_max_bytes)
        .into_iter()
        .map(|e| ConfigEntry {
            name: e.name,
            config_source: if e.is_default {
                SOURCE_DEFAULT
            } else {
                SOURCE_DYNAMIC_TOPIC
            },
            value: Some(e.value),
            read_only: false,
            is_sensitive: false,
        })
        .collect()
}

/// The broker settings clients commonly ask for, read only.
fn broker_entries(ctx: &Ctx<'_>) -> Vec<ConfigEntry> {
    let c = ctx.cluster.config();
    let pairs: [(&str, String); 7] = [
        (
            "auto.create.topics.enable",
            c.auto_create_topics.to_string(),
        ),
        ("num.partitions", c.auto_create_partitions.to_string()),
        (
            "default.replication.factor",
            c.auto_create_replication_factor.to_string(),
        ),
        ("min.insync.replicas", c.min_insync_replicas.to_string()),
        ("log.segment.bytes", c.segment_max_bytes.to_string()),
        ("message.max.bytes", c.max_batch_bytes.to_string()),
        ("fetch.max.bytes", c.fetch_max_bytes.to_string()),
    ];
    pairs
        .into_iter()
        .map(|(name, value)| ConfigEntry {
            name: name.to_string(),
            value: Some(value),
            read_only: true,
            config_source: SOURCE_STATIC_BROKER,
            is_sensitive: false,
        })
        .collect()
}

/// A topic config from the cluster defaults plus CreateTopics' configs.
fn config_with(
    ctx: &Ctx<'_>,
    configs: &[(String, Option<String>)],
) -> Result<TopicConfig, ClusterError> {
    let defaults = &ctx.cluster.config().default_topic_config;
    let changes: Vec<ConfigChange> = configs
        .iter()
        .map(|(key, value)| match value {
            Some(value) => ConfigChange::Set {
                key: key.clone(),
                value: value.clone(),
            },
            None => ConfigChange::Delete { key: key.clone() },
        })
        .collect();
    defaults.with_changes(&changes, defaults)
}

// ----- CreateTopics ----------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatableTopic {
    pub name: String,
    /// -1: the broker default.
    pub num_partitions: i32,
    /// -1: the broker default.
    pub replication_factor: i16,
    /// Manual replica assignments (partition, brokers): not supported.
    pub assignments: Vec<(i32, Vec<i32>)>,
    pub configs: Vec<(String, Option<String>)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateTopicsRequest {
    pub topics: Vec<CreatableTopic>,
    pub timeout_ms: i32,
    pub validate_only: bool,
}

impl Message for CreateTopicsRequest {
    fn read(r: &mut Reader<'_>, _v: i16) -> DecodeResult<Self> {
        let topics = r.array(|r| {
            let name = r.string()?;
            let num_partitions = r.i32()?;
            let replication_factor = r.i16()?;
            let assignments = r.array(|r| {
                let a = (r.i32()?, r.array(|r| r.i32())?);
                r.skip_tagged_fields()?;
                Ok(a)
            })?;
            let configs = r.array(|r| {
                let c = (r.string()?, r.nullable_string()?);
                r.skip_tagged_fields()?;
                Ok(c)
            })?;
            r.skip_tagged_fields()?;
            Ok(CreatableTopic {
                name,
                num_partitions,
                replication_factor,
                assignments,
                configs,
            })
        })?;
        let timeout_ms = r.i32()?;
        let validate_only = r.bool()?;
        r.skip_tagged_fields()?;
        Ok(Self {
            topics,
            timeout_ms,
            validate_only,
        })
    }

    fn write(&self, w: &mut Writer, _v: i16) {
        w.array(&self.topics, |w, t| {
            w.string(&t.name);
            w.i32(t.num_partitions);
            w.i16(t.replication_factor);
            w.array(&t.assignments, |w, (p, brokers)| {
                w.i32(*p);
                w.array(brokers, |w, b| w.i32(*b));
                w.no_tagged_fields();
            });
            w.array(&t.configs, |w, (k, v)| {
                w.string(k);
                w.nullable_string(v.as_deref());
                w.no_tagged_fields();
            });
            w.no_tagged_fields();
        });
        w.i32(self.timeout_ms);
        w.bool(self.validate_only);
        w.no_tagged_fields();
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatableTopicResult {
    pub name: String,
    /// v7+.
    pub topic_id: Uuid,
    pub error_code: KafkaCode,
    pub error_message: Option<String>,
    /// v5+: -1 on error.
    pub num_partitions: i32,
    pub replication_factor: i16,
    /// v5+: null on error.
    pub configs: Option<Vec<ConfigEntry>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateTopicsResponse {
    pub throttle_time_ms: i32,
    pub topics: Vec<CreatableTopicResult>,
}

impl Message for CreateTopicsResponse {
    fn read(r: &mut Reader<'_>, v: i16) -> DecodeResult<Self> {
        let throttle_time_ms = r.i32()?;
        let topics = r.array(|r| {
            let name = r.string()?;
            let topic_id = if v >= 7 { r.uuid()? } else { Uuid::ZERO };
            let error_code = KafkaCode(r.i16()?);
            let error_message = r.nullable_string()?;
            let (num_partitions, replication_factor, configs) = if v >= 5 {
                let n = r.i32()?;
                let rf = r.i16()?;
                let configs = r.nullable_array(|r| {
                    let c = ConfigEntry {
                        name: r.string()?,
                        value: r.nullable_string()?,
                        read_only: r.bool()?,
                        config_source: r.i8()?,
                        is_sensitive: r.bool()?,
                    };
                    r.skip_tagged_fields()?;
                    Ok(c)
                })?;
                (n, rf, configs)
            } else {
                (-1, -1, None)
            };
            r.skip_tagged_fields()?;
            Ok(CreatableTopicResult {
                name,
                topic_id,
                error_code,
                error_message,
                num_partitions,
                replication_factor,
                configs,
            })
        })?;
        r.skip_tagged_fields()?;
        Ok(Self {
            throttle_time_ms,
            topics,
        })
    }

    fn write(&self, w: &mut Writer, v: i16) {
        w.i32(self.throttle_time_ms);
        w.array(&self.topics, |w, t| {
            w.string(&t.name);
            if v >= 7 {
                w.uuid(t.topic_id);
            }
            w.i16(t.error_code.0);
            w.nullable_string(t.error_message.as_deref());
            if v >= 5 {
                w.i32(t.num_partitions);
                w.i16(t.replication_factor);
                w.nullable_array(t.configs.as_deref(), |w, c| {
                    w.string(&c.name);
                    w.nullable_string(c.value.as_deref());
                    w.bool(c.read_only);
                    w.i8(c.config_source);
                    w.bool(c.is_sensitive);
                    w.no_tagged_fields();
                });
            }
            w.no_tagged_fields();
        });
        w.no_tagged_fields();
    }
}

fn create_one(
    ctx: &Ctx<'_>,
    t: &CreatableTopic,
    validate_only: bool,
) -> Result<CreatableTopicResult, ClusterError> {
    let c = ctx.cluster;
    if !t.assignments.is_empty() {
        return Err(ClusterError::InvalidRequest(
            "manual replica assignments are not supported; replicas are placed by the broker"
                .into(),
        ));
    }
    let partitions = match t.num_partitions {
        -1 => c.config().auto_create_partitions,
        n => u32::try_from(n).map_err(|_| {
            ClusterError::InvalidPartitions(format!("partitions must be > 0, got {n}"))
        })?,
    };
    let rf = match t.replication_factor {
        -1 => c
            .config()
            .auto_create_replication_factor
            .min(c.broker_ids().len()),
        n => usize::try_from(n).map_err(|_| {
            ClusterError::InvalidReplicationFactor(format!(
                "replication_factor must be > 0, got {n}"
            ))
        })?,
    };
    let config = config_with(ctx, &t.configs)?;
    if validate_only {
        c.topics().validate_new(&t.name, partitions, rf, &config)?;
    } else {
        c.topics()
            .create_with_config(&t.name, partitions, rf, config.clone())?;
    }
    Ok(CreatableTopicResult {
        name: t.name.clone(),
        topic_id: c
            .topics()
            .id(&t.name)
            .map(|id| Uuid(id.0))
            .unwrap_or(Uuid::ZERO),
        error_code: KafkaCode::NONE,
        error_message: None,
        num_partitions: partitions as i32,
        replication_factor: rf as i16,
        configs: Some(topic_entries(ctx, &config)),
    })
}

pub async fn handle_create_topics(ctx: &Ctx<'_>, req: CreateTopicsRequest) -> CreateTopicsResponse {
    let topics = req
        .topics
        .iter()
        .map(|t| {
            let duplicate = req.topics.iter().filter(|o| o.name == t.name).count() > 1;
            let result = if duplicate {
                Err(ClusterError::InvalidRequest(format!(
                    "topic {:?} appears more than once in the request",
                    t.name
                )))
            } else {
                create_one(ctx, t, req.validate_only)
            };
            result.unwrap_or_else(|e| CreatableTopicResult {
                name: t.name.clone(),
                topic_id: Uuid::ZERO,
                error_code: errors::kafka_code(e.code()),
                error_message: Some(e.to_string()),
                num_partitions: -1,
                replication_factor: -1,
                configs: None,
            })
        })
        .collect();
    CreateTopicsResponse {
        throttle_time_ms: 0,
        topics,
    }
}

// ----- DeleteTopics ----------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteTopicState {
    /// v6: a name or (when null) the topic id.
    pub name: Option<String>,
    pub topic_id: Uuid,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteTopicsRequest {
    /// v1-v5 send names only; v6 sends these states.
    pub topics: Vec<DeleteTopicState>,
    pub timeout_ms: i32,
}

impl Message for DeleteTopicsRequest {
    fn read(r: &mut Reader<'_>, v: i16) -> DecodeResult<Self> {
        let topics = if v >= 6 {
            r.array(|r| {
                let s = DeleteTopicState {
                    name: r.nullable_string()?,
                    topic_id: r.uuid()?,
                };
                r.skip_tagged_fields()?;
                Ok(s)
            })?
        } else {
            r.array(|r| {
                Ok(DeleteTopicState {
                    name: Some(r.string()?),
                    topic_id: Uuid::ZERO,
                })
            })?
        };
        let timeout_ms = r.i32()?;
        r.skip_tagged_fields()?;
        Ok(Self { topics, timeout_ms })
    }

    fn write(&self, w: &mut Writer, v: i16) {
        if v >= 6 {
            w.array(&self.topics, |w, t| {
                w.nullable_string(t.name.as_deref());
                w.uuid(t.topic_id);
                w.no_tagged_fields();
            });
        } else {
            w.array(&self.topics, |w, t| {
                w.string(t.name.as_deref().unwrap_or(""))
            });
        }
        w.i32(self.timeout_ms);
        w.no_tagged_fields();
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeletableTopicResult {
    pub name: Option<String>,
    /// v6+.
    pub topic_id: Uuid,
    pub error_code: KafkaCode,
    /// v5+.
    pub error_message: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteTopicsResponse {
    pub throttle_time_ms: i32,
    pub responses: Vec<DeletableTopicResult>,
}

impl Message for DeleteTopicsResponse {
    fn read(r: &mut Reader<'_>, v: i16) -> DecodeResult<Self> {
        let throttle_time_ms = r.i32()?;
        let responses = r.array(|r| {
            let name = r.nullable_string()?;
            let topic_id = if v >= 6 { r.uuid()? } else { Uuid::ZERO };
            let error_code = KafkaCode(r.i16()?);
            let error_message = if v >= 5 { r.nullable_string()? } else { None };
            r.skip_tagged_fields()?;
            Ok(DeletableTopicResult {
                name,
                topic_id,
                error_code,
                error_message,
            })
        })?;
        r.skip_tagged_fields()?;
        Ok(Self {
            throttle_time_ms,
            responses,
        })
    }

    fn write(&self, w: &mut Writer, v: i16) {
        w.i32(self.throttle_time_ms);
        w.array(&self.responses, |w, t| {
            if v >= 6 {
                w.nullable_string(t.name.as_deref());
                w.uuid(t.topic_id);
            } else {
                w.string(t.name.as_deref().unwrap_or(""));
            }
            w.i16(t.error_code.0);
            if v >= 5 {
                w.nullable_string(t.error_message.as_deref());
            }
            w.no_tagged_fields();
        });
        w.no_tagged_fields();
    }
}

pub async fn handle_delete_topics(ctx: &Ctx<'_>, req: DeleteTopicsRequest) -> DeleteTopicsResponse {
    let c = ctx.cluster;
    let responses = req
        .topics
        .iter()
        .map(|t| {
            let name = match &t.name {
                Some(n) => Ok(n.clone()),
                None => c.topics().name_by_id(TopicId(t.topic_id.0)),
            };
            let id = name
                .as_ref()
                .ok()
                .and_then(|n| c.topics().id(n).ok())
                .map_or(t.topic_id, |id| Uuid(id.0));
            match name.and_then(|n| c.topics().delete(&n).map(|()| n)) {
                Ok(n) => DeletableTopicResult {
                    name: Some(n),
                    topic_id: id,
                    error_code: KafkaCode::NONE,
                    error_message: None,
                },
                Err(e) => DeletableTopicResult {
                    name: t.name.clone(),
                    topic_id: t.topic_id,
                    error_code: errors::kafka_code(e.code()),
                    error_message: Some(e.to_string()),
                },
            }
        })
        .collect();
    DeleteTopicsResponse {
        throttle_time_ms: 0,
        responses,
    }
}

// ----- CreatePartitions ------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatePartitionsTopic {
    pub name: String,
    pub count: i32,
    pub assignments: Option<Vec<Vec<i32>>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatePartitionsRequest {
    pub topics: Vec<CreatePartitionsTopic>,
    pub timeout_ms: i32,
    pub validate_only: bool,
}

impl Message for CreatePartitionsRequest {
    fn read(r: &mut Reader<'_>, _v: i16) -> DecodeResult<Self> {
        let topics = r.array(|r| {
            let name = r.string()?;
            let count = r.i32()?;
            let assignments = r.nullable_array(|r| {
                let a = r.array(|r| r.i32())?;
                r.skip_tagged_fields()?;
                Ok(a)
            })?;
            r.skip_tagged_fields()?;
            Ok(CreatePartitionsTopic {
                name,
                count,
                assignments,
            })
        })?;
        let timeout_ms = r.i32()?;
        let validate_only = r.bool()?;
        r.skip_tagged_fields()?;
        Ok(Self {
            topics,
            timeout_ms,
            validate_only,
        })
    }

    fn write(&self, w: &mut Writer, _v: i16) {
        w.array(&self.topics, |w, t| {
            w.string(&t.name);
            w.i32(t.count);
            w.nullable_array(t.assignments.as_deref(), |w, a| {
                w.array(a, |w, b| w.i32(*b));
                w.no_tagged_fields();
            });
            w.no_tagged_fields();
        });
        w.i32(self.timeout_ms);
        w.bool(self.validate_only);
        w.no_tagged_fields();
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicResult {
    pub name: String,
    pub error_code: KafkaCode,
    pub error_message: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatePartitionsResponse {
    pub throttle_time_ms: i32,
    pub results: Vec<TopicResult>,
}

impl Message for CreatePartitionsResponse {
    fn read(r: &mut Reader<'_>, _v: i16) -> DecodeResult<Self> {
        let throttle_time_ms = r.i32()?;
        let results = r.array(|r| {
            let t = TopicResult {
                name: r.string()?,
                error_code: KafkaCode(r.i16()?),
                error_message: r.nullable_string()?,
            };
            r.skip_tagged_fields()?;
            Ok(t)
        })?;
        r.skip_tagged_fields()?;
        Ok(Self {
            throttle_time_ms,
            results,
        })
    }

    fn write(&self, w: &mut Writer, _v: i16) {
        w.i32(self.throttle_time_ms);
        w.array(&self.results, |w, t| {
            w.string(&t.name);
            w.i16(t.error_code.0);
            w.nullable_string(t.error_message.as_deref());
            w.no_tagged_fields();
        });
        w.no_tagged_fields();
    }
}

fn result_of(name: &str, r: Result<(), ClusterError>) -> TopicResult {
    match r {
        Ok(()) => TopicResult {
            name: name.to_string(),
            error_code: KafkaCode::NONE,
            error_message: None,
        },
        Err(e) => TopicResult {
            name: name.to_string(),
            error_code: errors::kafka_code(e.code()),
            error_message: Some(e.to_string()),
        },
    }
}

pub async fn handle_create_partitions(
    ctx: &Ctx<'_>,
    req: CreatePartitionsRequest,
) -> CreatePartitionsResponse {
    let c = ctx.cluster;
    let results = req
        .topics
        .iter()
        .map(|t| {
            let r = if t.assignments.as_ref().is_some_and(|a| !a.is_empty()) {
                Err(ClusterError::InvalidRequest(
                    "manual replica assignments are not supported".into(),
                ))
            } else {
                match u32::try_from(t.count) {
                    Err(_) => Err(ClusterError::InvalidPartitions(format!(
                        "the partition count must be positive, got {}",
                        t.count
                    ))),
                    Ok(total) if req.validate_only => {
                        c.topics().validate_create_partitions(&t.name, total)
                    }
                    Ok(total) => c.topics().create_partitions(&t.name, total),
                }
            };
            result_of(&t.name, r)
        })
        .collect();
    CreatePartitionsResponse {
        throttle_time_ms: 0,
        results,
    }
}

// ----- DescribeConfigs -------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribeConfigsResource {
    pub resource_type: i8,
    pub resource_name: String,
    /// `None`: every key.
    pub configuration_keys: Option<Vec<String>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribeConfigsRequest {
    pub resources: Vec<DescribeConfigsResource>,
    pub include_synonyms: bool,
    /// v3+.
    pub include_documentation: bool,
}

impl Message for DescribeConfigsRequest {
    fn read(r: &mut Reader<'_>, v: i16) -> DecodeResult<Self> {
        let resources = r.array(|r| {
            let res = DescribeConfigsResource {
                resource_type: r.i8()?,
                resource_name: r.string()?,
                configuration_keys: r.nullable_array(|r| r.string())?,
            };
            r.skip_tagged_fields()?;
            Ok(res)
        })?;
        let include_synonyms = r.bool()?;
        let include_documentation = if v >= 3 { r.bool()? } else { false };
        r.skip_tagged_fields()?;
        Ok(Self {
            resources,
            include_synonyms,
            include_documentation,
        })
    }

    fn write(&self, w: &mut Writer, v: i16) {
        w.array(&self.resources, |w, res| {
            w.i8(res.resource_type);
            w.string(&res.resource_name);
            w.nullable_array(res.configuration_keys.as_deref(), |w, k| w.string(k));
            w.no_tagged_fields();
        });
        w.bool(self.include_synonyms);
        if v >= 3 {
            w.bool(self.include_documentation);
        }
        w.no_tagged_fields();
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribedConfig {
    pub entry: ConfigEntry,
    /// v3+.
    pub config_type: i8,
    pub documentation: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribeConfigsResult {
    pub error_code: KafkaCode,
    pub error_message: Option<String>,
    pub resource_type: i8,
    pub resource_name: String,
    pub configs: Vec<DescribedConfig>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribeConfigsResponse {
    pub throttle_time_ms: i32,
    pub results: Vec<DescribeConfigsResult>,
}

impl Message for DescribeConfigsResponse {
    fn read(r: &mut Reader<'_>, v: i16) -> DecodeResult<Self> {
        let throttle_time_ms = r.i32()?;
        let results = r.array(|r| {
            let error_code = KafkaCode(r.i16()?);
            let error_message = r.nullable_string()?;
            let resource_type = r.i8()?;
            let resource_name = r.string()?;
            let configs = r.array(|r| {
                let entry = ConfigEntry {
                    name: r.string()?,
                    value: r.nullable_string()?,
                    read_only: r.bool()?,
                    config_source: r.i8()?,
                    is_sensitive: r.bool()?,
                };
                // Synonyms are never sent; a decoder still has to read them.
                r.array(|r| {
                    r.string()?;
                    r.nullable_string()?;
                    r.i8()?;
                    r.skip_tagged_fields()
                })?;
                let (config_type, documentation) = if v >= 3 {
                    (r.i8()?, r.nullable_string()?)
                } else {
                    (0, None)
                };
                r.skip_tagged_fields()?;
                Ok(DescribedConfig {
                    entry,
                    config_type,
                    documentation,
                })
            })?;
            r.skip_tagged_fields()?;
            Ok(DescribeConfigsResult {
                error_code,
                error_message,
                resource_type,
                resource_name,
                configs,
            })
        })?;
        r.skip_tagged_fields()?;
        Ok(Self {
            throttle_time_ms,
            results,
        })
    }

    fn write(&self, w: &mut Writer, v: i16) {
        w.i32(self.throttle_time_ms);
        w.array(&self.results, |w, res| {
            w.i16(res.error_code.0);
            w.nullable_string(res.error_message.as_deref());
            w.i8(res.resource_type);
            w.string(&res.resource_name);
            w.array(&res.configs, |w, c| {
                w.string(&c.entry.name);
                w.nullable_string(c.entry.value.as_deref());
                w.bool(c.entry.read_only);
                w.i8(c.entry.config_source);
                w.bool(c.entry.is_sensitive);
                w.array_len(Some(0)); // synonyms
                if v >= 3 {
                    w.i8(c.config_type);
                    w.nullable_string(c.documentation.as_deref());
                }
                w.no_tagged_fields();
            });
            w.no_tagged_fields();
        });
        w.no_tagged_fields();
    }
}

fn describe_one(
    ctx: &Ctx<'_>,
    res: &DescribeConfigsResource,
) -> Result<Vec<ConfigEntry>, ClusterError> {
    match res.resource_type {
        RESOURCE_TOPIC => {
            let d = ctx.cluster.topics().describe(&res.resource_name)?;
            Ok(topic_entries(ctx, &d.config))
        }
        RESOURCE_BROKER => {
            let id_ok = res.resource_name.is_empty()
                || res
                    .resource_name
                    .parse::<i32>()
                    .is_ok_and(|id| ctx.cluster.broker_ids().contains(&id));
            if !id_ok {
                return Err(ClusterError::InvalidRequest(format!(
                    "unknown broker {:?}",
                    res.resource_name
                )));
            }
            Ok(broker_entries(ctx))
        }
        other => Err(ClusterError::InvalidRequest(format!(
            "config resource type {other} is not supported (topics are 2, brokers 4)"
        ))),
    }
}

pub async fn handle_describe_configs(
    ctx: &Ctx<'_>,
    req: DescribeConfigsRequest,
) -> DescribeConfigsResponse {
    let results = req
        .resources
        .iter()
        .map(|res| match describe_one(ctx, res) {
            Ok(entries) => DescribeConfigsResult {
                error_code: KafkaCode::NONE,
                error_message: None,
                resource_type: res.resource_type,
                resource_name: res.resource_name.clone(),
                configs: entries
                    .into_iter()
                    .filter(|e| {
                        res.configuration_keys
                            .as_ref()
                            .is_none_or(|keys| keys.contains(&e.name))
                    })
                    .map(|entry| DescribedConfig {
                        config_type: config_type(&entry.name),
                        documentation: None,
                        entry,
                    })
                    .collect(),
            },
            Err(e) => DescribeConfigsResult {
                error_code: errors::kafka_code(e.code()),
                error_message: Some(e.to_string()),
                resource_type: res.resource_type,
                resource_name: res.resource_name.clone(),
                configs: Vec::new(),
            },
        })
        .collect();
    DescribeConfigsResponse {
        throttle_time_ms: 0,
        results,
    }
}

// ----- AlterConfigs (the older, replacing form) -------------------------------

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterConfigsReplace {
    pub resource_type: i8,
    pub resource_name: String,
    /// (name, value): the whole desired config; keys not named go back to
    /// their defaults.
    pub configs: Vec<(String, Option<String>)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterConfigsRequest {
    pub resources: Vec<AlterConfigsReplace>,
    pub validate_only: bool,
}

impl Message for AlterConfigsRequest {
    fn read(r: &mut Reader<'_>, _v: i16) -> DecodeResult<Self> {
        let resources = r.array(|r| {
            let resource_type = r.i8()?;
            let resource_name = r.string()?;
            let configs = r.array(|r| {
                let c = (r.string()?, r.nullable_string()?);
                r.skip_tagged_fields()?;
                Ok(c)
            })?;
            r.skip_tagged_fields()?;
            Ok(AlterConfigsReplace {
                resource_type,
                resource_name,
                configs,
            })
        })?;
        let validate_only = r.bool()?;
        r.skip_tagged_fields()?;
        Ok(Self {
            resources,
            validate_only,
        })
    }

    fn write(&self, w: &mut Writer, _v: i16) {
        w.array(&self.resources, |w, res| {
            w.i8(res.resource_type);
            w.string(&res.resource_name);
            w.array(&res.configs, |w, (k, v)| {
                w.string(k);
                w.nullable_string(v.as_deref());
                w.no_tagged_fields();
            });
            w.no_tagged_fields();
        });
        w.bool(self.validate_only);
        w.no_tagged_fields();
    }
}

/// AlterConfigs answers like IncrementalAlterConfigs.
pub type AlterConfigsResponse = IncrementalAlterConfigsResponse;

/// AlterConfigs replaces a topic's whole config (the core's
/// `ConfigChange::replacing_all`), all or nothing.
fn replace_one(
    ctx: &Ctx<'_>,
    res: &AlterConfigsReplace,
    validate_only: bool,
) -> Result<(), ClusterError> {
    if res.resource_type != RESOURCE_TOPIC {
        return Err(ClusterError::InvalidRequest(format!(
            "only topic configs (resource type 2) can be altered, got type {}",
            res.resource_type
        )));
    }
    ctx.cluster
        .topics()
        .alter_config(
            &res.resource_name,
            &ConfigChange::replacing_all(&res.configs),
            validate_only,
        )
        .map(|_| ())
}

pub async fn handle_alter_configs(ctx: &Ctx<'_>, req: AlterConfigsRequest) -> AlterConfigsResponse {
    let responses = req
        .resources
        .iter()
        .map(|res| {
            let r = result_of(&res.resource_name, replace_one(ctx, res, req.validate_only));
            AlterConfigsResourceResponse {
                error_code: r.error_code,
                error_message: r.error_message,
                resource_type: res.resource_type,
                resource_name: res.resource_name.clone(),
            }
        })
        .collect();
    AlterConfigsResponse {
        throttle_time_ms: 0,
        responses,
    }
}

// ----- IncrementalAlterConfigs -----------------------------------------------

/// Kafka's incremental config operations.
const OP_SET: i8 = 0;
const OP_DELETE: i8 = 1;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterableConfig {
    pub name: String,
    pub config_operation: i8,
    pub value: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterConfigsResource {
    pub resource_type: i8,
    pub resource_name: String,
    pub configs: Vec<AlterableConfig>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IncrementalAlterConfigsRequest {
    pub resources: Vec<AlterConfigsResource>,
    pub validate_only: bool,
}

impl Message for IncrementalAlterConfigsRequest {
    fn read(r: &mut Reader<'_>, _v: i16) -> DecodeResult<Self> {
        let resources = r.array(|r| {
            let resource_type = r.i8()?;
            let resource_name = r.string()?;
            let configs = r.array(|r| {
                let c = AlterableConfig {
                    name: r.string()?,
                    config_operation: r.i8()?,
                    value: r.nullable_string()?,
                };
                r.skip_tagged_fields()?;
                Ok(c)
            })?;
            r.skip_tagged_fields()?;
            Ok(AlterConfigsResource {
                resource_type,
                resource_name,
                configs,
            })
        })?;
        let validate_only = r.bool()?;
        r.skip_tagged_fields()?;
        Ok(Self {
            resources,
            validate_only,
        })
    }

    fn write(&self, w: &mut Writer, _v: i16) {
        w.array(&self.resources, |w, res| {
            w.i8(res.resource_type);
            w.string(&res.resource_name);
            w.array(&res.configs, |w, c| {
                w.string(&c.name);
                w.i8(c.config_operation);
                w.nullable_string(c.value.as_deref());
                w.no_tagged_fields();
            });
            w.no_tagged_fields();
        });
        w.bool(self.validate_only);
        w.no_tagged_fields();
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterConfigsResourceResponse {
    pub error_code: KafkaCode,
    pub error_message: Option<String>,
    pub resource_type: i8,
    pub resource_name: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IncrementalAlterConfigsResponse {
    pub throttle_time_ms: i32,
    pub responses: Vec<AlterConfigsResourceResponse>,
}

impl Message for IncrementalAlterConfigsResponse {
    fn read(r: &mut Reader<'_>, _v: i16) -> DecodeResult<Self> {
        let throttle_time_ms = r.i32()?;
        let responses = r.array(|r| {
            let res = AlterConfigsResourceResponse {
                error_code: KafkaCode(r.i16()?),
                error_message: r.nullable_string()?,
                resource_type: r.i8()?,
                resource_name: r.string()?,
            };
            r.skip_tagged_fields()?;
            Ok(res)
        })?;
        r.skip_tagged_fields()?;
        Ok(Self {
            throttle_time_ms,
            responses,
        })
    }

    fn write(&self, w: &mut Writer, _v: i16) {
        w.i32(self.throttle_time_ms);
        w.array(&self.responses, |w, res| {
            w.i16(res.error_code.0);
            w.nullable_string(res.error_message.as_deref());
            w.i8(res.resource_type);
            w.string(&res.resource_name);
            w.no_tagged_fields();
        });
        w.no_tagged_fields();
    }
}

fn alter_one(
    ctx: &Ctx<'_>,
    res: &AlterConfigsResource,
    validate_only: bool,
) -> Result<(), ClusterError> {
    if res.resource_type != RESOURCE_TOPIC {
        return Err(ClusterError::InvalidRequest(format!(
            "only topic configs (resource type 2) can be altered, got type {}",
            res.resource_type
        )));
    }
    let changes = res
        .configs
        .iter()
        .map(|c| match (c.config_operation, &c.value) {
            (OP_SET, Some(value)) => Ok(ConfigChange::Set {
                key: c.name.clone(),
                value: value.clone(),
            }),
            (OP_SET, None) => Err(ClusterError::InvalidConfig(format!(
                "SET of {} needs a value",
                c.name
            ))),
            (OP_DELETE, _) => Ok(ConfigChange::Delete {
                key: c.name.clone(),
            }),
            (op, _) => Err(ClusterError::InvalidConfig(format!(
                "operation {op} (APPEND/SUBTRACT) is not supported for {}; use SET",
                c.name
            ))),
        })
        .collect::<Result<Vec<_>, _>>()?;
    ctx.cluster
        .topics()
        .alter_config(&res.resource_name, &changes, validate_only)
        .map(|_| ())
}

pub async fn handle_incremental_alter_configs(
    ctx: &Ctx<'_>,
    req: IncrementalAlterConfigsRequest,
) -> IncrementalAlterConfigsResponse {
    let responses = req
        .resources
        .iter()
        .map(|res| {
            let r = result_of(&res.resource_name, alter_one(ctx, res, req.validate_only));
            AlterConfigsResourceResponse {
                error_code: r.error_code,
                error_message: r.error_message,
                resource_type: res.resource_type,
                resource_name: res.resource_name.clone(),
            }
        })
        .collect();
    IncrementalAlterConfigsResponse {
        throttle_time_ms: 0,
        responses,
    }
}
