//! ElectLeaders: each partition's election is the core's
//! (`brokers().elect_leader`: preferred, or unclean — an out-of-sync
//! replica when no in-sync one is online); this maps its refusals to Kafka's codes. Every broker answers it
//! (Kafka's controller does; admin clients send it to the one Metadata
//! names).

use super::Ctx;
use crate::errors::{self, KafkaCode};
use crate::messages::elect_leaders::{
    ElectLeadersRequest, ElectLeadersResponse, PartitionResult, ReplicaElectionResult,
};
use mk_cluster::{ClusterError, ElectionRefusal, ElectionType, TopicPartition};

/// Kafka's PREFERRED_LEADER_NOT_AVAILABLE.
const PREFERRED_LEADER_NOT_AVAILABLE: KafkaCode = KafkaCode(80);
/// Kafka's ELIGIBLE_LEADERS_NOT_AVAILABLE.
const ELIGIBLE_LEADERS_NOT_AVAILABLE: KafkaCode = KafkaCode(83);
/// Kafka's ELECTION_NOT_NEEDED.
const ELECTION_NOT_NEEDED: KafkaCode = KafkaCode(84);

fn elect(ctx: &Ctx<'_>, topic: &str, index: i32, kind: ElectionType) -> PartitionResult {
    let outcome = u32::try_from(index)
        .map_err(|_| ElectionRefusal::Cluster(ClusterError::NegativePartition { index }))
        .and_then(|p| {
            ctx.cluster
                .brokers()
                .elect_leader(&TopicPartition::new(topic, p), kind)
        });
    let (error_code, error_message) = match outcome {
        Ok(_) => (KafkaCode::NONE, None),
        Err(ElectionRefusal::NotNeeded) => (
            ELECTION_NOT_NEEDED,
            Some("the partition already has that leader".to_string()),
        ),
        Err(ElectionRefusal::PreferredNotAvailable(m)) => (PREFERRED_LEADER_NOT_AVAILABLE, Some(m)),
        Err(ElectionRefusal::NoEligibleLeader(m)) => (ELIGIBLE_LEADERS_NOT_AVAILABLE, Some(m)),
        Err(ElectionRefusal::Cluster(e)) => {
            let (code, m) = errors::from_cluster(&e);
            (code, Some(m))
        }
    };
    PartitionResult {
        partition_id: index,
        error_code,
        error_message,
    }
}

/// Named partitions each get their outcome; with none named (null), every
/// partition of every topic is tried and those that needed no election
/// are left out, as Kafka does.
pub async fn handle_elect_leaders(ctx: &Ctx<'_>, req: ElectLeadersRequest) -> ElectLeadersResponse {
    let kind = match req.election_type {
        0 => ElectionType::Preferred,
        1 => ElectionType::Unclean,
        _ => {
            return ElectLeadersResponse {
                error_code: KafkaCode::INVALID_REQUEST,
                ..Default::default()
            };
        }
    };
    let replica_election_results = match req.topic_partitions {
        Some(topics) => topics
            .iter()
            .map(|t| ReplicaElectionResult {
                topic: t.topic.clone(),
                partition_result: t
                    .partitions
                    .iter()
                    .map(|&p| elect(ctx, &t.topic, p, kind))
                    .collect(),
            })
            .collect(),
        None => {
            let names = ctx.cluster.topics().list().unwrap_or_default();
            names
                .into_iter()
                .filter_map(|name| {
                    let count = ctx.cluster.topics().describe(&name).ok()?.partitions.len();
                    let partition_result: Vec<PartitionResult> = (0..count)
                        .map(|p| elect(ctx, &name, i32::try_from(p).unwrap_or(i32::MAX), kind))
                        .filter(|r| r.error_code != ELECTION_NOT_NEEDED)
                        .collect();
                    (!partition_result.is_empty()).then_some(ReplicaElectionResult {
                        topic: name,
                        partition_result,
                    })
                })
                .collect()
        }
    };
    ElectLeadersResponse {
        throttle_time_ms: 0,
        error_code: KafkaCode::NONE,
        replica_election_results,
    }
}
