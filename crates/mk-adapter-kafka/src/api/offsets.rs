//! ListOffsets (earliest -2, latest -1 — the LSO for read_committed —, by
//! timestamp, max timestamp -3 from v7) and OffsetForLeaderEpoch, the
//! question clients ask after a leader change to detect truncation
//! (KIP-320), answered from the leader-epoch cache (KIP-101/279).

use super::{Ctx, Message};
use crate::codec::{DecodeResult, Reader, Writer};
use crate::errors::{self, KafkaCode};
use mk_cluster::{ClusterError, Isolation, OffsetSpec, TopicPartition};

/// Kafka's special ListOffsets timestamps.
pub const LATEST_TIMESTAMP: i64 = -1;
pub const EARLIEST_TIMESTAMP: i64 = -2;
pub const MAX_TIMESTAMP: i64 = -3;

fn partition_of(index: i32) -> Result<u32, ClusterError> {
    u32::try_from(index)
        .map_err(|_| ClusterError::UnknownPartition(format!("partition {index} does not exist")))
}

// ----- ListOffsets ---------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListOffsetsPartition {
    pub partition_index: i32,
    /// v4+.
    pub current_leader_epoch: i32,
    pub timestamp: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListOffsetsTopic {
    pub name: String,
    pub partitions: Vec<ListOffsetsPartition>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListOffsetsRequest {
    pub replica_id: i32,
    /// v2+.
    pub isolation_level: i8,
    pub topics: Vec<ListOffsetsTopic>,
}

impl Message for ListOffsetsRequest {
    fn read(r: &mut Reader<'_>, v: i16) -> DecodeResult<Self> {
        let replica_id = r.i32()?;
        let isolation_level = if v >= 2 { r.i8()? } else { 0 };
        let topics = r.array(|r| {
            let name = r.string()?;
            let partitions = r.array(|r| {
                let partition_index = r.i32()?;
                let current_leader_epoch = if v >= 4 { r.i32()? } else { -1 };
                let timestamp = r.i64()?;
                r.skip_tagged_fields()?;
                Ok(ListOffsetsPartition {
                    partition_index,
                    current_leader_epoch,
                    timestamp,
                })
            })?;
            r.skip_tagged_fields()?;
            Ok(ListOffsetsTopic { name, partitions })
        })?;
        r.skip_tagged_fields()?;
        Ok(Self {
            replica_id,
            isolation_level,
            topics,
        })
    }

    fn write(&self, w: &mut Writer, v: i16) {
        w.i32(self.replica_id);
        if v >= 2 {
            w.i8(self.isolation_level);
        }
        w.array(&self.topics, |w, t| {
            w.string(&t.name);
            w.array(&t.partitions, |w, p| {
                w.i32(p.partition_index);
                if v >= 4 {
                    w.i32(p.current_leader_epoch);
                }
                w.i64(p.timestamp);
                w.no_tagged_fields();
            });
            w.no_tagged_fields();
        });
        w.no_tagged_fields();
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListOffsetsPartitionResponse {
    pub partition_index: i32,
    pub error_code: KafkaCode,
    pub timestamp: i64,
    pub offset: i64,
    /// v4+.
    pub leader_epoch: i32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListOffsetsTopicResponse {
    pub name: String,
    pub partitions: Vec<ListOffsetsPartitionResponse>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListOffsetsResponse {
    /// v2+.
    pub throttle_time_ms: i32,
    pub topics: Vec<ListOffsetsTopicResponse>,
}

impl Message for ListOffsetsResponse {
    fn read(r: &mut Reader<'_>, v: i16) -> DecodeResult<Self> {
        let throttle_time_ms = if v >= 2 { r.i32()? } else { 0 };
        let topics = r.array(|r| {
            let name = r.string()?;
            let partitions = r.array(|r| {
                let p = ListOffsetsPartitionResponse {
                    partition_index: r.i32()?,
                    error_code: KafkaCode(r.i16()?),
                    timestamp: r.i64()?,
                    offset: r.i64()?,
                    leader_epoch: if v >= 4 { r.i32()? } else { -1 },
                };
                r.skip_tagged_fields()?;
                Ok(p)
            })?;
            r.skip_tagged_fields()?;
            Ok(ListOffsetsTopicResponse { name, partitions })
        })?;
        r.skip_tagged_fields()?;
        Ok(Self {
            throttle_time_ms,
            topics,
        })
    }

    fn write(&self, w: &mut Writer, v: i16) {
        if v >= 2 {
            w.i32(self.throttle_time_ms);
        }
        w.array(&self.topics, |w, t| {
            w.string(&t.name);
            w.array(&t.partitions, |w, p| {
                w.i32(p.partition_index);
                w.i16(p.error_code.0);
                w.i64(p.timestamp);
                w.i64(p.offset);
                if v >= 4 {
                    w.i32(p.leader_epoch);
                }
                w.no_tagged_fields();
            });
            w.no_tagged_fields();
        });
        w.no_tagged_fields();
    }
}

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
    let spec = match p.timestamp {
        LATEST_TIMESTAMP => OffsetSpec::Latest,
        EARLIEST_TIMESTAMP => OffsetSpec::Earliest,
        MAX_TIMESTAMP if ctx.version() >= 7 => OffsetSpec::MaxTimestamp,
        ts => OffsetSpec::Timestamp(ts),
    };
    let found = ctx.cluster.data().list_offset(&tp, spec, isolation)?;
    Ok(match found {
        Some(l) => ListOffsetsPartitionResponse {
            partition_index: p.partition_index,
            error_code: KafkaCode::NONE,
            timestamp: l.timestamp_ms,
            offset: l.offset,
            leader_epoch: l.leader_epoch,
        },
        // No record at or after the timestamp: Kafka answers -1/-1.
        None => ListOffsetsPartitionResponse {
            partition_index: p.partition_index,
            error_code: KafkaCode::NONE,
            timestamp: -1,
            offset: -1,
            leader_epoch: -1,
        },
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

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetForLeaderPartition {
    pub partition: i32,
    pub current_leader_epoch: i32,
    pub leader_epoch: i32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetForLeaderTopic {
    pub topic: String,
    pub partitions: Vec<OffsetForLeaderPartition>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetForLeaderEpochRequest {
    /// v3+; -1 for consumers.
    pub replica_id: i32,
    pub topics: Vec<OffsetForLeaderTopic>,
}

impl Message for OffsetForLeaderEpochRequest {
    fn read(r: &mut Reader<'_>, v: i16) -> DecodeResult<Self> {
        let replica_id = if v >= 3 { r.i32()? } else { -2 };
        let topics = r.array(|r| {
            let topic = r.string()?;
            let partitions = r.array(|r| {
                let p = OffsetForLeaderPartition {
                    partition: r.i32()?,
                    current_leader_epoch: r.i32()?,
                    leader_epoch: r.i32()?,
                };
                r.skip_tagged_fields()?;
                Ok(p)
            })?;
            r.skip_tagged_fields()?;
            Ok(OffsetForLeaderTopic { topic, partitions })
        })?;
        r.skip_tagged_fields()?;
        Ok(Self { replica_id, topics })
    }

    fn write(&self, w: &mut Writer, v: i16) {
        if v >= 3 {
            w.i32(self.replica_id);
        }
        w.array(&self.topics, |w, t| {
            w.string(&t.topic);
            w.array(&t.partitions, |w, p| {
                w.i32(p.partition);
                w.i32(p.current_leader_epoch);
                w.i32(p.leader_epoch);
                w.no_tagged_fields();
            });
            w.no_tagged_fields();
        });
        w.no_tagged_fields();
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EpochEndOffset {
    pub error_code: KafkaCode,
    pub partition: i32,
    pub leader_epoch: i32,
    pub end_offset: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetForLeaderTopicResult {
    pub topic: String,
    pub partitions: Vec<EpochEndOffset>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetForLeaderEpochResponse {
    pub throttle_time_ms: i32,
    pub topics: Vec<OffsetForLeaderTopicResult>,
}

impl Message for OffsetForLeaderEpochResponse {
    fn read(r: &mut Reader<'_>, _v: i16) -> DecodeResult<Self> {
        let throttle_time_ms = r.i32()?;
        let topics = r.array(|r| {
            let topic = r.string()?;
            let partitions = r.array(|r| {
                let p = EpochEndOffset {
                    error_code: KafkaCode(r.i16()?),
                    partition: r.i32()?,
                    leader_epoch: r.i32()?,
                    end_offset: r.i64()?,
                };
                r.skip_tagged_fields()?;
                Ok(p)
            })?;
            r.skip_tagged_fields()?;
            Ok(OffsetForLeaderTopicResult { topic, partitions })
        })?;
        r.skip_tagged_fields()?;
        Ok(Self {
            throttle_time_ms,
            topics,
        })
    }

    fn write(&self, w: &mut Writer, _v: i16) {
        w.i32(self.throttle_time_ms);
        w.array(&self.topics, |w, t| {
            w.string(&t.topic);
            w.array(&t.partitions, |w, p| {
                w.i16(p.error_code.0);
                w.i32(p.partition);
                w.i32(p.leader_epoch);
                w.i64(p.end_offset);
                w.no_tagged_fields();
            });
            w.no_tagged_fields();
        });
        w.no_tagged_fields();
    }
}

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
