//! Metadata, DescribeTopicPartitions and DescribeCluster: which brokers there are (one per hosted
//! broker id, each at its own listener), who leads each partition, and the
//! cluster id. Metadata of an unknown topic creates it when the client
//! allows it and the broker enables auto-creation (Kafka's default).

use super::{Ctx, Message};
use crate::codec::{DecodeResult, Reader, Uuid};
use crate::errors::{self, KafkaCode};
use crate::messages::describe_cluster::{
    DescribeClusterBroker, DescribeClusterRequest, DescribeClusterResponse,
};
use crate::messages::describe_topic_partitions::{
    Cursor, DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse,
    DescribeTopicPartitionsResponsePartition, DescribeTopicPartitionsResponseTopic,
};
use crate::messages::metadata::{
    MetadataRequest, MetadataResponse, MetadataResponseBroker, MetadataResponsePartition,
    MetadataResponseTopic,
};
use crate::server::BrokerEndpoint;
use bytes::BytesMut;
use mk_cluster::{
    ClusterError, PagedTopic, PartitionInfo, TopicCursor, TopicDescription, TopicId, TopicPartition,
};

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

/// librdkafka 2.x (librdkafka issue 5049, seen from confluent-kafka
/// 2.16.1) asks for all topics at v9+ with a null compact array whose
/// 4-byte count placeholder it never shrinks: the null count (0) is
/// followed by 3 zero bytes, then the real fields. Kafka's broker reads the
/// zeros as the fields and ignores the bytes left over; this reads past
/// exactly that pad, recognised by its zeros and by the body being exactly
/// 3 bytes longer than the fields with no tagged fields, so any other
/// trailing garbage still closes the connection.
pub fn read_metadata_request(r: &mut Reader<'_>, v: i16) -> DecodeResult<MetadataRequest> {
    let bools = if (8..=10).contains(&v) { 3 } else { 2 };
    if v >= 9 && r.remaining() == 1 + 3 + bools + 1 && r.peek_zeros(4) {
        let body = r.bytes_exact(r.remaining())?;
        let mut fixed = BytesMut::with_capacity(body.len() - 3);
        fixed.extend_from_slice(&body[..1]);
        fixed.extend_from_slice(&body[4..]);
        let fixed = fixed.freeze();
        let mut unpadded = Reader::new(&fixed, true);
        let req = MetadataRequest::read(&mut unpadded, v)?;
        unpadded.finish("request")?;
        return Ok(req);
    }
    MetadataRequest::read(r, v)
}

/// The brokers as clients see them: the online ones, at their listeners.
fn advertised_brokers(ctx: &Ctx<'_>) -> Vec<MetadataResponseBroker> {
    let online = ctx.cluster.brokers().online();
    ctx.endpoints
        .iter()
        .filter(|e| online.contains(&e.broker_id))
        .map(|e| MetadataResponseBroker {
            node_id: e.broker_id,
            host: e.host.clone(),
            port: i32::from(e.port),
            rack: None,
        })
        .collect()
}

/// Where a partition's leadership is now, as Produce v10+ and Fetch v16+
/// answer a leadership error with it (KIP-951): the leader and its epoch
/// from the metadata, and its endpoint if it is online.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderHint {
    pub leader_id: i32,
    pub leader_epoch: i32,
    pub endpoint: Option<BrokerEndpoint>,
}

pub fn leader_hint(ctx: &Ctx<'_>, tp: &TopicPartition) -> LeaderHint {
    let described = ctx.cluster.topics().describe(&tp.topic).ok();
    let partition = described.and_then(|d| {
        d.partitions
            .into_iter()
            .find(|p| p.partition == tp.partition)
    });
    let Some(p) = partition else {
        return LeaderHint {
            leader_id: -1,
            leader_epoch: -1,
            endpoint: None,
        };
    };
    let online = ctx.cluster.brokers().online().contains(&p.leader_id);
    LeaderHint {
        leader_id: p.leader_id,
        leader_epoch: p.leader_epoch,
        endpoint: online
            .then(|| ctx.endpoints.iter().find(|e| e.broker_id == p.leader_id))
            .flatten()
            .cloned(),
    }
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

fn topic_error(name: Option<String>, topic_id: Uuid, e: &ClusterError) -> MetadataResponseTopic {
    MetadataResponseTopic {
        error_code: errors::kafka_code(e.code()),
        name,
        topic_id,
        is_internal: false,
        partitions: Vec::new(),
        topic_authorized_operations: AUTHORIZED_OPERATIONS_OMITTED,
    }
}

/// How clients see a partition's leadership: its error, its leader (-1
/// when there is none they can use) and its offline replicas.
struct Leadership {
    error_code: KafkaCode,
    leader_id: i32,
    offline_replicas: Vec<i32>,
}

fn leadership(p: &PartitionInfo, online: &[i32]) -> Leadership {
    // A damaged partition is offline as a replica in a failed log
    // directory is in Kafka: KAFKA_STORAGE_ERROR, no leader.
    let damaged = p.damaged.is_some();
    let leader_online = online.contains(&p.leader_id) && !damaged;
    Leadership {
        error_code: if damaged {
            errors::kafka_code(mk_cluster::ErrorCode::StorageError)
        } else if leader_online {
            KafkaCode::NONE
        } else {
            KafkaCode::LEADER_NOT_AVAILABLE
        },
        leader_id: if leader_online { p.leader_id } else { -1 },
        offline_replicas: p
            .replicas
            .iter()
            .copied()
            .filter(|b| damaged || !online.contains(b))
            .collect(),
    }
}

fn topic_entry(ctx: &Ctx<'_>, d: &TopicDescription, authorized: bool) -> MetadataResponseTopic {
    let online = ctx.cluster.brokers().online();
    let partitions = d
        .partitions
        .iter()
        .map(|p| {
            let l = leadership(p, &online);
            MetadataResponsePartition {
                error_code: l.error_code,
                partition_index: p.partition as i32,
                leader_id: l.leader_id,
                leader_epoch: p.leader_epoch,
                replica_nodes: p.replicas.clone(),
                isr_nodes: p.isr.clone(),
                offline_replicas: l.offline_replicas,
            }
        })
        .collect();
    MetadataResponseTopic {
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

pub async fn handle_metadata(ctx: &Ctx<'_>, req: MetadataRequest) -> MetadataResponse {
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
            // By id (v10+) the name is null or, as the Java client sends it
            // for an id it learned from a KIP-848 assignment, empty.
            let name = match &t.name {
                Some(n) if !n.is_empty() || t.topic_id.0 == [0; 16] => Ok(n.clone()),
                _ => c.topics().name_by_id(TopicId(t.topic_id.0)),
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
        error_code: KafkaCode::NONE,
    }
}

// ----- DescribeCluster (every version is flexible) ------------------------

/// The brokers DescribeCluster lists: the online ones, and (v2, when
/// asked) the offline ones as fenced — a broker taken offline serves
/// nothing, as a fenced Kafka broker does.
fn cluster_brokers(ctx: &Ctx<'_>, fenced_too: bool) -> Vec<DescribeClusterBroker> {
    let online = ctx.cluster.brokers().online();
    ctx.endpoints
        .iter()
        .filter(|e| fenced_too || online.contains(&e.broker_id))
        .map(|e| DescribeClusterBroker {
            broker_id: e.broker_id,
            host: e.host.clone(),
            port: i32::from(e.port),
            rack: None,
            is_fenced: !online.contains(&e.broker_id),
        })
        .collect()
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
        brokers: cluster_brokers(ctx, req.include_fenced_brokers),
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

// ----- DescribeTopicPartitions (KIP-966; every version is flexible) ---------

fn paged_partition(p: &PartitionInfo, online: &[i32]) -> DescribeTopicPartitionsResponsePartition {
    let l = leadership(p, online);
    DescribeTopicPartitionsResponsePartition {
        error_code: l.error_code,
        partition_index: i32::try_from(p.partition).unwrap_or(i32::MAX),
        leader_id: l.leader_id,
        leader_epoch: p.leader_epoch,
        replica_nodes: p.replicas.clone(),
        isr_nodes: p.isr.clone(),
        // No eligible leader replicas (KIP-966's ELR is not kept): empty,
        // as a Kafka broker without ELR answers.
        eligible_leader_replicas: Some(Vec::new()),
        last_known_elr: Some(Vec::new()),
        offline_replicas: l.offline_replicas,
    }
}

fn paged_topic(t: PagedTopic, online: &[i32]) -> DescribeTopicPartitionsResponseTopic {
    match t {
        PagedTopic::Found {
            name,
            topic_id,
            partitions,
        } => DescribeTopicPartitionsResponseTopic {
            error_code: KafkaCode::NONE,
            name: Some(name),
            topic_id: Uuid(topic_id.0),
            is_internal: false,
            partitions: partitions
                .iter()
                .map(|p| paged_partition(p, online))
                .collect(),
            topic_authorized_operations: TOPIC_OPERATIONS,
        },
        PagedTopic::Failed { name, error } => DescribeTopicPartitionsResponseTopic {
            error_code: errors::kafka_code(error.code()),
            name: Some(name),
            ..Default::default()
        },
    }
}

/// DescribeTopicPartitions: the core's page of the topics asked for (all
/// when none are named), from the request's cursor, within its partition
/// limit, and the cursor of the next page. A request the core refuses (a
/// cursor outside the topics asked for, a negative cursor partition) is
/// answered with its error on every topic asked for, as Kafka does.
pub async fn handle_describe_topic_partitions(
    ctx: &Ctx<'_>,
    req: DescribeTopicPartitionsRequest,
) -> DescribeTopicPartitionsResponse {
    let names: Option<Vec<String>> =
        (!req.topics.is_empty()).then(|| req.topics.iter().map(|t| t.name.clone()).collect());
    let cursor = match &req.cursor {
        None => Ok(None),
        Some(c) => u32::try_from(c.partition_index)
            .map(|partition| {
                Some(TopicCursor {
                    topic: c.topic_name.clone(),
                    partition,
                })
            })
            .map_err(|_| {
                ClusterError::InvalidRequest(format!(
                    "the cursor's partition must not be negative, got {}",
                    c.partition_index
                ))
            }),
    };
    let page = cursor.and_then(|cursor| {
        ctx.cluster.topics().describe_page(
            names.as_deref(),
            cursor.as_ref(),
            i64::from(req.response_partition_limit),
        )
    });
    match page {
        Ok(page) => {
            let online = ctx.cluster.brokers().online();
            DescribeTopicPartitionsResponse {
                throttle_time_ms: 0,
                topics: page
                    .topics
                    .into_iter()
                    .map(|t| paged_topic(t, &online))
                    .collect(),
                next_cursor: page.next.map(|c| Cursor {
                    topic_name: c.topic,
                    partition_index: i32::try_from(c.partition).unwrap_or(i32::MAX),
                }),
            }
        }
        Err(e) => DescribeTopicPartitionsResponse {
            throttle_time_ms: 0,
            topics: req
                .topics
                .into_iter()
                .map(|t| DescribeTopicPartitionsResponseTopic {
                    error_code: errors::kafka_code(e.code()),
                    name: Some(t.name),
                    ..Default::default()
                })
                .collect(),
            next_cursor: None,
        },
    }
}
