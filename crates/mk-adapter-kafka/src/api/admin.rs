//! Topic administration as Kafka's admin clients drive it: CreateTopics
//! (with configs and validate_only), DeleteTopics (by name, or by topic id
//! from v6), CreatePartitions, DescribeConfigs, AlterConfigs and
//! IncrementalAlterConfigs of topic and broker configs (the core's catalog
//! in mk-cluster's `topic_configs.rs` and `broker_configs.rs` decides
//! names, validation, sources and synonyms). Each is a translation of one
//! core operation per resource.

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
    DescribeConfigsResponse, DescribeConfigsResult, DescribeConfigsSynonym,
};
use crate::messages::incremental_alter_configs::{
    AlterConfigsResource, AlterConfigsResourceResponse as AlteredResource,
    IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse,
};
use mk_cluster::{
    ClusterError, ConfigChange, DescribedConfig, IncrementalChange, IncrementalOp, TopicConfig,
    TopicError, TopicId,
};

/// Kafka's config resource types.
pub const RESOURCE_TOPIC: i8 = 2;
pub const RESOURCE_BROKER: i8 = 4;
pub const RESOURCE_BROKER_LOGGER: i8 = 8;
/// Kafka's GROUP resource (KIP-848 and KIP-932 group configs).
pub const RESOURCE_GROUP: i8 = 32;

/// One configuration entry as admin clients show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigEntry {
    pub name: String,
    pub value: Option<String>,
    pub read_only: bool,
    pub config_source: i8,
    pub is_sensitive: bool,
    /// Kafka's type number (DescribeConfigs v3+); 0 is unknown.
    pub config_type: i8,
    /// Every layer with a value, most specific first: (name, value, source).
    pub synonyms: Vec<(String, String, i8)>,
    pub documentation: Option<String>,
}

impl ConfigEntry {
    /// An entry without type, synonyms or documentation.
    pub fn plain(name: String, value: String, config_source: i8) -> Self {
        Self {
            name,
            value: Some(value),
            read_only: false,
            config_source,
            is_sensitive: false,
            config_type: 0,
            synonyms: Vec::new(),
            documentation: None,
        }
    }
}

impl From<DescribedConfig> for ConfigEntry {
    fn from(d: DescribedConfig) -> Self {
        Self {
            name: d.name,
            value: Some(d.value),
            read_only: d.read_only,
            config_source: d.source.kafka_code(),
            is_sensitive: false,
            config_type: d.ty.kafka_code(),
            synonyms: d
                .synonyms
                .into_iter()
                .map(|s| (s.name, s.value, s.source.kafka_code()))
                .collect(),
            documentation: (!d.doc.is_empty()).then(|| d.doc.to_string()),
        }
    }
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

    fn into_described(self, synonyms: bool, documentation: bool) -> DescribeConfigsResourceResult {
        DescribeConfigsResourceResult {
            config_type: self.config_type,
            name: self.name,
            value: self.value,
            read_only: self.read_only,
            config_source: self.config_source,
            is_sensitive: self.is_sensitive,
            synonyms: if synonyms {
                self.synonyms
                    .into_iter()
                    .map(|(name, value, source)| DescribeConfigsSynonym {
                        name,
                        value: Some(value),
                        source,
                    })
                    .collect()
            } else {
                Vec::new()
            },
            documentation: self.documentation.filter(|_| documentation),
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
        // Asked as an i16 or capped by the broker count.
        replication_factor: i16::try_from(rf).unwrap_or(i16::MAX),
        configs: Some(
            config
                .described(&c.broker_defaults(), c.config().segment_max_bytes)
                .into_iter()
                .map(|d| ConfigEntry::from(d).into_created())
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

/// The broker a BROKER resource names: "" is every broker (Kafka's
/// cluster-wide default), else a broker id.
fn broker_scope(name: &str) -> Result<Option<i32>, ClusterError> {
    if name.is_empty() {
        return Ok(None);
    }
    name.parse::<i32>().map(Some).map_err(|_| {
        ClusterError::InvalidRequest(format!("broker resource name must be an id, got {name:?}"))
    })
}

fn describe_one(
    ctx: &Ctx<'_>,
    res: &DescribeConfigsResource,
) -> Result<Vec<ConfigEntry>, ClusterError> {
    match res.resource_type {
        RESOURCE_TOPIC => Ok(ctx
            .cluster
            .topics()
            .described_configs(&res.resource_name)?
            .into_iter()
            .map(ConfigEntry::from)
            .collect()),
        RESOURCE_BROKER => Ok(ctx
            .cluster
            .describe_broker_configs(broker_scope(&res.resource_name)?)?
            .into_iter()
            .map(ConfigEntry::from)
            .collect()),
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
                    .map(|e| e.into_described(req.include_synonyms, req.include_documentation))
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
    if res.resource_type == RESOURCE_BROKER {
        let changes: Vec<IncrementalChange> = res
            .configs
            .iter()
            .map(|c| IncrementalChange {
                key: c.name.clone(),
                op: c
                    .value
                    .clone()
                    .map_or(IncrementalOp::Delete, IncrementalOp::Set),
            })
            .collect();
        return ctx.cluster.alter_broker_configs(
            broker_scope(&res.resource_name)?,
            &changes,
            true,
            validate_only,
        );
    }
    if res.resource_type != RESOURCE_TOPIC {
        return Err(ClusterError::InvalidRequest(format!(
            "only topic and broker configs (resource types 2 and 4) can be altered, got type {}",
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
pub(crate) const OP_SET: i8 = 0;
pub(crate) const OP_DELETE: i8 = 1;
const OP_APPEND: i8 = 2;
const OP_SUBTRACT: i8 = 3;

fn alter_one(
    ctx: &Ctx<'_>,
    res: &AlterConfigsResource,
    validate_only: bool,
) -> Result<(), ClusterError> {
    if res.resource_type == RESOURCE_GROUP {
        return super::group_configs::alter(ctx, res, validate_only);
    }
    let changes = res
        .configs
        .iter()
        .map(|c| {
            let value = || {
                c.value.clone().ok_or_else(|| {
                    ClusterError::InvalidConfig(format!("operation on {} needs a value", c.name))
                })
            };
            let op = match c.config_operation {
                OP_SET => IncrementalOp::Set(value()?),
                OP_DELETE => IncrementalOp::Delete,
                OP_APPEND => IncrementalOp::Append(value()?),
                OP_SUBTRACT => IncrementalOp::Subtract(value()?),
                op => {
                    return Err(ClusterError::InvalidRequest(format!(
                        "unknown config operation {op} for {}",
                        c.name
                    )));
                }
            };
            Ok(IncrementalChange {
                key: c.name.clone(),
                op,
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    match res.resource_type {
        RESOURCE_TOPIC => ctx
            .cluster
            .topics()
            .alter_config_incremental(&res.resource_name, &changes, validate_only)
            .map(|_| ()),
        RESOURCE_BROKER => ctx.cluster.alter_broker_configs(
            broker_scope(&res.resource_name)?,
            &changes,
            false,
            validate_only,
        ),
        other => Err(ClusterError::InvalidRequest(format!(
            "only topic, broker and group configs (resource types 2, 4, 32) can be altered, \
             got type {other}"
        ))),
    }
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
