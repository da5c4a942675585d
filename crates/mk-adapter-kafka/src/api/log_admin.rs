//! The partition logs' admin APIs: DeleteRecords (the core moves each
//! partition's log start on every replica: `data().delete_records`) and
//! DescribeLogDirs (each broker its own directory: `views().log_dir`) and
//! DescribeProducers (the leader's producer state:
//! `data().active_producers`).

use super::Ctx;
use crate::errors::{self, KafkaCode};
use crate::messages::delete_records::{
    DeleteRecordsPartition, DeleteRecordsPartitionResult, DeleteRecordsRequest,
    DeleteRecordsResponse, DeleteRecordsTopicResult,
};
use crate::messages::describe_log_dirs::{
    DescribeLogDirsPartition, DescribeLogDirsRequest, DescribeLogDirsResponse,
    DescribeLogDirsResult, DescribeLogDirsTopic,
};
use crate::messages::describe_producers::{
    DescribeProducersRequest, DescribeProducersResponse, PartitionResponse, ProducerState,
    TopicResponse,
};
use mk_cluster::{ActiveProducer, ClusterError, LogDir, TopicPartition};
use std::collections::{BTreeMap, BTreeSet};

/// One partition of a DeleteRecords: at its leader only (Kafka sends each
/// partition to its leader), answering the new low watermark.
fn delete_one(ctx: &Ctx<'_>, topic: &str, p: &DeleteRecordsPartition) -> Result<i64, ClusterError> {
    let tp = led_here(ctx, topic, p.partition_index)?;
    ctx.cluster.data().delete_records(&tp, p.offset)
}

/// The partition, if this broker leads it (NOT_LEADER_OR_FOLLOWER, an
/// unknown topic or partition, or a negative index otherwise).
fn led_here(ctx: &Ctx<'_>, topic: &str, index: i32) -> Result<TopicPartition, ClusterError> {
    let partition = u32::try_from(index).map_err(|_| ClusterError::NegativePartition { index })?;
    let tp = TopicPartition::new(topic, partition);
    ctx.cluster.brokers().check_leader(&tp, ctx.broker_id)?;
    Ok(tp)
}

pub async fn handle_delete_records(
    ctx: &Ctx<'_>,
    req: DeleteRecordsRequest,
) -> DeleteRecordsResponse {
    let topics = req
        .topics
        .iter()
        .map(|t| DeleteRecordsTopicResult {
            name: t.name.clone(),
            partitions: t
                .partitions
                .iter()
                .map(|p| match delete_one(ctx, &t.name, p) {
                    Ok(low_watermark) => DeleteRecordsPartitionResult {
                        partition_index: p.partition_index,
                        low_watermark,
                        error_code: KafkaCode::NONE,
                    },
                    Err(e) => DeleteRecordsPartitionResult {
                        partition_index: p.partition_index,
                        low_watermark: -1,
                        error_code: errors::from_cluster(&e).0,
                    },
                })
                .collect(),
        })
        .collect();
    DeleteRecordsResponse {
        throttle_time_ms: 0,
        topics,
    }
}

/// A DescribeLogDirs answer's one directory: the replicas grouped by topic.
fn described_dir(dir: LogDir) -> DescribeLogDirsResult {
    let mut topics: BTreeMap<String, Vec<DescribeLogDirsPartition>> = BTreeMap::new();
    for (tp, r) in dir.replicas {
        topics
            .entry(tp.topic.clone())
            .or_default()
            .push(DescribeLogDirsPartition {
                partition_index: i32::try_from(tp.partition).unwrap_or(i32::MAX),
                partition_size: i64::try_from(r.size_bytes).unwrap_or(i64::MAX),
                offset_lag: r.offset_lag,
                is_future_key: false,
            });
    }
    let bytes = |b: Option<u64>| b.map_or(-1, |b| i64::try_from(b).unwrap_or(i64::MAX));
    DescribeLogDirsResult {
        error_code: KafkaCode::NONE,
        log_dir: dir.path.display().to_string(),
        topics: topics
            .into_iter()
            .map(|(name, partitions)| DescribeLogDirsTopic { name, partitions })
            .collect(),
        total_bytes: bytes(dir.disk.map(|d| d.total_bytes)),
        usable_bytes: bytes(dir.disk.map(|d| d.available_bytes)),
    }
}

/// DescribeLogDirs: the broker that was asked answers its one directory
/// (admin clients ask each broker), with every replica it holds or those
/// the request names.
pub async fn handle_describe_log_dirs(
    ctx: &Ctx<'_>,
    req: DescribeLogDirsRequest,
) -> DescribeLogDirsResponse {
    let wanted: Option<BTreeSet<TopicPartition>> = req.topics.as_ref().map(|ts| {
        ts.iter()
            .flat_map(|t| super::partitions_of(&t.topic, &t.partitions))
            .collect()
    });
    match ctx.cluster.views().log_dir(ctx.broker_id, wanted.as_ref()) {
        Ok(dir) => DescribeLogDirsResponse {
            throttle_time_ms: 0,
            error_code: KafkaCode::NONE,
            results: vec![described_dir(dir)],
        },
        Err(e) => DescribeLogDirsResponse {
            throttle_time_ms: 0,
            error_code: errors::from_cluster(&e).0,
            results: Vec::new(),
        },
    }
}

fn producer_state(p: ActiveProducer) -> ProducerState {
    ProducerState {
        producer_id: p.producer_id,
        producer_epoch: p.epoch,
        last_sequence: p.last_sequence,
        last_timestamp: p.last_timestamp,
        // Not kept in the producer state (docs/kafka-wire.md).
        coordinator_epoch: -1,
        current_txn_start_offset: p.current_txn_start_offset.unwrap_or(-1),
    }
}

/// DescribeProducers: each partition at its leader, from the leader's
/// producer state.
pub async fn handle_describe_producers(
    ctx: &Ctx<'_>,
    req: DescribeProducersRequest,
) -> DescribeProducersResponse {
    let topics = req
        .topics
        .iter()
        .map(|t| TopicResponse {
            name: t.name.clone(),
            partitions: t
                .partition_indexes
                .iter()
                .map(|&index| {
                    let found = led_here(ctx, &t.name, index)
                        .and_then(|tp| ctx.cluster.data().active_producers(&tp));
                    match found {
                        Ok(producers) => PartitionResponse {
                            partition_index: index,
                            error_code: KafkaCode::NONE,
                            error_message: None,
                            active_producers: producers.into_iter().map(producer_state).collect(),
                        },
                        Err(e) => {
                            let (error_code, message) = errors::from_cluster(&e);
                            PartitionResponse {
                                partition_index: index,
                                error_code,
                                error_message: Some(message),
                                active_producers: Vec::new(),
                            }
                        }
                    }
                })
                .collect(),
        })
        .collect();
    DescribeProducersResponse {
        throttle_time_ms: 0,
        topics,
    }
}
