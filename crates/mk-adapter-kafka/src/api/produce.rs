//! Produce and InitProducerId. Every partition's batch is converted
//! (`records.rs`), checked against this broker's leadership, and appended
//! in request order; the answers are then awaited together, bounded by the
//! request's `timeout_ms`. Produce with acks=0 has no answer at all. From
//! v10 a NOT_LEADER_OR_FOLLOWER answer carries the current leader and its
//! endpoint (KIP-951). From v12 a transactional batch adds its partition
//! to its producer's transaction (KIP-890 part 2, transactions v2); v13
//! (topic ids) is not served.

use super::Ctx;
use super::metadata::leader_hint;
use super::txn::PRODUCE_ABORTABLE_FROM;
use crate::compression::Codec;
use crate::errors::{self, KafkaCode};
use crate::messages::init_producer_id::{InitProducerIdRequest, InitProducerIdResponse};
use crate::messages::produce::{
    BatchIndexAndErrorMessage, LeaderIdAndEpoch, NodeEndpoint, PartitionProduceData,
    PartitionProduceResponse, ProduceRequest, ProduceResponse, TopicProduceResponse,
};
use crate::records::{self, DecodeLimits, decode_produced};
use mk_cluster::{
    AckMode, ClusterError, ErrorCode, PendingAppend, ProduceResult, TopicPartition, TxnVersion,
};
use std::time::Duration;

// ----- Produce -------------------------------------------------------------

/// The Kafka code of a produce error: a fenced producer epoch is
/// INVALID_PRODUCER_EPOCH on Produce (PRODUCER_FENCED is for the
/// coordinator APIs), as Kafka brokers answer it.
///
/// A transaction being decided when a v12 batch would join it is
/// NOT_ENOUGH_REPLICAS, as Kafka answers it: retriable, and without a
/// metadata refresh. A batch for a partition its open transaction does not
/// have is TRANSACTION_ABORTABLE from v11, INVALID_TXN_STATE before
/// (`handle_produce`).
fn produce_error_code(code: ErrorCode) -> KafkaCode {
    match code {
        ErrorCode::ProducerFenced => KafkaCode::INVALID_PRODUCER_EPOCH,
        ErrorCode::ConcurrentTransactions => KafkaCode::NOT_ENOUGH_REPLICAS,
        other => errors::kafka_code(other),
    }
}

fn failed(index: i32, code: KafkaCode, message: String) -> PartitionProduceResponse {
    PartitionProduceResponse {
        index,
        error_code: code,
        base_offset: -1,
        error_message: Some(message),
        ..PartitionProduceResponse::default()
    }
}

/// A partition's refusal; a batch refused for some of its records names
/// each of them (Produce v8+'s `record_errors`).
fn from_error(index: i32, e: &ClusterError) -> PartitionProduceResponse {
    PartitionProduceResponse {
        record_errors: e
            .record_errors()
            .iter()
            .map(|r| BatchIndexAndErrorMessage {
                batch_index: i32::try_from(r.batch_index).unwrap_or(i32::MAX),
                batch_index_error_message: Some(r.message.clone()),
            })
            .collect(),
        ..failed(index, produce_error_code(e.code()), e.to_string())
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
    Done(PartitionProduceResponse),
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
    p: &PartitionProduceData,
    acks: AckMode,
) -> Step {
    let c = ctx.cluster;
    let Ok(index) = u32::try_from(p.index) else {
        return Step::Done(failed(
            p.index,
            KafkaCode::UNKNOWN_TOPIC_OR_PARTITION,
            format!("partition {} does not exist", p.index),
        ));
    };
    let tp = TopicPartition::new(topic, index);
    if let Err(e) = c.brokers().check_leader(&tp, ctx.broker_id) {
        return Step::Done(from_error(p.index, &e));
    }
    let Some(records) = &p.records else {
        return Step::Done(failed(
            p.index,
            KafkaCode::INVALID_RECORD,
            "the partition carries no records".into(),
        ));
    };
    if let Some(refused) = zstd_before_v7(ctx, topic, p.index, records) {
        return Step::Done(refused);
    }
    let limits = DecodeLimits {
        max_uncompressed_bytes: c.config().max_batch_bytes as usize,
    };
    let now = c.clock().now_ms();
    let produced = match decode_produced(records, limits, now, req.transactional_id.as_deref()) {
        Ok(b) => b,
        Err(e) => {
            return Step::Done(PartitionProduceResponse {
                record_errors: vec![BatchIndexAndErrorMessage {
                    batch_index: 0,
                    batch_index_error_message: Some(e.message.clone()),
                }],
                ..failed(p.index, e.code, e.message)
            });
        }
    };
    // v12+: a producer of transactions v2, whose batches add their
    // partition to its transaction (KIP-890 part 2).
    let txn_version = if ctx.version() >= 12 {
        TxnVersion::V2
    } else {
        TxnVersion::V1
    };
    match c
        .data()
        .submit_append_as(&tp, produced.batch, acks, None, txn_version)
    {
        Ok(append) => Step::Pending {
            tp,
            // A LogAppendTime topic's broker time (the core stamped it),
            // or a batch that asked for LogAppendTime itself; -1 otherwise.
            log_append_time: append
                .log_append_time_ms()
                .or(produced.log_append_time.then_some(now)),
            append,
        },
        Err(e) => Step::Done(from_error(p.index, &e)),
    }
}

/// Kafka's rule from KIP-110: zstd needs Produce v7, so an older request
/// carrying a zstd batch, or writing to a topic that stores zstd, is
/// UNSUPPORTED_COMPRESSION_TYPE for that partition.
fn zstd_before_v7(
    ctx: &Ctx<'_>,
    topic: &str,
    index: i32,
    records: &bytes::Bytes,
) -> Option<PartitionProduceResponse> {
    if ctx.version() >= 7 {
        return None;
    }
    let zstd_batch = records::produced_codec(records) == Some(Codec::Zstd);
    let zstd_topic =
        ctx.cluster.topics().compression_codec(topic).ok()? == Some(mk_cluster::block::Codec::Zstd);
    (zstd_batch || zstd_topic).then(|| {
        failed(
            index,
            KafkaCode::UNSUPPORTED_COMPRESSION_TYPE,
            format!(
                "Produce requests with version {} are not allowed to use ZStandard compression",
                ctx.version()
            ),
        )
    })
}

async fn complete(ctx: &Ctx<'_>, step: Step, timeout: Duration) -> PartitionProduceResponse {
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
        Ok(ProduceResult { base_offset, .. }) => PartitionProduceResponse {
            index,
            base_offset: base_offset.unwrap_or(-1),
            log_append_time_ms: log_append_time.unwrap_or(-1),
            log_start_offset: ctx.cluster.data().log_start_offset(&tp).unwrap_or(-1),
            ..PartitionProduceResponse::default()
        },
        Err(e) => from_error(index, &e),
    }
}

pub async fn handle_produce(ctx: &Ctx<'_>, req: ProduceRequest) -> Option<ProduceResponse> {
    let acks = ack_mode(req.acks);
    let timeout = Duration::from_millis(u64::try_from(req.timeout_ms.max(0)).unwrap_or(0));
    // Append every partition first (in request order), then wait for all
    // acknowledgements together.
    let mut steps = Vec::with_capacity(req.topic_data.len());
    for t in &req.topic_data {
        let parts: Vec<Step> = t
            .partition_data
            .iter()
            .map(|p| match acks {
                Some(acks) => submit(ctx, &req, &t.name, p, acks),
                None => Step::Done(failed(
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
    let mut node_endpoints = Vec::new();
    for (name, parts) in steps {
        let mut partition_responses =
            futures::future::join_all(parts.into_iter().map(|s| complete(ctx, s, timeout))).await;
        for p in &mut partition_responses {
            if ctx.version() >= 10 {
                hint_leader(ctx, &name, p, &mut node_endpoints);
            }
            p.error_code =
                super::txn::abortable_as(p.error_code, ctx.version(), PRODUCE_ABORTABLE_FROM);
        }
        responses.push(TopicProduceResponse {
            name,
            partition_responses,
            ..TopicProduceResponse::default()
        });
    }
    Some(ProduceResponse {
        responses,
        node_endpoints,
        ..ProduceResponse::default()
    })
}

/// KIP-951 (v10+): a NOT_LEADER_OR_FOLLOWER answer names the partition's
/// current leader and epoch, and the answer carries that leader's endpoint,
/// so the client re-routes without a Metadata round trip.
fn hint_leader(
    ctx: &Ctx<'_>,
    topic: &str,
    p: &mut PartitionProduceResponse,
    endpoints: &mut Vec<NodeEndpoint>,
) {
    let Ok(index) = u32::try_from(p.index) else {
        return;
    };
    if p.error_code != KafkaCode::NOT_LEADER_OR_FOLLOWER {
        return;
    }
    let hint = leader_hint(ctx, &TopicPartition::new(topic, index));
    p.current_leader = LeaderIdAndEpoch {
        leader_id: hint.leader_id,
        leader_epoch: hint.leader_epoch,
    };
    if let Some(e) = hint.endpoint
        && !endpoints.iter().any(|n| n.node_id == e.broker_id)
    {
        endpoints.push(NodeEndpoint {
            node_id: e.broker_id,
            host: e.host,
            port: i32::from(e.port),
            rack: None,
        });
    }
}

// ----- InitProducerId ------------------------------------------------------

fn init_failed(code: KafkaCode) -> InitProducerIdResponse {
    InitProducerIdResponse {
        throttle_time_ms: 0,
        error_code: code,
        producer_id: -1,
        producer_epoch: -1,
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
            if let Some(code) =
                super::groups::not_coordinator(ctx, mk_cluster::CoordinatorKey::Transaction(txn_id))
            {
                return init_failed(code);
            }
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
            r.map_err(|e| super::txn::txn_code(&e, ctx.version(), super::txn::INIT_PRODUCER_ID))
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
            Err(_) => init_failed(KafkaCode::INVALID_REQUEST),
        },
        Err(code) => init_failed(code),
    }
}
