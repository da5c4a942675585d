//! The guards of the newer client APIs: DescribeTopicPartitions (DESCRIBE
//! on each topic, as Metadata), Describe/AlterClientQuotas
//! (DESCRIBE_CONFIGS / ALTER_CONFIGS on the cluster), ElectLeaders and
//! AlterPartitionReassignments (ALTER on the cluster),
//! ListPartitionReassignments (DESCRIBE on the cluster).

use super::{Authz, Gate, On, TOPIC, split, whole_requests};
use crate::messages::alter_client_quotas::{
    AlterClientQuotasRequest, AlterClientQuotasResponse, EntryResult,
};
use crate::messages::alter_partition_reassignments::{
    AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse,
    ReassignablePartitionResponse, ReassignableTopicResponse,
};
use crate::messages::describe_client_quotas::{
    DescribeClientQuotasRequest, DescribeClientQuotasResponse,
};
use crate::messages::describe_topic_partitions::{
    DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse,
    DescribeTopicPartitionsResponseTopic,
};
use crate::messages::elect_leaders::{
    ElectLeadersRequest, ElectLeadersResponse, PartitionResult, ReplicaElectionResult,
};
use crate::messages::list_partition_reassignments as reassignments;
use mk_cluster::Operation;

type Op = Operation;

/// DESCRIBE on each topic: a named topic denied is
/// TOPIC_AUTHORIZATION_FAILED (whether it exists or not), a denied one is
/// left out of an all-topics page (which may then hold fewer partitions
/// than the limit); each answered topic carries its authorized
/// operations.
pub fn describe_topic_partitions(
    authz: &Authz<'_>,
    mut req: DescribeTopicPartitionsRequest,
) -> Gate<DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse> {
    let (allowed, refused) = split(std::mem::take(&mut req.topics), |t| {
        authz.topic(Op::Describe, &t.name)
    });
    let asked_all = allowed.is_empty() && refused.is_empty();
    if !asked_all && allowed.is_empty() {
        // Only denied topics: nothing for the handler to do.
        return Gate::Answer(DescribeTopicPartitionsResponse {
            topics: refused.into_iter().map(|t| denied_topic(t.name)).collect(),
            ..Default::default()
        });
    }
    req.topics = allowed;
    let names: Vec<String> = if asked_all {
        authz.all_topics()
    } else {
        req.topics.iter().map(|t| t.name.clone()).collect()
    };
    let operations =
        authz.topic_operations(names.into_iter().filter(|n| authz.topic(Op::Describe, n)));
    Gate::patched(req, move |r: &mut DescribeTopicPartitionsResponse| {
        r.topics
            .retain(|t| t.name.as_ref().is_some_and(|n| operations.contains_key(n)));
        for t in &mut r.topics {
            if let Some(bits) = t.name.as_ref().and_then(|n| operations.get(n)) {
                t.topic_authorized_operations = *bits;
            }
        }
        r.topics
            .extend(refused.into_iter().map(|t| denied_topic(t.name)));
    })
}

fn denied_topic(name: String) -> DescribeTopicPartitionsResponseTopic {
    DescribeTopicPartitionsResponseTopic {
        error_code: TOPIC,
        name: Some(name),
        ..Default::default()
    }
}

// DescribeClientQuotas needs DESCRIBE_CONFIGS on the cluster,
// ListPartitionReassignments DESCRIBE, and nothing else (served.list's
// `authz::whole`).
whole_requests! {
    DescribeClientQuotasRequest => DescribeClientQuotasResponse: DescribeConfigs on Cluster;
    reassignments::ListPartitionReassignmentsRequest =>
        reassignments::ListPartitionReassignmentsResponse: Describe on Cluster;
}

/// ALTER_CONFIGS on the cluster: every entry denied otherwise.
pub fn alter_client_quotas(
    authz: &Authz<'_>,
    req: AlterClientQuotasRequest,
) -> Gate<AlterClientQuotasRequest, AlterClientQuotasResponse> {
    let Some(refusal) = authz.refusal(Op::AlterConfigs, On::Cluster) else {
        return Gate::pass(req);
    };
    Gate::Answer(AlterClientQuotasResponse {
        throttle_time_ms: 0,
        entries: req
            .entries
            .into_iter()
            .map(|e| EntryResult {
                error_code: refusal.code,
                error_message: Some(refusal.message.clone()),
                entity: e.entity,
            })
            .collect(),
    })
}

/// ALTER on the cluster: every named partition denied otherwise (and the
/// whole request, v1+).
pub fn elect_leaders(
    authz: &Authz<'_>,
    req: ElectLeadersRequest,
) -> Gate<ElectLeadersRequest, ElectLeadersResponse> {
    let Some(refusal) = authz.refusal(Op::Alter, On::Cluster) else {
        return Gate::pass(req);
    };
    Gate::Answer(ElectLeadersResponse {
        throttle_time_ms: 0,
        error_code: refusal.code,
        replica_election_results: req
            .topic_partitions
            .unwrap_or_default()
            .into_iter()
            .map(|t| ReplicaElectionResult {
                topic: t.topic,
                partition_result: t
                    .partitions
                    .into_iter()
                    .map(|partition_id| PartitionResult {
                        partition_id,
                        error_code: refusal.code,
                        error_message: Some(refusal.message.clone()),
                    })
                    .collect(),
            })
            .collect(),
    })
}

/// ALTER on the cluster: otherwise the whole request and every named
/// partition answer CLUSTER_AUTHORIZATION_FAILED (Kafka's error response).
pub fn alter_partition_reassignments(
    authz: &Authz<'_>,
    req: AlterPartitionReassignmentsRequest,
) -> Gate<AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse> {
    let Some(refusal) = authz.refusal(Op::Alter, On::Cluster) else {
        return Gate::pass(req);
    };
    Gate::Answer(AlterPartitionReassignmentsResponse {
        throttle_time_ms: 0,
        allow_replication_factor_change: req.allow_replication_factor_change,
        error_code: refusal.code,
        error_message: Some(refusal.message.clone()),
        responses: req
            .topics
            .into_iter()
            .map(|t| ReassignableTopicResponse {
                name: t.name,
                partitions: t
                    .partitions
                    .into_iter()
                    .map(|p| ReassignablePartitionResponse {
                        partition_index: p.partition_index,
                        error_code: refusal.code,
                        error_message: Some(refusal.message.clone()),
                    })
                    .collect(),
            })
            .collect(),
    })
}
