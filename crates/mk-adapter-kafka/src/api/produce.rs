//! Produce and InitProducerId. Every partition's batch is converted
//! (`records.rs`), checked against this broker's leadership, and appended
//! in request order; the answers are then awaited together, bounded by the
//! request's `timeout_ms`. Produce with acks=0 has no answer at all.

use super::{Ctx, Message};
use crate::codec::{DecodeResult, Reader, Writer};
use crate::errors::{self, KafkaCode};
use crate::records::{DecodeLimits, decode_produced};
use bytes::Bytes;
use mk_cluster::{AckMode, ClusterError, ErrorCode, PendingAppend, ProduceResult, TopicPartition};
use std::time::Duration;

// ----- Produce -------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducePartition {
    pub index: i32,
    pub records: Option<Bytes>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProduceTopic {
    pub name: String,
    pub partitions: Vec<ProducePartition>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProduceRequest {
    pub transactional_id: Option<String>,
    pub acks: i16,
    pub timeout_ms: i32,
    pub topics: Vec<ProduceTopic>,
}

impl Message for ProduceRequest {
    fn read(r: &mut Reader<'_>, _v: i16) -> DecodeResult<Self> {
        let transactional_id = r.nullable_string()?;
        let acks = r.i16()?;
        let timeout_ms = r.i32()?;
        let topics = r.array(|r| {
            let name = r.string()?;
            let partitions = r.array(|r| {
                let p = ProducePartition {
                    index: r.i32()?,
                    records: r.nullable_bytes()?,
                };
                r.skip_tagged_fields()?;
                Ok(p)
            })?;
            r.skip_tagged_fields()?;
            Ok(ProduceTopic { name, partitions })
        })?;
        r.skip_tagged_fields()?;
        Ok(Self {
            transactional_id,
            acks,
            timeout_ms,
            topics,
        })
    }

    fn write(&self, w: &mut Writer, _v: i16) {
        w.nullable_string(self.transactional_id.as_deref());
        w.i16(self.acks);
        w.i32(self.timeout_ms);
        w.array(&self.topics, |w, t| {
            w.string(&t.name);
            w.array(&t.partitions, |w, p| {
                w.i32(p.index);
                w.nullable_bytes(p.records.as_deref());
                w.no_tagged_fields();
            });
            w.no_tagged_fields();
        });
        w.no_tagged_fields();
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordErrorEntry {
    pub batch_index: i32,
    pub message: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducePartitionResponse {
    pub index: i32,
    pub error_code: KafkaCode,
    pub base_offset: i64,
    /// -1 unless the topic uses LogAppendTime.
    pub log_append_time_ms: i64,
    /// v5+.
    pub log_start_offset: i64,
    /// v8+.
    pub record_errors: Vec<RecordErrorEntry>,
    /// v8+.
    pub error_message: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProduceTopicResponse {
    pub name: String,
    pub partitions: Vec<ProducePartitionResponse>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProduceResponse {
    pub responses: Vec<ProduceTopicResponse>,
    pub throttle_time_ms: i32,
}

impl Message for ProduceResponse {
    fn read(r: &mut Reader<'_>, v: i16) -> DecodeResult<Self> {
        let responses = r.array(|r| {
            let name = r.string()?;
            let partitions = r.array(|r| {
                let index = r.i32()?;
                let error_code = KafkaCode(r.i16()?);
                let base_offset = r.i64()?;
                let log_append_time_ms = r.i64()?;
                let log_start_offset = if v >= 5 { r.i64()? } else { -1 };
                let (record_errors, error_message) = if v >= 8 {
                    let errs = r.array(|r| {
                        let e = RecordErrorEntry {
                            batch_index: r.i32()?,
                            message: r.nullable_string()?,
                        };
                        r.skip_tagged_fields()?;
                        Ok(e)
                    })?;
                    (errs, r.nullable_string()?)
                } else {
                    (Vec::new(), None)
                };
                r.skip_tagged_fields()?;
                Ok(ProducePartitionResponse {
                    index,
                    error_code,
                    base_offset,
                    log_append_time_ms,
                    log_start_offset,
                    record_errors,
                    error_message,
                })
            })?;
            r.skip_tagged_fields()?;
            Ok(ProduceTopicResponse { name, partitions })
        })?;
        let throttle_time_ms = r.i32()?;
        r.skip_tagged_fields()?;
        Ok(Self {
            responses,
            throttle_time_ms,
        })
    }

    fn write(&self, w: &mut Writer, v: i16) {
        w.array(&self.responses, |w, t| {
            w.string(&t.name);
            w.array(&t.partitions, |w, p| {
                w.i32(p.index);
                w.i16(p.error_code.0);
                w.i64(p.base_offset);
                w.i64(p.log_append_time_ms);
                if v >= 5 {
                    w.i64(p.log_start_offset);
                }
                if v >= 8 {
                    w.array(&p.record_errors, |w, e| {
                        w.i32(e.batch_index);
                        w.nullable_string(e.message.as_deref());
                        w.no_tagged_fields();
                    });
                    w.nullable_string(p.error_message.as_deref());
                }
                w.no_tagged_fields();
            });
            w.no_tagged_fields();
        });
        w.i32(self.throttle_time_ms);
        w.no_tagged_fields();
    }
}

/// The Kafka code of a produce error: a fenced producer epoch is
/// INVALID_PRODUCER_EPOCH on Produce (PRODUCER_FENCED is for the
/// coordinator APIs), as Kafka brokers answer it.
fn produce_error_code(code: ErrorCode) -> KafkaCode {
    match code {
        ErrorCode::ProducerFenced => KafkaCode::INVALID_PRODUCER_EPOCH,
        other => errors::kafka_code(other),
    }
}

impl ProducePartitionResponse {
    fn failed(index: i32, code: KafkaCode, message: String) -> Self {
        Self {
            index,
            error_code: code,
            base_offset: -1,
            log_append_time_ms: -1,
            log_start_offset: -1,
            record_errors: Vec::new(),
            error_message: Some(message),
        }
    }

    fn from_error(index: i32, e: &ClusterError) -> Self {
        Self::failed(index, produce_error_code(e.code()), e.to_string())
    }
}

/// One partition of a request on its way: appended (waiting for its ack),
/// or already answered.
enum Step {
    Pending {
        tp: TopicPartition,
        append: PendingAppend,
        log_append_time: Option<i64>,
    },
    Done(ProducePartitionResponse),
}

fn ack_mode(acks: i16) -> Option<AckMode> {
    match acks {
        0 => Some(AckMode::Zero),
        1 => Some(AckMode::One),
        -1 => Some(AckMode::All),
        _ => None,
    }
}

fn submit(
    ctx: &Ctx<'_>,
    req: &ProduceRequest,
    topic: &str,
    p: &ProducePartition,
    acks: AckMode,
) -> Step {
    let c = ctx.cluster;
    let Ok(index) = u32::try_from(p.index) else {
        return Step::Done(ProducePartitionResponse::failed(
            p.index,
            KafkaCode::UNKNOWN_TOPIC_OR_PARTITION,
            format!("partition {} does not exist", p.index),
        ));
    };
    let tp = TopicPartition::new(topic, index);
    if let Err(e) = c.brokers().check_leader(&tp, ctx.broker_id) {
        return Step::Done(ProducePartitionResponse::from_error(p.index, &e));
    }
    let Some(records) = &p.records else {
        return Step::Done(ProducePartitionResponse::failed(
            p.index,
            KafkaCode::INVALID_RECORD,
            "the partition carries no records".into(),
        ));
    };
    let limits = DecodeLimits {
        max_uncompressed_bytes: c.config().max_batch_bytes as usize,
    };
    let now = c.clock().now_ms();
    let produced = match decode_produced(records, limits, now, req.transactional_id.as_deref()) {
        Ok(b) => b,
        Err(e) => {
            return Step::Done(ProducePartitionResponse {
                record_errors: vec![RecordErrorEntry {
                    batch_index: 0,
                    message: Some(e.message.clone()),
                }],
                ..ProducePartitionResponse::failed(p.index, e.code, e.message)
            });
        }
    };
    match c.data().submit_append(&tp, produced.batch, acks, None) {
        Ok(append) => Step::Pending {
            tp,
            append,
            log_append_time: produced.log_append_time.then_some(now),
        },
        Err(e) => Step::Done(ProducePartitionResponse::from_error(p.index, &e)),
    }
}

async fn complete(ctx: &Ctx<'_>, step: Step, timeout: Duration) -> ProducePartitionResponse {
    let (tp, append, log_append_time) = match step {
        Step::Done(r) => return r,
        Step::Pending {
            tp,
            append,
            log_append_time,
        } => (tp, append, log_append_time),
    };
    let index = tp.partition as i32;
    match append.wait_timeout(timeout).await {
        Ok(ProduceResult { base_offset, .. }) => ProducePartitionResponse {
            index,
            error_code: KafkaCode::NONE,
            base_offset: base_offset.unwrap_or(-1),
            log_append_time_ms: log_append_time.unwrap_or(-1),
            log_start_offset: ctx.cluster.data().log_start_offset(&tp).unwrap_or(-1),
            record_errors: Vec::new(),
            error_message: None,
        },
        Err(e) => ProducePartitionResponse::from_error(index, &e),
    }
}

pub async fn handle(ctx: &Ctx<'_>, req: ProduceRequest) -> Option<ProduceResponse> {
    let acks = ack_mode(req.acks);
    let timeout = Duration::from_millis(u64::try_from(req.timeout_ms.max(0)).unwrap_or(0));
    // Append every partition first (in request order), then wait for all
    // acknowledgements together.
    let mut steps = Vec::with_capacity(req.topics.len());
    for t in &req.topics {
        let parts: Vec<Step> = t
            .partitions
            .iter()
            .map(|p| match acks {
                Some(acks) => submit(ctx, &req, &t.name, p, acks),
                None => Step::Done(ProducePartitionResponse::failed(
                    p.index,
                    KafkaCode::INVALID_REQUIRED_ACKS,
                    format!("acks must be 0, 1 or -1, got {}", req.acks),
                )),
            })
            .collect();
        steps.push((t.name.clone(), parts));
    }
    if acks == Some(AckMode::Zero) {
        return None;
    }
    let mut responses = Vec::with_capacity(steps.len());
    for (name, parts) in steps {
        let partitions =
            futures::future::join_all(parts.into_iter().map(|s| complete(ctx, s, timeout))).await;
        responses.push(ProduceTopicResponse { name, partitions });
    }
    Some(ProduceResponse {
        responses,
        throttle_time_ms: 0,
    })
}

// ----- InitProducerId ------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitProducerIdRequest {
    pub transactional_id: Option<String>,
    pub transaction_timeout_ms: i32,
    /// v3+ (KIP-360): the producer's current id and epoch when it asks
    /// for a bump, else -1.
    pub producer_id: i64,
    pub producer_epoch: i16,
}

impl Message for InitProducerIdRequest {
    fn read(r: &mut Reader<'_>, v: i16) -> DecodeResult<Self> {
        let transactional_id = r.nullable_string()?;
        let transaction_timeout_ms = r.i32()?;
        let (producer_id, producer_epoch) = if v >= 3 {
            (r.i64()?, r.i16()?)
        } else {
            (-1, -1)
        };
        r.skip_tagged_fields()?;
        Ok(Self {
            transactional_id,
            transaction_timeout_ms,
            producer_id,
            producer_epoch,
        })
    }

    fn write(&self, w: &mut Writer, v: i16) {
        w.nullable_string(self.transactional_id.as_deref());
        w.i32(self.transaction_timeout_ms);
        if v >= 3 {
            w.i64(self.producer_id);
            w.i16(self.producer_epoch);
        }
        w.no_tagged_fields();
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitProducerIdResponse {
    pub throttle_time_ms: i32,
    pub error_code: KafkaCode,
    pub producer_id: i64,
    pub producer_epoch: i16,
}

impl Message for InitProducerIdResponse {
    fn read(r: &mut Reader<'_>, _v: i16) -> DecodeResult<Self> {
        let resp = Self {
            throttle_time_ms: r.i32()?,
            error_code: KafkaCode(r.i16()?),
            producer_id: r.i64()?,
            producer_epoch: r.i16()?,
        };
        r.skip_tagged_fields()?;
        Ok(resp)
    }

    fn write(&self, w: &mut Writer, _v: i16) {
        w.i32(self.throttle_time_ms);
        w.i16(self.error_code.0);
        w.i64(self.producer_id);
        w.i16(self.producer_epoch);
        w.no_tagged_fields();
    }
}

impl InitProducerIdResponse {
    fn failed(code: KafkaCode) -> Self {
        Self {
            throttle_time_ms: 0,
            error_code: code,
            producer_id: -1,
            producer_epoch: -1,
        }
    }
}

pub async fn handle_init_producer_id(
    ctx: &Ctx<'_>,
    req: InitProducerIdRequest,
) -> InitProducerIdResponse {
    let identity = match req.transactional_id.as_deref().filter(|t| !t.is_empty()) {
        // A transactional producer's session: Kafka's flow in mk-txn (its
        // previous epoch's open transaction is aborted first, KIP-360
        // retries carry the current id and epoch).
        Some(txn_id) => {
            let current =
                (req.producer_id >= 0).then_some((req.producer_id, i32::from(req.producer_epoch)));
            let r = tokio::select! {
                r = ctx.cluster.transactions().init_transactional_producer(
                    txn_id,
                    req.transaction_timeout_ms,
                    current,
                ) => r,
                _ = ctx.shutdown.cancelled() => Err(mk_cluster::ClusterError::Closed),
            };
            r.map_err(|e| super::txn::txn_code(&e, ctx.version(), 4))
        }
        // An idempotent producer (also one asking for an epoch bump,
        // KIP-360) gets a fresh identity: its sequences start again at 0.
        None => ctx
            .cluster
            .transactions()
            .init_producer(None)
            .map_err(|e| errors::kafka_code(e.code())),
    };
    match identity {
        Ok(identity) => match i16::try_from(identity.epoch) {
            Ok(epoch) => InitProducerIdResponse {
                throttle_time_ms: 0,
                error_code: KafkaCode::NONE,
                producer_id: identity.producer_id,
                producer_epoch: epoch,
            },
            Err(_) => InitProducerIdResponse::failed(KafkaCode::INVALID_REQUEST),
        },
        Err(code) => InitProducerIdResponse::failed(code),
    }
}
