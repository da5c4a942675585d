//! The partition logs' admin APIs: DeleteRecords (the core moves each
//! partition's log start on every replica: `data().delete_records`).

use super::Ctx;
use crate::errors::{self, KafkaCode};
use crate::messages::delete_records::{
    DeleteRecordsPartition, DeleteRecordsPartitionResult, DeleteRecordsRequest,
    DeleteRecordsResponse, DeleteRecordsTopicResult,
};
use mk_cluster::{ClusterError, TopicPartition};

/// One partition of a DeleteRecords: at its leader only (Kafka sends each
/// partition to its leader), answering the new low watermark.
fn delete_one(ctx: &Ctx<'_>, topic: &str, p: &DeleteRecordsPartition) -> Result<i64, ClusterError> {
    let partition =
        u32::try_from(p.partition_index).map_err(|_| ClusterError::NegativePartition {
            index: p.partition_index,
        })?;
    let tp = TopicPartition::new(topic, partition);
    ctx.cluster.brokers().check_leader(&tp, ctx.broker_id)?;
    ctx.cluster.data().delete_records(&tp, p.offset)
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
