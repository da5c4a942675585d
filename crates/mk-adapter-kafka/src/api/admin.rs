//! Topic administration as Kafka's admin clients drive it: CreateTopics
//! (with configs and validate_only), DeleteTopics (by name, or by topic id
//! from v6), CreatePartitions, DescribeConfigs and IncrementalAlterConfigs
//! for the topic configs the core has (and the broker's settings, read
//! only). Each is a translation of one core operation per topic.

use super::Ctx;
use crate::codec::Uuid;
use crate::errors::{self, KafkaCode};
use crate::messages::alter_configs::{
    AlterConfigsRequest, AlterConfigsResource as ReplacedResource, AlterConfigsResourceResponse,
    AlterConfigsResponse,
};
use crate::messages::create_partitions::{
    CreatePartitionsRequest, CreatePartitionsResponse, CreatePartitionsTopicResult,
};
use crate::messages::create_topics::{
    CreatableTopic, CreatableTopicConfig, CreatableTopicConfigs, CreatableTopicResult,
    CreateTopicsRequest, CreateTopicsResponse,
};
use crate::messages::delete_topics::{
    DeletableTopicResult, DeleteTopicState, DeleteTopicsRequest, DeleteTopicsResponse,
};
use crate::messages::describe_configs::{
    DescribeConfigsRequest, DescribeConfigsResource, DescribeConfigsResourceResult,
    DescribeConfigsResponse, DescribeConfigsResult,
};
use crate::messages::incremental_alter_configs::{
    AlterConfigsResource, AlterConfigsResourceResponse as AlteredResource,
    IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse,
};
use mk_cluster::{ClusterError, ConfigChange, TopicConfig, TopicError, TopicId};

/// Kafka's config resource types.
pub const RESOURCE_TOPIC: i8 = 2;
pub const RESOURCE_BROKER: i8 = 4;
/// Kafka's GROUP resource (KIP-848 and KIP-932 group configs).
pub const RESOURCE_GROUP: i8 = 32;

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

impl ConfigEntry {
    fn into_created(self) -> CreatableTopicConfigs {
        CreatableTopicConfigs {
            name: self.name,
            value: self.value,
            read_only: self.read_only,
            config_source: self.config_source,
            is_sensitive: self.is_sensitive,
        }
    }

    fn into_described(self) -> DescribeConfigsResourceResult {
        DescribeConfigsResourceResult {
            config_type: config_type(&self.name),
            name: self.name,
            value: self.value,
            read_only: self.read_only,
            config_source: self.config_source,
            is_sensitive: self.is_sensitive,
            synonyms: Vec::new(),
            documentation: None,
        }
    }
}

/// A topic config from the cluster defaults plus CreateTopics' configs.
fn config_with(
    ctx: &Ctx<'_>,
    configs: &[CreatableTopicConfig],
) -> Result<TopicConfig, ClusterError> {
    let defaults = &ctx.cluster.config().default_topic_config;
    let changes: Vec<ConfigChange> = configs
        .iter()
        .map(|c| match &c.value {
            Some(value) => ConfigChange::Set {
                key: c.name.clone(),
                value: value.clone(),
            },
            None => ConfigChange::Delete {
                key: c.name.clone(),
            },
        })
        .collect();
    defaults.with_changes(&changes, defaults)
}

// ----- CreateTopics ----------------------------------------------------------

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
        n => u32::try_from(n).map_err(|_| TopicError::PartitionsNotPositive {
            asked: i64::from(n),
        })?,
    };
    let rf = match t.replication_factor {
        -1 => c
            .config()
            .auto_create_replication_factor
            .min(c.broker_ids().len()),
        n => usize::try_from(n).map_err(|_| TopicError::ReplicationFactorNotPositive {
            asked: i64::from(n),
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
        configs: Some(
            topic_entries(ctx, &config)
                .into_iter()
                .map(ConfigEntry::into_created)
                .collect(),
        ),
        ..CreatableTopicResult::default()
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
                error_code: errors::kafka_code(e.code()),
                error_message: Some(e.to_string()),
                configs: None,
                ..CreatableTopicResult::default()
            })
        })
        .collect();
    CreateTopicsResponse {
        throttle_time_ms: 0,
        topics,
    }
}

// ----- DeleteTopics ----------------------------------------------------------

pub async fn handle_delete_topics(ctx: &Ctx<'_>, req: DeleteTopicsRequest) -> DeleteTopicsResponse {
    let c = ctx.cluster;
    // v1-v5 name the topics; v6 names them or gives their ids.
    let topics: Vec<DeleteTopicState> = if ctx.version() >= 6 {
        req.topics
    } else {
        req.topic_names
            .into_iter()
            .map(|n| DeleteTopicState {
                name: Some(n),
                topic_id: Uuid::ZERO,
            })
            .collect()
    };
    let responses = topics
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

/// A per-resource outcome as Kafka reports it: a code and a message.
fn outcome(r: Result<(), ClusterError>) -> (KafkaCode, Option<String>) {
    match r {
        Ok(()) => (KafkaCode::NONE, None),
        Err(e) => (errors::kafka_code(e.code()), Some(e.to_string())),
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
                    Err(_) => Err(TopicError::CountNotPositive {
                        asked: i64::from(t.count),
                    }
                    .into()),
                    Ok(total) if req.validate_only => {
                        c.topics().validate_create_partitions(&t.name, total)
                    }
                    Ok(total) => c.topics().create_partitions(&t.name, total),
                }
            };
            let (error_code, error_message) = outcome(r);
            CreatePartitionsTopicResult {
                name: t.name.clone(),
                error_code,
                error_message,
            }
        })
        .collect();
    CreatePartitionsResponse {
        throttle_time_ms: 0,
        results,
    }
}

// ----- DescribeConfigs -------------------------------------------------------

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
        RESOURCE_GROUP => super::group_configs::entries(ctx, &res.resource_name),
        other => Err(ClusterError::InvalidRequest(format!(
            "config resource type {other} is not supported (topics are 2, brokers 4, groups 32)"
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
                    .map(ConfigEntry::into_described)
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

/// AlterConfigs replaces a topic's whole config (the core's
/// `ConfigChange::replacing_all`), all or nothing.
fn replace_one(
    ctx: &Ctx<'_>,
    res: &ReplacedResource,
    validate_only: bool,
) -> Result<(), ClusterError> {
    if res.resource_type != RESOURCE_TOPIC {
        return Err(ClusterError::InvalidRequest(format!(
            "only topic configs (resource type 2) can be altered, got type {}",
            res.resource_type
        )));
    }
    let configs: Vec<(String, Option<String>)> = res
        .configs
        .iter()
        .map(|c| (c.name.clone(), c.value.clone()))
        .collect();
    ctx.cluster
        .topics()
        .alter_config(
            &res.resource_name,
            &ConfigChange::replacing_all(&configs),
            validate_only,
        )
        .map(|_| ())
}

pub async fn handle_alter_configs(ctx: &Ctx<'_>, req: AlterConfigsRequest) -> AlterConfigsResponse {
    let responses = req
        .resources
        .iter()
        .map(|res| {
            let (error_code, error_message) = outcome(replace_one(ctx, res, req.validate_only));
            AlterConfigsResourceResponse {
                error_code,
                error_message,
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

fn alter_one(
    ctx: &Ctx<'_>,
    res: &AlterConfigsResource,
    validate_only: bool,
) -> Result<(), ClusterError> {
    if res.resource_type == RESOURCE_GROUP {
        return super::group_configs::alter(ctx, res, validate_only);
    }
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
            let (error_code, error_message) = outcome(alter_one(ctx, res, req.validate_only));
            AlteredResource {
                error_code,
                error_message,
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
