//! Transactions as Kafka clients drive them: AddPartitionsToTxn,
//! AddOffsetsToTxn, EndTxn and TxnOffsetCommit (InitProducerId with a
//! transactional id lives with the idempotent producer in `produce`) —
//! each message's decode and encode side by side, and the handlers that
//! translate them onto Kafka's transaction flow in mk-txn (through
//! mk-cluster, which executes its plans). The transactional records
//! themselves arrive as Produce requests carrying the transactional id.

use super::groups::TopicPartitionErrors;
use super::{Ctx, Message};
use crate::codec::{DecodeResult, Reader, Writer};
use crate::errors::{self, KafkaCode};
use mk_cluster::{ClusterError, ErrorCode, TopicPartition, TxnOffsetCommit};
use std::collections::BTreeMap;

/// The fields that name a producer instance of a transactional id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnProducer {
    pub transactional_id: String,
    pub producer_id: i64,
    pub producer_epoch: i16,
}

impl TxnProducer {
    fn read(r: &mut Reader<'_>) -> DecodeResult<Self> {
        Ok(Self {
            transactional_id: r.string()?,
            producer_id: r.i64()?,
            producer_epoch: r.i16()?,
        })
    }

    fn write(&self, w: &mut Writer) {
        w.string(&self.transactional_id);
        w.i64(self.producer_id);
        w.i16(self.producer_epoch);
    }
}

/// A throttle time and an error code: the whole answer of AddOffsetsToTxn
/// and EndTxn (v0-v4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxnErrorResponse {
    pub throttle_time_ms: i32,
    pub error_code: KafkaCode,
}

impl Message for TxnErrorResponse {
    fn read(r: &mut Reader<'_>, _v: i16) -> DecodeResult<Self> {
        let resp = Self {
            throttle_time_ms: r.i32()?,
            error_code: KafkaCode(r.i16()?),
        };
        r.skip_tagged_fields()?;
        Ok(resp)
    }

    fn write(&self, w: &mut Writer, _v: i16) {
        w.i32(self.throttle_time_ms);
        w.i16(self.error_code.0);
        w.no_tagged_fields();
    }
}

// ----- AddPartitionsToTxn (v0-v3: one transaction per request) ---------------

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddPartitionsToTxnRequest {
    pub producer: TxnProducer,
    pub topics: Vec<(String, Vec<i32>)>,
}

impl Message for AddPartitionsToTxnRequest {
    fn read(r: &mut Reader<'_>, _v: i16) -> DecodeResult<Self> {
        let producer = TxnProducer::read(r)?;
        let topics = r.array(|r| {
            let t = (r.string()?, r.array(|r| r.i32())?);
            r.skip_tagged_fields()?;
            Ok(t)
        })?;
        r.skip_tagged_fields()?;
        Ok(Self { producer, topics })
    }

    fn write(&self, w: &mut Writer, _v: i16) {
        self.producer.write(w);
        w.array(&self.topics, |w, (name, partitions)| {
            w.string(name);
            w.array(partitions, |w, p| w.i32(*p));
            w.no_tagged_fields();
        });
        w.no_tagged_fields();
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddPartitionsToTxnResponse {
    pub throttle_time_ms: i32,
    pub results: Vec<TopicPartitionErrors>,
}

impl Message for AddPartitionsToTxnResponse {
    fn read(r: &mut Reader<'_>, _v: i16) -> DecodeResult<Self> {
        let throttle_time_ms = r.i32()?;
        let results = r.array(|r| {
            let name = r.string()?;
            let partitions = r.array(|r| {
                let p = (r.i32()?, KafkaCode(r.i16()?));
                r.skip_tagged_fields()?;
                Ok(p)
            })?;
            r.skip_tagged_fields()?;
            Ok(TopicPartitionErrors { name, partitions })
        })?;
        r.skip_tagged_fields()?;
        Ok(Self {
            throttle_time_ms,
            results,
        })
    }

    fn write(&self, w: &mut Writer, _v: i16) {
        w.i32(self.throttle_time_ms);
        w.array(&self.results, |w, t| {
            w.string(&t.name);
            w.array(&t.partitions, |w, (p, code)| {
                w.i32(*p);
                w.i16(code.0);
                w.no_tagged_fields();
            });
            w.no_tagged_fields();
        });
        w.no_tagged_fields();
    }
}

// ----- AddOffsetsToTxn -------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddOffsetsToTxnRequest {
    pub producer: TxnProducer,
    pub group_id: String,
}

impl Message for AddOffsetsToTxnRequest {
    fn read(r: &mut Reader<'_>, _v: i16) -> DecodeResult<Self> {
        let req = Self {
            producer: TxnProducer::read(r)?,
            group_id: r.string()?,
        };
        r.skip_tagged_fields()?;
        Ok(req)
    }

    fn write(&self, w: &mut Writer, _v: i16) {
        self.producer.write(w);
        w.string(&self.group_id);
        w.no_tagged_fields();
    }
}

// ----- EndTxn ----------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndTxnRequest {
    pub producer: TxnProducer,
    /// True to commit, false to abort.
    pub committed: bool,
}

impl Message for EndTxnRequest {
    fn read(r: &mut Reader<'_>, _v: i16) -> DecodeResult<Self> {
        let req = Self {
            producer: TxnProducer::read(r)?,
            committed: r.bool()?,
        };
        r.skip_tagged_fields()?;
        Ok(req)
    }

    fn write(&self, w: &mut Writer, _v: i16) {
        self.producer.write(w);
        w.bool(self.committed);
        w.no_tagged_fields();
    }
}

// ----- TxnOffsetCommit -------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnOffsetCommitPartition {
    pub partition_index: i32,
    pub committed_offset: i64,
    /// v2+.
    pub committed_leader_epoch: i32,
    pub committed_metadata: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnOffsetCommitRequest {
    pub transactional_id: String,
    pub group_id: String,
    pub producer_id: i64,
    pub producer_epoch: i16,
    /// v3+ (KIP-447): the consumer's group generation, member and instance,
    /// so a fenced consumer's offsets are refused.
    pub generation_id: i32,
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub topics: Vec<(String, Vec<TxnOffsetCommitPartition>)>,
}

impl Message for TxnOffsetCommitRequest {
    fn read(r: &mut Reader<'_>, v: i16) -> DecodeResult<Self> {
        let transactional_id = r.string()?;
        let group_id = r.string()?;
        let producer_id = r.i64()?;
        let producer_epoch = r.i16()?;
        let (generation_id, member_id, group_instance_id) = if v >= 3 {
            (r.i32()?, r.string()?, r.nullable_string()?)
        } else {
            (-1, String::new(), None)
        };
        let topics = r.array(|r| {
            let name = r.string()?;
            let partitions = r.array(|r| {
                let p = TxnOffsetCommitPartition {
                    partition_index: r.i32()?,
                    committed_offset: r.i64()?,
                    committed_leader_epoch: if v >= 2 { r.i32()? } else { -1 },
                    committed_metadata: r.nullable_string()?,
                };
                r.skip_tagged_fields()?;
                Ok(p)
            })?;
            r.skip_tagged_fields()?;
            Ok((name, partitions))
        })?;
        r.skip_tagged_fields()?;
        Ok(Self {
            transactional_id,
            group_id,
            producer_id,
            producer_epoch,
            generation_id,
            member_id,
            group_instance_id,
            topics,
        })
    }

    fn write(&self, w: &mut Writer, v: i16) {
        w.string(&self.transactional_id);
        w.string(&self.group_id);
        w.i64(self.producer_id);
        w.i16(self.producer_epoch);
        if v >= 3 {
            w.i32(self.generation_id);
            w.string(&self.member_id);
            w.nullable_string(self.group_instance_id.as_deref());
        }
        w.array(&self.topics, |w, (name, partitions)| {
            w.string(name);
            w.array(partitions, |w, p| {
                w.i32(p.partition_index);
                w.i64(p.committed_offset);
                if v >= 2 {
                    w.i32(p.committed_leader_epoch);
                }
                w.nullable_string(p.committed_metadata.as_deref());
                w.no_tagged_fields();
            });
            w.no_tagged_fields();
        });
        w.no_tagged_fields();
    }
}

/// TxnOffsetCommit's answer has AddPartitionsToTxn's shape: a throttle
/// time and per-partition errors.
pub type TxnOffsetCommitResponse = AddPartitionsToTxnResponse;

// ----- handlers ----------------------------------------------------------------

/// KIP-588: PRODUCER_FENCED is answered from these versions on (InitProducerId
/// v4, AddPartitionsToTxn, AddOffsetsToTxn and EndTxn v2, TxnOffsetCommit
/// v3); older clients get INVALID_PRODUCER_EPOCH for the same condition.
pub(crate) fn txn_code(e: &ClusterError, version: i16, fenced_from: i16) -> KafkaCode {
    match e.code() {
        ErrorCode::ProducerFenced if version < fenced_from => KafkaCode::INVALID_PRODUCER_EPOCH,
        other => errors::kafka_code(other),
    }
}

pub async fn handle_add_partitions_to_txn(
    ctx: &Ctx<'_>,
    req: AddPartitionsToTxnRequest,
) -> AddPartitionsToTxnResponse {
    let v = ctx.version();
    let p = &req.producer;
    let mut partitions = Vec::new();
    for (topic, ps) in &req.topics {
        for index in ps {
            if let Ok(index) = u32::try_from(*index) {
                partitions.push(TopicPartition::new(topic, index));
            }
        }
    }
    let outcome = ctx
        .cluster
        .transactions()
        .add_partitions(
            &p.transactional_id,
            p.producer_id,
            i32::from(p.producer_epoch),
            &partitions,
        )
        .await;
    let by_tp: BTreeMap<TopicPartition, KafkaCode> = match &outcome {
        Ok(results) => results
            .iter()
            .map(|(tp, r)| {
                (
                    tp.clone(),
                    r.as_ref()
                        .err()
                        .map_or(KafkaCode::NONE, |e| txn_code(e, v, 2)),
                )
            })
            .collect(),
        Err(_) => BTreeMap::new(),
    };
    let whole = outcome.as_ref().err().map(|e| txn_code(e, v, 2));
    AddPartitionsToTxnResponse {
        throttle_time_ms: 0,
        results: req
            .topics
            .iter()
            .map(|(topic, ps)| TopicPartitionErrors {
                name: topic.clone(),
                partitions: ps
                    .iter()
                    .map(|index| {
                        let code = match (whole, u32::try_from(*index)) {
                            (Some(code), _) => code,
                            (None, Err(_)) => KafkaCode::UNKNOWN_TOPIC_OR_PARTITION,
                            (None, Ok(i)) => by_tp
                                .get(&TopicPartition::new(topic, i))
                                .copied()
                                .unwrap_or(KafkaCode::UNKNOWN_TOPIC_OR_PARTITION),
                        };
                        (*index, code)
                    })
                    .collect(),
            })
            .collect(),
    }
}

pub async fn handle_add_offsets_to_txn(
    ctx: &Ctx<'_>,
    req: AddOffsetsToTxnRequest,
) -> TxnErrorResponse {
    let p = &req.producer;
    let r = ctx.cluster.transactions().add_offsets(
        &p.transactional_id,
        p.producer_id,
        i32::from(p.producer_epoch),
        &req.group_id,
    );
    TxnErrorResponse {
        throttle_time_ms: 0,
        error_code: r
            .err()
            .map_or(KafkaCode::NONE, |e| txn_code(&e, ctx.version(), 2)),
    }
}

pub async fn handle_end_txn(ctx: &Ctx<'_>, req: EndTxnRequest) -> TxnErrorResponse {
    let p = &req.producer;
    let ended = tokio::select! {
        r = ctx.cluster.transactions().end(
            &p.transactional_id,
            p.producer_id,
            i32::from(p.producer_epoch),
            req.committed,
        ) => r,
        _ = ctx.shutdown.cancelled() => Err(ClusterError::Closed),
    };
    TxnErrorResponse {
        throttle_time_ms: 0,
        error_code: ended
            .err()
            .map_or(KafkaCode::NONE, |e| txn_code(&e, ctx.version(), 2)),
    }
}

pub async fn handle_txn_offset_commit(
    ctx: &Ctx<'_>,
    req: TxnOffsetCommitRequest,
) -> TxnOffsetCommitResponse {
    let mut offsets = BTreeMap::new();
    for (topic, ps) in &req.topics {
        for p in ps {
            if let Ok(index) = u32::try_from(p.partition_index) {
                offsets.insert(TopicPartition::new(topic, index), p.committed_offset);
            }
        }
    }
    let commit = TxnOffsetCommit {
        transactional_id: req.transactional_id.clone(),
        group_id: req.group_id.clone(),
        producer_id: req.producer_id,
        producer_epoch: i32::from(req.producer_epoch),
        generation_id: req.generation_id,
        member_id: req.member_id.clone(),
        group_instance_id: req.group_instance_id.clone(),
        offsets,
    };
    let code = ctx
        .cluster
        .transactions()
        .commit_offsets(&commit)
        .err()
        .map_or(KafkaCode::NONE, |e| txn_code(&e, ctx.version(), 3));
    TxnOffsetCommitResponse {
        throttle_time_ms: 0,
        results: req
            .topics
            .iter()
            .map(|(topic, ps)| TopicPartitionErrors {
                name: topic.clone(),
                partitions: ps
                    .iter()
                    .map(|p| {
                        let code = if p.partition_index < 0 {
                            KafkaCode::UNKNOWN_TOPIC_OR_PARTITION
                        } else {
                            code
                        };
                        (p.partition_index, code)
                    })
                    .collect(),
            })
            .collect(),
    }
}
