//! ListOffsets (earliest -2, latest -1 — the LSO for read_committed —, by
//! timestamp, max timestamp -3 from v7, earliest-local -4 from v8 and
//! latest-tiered -5 from v9 as a broker without tiered storage answers
//! them; v10's timeout is for remote storage, so unused) and
//! OffsetForLeaderEpoch, the
//! question clients ask after a leader change to detect truncation
//! (KIP-320), answered from the leader-epoch cache (KIP-101/279).

use super::Ctx;
use crate::errors::{self, KafkaCode};
use crate::messages::list_offsets::{
    ListOffsetsPartition, ListOffsetsPartitionResponse, ListOffsetsRequest, ListOffsetsResponse,
    ListOffsetsTopicResponse,
};
use crate::messages::offset_for_leader_epoch::{
    EpochEndOffset, OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse,
    OffsetForLeaderPartition, OffsetForLeaderTopicResult,
};
use mk_cluster::{ClusterError, Isolation, OffsetSpec, TopicPartition};

/// Kafka's special ListOffsets timestamps.
pub const LATEST_TIMESTAMP: i64 = -1;
pub const EARLIEST_TIMESTAMP: i64 = -2;
pub const MAX_TIMESTAMP: i64 = -3;
/// v8+ (KIP-405): the local log's start, here the log's start.
pub const EARLIEST_LOCAL_TIMESTAMP: i64 = -4;
/// v9+ (KIP-1005): the last tiered offset; nothing is tiered here.
pub const LATEST_TIERED_TIMESTAMP: i64 = -5;

fn partition_of(index: i32) -> Result<u32, ClusterError> {
    u32::try_from(index).map_err(|_| ClusterError::NegativePartition { index })
}

// ----- ListOffsets ---------------------------------------------------------

fn list_one(
    ctx: &Ctx<'_>,
    topic: &str,
    p: &ListOffsetsPartition,
    isolation: Isolation,
) -> Result<ListOffsetsPartitionResponse, ClusterError> {
    let tp = TopicPartition::new(topic, partition_of(p.partition_index)?);
    ctx.cluster.brokers().check_leader(&tp, ctx.broker_id)?;
    if p.current_leader_epoch >= 0 {
        // Checked like a fetch: a stale or future epoch is refused.
        ctx.cluster
            .data()
            .end_offset_for_epoch(&tp, 0, Some(p.current_leader_epoch))?;
    }
    let answer = |timestamp, offset, leader_epoch, error_code| ListOffsetsPartitionResponse {
        partition_index: p.partition_index,
        error_code,
        timestamp,
        offset,
        leader_epoch,
    };
    let v = ctx.version();
    // Each special timestamp exists from its version on; earlier, Kafka
    // answers UNSUPPORTED_VERSION.
    let since = match p.timestamp {
        MAX_TIMESTAMP => 7,
        EARLIEST_LOCAL_TIMESTAMP => 8,
        LATEST_TIERED_TIMESTAMP => 9,
        _ => 0,
    };
    if v < since {
        return Ok(answer(-1, -1, -1, KafkaCode::UNSUPPORTED_VERSION));
    }
    let spec = match p.timestamp {
        LATEST_TIMESTAMP => OffsetSpec::Latest,
        // Without tiered storage the local log is the whole log.
        EARLIEST_TIMESTAMP | EARLIEST_LOCAL_TIMESTAMP => OffsetSpec::Earliest,
        MAX_TIMESTAMP => OffsetSpec::MaxTimestamp,
        // Nothing is tiered: Kafka answers -1/-1 with epoch -1.
        LATEST_TIERED_TIMESTAMP => return Ok(answer(-1, -1, -1, KafkaCode::NONE)),
        ts => OffsetSpec::Timestamp(ts),
    };
    let found = ctx.cluster.data().list_offset(&tp, spec, isolation)?;
    Ok(match found {
        Some(l) => answer(l.timestamp_ms, l.offset, l.leader_epoch, KafkaCode::NONE),
        // No record at or after the timestamp: Kafka answers -1/-1.
        None => answer(-1, -1, -1, KafkaCode::NONE),
    })
}

pub async fn handle_list_offsets(ctx: &Ctx<'_>, req: ListOffsetsRequest) -> ListOffsetsResponse {
    let isolation = if req.isolation_level == 1 {
        Isolation::ReadCommitted
    } else {
        Isolation::ReadUncommitted
    };
    let topics = req
        .topics
        .iter()
        .map(|t| ListOffsetsTopicResponse {
            name: t.name.clone(),
            partitions: t
                .partitions
                .iter()
                .map(|p| {
                    list_one(ctx, &t.name, p, isolation).unwrap_or_else(|e| {
                        ListOffsetsPartitionResponse {
                            partition_index: p.partition_index,
                            error_code: errors::kafka_code(e.code()),
                            timestamp: -1,
                            offset: -1,
                            leader_epoch: -1,
                        }
                    })
                })
                .collect(),
        })
        .collect();
    ListOffsetsResponse {
        throttle_time_ms: 0,
        topics,
    }
}

// ----- OffsetForLeaderEpoch --------------------------------------------------

fn epoch_one(
    ctx: &Ctx<'_>,
    topic: &str,
    p: &OffsetForLeaderPartition,
) -> Result<EpochEndOffset, ClusterError> {
    let tp = TopicPartition::new(topic, partition_of(p.partition)?);
    ctx.cluster.brokers().check_leader(&tp, ctx.broker_id)?;
    let current = (p.current_leader_epoch >= 0).then_some(p.current_leader_epoch);
    let found = ctx
        .cluster
        .data()
        .end_offset_for_epoch(&tp, p.leader_epoch, current)?;
    Ok(EpochEndOffset {
        error_code: KafkaCode::NONE,
        partition: p.partition,
        // Kafka's UNDEFINED_EPOCH / UNDEFINED_OFFSET when the epoch is older
        // than anything the leader knows.
        leader_epoch: found.map_or(-1, |f| f.epoch),
        end_offset: found.map_or(-1, |f| f.end_offset),
    })
}

pub async fn handle_offset_for_leader_epoch(
    ctx: &Ctx<'_>,
    req: OffsetForLeaderEpochRequest,
) -> OffsetForLeaderEpochResponse {
    let topics = req
        .topics
        .iter()
        .map(|t| OffsetForLeaderTopicResult {
            topic: t.topic.clone(),
            partitions: t
                .partitions
                .iter()
                .map(|p| {
                    epoch_one(ctx, &t.topic, p).unwrap_or_else(|e| EpochEndOffset {
                        error_code: errors::kafka_code(e.code()),
                        partition: p.partition,
                        leader_epoch: -1,
                        end_offset: -1,
                    })
                })
                .collect(),
        })
        .collect();
    OffsetForLeaderEpochResponse {
        throttle_time_ms: 0,
        topics,
    }
}
