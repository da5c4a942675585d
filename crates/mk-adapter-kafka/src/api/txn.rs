//! Transactions as Kafka clients drive them: AddPartitionsToTxn,
//! AddOffsetsToTxn, EndTxn and TxnOffsetCommit (InitProducerId with a
//! transactional id lives with the idempotent producer in `produce`) —
//! the handlers that translate them onto Kafka's transaction flow in
//! mk-txn (through mk-cluster, which executes its plans). The
//! transactional records themselves arrive as Produce requests carrying
//! the transactional id.

use super::Ctx;
use super::groups::not_coordinator;
use crate::errors::{self, KafkaCode};
use crate::messages::add_offsets_to_txn::{AddOffsetsToTxnRequest, AddOffsetsToTxnResponse};
use crate::messages::add_partitions_to_txn::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnRequest, AddPartitionsToTxnResponse,
    AddPartitionsToTxnTopicResult,
};
use crate::messages::end_txn::{EndTxnRequest, EndTxnResponse};
use crate::messages::txn_offset_commit::{
    TxnOffsetCommitRequest, TxnOffsetCommitResponse, TxnOffsetCommitResponsePartition,
    TxnOffsetCommitResponseTopic,
};
use mk_cluster::{
    ClusterError, CoordinatorKey, ErrorCode, OffsetAndMetadata, TopicPartition, TxnOffsetCommit,
};
use std::collections::BTreeMap;

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
    // v0-v3, what clients send (v4+ batches transactions for brokers).
    let v = ctx.version();
    let mut partitions = Vec::new();
    for t in &req.v3_and_below_topics {
        for index in &t.partitions {
            if let Ok(index) = u32::try_from(*index) {
                partitions.push(TopicPartition::new(&t.name, index));
            }
        }
    }
    let txn_id = CoordinatorKey::Transaction(&req.v3_and_below_transactional_id);
    let misdirected = not_coordinator(ctx, txn_id);
    let outcome = match misdirected {
        Some(_) => Ok(Vec::new()),
        None => {
            ctx.cluster
                .transactions()
                .add_partitions(
                    &req.v3_and_below_transactional_id,
                    req.v3_and_below_producer_id,
                    i32::from(req.v3_and_below_producer_epoch),
                    &partitions,
                )
                .await
        }
    };
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
    let whole = misdirected.or_else(|| outcome.as_ref().err().map(|e| txn_code(e, v, 2)));
    AddPartitionsToTxnResponse {
        results_by_topic_v3_and_below: req
            .v3_and_below_topics
            .iter()
            .map(|t| AddPartitionsToTxnTopicResult {
                name: t.name.clone(),
                results_by_partition: t
                    .partitions
                    .iter()
                    .map(|index| {
                        let code = match (whole, u32::try_from(*index)) {
                            (Some(code), _) => code,
                            (None, Err(_)) => KafkaCode::UNKNOWN_TOPIC_OR_PARTITION,
                            (None, Ok(i)) => by_tp
                                .get(&TopicPartition::new(&t.name, i))
                                .copied()
                                .unwrap_or(KafkaCode::UNKNOWN_TOPIC_OR_PARTITION),
                        };
                        AddPartitionsToTxnPartitionResult {
                            partition_index: *index,
                            partition_error_code: code,
                        }
                    })
                    .collect(),
            })
            .collect(),
        ..AddPartitionsToTxnResponse::default()
    }
}

pub async fn handle_add_offsets_to_txn(
    ctx: &Ctx<'_>,
    req: AddOffsetsToTxnRequest,
) -> AddOffsetsToTxnResponse {
    if let Some(code) = not_coordinator(ctx, CoordinatorKey::Transaction(&req.transactional_id)) {
        return AddOffsetsToTxnResponse {
            throttle_time_ms: 0,
            error_code: code,
        };
    }
    let r = ctx.cluster.transactions().add_offsets(
        &req.transactional_id,
        req.producer_id,
        i32::from(req.producer_epoch),
        &req.group_id,
    );
    AddOffsetsToTxnResponse {
        throttle_time_ms: 0,
        error_code: r
            .err()
            .map_or(KafkaCode::NONE, |e| txn_code(&e, ctx.version(), 2)),
    }
}

pub async fn handle_end_txn(ctx: &Ctx<'_>, req: EndTxnRequest) -> EndTxnResponse {
    if let Some(code) = not_coordinator(ctx, CoordinatorKey::Transaction(&req.transactional_id)) {
        return EndTxnResponse {
            error_code: code,
            ..EndTxnResponse::default()
        };
    }
    let ended = tokio::select! {
        r = ctx.cluster.transactions().end(
            &req.transactional_id,
            req.producer_id,
            i32::from(req.producer_epoch),
            req.committed,
        ) => r,
        _ = ctx.shutdown.cancelled() => Err(ClusterError::Closed),
    };
    EndTxnResponse {
        error_code: ended
            .err()
            .map_or(KafkaCode::NONE, |e| txn_code(&e, ctx.version(), 2)),
        ..EndTxnResponse::default()
    }
}

pub async fn handle_txn_offset_commit(
    ctx: &Ctx<'_>,
    req: TxnOffsetCommitRequest,
) -> TxnOffsetCommitResponse {
    let mut offsets = BTreeMap::new();
    for t in &req.topics {
        for p in &t.partitions {
            if let Ok(index) = u32::try_from(p.partition_index) {
                let committed = OffsetAndMetadata::from_wire(
                    p.committed_offset,
                    p.committed_leader_epoch,
                    p.committed_metadata.clone(),
                );
                offsets.insert(TopicPartition::new(&t.name, index), committed);
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
    let code_of = |e: &ClusterError| txn_code(e, ctx.version(), 3);
    // TxnOffsetCommit goes to the group's coordinator, as in Kafka.
    let committed = match not_coordinator(ctx, CoordinatorKey::Group(&req.group_id)) {
        Some(code) => Err(code),
        None => ctx
            .cluster
            .transactions()
            .commit_offsets(&commit)
            .map_err(|e| code_of(&e)),
    };
    let (request_code, per_partition): (KafkaCode, BTreeMap<TopicPartition, KafkaCode>) =
        match committed {
            Ok(answers) => (
                KafkaCode::NONE,
                answers
                    .into_iter()
                    .map(|(tp, r)| (tp, r.err().map_or(KafkaCode::NONE, |e| code_of(&e))))
                    .collect(),
            ),
            Err(code) => (code, BTreeMap::new()),
        };
    TxnOffsetCommitResponse {
        throttle_time_ms: 0,
        topics: req
            .topics
            .iter()
            .map(|t| TxnOffsetCommitResponseTopic {
                name: t.name.clone(),
                partitions: t
                    .partitions
                    .iter()
                    .map(|p| TxnOffsetCommitResponsePartition {
                        partition_index: p.partition_index,
                        error_code: match u32::try_from(p.partition_index) {
                            Err(_) => KafkaCode::UNKNOWN_TOPIC_OR_PARTITION,
                            Ok(index) => per_partition
                                .get(&TopicPartition::new(&t.name, index))
                                .copied()
                                .unwrap_or(request_code),
                        },
                    })
                    .collect(),
            })
            .collect(),
    }
}
