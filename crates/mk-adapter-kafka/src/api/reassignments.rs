//! AlterPartitionReassignments and ListPartitionReassignments over the
//! core's reassignments (`cluster.reassignments()`: moves between the
//! hosted brokers, completed by the replication steps); this maps the
//! core's refusals to Kafka's codes. Every broker answers them (Kafka's
//! controller does; admin clients send them to any broker).

use super::Ctx;
use crate::errors::{self, KafkaCode};
use crate::messages::alter_partition_reassignments::{
    AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse,
    ReassignablePartitionResponse, ReassignableTopicResponse,
};
use crate::messages::list_partition_reassignments::{
    ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse,
    OngoingPartitionReassignment, OngoingTopicReassignment,
};
use mk_cluster::{ClusterError, ReassignmentRefusal, TopicPartition};

/// Kafka's INVALID_REPLICA_ASSIGNMENT.
const INVALID_REPLICA_ASSIGNMENT: KafkaCode = KafkaCode(39);
/// Kafka's NO_REASSIGNMENT_IN_PROGRESS.
const NO_REASSIGNMENT_IN_PROGRESS: KafkaCode = KafkaCode(85);

fn reassign(
    ctx: &Ctx<'_>,
    topic: &str,
    index: i32,
    target: Option<&[i32]>,
    allow_replication_factor_change: bool,
) -> ReassignablePartitionResponse {
    let outcome = u32::try_from(index)
        .map_err(|_| ReassignmentRefusal::Cluster(ClusterError::NegativePartition { index }))
        .and_then(|p| {
            ctx.cluster.reassignments().alter(
                &TopicPartition::new(topic, p),
                target,
                allow_replication_factor_change,
            )
        });
    let (error_code, error_message) = match outcome {
        Ok(()) => (KafkaCode::NONE, None),
        Err(ReassignmentRefusal::InvalidAssignment(m)) => (INVALID_REPLICA_ASSIGNMENT, Some(m)),
        Err(ReassignmentRefusal::NoneInProgress(m)) => (NO_REASSIGNMENT_IN_PROGRESS, Some(m)),
        Err(ReassignmentRefusal::ReplicationFactorChange(m)) => {
            (KafkaCode::INVALID_REPLICATION_FACTOR, Some(m))
        }
        Err(ReassignmentRefusal::Cluster(e)) => {
            let (code, m) = errors::from_cluster(&e);
            (code, Some(m))
        }
    };
    ReassignablePartitionResponse {
        partition_index: index,
        error_code,
        error_message,
    }
}

/// Each named partition gets its own outcome: a target starts (or
/// replaces) a move, null cancels the one in progress.
pub async fn handle_alter_partition_reassignments(
    ctx: &Ctx<'_>,
    req: AlterPartitionReassignmentsRequest,
) -> AlterPartitionReassignmentsResponse {
    let allow = req.allow_replication_factor_change;
    let responses = req
        .topics
        .iter()
        .map(|t| ReassignableTopicResponse {
            name: t.name.clone(),
            partitions: t
                .partitions
                .iter()
                .map(|p| {
                    reassign(
                        ctx,
                        &t.name,
                        p.partition_index,
                        p.replicas.as_deref(),
                        allow,
                    )
                })
                .collect(),
        })
        .collect();
    AlterPartitionReassignmentsResponse {
        throttle_time_ms: 0,
        allow_replication_factor_change: allow,
        error_code: KafkaCode::NONE,
        error_message: None,
        responses,
    }
}

/// The moves in progress among the named partitions (unknown ones are
/// left out, as Kafka does), or of every partition with null, by topic.
pub async fn handle_list_partition_reassignments(
    ctx: &Ctx<'_>,
    req: ListPartitionReassignmentsRequest,
) -> ListPartitionReassignmentsResponse {
    let named: Option<Vec<TopicPartition>> = req.topics.as_ref().map(|topics| {
        topics
            .iter()
            .flat_map(|t| super::partitions_of(&t.name, &t.partition_indexes))
            .collect()
    });
    let ongoing = match ctx.cluster.reassignments().list(named.as_deref()) {
        Ok(ongoing) => ongoing,
        Err(e) => {
            let (error_code, m) = errors::from_cluster(&e);
            return ListPartitionReassignmentsResponse {
                error_code,
                error_message: Some(m),
                ..Default::default()
            };
        }
    };
    let mut topics: Vec<OngoingTopicReassignment> = Vec::new();
    for o in ongoing {
        let partition = OngoingPartitionReassignment {
            partition_index: i32::try_from(o.partition.partition).unwrap_or(i32::MAX),
            replicas: o.replicas,
            adding_replicas: o.adding,
            removing_replicas: o.removing,
        };
        match topics.last_mut() {
            Some(t) if t.name == o.partition.topic => t.partitions.push(partition),
            _ => topics.push(OngoingTopicReassignment {
                name: o.partition.topic,
                partitions: vec![partition],
            }),
        }
    }
    ListPartitionReassignmentsResponse {
        throttle_time_ms: 0,
        error_code: KafkaCode::NONE,
        error_message: None,
        topics,
    }
}
