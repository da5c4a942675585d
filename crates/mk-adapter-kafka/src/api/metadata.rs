//! Metadata and DescribeCluster: which brokers there are (one per hosted
//! broker id, each at its own listener), who leads each partition, and the
//! cluster id. Metadata of an unknown topic creates it when the client
//! allows it and the broker enables auto-creation (Kafka's default).

use super::{Ctx, Message};
use crate::codec::{DecodeResult, Reader, Uuid, Writer};
use crate::errors::{self, KafkaCode};
use mk_cluster::{ClusterError, TopicDescription, TopicId};

/// "Authorized operations were not requested" (Kafka's INT32_MIN).
pub const AUTHORIZED_OPERATIONS_OMITTED: i32 = i32::MIN;

/// Without ACLs every operation is allowed: the bit set Kafka reports for a
/// topic (READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS,
/// ALTER_CONFIGS) and for the cluster (adds CLUSTER_ACTION, IDEMPOTENT_WRITE,
/// ALTER, DESCRIBE, CREATE, DESCRIBE_CONFIGS, ALTER_CONFIGS).
const TOPIC_OPERATIONS: i32 =
    (1 << 3) | (1 << 4) | (1 << 5) | (1 << 6) | (1 << 7) | (1 << 8) | (1 << 10) | (1 << 11);
const CLUSTER_OPERATIONS: i32 =
    (1 << 5) | (1 << 7) | (1 << 8) | (1 << 9) | (1 << 10) | (1 << 11) | (1 << 12);

// ----- Metadata ----------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataRequestTopic {
    /// v10+; zero when the topic is named.
    pub topic_id: Uuid,
    /// Nullable from v10 (then the id names the topic).
    pub name: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataRequest {
    /// `None` asks for every topic (v1+); in v0 an empty list does.
    pub topics: Option<Vec<MetadataRequestTopic>>,
    /// v4+; earlier versions always allow it.
    pub allow_auto_topic_creation: bool,
    /// v8-v10.
    pub include_cluster_authorized_operations: bool,
    /// v8+.
    pub include_topic_authorized_operations: bool,
}

/// librdkafka 2.x (librdkafka issue 5049, seen from confluent-kafka
/// 2.16.1) asks for all topics at v9+ with a null compact array whose
/// 4-byte count placeholder it never shrinks: the null count (0) is
/// followed by 3 zero bytes, then the real fields. Kafka's broker reads the
/// zeros as the fields and ignores the bytes left over; this reads past
/// exactly that pad, recognised by its zeros and by the body being exactly
/// 3 bytes longer than the fields with no tagged fields, so any other
/// trailing garbage still closes the connection.
fn skip_librdkafka_count_pad(r: &mut Reader<'_>, v: i16) -> DecodeResult<()> {
    let bools = if (8..=10).contains(&v) { 3 } else { 2 };
    if r.remaining() == 3 + bools + 1 && r.peek_zeros(3) {
        r.bytes_exact(3)?;
    }
    Ok(())
}

impl Message for MetadataRequest {
    fn read(r: &mut Reader<'_>, v: i16) -> DecodeResult<Self> {
        let topic = |r: &mut Reader<'_>| {
            let topic_id = if v >= 10 { r.uuid()? } else { Uuid::ZERO };
            let name = if v >= 10 {
                r.nullable_string()?
            } else {
                Some(r.string()?)
            };
            r.skip_tagged_fields()?;
            Ok(MetadataRequestTopic { topic_id, name })
        };
        let topics = if v >= 1 {
            r.nullable_array(topic)?
        } else {
            Some(r.array(topic)?)
        };
        if v >= 9 && topics.is_none() {
            skip_librdkafka_count_pad(r, v)?;
        }
        let allow_auto_topic_creation = if v >= 4 { r.bool()? } else { true };
        let include_cluster_authorized_operations = if (8..=10).contains(&v) {
            r.bool()?
        } else {
            false
        };
        let include_topic_authorized_operations = if v >= 8 { r.bool()? } else { false };
        r.skip_tagged_fields()?;
        Ok(Self {
            topics,
            allow_auto_topic_creation,
            include_cluster_authorized_operations,
            include_topic_authorized_operations,
        })
    }

    fn write(&self, w: &mut Writer, v: i16) {
        let empty = Vec::new();
        let topics = if v >= 1 {
            self.topics.as_deref()
        } else {
            Some(self.topics.as_deref().unwrap_or(&empty[..]))
        };
        w.nullable_array(topics, |w, t| {
            if v >= 10 {
                w.uuid(t.topic_id);
                w.nullable_string(t.name.as_deref());
            } else {
                w.string(t.name.as_deref().unwrap_or(""));
            }
            w.no_tagged_fields();
        });
        if v >= 4 {
            w.bool(self.allow_auto_topic_creation);
        }
        if (8..=10).contains(&v) {
            w.bool(self.include_cluster_authorized_operations);
        }
        if v >= 8 {
            w.bool(self.include_topic_authorized_operations);
        }
        w.no_tagged_fields();
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataBroker {
    pub node_id: i32,
    pub host: String,
    pub port: i32,
    /// v1+.
    pub rack: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataPartition {
    pub error_code: KafkaCode,
    pub partition_index: i32,
    pub leader_id: i32,
    /// v7+.
    pub leader_epoch: i32,
    pub replica_nodes: Vec<i32>,
    pub isr_nodes: Vec<i32>,
    /// v5+.
    pub offline_replicas: Vec<i32>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataTopic {
    pub error_code: KafkaCode,
    /// Nullable from v12.
    pub name: Option<String>,
    /// v10+.
    pub topic_id: Uuid,
    /// v1+.
    pub is_internal: bool,
    pub partitions: Vec<MetadataPartition>,
    /// v8+.
    pub topic_authorized_operations: i32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataResponse {
    /// v3+.
    pub throttle_time_ms: i32,
    pub brokers: Vec<MetadataBroker>,
    /// v2+.
    pub cluster_id: Option<String>,
    /// v1+.
    pub controller_id: i32,
    pub topics: Vec<MetadataTopic>,
    /// v8-v10.
    pub cluster_authorized_operations: i32,
}

fn read_i32s(r: &mut Reader<'_>) -> DecodeResult<Vec<i32>> {
    r.array(|r| r.i32())
}

fn write_i32s(w: &mut Writer, v: &[i32]) {
    w.array(v, |w, x| w.i32(*x));
}

impl Message for MetadataResponse {
    fn read(r: &mut Reader<'_>, v: i16) -> DecodeResult<Self> {
        let throttle_time_ms = if v >= 3 { r.i32()? } else { 0 };
        let brokers = r.array(|r| {
            let b = MetadataBroker {
                node_id: r.i32()?,
                host: r.string()?,
                port: r.i32()?,
                rack: if v >= 1 { r.nullable_string()? } else { None },
            };
            r.skip_tagged_fields()?;
            Ok(b)
        })?;
        let cluster_id = if v >= 2 { r.nullable_string()? } else { None };
        let controller_id = if v >= 1 { r.i32()? } else { -1 };
        let topics = r.array(|r| {
            let error_code = KafkaCode(r.i16()?);
            let name = r.nullable_string()?;
            let topic_id = if v >= 10 { r.uuid()? } else { Uuid::ZERO };
            let is_internal = if v >= 1 { r.bool()? } else { false };
            let partitions = r.array(|r| {
                let p = MetadataPartition {
                    error_code: KafkaCode(r.i16()?),
                    partition_index: r.i32()?,
                    leader_id: r.i32()?,
                    leader_epoch: if v >= 7 { r.i32()? } else { -1 },
                    replica_nodes: read_i32s(r)?,
                    isr_nodes: read_i32s(r)?,
                    offline_replicas: if v >= 5 { read_i32s(r)? } else { Vec::new() },
                };
                r.skip_tagged_fields()?;
                Ok(p)
            })?;
            let topic_authorized_operations = if v >= 8 {
                r.i32()?
            } else {
                AUTHORIZED_OPERATIONS_OMITTED
            };
            r.skip_tagged_fields()?;
            Ok(MetadataTopic {
                error_code,
                name,
                topic_id,
                is_internal,
                partitions,
                topic_authorized_operations,
            })
        })?;
        let cluster_authorized_operations = if (8..=10).contains(&v) {
            r.i32()?
        } else {
            AUTHORIZED_OPERATIONS_OMITTED
        };
        r.skip_tagged_fields()?;
        Ok(Self {
            throttle_time_ms,
            brokers,
            cluster_id,
            controller_id,
            topics,
            cluster_authorized_operations,
        })
    }

    fn write(&self, w: &mut Writer, v: i16) {
        if v >= 3 {
            w.i32(self.throttle_time_ms);
        }
        w.array(&self.brokers, |w, b| {
            w.i32(b.node_id);
            w.string(&b.host);
            w.i32(b.port);
            if v >= 1 {
                w.nullable_string(b.rack.as_deref());
            }
            w.no_tagged_fields();
        });
        if v >= 2 {
            w.nullable_string(self.cluster_id.as_deref());
        }
        if v >= 1 {
            w.i32(self.controller_id);
        }
        w.array(&self.topics, |w, t| {
            w.i16(t.error_code.0);
            if v >= 12 {
                w.nullable_string(t.name.as_deref());
            } else {
                w.string(t.name.as_deref().unwrap_or(""));
            }
            if v >= 10 {
                w.uuid(t.topic_id);
            }
            if v >= 1 {
                w.bool(t.is_internal);
            }
            w.array(&t.partitions, |w, p| {
                w.i16(p.error_code.0);
                w.i32(p.partition_index);
                w.i32(p.leader_id);
                if v >= 7 {
                    w.i32(p.leader_epoch);
                }
                write_i32s(w, &p.replica_nodes);
                write_i32s(w, &p.isr_nodes);
                if v >= 5 {
                    write_i32s(w, &p.offline_replicas);
                }
                w.no_tagged_fields();
            });
            if v >= 8 {
                w.i32(t.topic_authorized_operations);
            }
            w.no_tagged_fields();
        });
        if (8..=10).contains(&v) {
            w.i32(self.cluster_authorized_operations);
        }
        w.no_tagged_fields();
    }
}

/// The brokers as clients see them: the online ones, at their listeners.
fn advertised_brokers(ctx: &Ctx<'_>) -> Vec<MetadataBroker> {
    let online = ctx.cluster.brokers().online();
    ctx.endpoints
        .iter()
        .filter(|e| online.contains(&e.broker_id))
        .map(|e| MetadataBroker {
            node_id: e.broker_id,
            host: e.host.clone(),
            port: i32::from(e.port),
            rack: None,
        })
        .collect()
}

/// The controller Kafka clients are told about: the lowest online broker
/// (admin requests are served by every broker here).
fn controller(ctx: &Ctx<'_>) -> i32 {
    ctx.cluster
        .brokers()
        .online()
        .first()
        .copied()
        .unwrap_or(-1)
}

fn topic_error(name: Option<String>, topic_id: Uuid, e: &ClusterError) -> MetadataTopic {
    MetadataTopic {
        error_code: errors::kafka_code(e.code()),
        name,
        topic_id,
        is_internal: false,
        partitions: Vec::new(),
        topic_authorized_operations: AUTHORIZED_OPERATIONS_OMITTED,
    }
}

fn topic_entry(ctx: &Ctx<'_>, d: &TopicDescription, authorized: bool) -> MetadataTopic {
    let online = ctx.cluster.brokers().online();
    let partitions = d
        .partitions
        .iter()
        .map(|p| {
            // A damaged partition is offline as a replica in a failed log
            // directory is in Kafka: KAFKA_STORAGE_ERROR, no leader.
            let damaged = p.damaged.is_some();
            let leader_online = online.contains(&p.leader_id) && !damaged;
            MetadataPartition {
                error_code: if damaged {
                    errors::kafka_code(mk_cluster::ErrorCode::StorageError)
                } else if leader_online {
                    KafkaCode::NONE
                } else {
                    KafkaCode::LEADER_NOT_AVAILABLE
                },
                partition_index: p.partition as i32,
                leader_id: if leader_online { p.leader_id } else { -1 },
                leader_epoch: p.leader_epoch,
                replica_nodes: p.replicas.clone(),
                isr_nodes: p.isr.clone(),
                offline_replicas: p
                    .replicas
                    .iter()
                    .copied()
                    .filter(|b| damaged || !online.contains(b))
                    .collect(),
            }
        })
        .collect();
    MetadataTopic {
        error_code: KafkaCode::NONE,
        name: Some(d.name.clone()),
        topic_id: ctx
            .cluster
            .topics()
            .id(&d.name)
            .map(|id| Uuid(id.0))
            .unwrap_or(Uuid::ZERO),
        is_internal: false,
        partitions,
        topic_authorized_operations: if authorized {
            TOPIC_OPERATIONS
        } else {
            AUTHORIZED_OPERATIONS_OMITTED
        },
    }
}

pub async fn handle(ctx: &Ctx<'_>, req: MetadataRequest) -> MetadataResponse {
    let v = ctx.version();
    let c = ctx.cluster;
    let authorized = req.include_topic_authorized_operations;
    let all = match &req.topics {
        None => true,
        Some(t) => v == 0 && t.is_empty(),
    };
    let mut topics = Vec::new();
    if all {
        match c.topics().list() {
            Ok(names) => {
                for name in names {
                    // A topic deleted between the listing and here is
                    // simply left out.
                    if let Ok(d) = c.topics().describe(&name) {
                        topics.push(topic_entry(ctx, &d, authorized));
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "metadata: cannot list topics"),
        }
    } else {
        for t in req.topics.iter().flatten() {
            let name = match &t.name {
                Some(n) => Ok(n.clone()),
                None => c.topics().name_by_id(TopicId(t.topic_id.0)),
            };
            let described = name.and_then(|n| {
                c.topics()
                    .describe_or_auto_create(&n, req.allow_auto_topic_creation)
            });
            topics.push(match described {
                Ok(d) => topic_entry(ctx, &d, authorized),
                Err(e) => topic_error(t.name.clone(), t.topic_id, &e),
            });
        }
    }
    MetadataResponse {
        throttle_time_ms: 0,
        brokers: advertised_brokers(ctx),
        cluster_id: Some(c.cluster_id()),
        controller_id: controller(ctx),
        topics,
        cluster_authorized_operations: if req.include_cluster_authorized_operations {
            CLUSTER_OPERATIONS
        } else {
            AUTHORIZED_OPERATIONS_OMITTED
        },
    }
}

// ----- DescribeCluster (every version is flexible) ------------------------

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribeClusterRequest {
    pub include_cluster_authorized_operations: bool,
    /// v1+: 1 = brokers, 2 = controllers.
    pub endpoint_type: i8,
}

impl Message for DescribeClusterRequest {
    fn read(r: &mut Reader<'_>, v: i16) -> DecodeResult<Self> {
        let include_cluster_authorized_operations = r.bool()?;
        let endpoint_type = if v >= 1 { r.i8()? } else { 1 };
        r.skip_tagged_fields()?;
        Ok(Self {
            include_cluster_authorized_operations,
            endpoint_type,
        })
    }

    fn write(&self, w: &mut Writer, v: i16) {
        w.bool(self.include_cluster_authorized_operations);
        if v >= 1 {
            w.i8(self.endpoint_type);
        }
        w.no_tagged_fields();
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribeClusterResponse {
    pub throttle_time_ms: i32,
    pub error_code: KafkaCode,
    pub error_message: Option<String>,
    /// v1+.
    pub endpoint_type: i8,
    pub cluster_id: String,
    pub controller_id: i32,
    pub brokers: Vec<MetadataBroker>,
    pub cluster_authorized_operations: i32,
}

impl Message for DescribeClusterResponse {
    fn read(r: &mut Reader<'_>, v: i16) -> DecodeResult<Self> {
        let throttle_time_ms = r.i32()?;
        let error_code = KafkaCode(r.i16()?);
        let error_message = r.nullable_string()?;
        let endpoint_type = if v >= 1 { r.i8()? } else { 1 };
        let cluster_id = r.string()?;
        let controller_id = r.i32()?;
        let brokers = r.array(|r| {
            let b = MetadataBroker {
                node_id: r.i32()?,
                host: r.string()?,
                port: r.i32()?,
                rack: r.nullable_string()?,
            };
            r.skip_tagged_fields()?;
            Ok(b)
        })?;
        let cluster_authorized_operations = r.i32()?;
        r.skip_tagged_fields()?;
        Ok(Self {
            throttle_time_ms,
            error_code,
            error_message,
            endpoint_type,
            cluster_id,
            controller_id,
            brokers,
            cluster_authorized_operations,
        })
    }

    fn write(&self, w: &mut Writer, v: i16) {
        w.i32(self.throttle_time_ms);
        w.i16(self.error_code.0);
        w.nullable_string(self.error_message.as_deref());
        if v >= 1 {
            w.i8(self.endpoint_type);
        }
        w.string(&self.cluster_id);
        w.i32(self.controller_id);
        w.array(&self.brokers, |w, b| {
            w.i32(b.node_id);
            w.string(&b.host);
            w.i32(b.port);
            w.nullable_string(b.rack.as_deref());
            w.no_tagged_fields();
        });
        w.i32(self.cluster_authorized_operations);
        w.no_tagged_fields();
    }
}

pub async fn handle_describe_cluster(
    ctx: &Ctx<'_>,
    req: DescribeClusterRequest,
) -> DescribeClusterResponse {
    let mut resp = DescribeClusterResponse {
        throttle_time_ms: 0,
        error_code: KafkaCode::NONE,
        error_message: None,
        endpoint_type: req.endpoint_type,
        cluster_id: ctx.cluster.cluster_id(),
        controller_id: controller(ctx),
        brokers: advertised_brokers(ctx),
        cluster_authorized_operations: if req.include_cluster_authorized_operations {
            CLUSTER_OPERATIONS
        } else {
            AUTHORIZED_OPERATIONS_OMITTED
        },
    };
    if req.endpoint_type != 1 {
        // Brokers and controllers are one process here; only broker
        // endpoints exist (Kafka answers UNSUPPORTED_ENDPOINT_TYPE).
        resp.error_code = KafkaCode(119);
        resp.error_message = Some("only broker endpoints (type 1) exist".into());
        resp.brokers.clear();
    }
    resp
}
