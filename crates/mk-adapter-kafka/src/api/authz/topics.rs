//! The guards of the topic, cluster and configuration APIs.

use super::{Authz, Gate, OPERATIONS_OMITTED, On, Refusal, TOPIC, TXN};
use super::{denied, narrow, split, whole_requests};
use crate::api::ErrorAnswer;
use crate::errors::KafkaCode;
use mk_cluster::{CLUSTER_NAME, Operation, ResourceType};
use std::collections::BTreeSet;

type Op = Operation;

// ----- Produce, Fetch, ListOffsets, OffsetForLeaderEpoch ------------------

use crate::messages::produce::{
    PartitionProduceResponse, ProduceRequest, ProduceResponse, TopicProduceResponse,
};

/// WRITE on the transactional id (if any) and on each topic.
pub fn produce(
    authz: &Authz<'_>,
    mut req: ProduceRequest,
) -> Gate<ProduceRequest, Option<ProduceResponse>> {
    let failed = |t: &crate::messages::produce::TopicProduceData, code: KafkaCode, m: &str| {
        TopicProduceResponse {
            name: t.name.clone(),
            topic_id: t.topic_id,
            partition_responses: t
                .partition_data
                .iter()
                .map(|p| PartitionProduceResponse {
                    index: p.index,
                    error_code: code,
                    base_offset: -1,
                    error_message: Some(m.to_string()),
                    ..Default::default()
                })
                .collect(),
        }
    };
    if let Some(id) = req.transactional_id.as_deref()
        && !authz.transactional_id(Op::Write, id)
    {
        let m = denied(Op::Write, ResourceType::TransactionalId, id);
        return Gate::Answer((req.acks != 0).then(|| ProduceResponse {
            responses: req.topic_data.iter().map(|t| failed(t, TXN, &m)).collect(),
            ..Default::default()
        }));
    }
    let by_id = authz.ctx.version() >= 13;
    let (allowed, refused) = split(std::mem::take(&mut req.topic_data), |t| {
        let name = if by_id {
            authz.topic_name(t.topic_id)
        } else {
            Some(t.name.clone())
        };
        // An unknown id is the handler's UNKNOWN_TOPIC_ID.
        name.is_none_or(|n| authz.topic(Op::Write, &n))
    });
    req.topic_data = allowed;
    if refused.is_empty() {
        return Gate::pass(req);
    }
    let refused: Vec<TopicProduceResponse> = refused
        .iter()
        .map(|t| failed(t, TOPIC, &denied(Op::Write, ResourceType::Topic, &t.name)))
        .collect();
    Gate::patched(req, move |r: &mut Option<ProduceResponse>| {
        if let Some(r) = r {
            r.responses.extend(refused);
        }
    })
}

use crate::messages::fetch::{FetchRequest, FetchResponse, FetchableTopicResponse, PartitionData};

/// READ on each topic (a consumer), CLUSTER_ACTION (a follower).
pub fn fetch(authz: &Authz<'_>, req: FetchRequest) -> Gate<FetchRequest, FetchResponse> {
    let follower = req.replica_id >= 0 || req.replica_state.replica_id >= 0;
    let cluster_action = follower && authz.cluster(Op::ClusterAction);
    let by_id = authz.ctx.version() >= 13;
    let allowed = |t: &crate::messages::fetch::FetchTopic| {
        if follower {
            return cluster_action;
        }
        let name = if by_id {
            authz.topic_name(t.topic_id)
        } else {
            Some(t.topic.clone())
        };
        name.is_none_or(|n| authz.topic(Op::Read, &n))
    };
    narrow(
        req,
        |q| &mut q.topics,
        |t| {
            (!allowed(t)).then(|| FetchableTopicResponse {
                topic: t.topic.clone(),
                topic_id: t.topic_id,
                partitions: t
                    .partitions
                    .iter()
                    .map(|p| PartitionData {
                        partition_index: p.partition,
                        error_code: TOPIC,
                        high_watermark: -1,
                        last_stable_offset: -1,
                        log_start_offset: -1,
                        records: Some(crate::codec::RecordSet::default()),
                        ..Default::default()
                    })
                    .collect(),
            })
        },
        |r: &mut FetchResponse| &mut r.responses,
    )
}

use crate::messages::list_offsets::{
    ListOffsetsPartitionResponse, ListOffsetsRequest, ListOffsetsResponse, ListOffsetsTopicResponse,
};

/// DESCRIBE on each topic.
pub fn list_offsets(
    authz: &Authz<'_>,
    req: ListOffsetsRequest,
) -> Gate<ListOffsetsRequest, ListOffsetsResponse> {
    narrow(
        req,
        |q| &mut q.topics,
        |t| {
            (!authz.topic(Op::Describe, &t.name)).then(|| ListOffsetsTopicResponse {
                partitions: t
                    .partitions
                    .iter()
                    .map(|p| ListOffsetsPartitionResponse {
                        partition_index: p.partition_index,
                        error_code: TOPIC,
                        timestamp: -1,
                        offset: -1,
                        leader_epoch: -1,
                    })
                    .collect(),
                name: t.name.clone(),
            })
        },
        |r: &mut ListOffsetsResponse| &mut r.topics,
    )
}

use crate::messages::offset_for_leader_epoch::{
    EpochEndOffset, OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse,
    OffsetForLeaderTopicResult,
};

/// DESCRIBE on each topic (a consumer), CLUSTER_ACTION (a follower).
pub fn offset_for_leader_epoch(
    authz: &Authz<'_>,
    req: OffsetForLeaderEpochRequest,
) -> Gate<OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse> {
    let follower = req.replica_id >= 0;
    let cluster_action = follower && authz.cluster(Op::ClusterAction);
    narrow(
        req,
        |q| &mut q.topics,
        |t| {
            let allowed = if follower {
                cluster_action
            } else {
                authz.topic(Op::Describe, &t.topic)
            };
            (!allowed).then(|| OffsetForLeaderTopicResult {
                partitions: t
                    .partitions
                    .iter()
                    .map(|p| EpochEndOffset {
                        error_code: TOPIC,
                        partition: p.partition,
                        leader_epoch: -1,
                        end_offset: -1,
                    })
                    .collect(),
                topic: t.topic.clone(),
            })
        },
        |r: &mut OffsetForLeaderEpochResponse| &mut r.topics,
    )
}

// ----- Metadata, DescribeCluster -------------------------------------------

use crate::messages::metadata::{MetadataRequest, MetadataResponse, MetadataResponseTopic};

/// DESCRIBE on each topic: a listing of every topic leaves out the others,
/// a named one is TOPIC_AUTHORIZATION_FAILED; auto-creating a missing
/// topic also needs CREATE on the cluster or the topic. The authorized
/// operations are the principal's.
pub fn metadata(
    authz: &Authz<'_>,
    mut req: MetadataRequest,
) -> Gate<MetadataRequest, MetadataResponse> {
    let cluster_ops = req
        .include_cluster_authorized_operations
        .then(|| authz.operations(ResourceType::Cluster, CLUSTER_NAME));
    let all = match &req.topics {
        None => true,
        Some(t) => authz.ctx.version() == 0 && t.is_empty(),
    };
    let refused = if all {
        Vec::new()
    } else {
        refuse_metadata_topics(authz, &mut req)
    };
    // The authorizer's verdicts are computed now, while the context is at
    // hand; the patch only applies them.
    let survivors = all.then(|| {
        let mut names = authz.all_topics();
        names.retain(|n| authz.topic(Op::Describe, n));
        names.into_iter().collect::<BTreeSet<String>>()
    });
    let ops = req
        .include_topic_authorized_operations
        .then(|| authz.topic_operations(authz.all_topics()));
    // Metadata v0 reads an empty list as "every topic": when every named
    // topic was refused, the handler's listing is dropped.
    let none_left = !all && req.topics.as_ref().is_some_and(|t| t.is_empty());
    Gate::patched(req, move |r: &mut MetadataResponse| {
        if none_left {
            r.topics.clear();
        }
        if let Some(survivors) = survivors {
            r.topics
                .retain(|t| t.name.as_deref().is_some_and(|n| survivors.contains(n)));
        }
        r.topics.extend(refused);
        if let Some(ops) = ops {
            for t in &mut r.topics {
                if t.error_code == KafkaCode::NONE {
                    let name = t.name.as_deref().unwrap_or("");
                    t.topic_authorized_operations =
                        ops.get(name).copied().unwrap_or(OPERATIONS_OMITTED);
                }
            }
        }
        if let Some(bits) = cluster_ops {
            r.cluster_authorized_operations = bits;
        }
    })
}

/// Takes the named topics the principal may not DESCRIBE (or may not
/// auto-create when missing) out of a Metadata request: their answers.
fn refuse_metadata_topics(
    authz: &Authz<'_>,
    req: &mut MetadataRequest,
) -> Vec<MetadataResponseTopic> {
    let create_any = authz.cluster(Op::Create);
    let auto_create = req.allow_auto_topic_creation;
    let topics = req.topics.take().unwrap_or_default();
    let (allowed, refused) = split(topics, |t| {
        let name = match &t.name {
            Some(n) if !n.is_empty() => Some(n.clone()),
            _ => authz.topic_name(t.topic_id),
        };
        let Some(name) = name else { return true };
        if !authz.topic(Op::Describe, &name) {
            return false;
        }
        let missing = auto_create && authz.ctx.cluster.topics().id(&name).is_err();
        !missing || create_any || authz.topic(Op::Create, &name)
    });
    req.topics = Some(allowed);
    refused
        .into_iter()
        .map(|t| MetadataResponseTopic {
            error_code: TOPIC,
            name: t.name,
            topic_id: t.topic_id,
            topic_authorized_operations: OPERATIONS_OMITTED,
            ..Default::default()
        })
        .collect()
}

use crate::messages::describe_cluster::{DescribeClusterRequest, DescribeClusterResponse};

/// DESCRIBE on the cluster.
pub fn describe_cluster(
    authz: &Authz<'_>,
    req: DescribeClusterRequest,
) -> Gate<DescribeClusterRequest, DescribeClusterResponse> {
    if let Some(refusal) = authz.refusal(Op::Describe, On::Cluster) {
        return Gate::Answer(DescribeClusterResponse::error(
            refusal.code,
            refusal.message,
        ));
    }
    let bits = req
        .include_cluster_authorized_operations
        .then(|| authz.operations(ResourceType::Cluster, CLUSTER_NAME));
    Gate::patched(req, move |r: &mut DescribeClusterResponse| {
        if let Some(bits) = bits {
            r.cluster_authorized_operations = bits;
        }
    })
}

// ----- CreateTopics, DeleteTopics, CreatePartitions, DeleteRecords ---------

use crate::messages::create_topics::{
    CreatableTopicResult, CreateTopicsRequest, CreateTopicsResponse,
};

/// CREATE on the cluster, or else on each topic.
pub fn create_topics(
    authz: &Authz<'_>,
    req: CreateTopicsRequest,
) -> Gate<CreateTopicsRequest, CreateTopicsResponse> {
    if authz.cluster(Op::Create) {
        return Gate::pass(req);
    }
    narrow(
        req,
        |q| &mut q.topics,
        |t| {
            (!authz.topic(Op::Create, &t.name)).then(|| CreatableTopicResult {
                error_message: Some(denied(Op::Create, ResourceType::Topic, &t.name)),
                name: t.name.clone(),
                error_code: TOPIC,
                topic_config_error_code: TOPIC,
                num_partitions: -1,
                replication_factor: -1,
                configs: None,
                ..Default::default()
            })
        },
        |r: &mut CreateTopicsResponse| &mut r.topics,
    )
}

use crate::messages::delete_topics::{
    DeletableTopicResult, DeleteTopicsRequest, DeleteTopicsResponse,
};

/// DELETE on each topic (named, or by id from v6).
pub fn delete_topics(
    authz: &Authz<'_>,
    mut req: DeleteTopicsRequest,
) -> Gate<DeleteTopicsRequest, DeleteTopicsResponse> {
    let mut refused = Vec::new();
    let (allowed, names_refused) = split(std::mem::take(&mut req.topic_names), |n| {
        authz.topic(Op::Delete, n)
    });
    req.topic_names = allowed;
    refused.extend(names_refused.into_iter().map(|n| DeletableTopicResult {
        error_message: Some(denied(Op::Delete, ResourceType::Topic, &n)),
        name: Some(n),
        error_code: TOPIC,
        ..Default::default()
    }));
    let (allowed, states_refused) = split(std::mem::take(&mut req.topics), |t| {
        let name = match &t.name {
            Some(n) => Some(n.clone()),
            None => authz.topic_name(t.topic_id),
        };
        name.is_none_or(|n| authz.topic(Op::Delete, &n))
    });
    req.topics = allowed;
    refused.extend(states_refused.into_iter().map(|t| DeletableTopicResult {
        error_message: Some(denied(
            Op::Delete,
            ResourceType::Topic,
            t.name.as_deref().unwrap_or(""),
        )),
        name: t.name,
        topic_id: t.topic_id,
        error_code: TOPIC,
    }));
    Gate::patched(req, move |r: &mut DeleteTopicsResponse| {
        r.responses.extend(refused)
    })
}

use crate::messages::create_partitions::{
    CreatePartitionsRequest, CreatePartitionsResponse, CreatePartitionsTopicResult,
};

/// ALTER on each topic.
pub fn create_partitions(
    authz: &Authz<'_>,
    req: CreatePartitionsRequest,
) -> Gate<CreatePartitionsRequest, CreatePartitionsResponse> {
    narrow(
        req,
        |q| &mut q.topics,
        |t| {
            (!authz.topic(Op::Alter, &t.name)).then(|| CreatePartitionsTopicResult {
                error_message: Some(denied(Op::Alter, ResourceType::Topic, &t.name)),
                name: t.name.clone(),
                error_code: TOPIC,
            })
        },
        |r: &mut CreatePartitionsResponse| &mut r.results,
    )
}

use crate::messages::delete_records::{
    DeleteRecordsPartitionResult, DeleteRecordsRequest, DeleteRecordsResponse,
    DeleteRecordsTopicResult,
};

/// DELETE on each topic.
pub fn delete_records(
    authz: &Authz<'_>,
    req: DeleteRecordsRequest,
) -> Gate<DeleteRecordsRequest, DeleteRecordsResponse> {
    narrow(
        req,
        |q| &mut q.topics,
        |t| {
            (!authz.topic(Op::Delete, &t.name)).then(|| DeleteRecordsTopicResult {
                partitions: t
                    .partitions
                    .iter()
                    .map(|p| DeleteRecordsPartitionResult {
                        partition_index: p.partition_index,
                        error_code: TOPIC,
                        low_watermark: -1,
                    })
                    .collect(),
                name: t.name.clone(),
            })
        },
        |r: &mut DeleteRecordsResponse| &mut r.topics,
    )
}

// ----- Configs ------------------------------------------------------------

use crate::api::admin::{RESOURCE_BROKER, RESOURCE_BROKER_LOGGER, RESOURCE_GROUP, RESOURCE_TOPIC};

/// The denial of `operation` (DESCRIBE_CONFIGS or ALTER_CONFIGS) on a
/// config resource; `None` when it is allowed.
fn config_refusal(
    authz: &Authz<'_>,
    operation: Operation,
    resource_type: i8,
    name: &str,
) -> Option<Refusal> {
    let on = match resource_type {
        RESOURCE_TOPIC => On::Topic(name),
        RESOURCE_GROUP => On::Group(name),
        RESOURCE_BROKER | RESOURCE_BROKER_LOGGER => On::Cluster,
        // Unknown types are the handler's INVALID_REQUEST.
        _ => return None,
    };
    authz.refusal(operation, on)
}

use crate::messages::describe_configs::{
    DescribeConfigsRequest, DescribeConfigsResponse, DescribeConfigsResult,
};

/// DESCRIBE_CONFIGS on each resource.
pub fn describe_configs(
    authz: &Authz<'_>,
    req: DescribeConfigsRequest,
) -> Gate<DescribeConfigsRequest, DescribeConfigsResponse> {
    narrow(
        req,
        |q| &mut q.resources,
        |r| {
            let refusal = config_refusal(
                authz,
                Op::DescribeConfigs,
                r.resource_type,
                &r.resource_name,
            )?;
            Some(DescribeConfigsResult {
                error_code: refusal.code,
                error_message: Some(refusal.message),
                resource_type: r.resource_type,
                resource_name: r.resource_name.clone(),
                configs: Vec::new(),
            })
        },
        |r: &mut DescribeConfigsResponse| &mut r.results,
    )
}

use crate::messages::alter_configs::{
    AlterConfigsRequest, AlterConfigsResourceResponse, AlterConfigsResponse,
};

/// ALTER_CONFIGS on each resource.
pub fn alter_configs(
    authz: &Authz<'_>,
    req: AlterConfigsRequest,
) -> Gate<AlterConfigsRequest, AlterConfigsResponse> {
    narrow(
        req,
        |q| &mut q.resources,
        |r| {
            let refusal =
                config_refusal(authz, Op::AlterConfigs, r.resource_type, &r.resource_name)?;
            Some(AlterConfigsResourceResponse {
                error_code: refusal.code,
                error_message: Some(refusal.message),
                resource_type: r.resource_type,
                resource_name: r.resource_name.clone(),
            })
        },
        |r: &mut AlterConfigsResponse| &mut r.responses,
    )
}

use crate::messages::incremental_alter_configs as incremental;

/// ALTER_CONFIGS on each resource.
pub fn incremental_alter_configs(
    authz: &Authz<'_>,
    req: incremental::IncrementalAlterConfigsRequest,
) -> Gate<incremental::IncrementalAlterConfigsRequest, incremental::IncrementalAlterConfigsResponse>
{
    narrow(
        req,
        |q| &mut q.resources,
        |r| {
            let refusal =
                config_refusal(authz, Op::AlterConfigs, r.resource_type, &r.resource_name)?;
            Some(incremental::AlterConfigsResourceResponse {
                error_code: refusal.code,
                error_message: Some(refusal.message),
                resource_type: r.resource_type,
                resource_name: r.resource_name.clone(),
            })
        },
        |r: &mut incremental::IncrementalAlterConfigsResponse| &mut r.responses,
    )
}

// ----- Log and producer administration ------------------------------------

use crate::messages::describe_producers::{
    DescribeProducersRequest, DescribeProducersResponse, PartitionResponse, TopicResponse,
};

/// READ on each topic.
pub fn describe_producers(
    authz: &Authz<'_>,
    req: DescribeProducersRequest,
) -> Gate<DescribeProducersRequest, DescribeProducersResponse> {
    narrow(
        req,
        |q| &mut q.topics,
        |t| {
            (!authz.topic(Op::Read, &t.name)).then(|| TopicResponse {
                partitions: t
                    .partition_indexes
                    .iter()
                    .map(|p| PartitionResponse {
                        partition_index: *p,
                        error_code: TOPIC,
                        error_message: Some(denied(Op::Read, ResourceType::Topic, &t.name)),
                        active_producers: Vec::new(),
                    })
                    .collect(),
                name: t.name.clone(),
            })
        },
        |r: &mut DescribeProducersResponse| &mut r.topics,
    )
}

// ----- Cluster-wide descriptions --------------------------------------------

use crate::messages::alter_user_scram_credentials::{
    AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse,
    AlterUserScramCredentialsResult,
};
use crate::messages::{describe_log_dirs, describe_user_scram_credentials as scram_users};

// DescribeLogDirs and DescribeUserScramCredentials need DESCRIBE on the
// cluster and nothing else (served.list's `authz::whole`).
whole_requests! {
    describe_log_dirs::DescribeLogDirsRequest => describe_log_dirs::DescribeLogDirsResponse:
        Describe on Cluster;
    scram_users::DescribeUserScramCredentialsRequest =>
        scram_users::DescribeUserScramCredentialsResponse: Describe on Cluster;
}

/// ALTER on the cluster: every user named is refused otherwise.
pub fn alter_user_scram_credentials(
    authz: &Authz<'_>,
    req: AlterUserScramCredentialsRequest,
) -> Gate<AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse> {
    let Some(refusal) = authz.refusal(Op::Alter, On::Cluster) else {
        return Gate::pass(req);
    };
    let mut users: Vec<String> = req.deletions.iter().map(|d| d.name.clone()).collect();
    users.extend(req.upsertions.iter().map(|u| u.name.clone()));
    users.sort();
    users.dedup();
    Gate::Answer(AlterUserScramCredentialsResponse {
        throttle_time_ms: 0,
        results: users
            .into_iter()
            .map(|user| AlterUserScramCredentialsResult {
                user,
                error_code: refusal.code,
                error_message: Some(refusal.message.clone()),
            })
            .collect(),
    })
}
