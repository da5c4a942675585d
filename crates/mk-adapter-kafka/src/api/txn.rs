//! Transactions as Kafka clients drive them: AddPartitionsToTxn,
//! AddOffsetsToTxn, EndTxn and TxnOffsetCommit (InitProducerId with a
//! transactional id lives with the idempotent producer in `produce`), in
//! both protocols: v1 and, from EndTxn v5 / TxnOffsetCommit v5 / Produce
//! v12, transactions v2 (KIP-890 part 2: an epoch bump per end, partitions
//! and groups joining implicitly) —
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
    AddPartitionsToTxnResult, AddPartitionsToTxnTopic, AddPartitionsToTxnTopicResult,
};
use crate::messages::end_txn::{EndTxnRequest, EndTxnResponse};
use crate::messages::txn_offset_commit::{
    TxnOffsetCommitRequest, TxnOffsetCommitRequestTopic, TxnOffsetCommitResponse,
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use mk_cluster::{
    ClusterError, CoordinatorKey, ErrorCode, OffsetAndMetadata, TopicPartition, TxnOffsetCommit,
    TxnVersion,
};
use std::collections::BTreeMap;

/// The request versions from which a transactional API may answer the
/// codes added after it: PRODUCER_FENCED (KIP-588) and
/// TRANSACTION_ABORTABLE (KIP-890); older versions get
/// INVALID_PRODUCER_EPOCH and INVALID_TXN_STATE for the same conditions.
/// The conditions are the core's; only this translation is the adapter's.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CodesFrom {
    fenced: i16,
    abortable: i16,
}

pub(crate) const INIT_PRODUCER_ID: CodesFrom = CodesFrom {
    fenced: 4,
    abortable: 5,
};
const ADD_PARTITIONS_TO_TXN: CodesFrom = CodesFrom {
    fenced: 2,
    abortable: 5,
};
const ADD_OFFSETS_TO_TXN: CodesFrom = CodesFrom {
    fenced: 2,
    abortable: 4,
};
const END_TXN: CodesFrom = ADD_OFFSETS_TO_TXN;
const TXN_OFFSET_COMMIT: CodesFrom = CodesFrom {
    fenced: 3,
    abortable: 4,
};
/// Produce answers INVALID_PRODUCER_EPOCH, never PRODUCER_FENCED.
pub(crate) const PRODUCE_ABORTABLE_FROM: i16 = 11;

/// TRANSACTION_ABORTABLE as a request of `version` can take it.
pub(crate) fn abortable_as(code: KafkaCode, version: i16, from: i16) -> KafkaCode {
    if code == KafkaCode::TRANSACTION_ABORTABLE && version < from {
        KafkaCode::INVALID_TXN_STATE
    } else {
        code
    }
}

pub(crate) fn txn_code(e: &ClusterError, version: i16, from: CodesFrom) -> KafkaCode {
    match e.code() {
        ErrorCode::ProducerFenced if version < from.fenced => KafkaCode::INVALID_PRODUCER_EPOCH,
        other => abortable_as(errors::kafka_code(other), version, from.abortable),
    }
}

/// One transaction of an AddPartitionsToTxn request: the partitions of
/// v0-3's single transaction, or one of v4+'s batch.
struct TxnPartitions<'r> {
    transactional_id: &'r str,
    producer_id: i64,
    producer_epoch: i16,
    verify_only: bool,
    topics: &'r [AddPartitionsToTxnTopic],
}

pub async fn handle_add_partitions_to_txn(
    ctx: &Ctx<'_>,
    req: AddPartitionsToTxnRequest,
) -> AddPartitionsToTxnResponse {
    if ctx.version() < 4 {
        let one = TxnPartitions {
            transactional_id: &req.v3_and_below_transactional_id,
            producer_id: req.v3_and_below_producer_id,
            producer_epoch: req.v3_and_below_producer_epoch,
            verify_only: false,
            topics: &req.v3_and_below_topics,
        };
        return AddPartitionsToTxnResponse {
            results_by_topic_v3_and_below: add_partitions(ctx, &one).await,
            ..AddPartitionsToTxnResponse::default()
        };
    }
    // v4+: a batch of transactions, each added or (verify_only) checked on
    // its own, as brokers ask it of their coordinator (KIP-890).
    let mut results_by_transaction = Vec::with_capacity(req.transactions.len());
    for t in &req.transactions {
        let one = TxnPartitions {
            transactional_id: &t.transactional_id,
            producer_id: t.producer_id,
            producer_epoch: t.producer_epoch,
            verify_only: t.verify_only,
            topics: &t.topics,
        };
        results_by_transaction.push(AddPartitionsToTxnResult {
            transactional_id: t.transactional_id.clone(),
            topic_results: add_partitions(ctx, &one).await,
        });
    }
    AddPartitionsToTxnResponse {
        results_by_transaction,
        ..AddPartitionsToTxnResponse::default()
    }
}

/// Adds (or verifies) the partitions of one transaction; one answer per
/// partition named, in request order.
async fn add_partitions(
    ctx: &Ctx<'_>,
    txn: &TxnPartitions<'_>,
) -> Vec<AddPartitionsToTxnTopicResult> {
    let v = ctx.version();
    let mut partitions = Vec::new();
    for t in txn.topics {
        for index in &t.partitions {
            if let Ok(index) = u32::try_from(*index) {
                partitions.push(TopicPartition::new(&t.name, index));
            }
        }
    }
    let (id, pid, epoch) = (
        txn.transactional_id,
        txn.producer_id,
        i32::from(txn.producer_epoch),
    );
    let misdirected = not_coordinator(ctx, CoordinatorKey::Transaction(id));
    let transactions = ctx.cluster.transactions();
    let outcome: Result<Vec<(TopicPartition, KafkaCode)>, ClusterError> = match misdirected {
        Some(_) => Ok(Vec::new()),
        None if txn.verify_only => transactions
            .verify_partitions(id, pid, epoch, &partitions)
            .map(|added| {
                let code = |added: bool| {
                    if added {
                        KafkaCode::NONE
                    } else {
                        KafkaCode::TRANSACTION_ABORTABLE
                    }
                };
                partitions
                    .iter()
                    .cloned()
                    .zip(added.into_iter().map(code))
                    .collect()
            }),
        None => transactions
            .add_partitions(id, pid, epoch, &partitions)
            .await
            .map(|results| {
                results
                    .into_iter()
                    .map(|(tp, r)| {
                        let code = r
                            .err()
                            .map_or(KafkaCode::NONE, |e| txn_code(&e, v, ADD_PARTITIONS_TO_TXN));
                        (tp, code)
                    })
                    .collect()
            }),
    };
    let by_tp: BTreeMap<TopicPartition, KafkaCode> = match &outcome {
        Ok(codes) => codes.iter().cloned().collect(),
        Err(_) => BTreeMap::new(),
    };
    let whole = misdirected.or_else(|| {
        outcome
            .as_ref()
            .err()
            .map(|e| txn_code(e, v, ADD_PARTITIONS_TO_TXN))
    });
    answer_partitions(txn.topics, whole, &by_tp)
}

/// One answer per partition named: the whole request's error if any, else
/// the partition's own (a partition the core did not answer, such as a
/// negative index, is UNKNOWN_TOPIC_OR_PARTITION).
fn answer_partitions(
    topics: &[AddPartitionsToTxnTopic],
    whole: Option<KafkaCode>,
    by_tp: &BTreeMap<TopicPartition, KafkaCode>,
) -> Vec<AddPartitionsToTxnTopicResult> {
    topics
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
        .collect()
}

pub async fn handle_add_offsets_to_txn(
    ctx: &Ctx<'_>,
    req: AddOffsetsToTxnRequest,
) -> AddOffsetsToTxnResponse {
    // The coordinator check answers in the groups' terms, the core's call
    // in the transactions'.
    let code =
        not_coordinator(ctx, CoordinatorKey::Transaction(&req.transactional_id)).or_else(|| {
            let added = ctx.cluster.transactions().add_offsets(
                &req.transactional_id,
                req.producer_id,
                i32::from(req.producer_epoch),
                &req.group_id,
            );
            added
                .err()
                .map(|e| txn_code(&e, ctx.version(), ADD_OFFSETS_TO_TXN))
        });
    AddOffsetsToTxnResponse {
        throttle_time_ms: 0,
        error_code: code.unwrap_or(KafkaCode::NONE),
    }
}

/// EndTxn. From v5 (transactions v2, KIP-890 part 2) every end bumps the
/// producer epoch and the answer carries the producer id and epoch the
/// producer goes on with; v0-4 keep one epoch per producer session.
pub async fn handle_end_txn(ctx: &Ctx<'_>, req: EndTxnRequest) -> EndTxnResponse {
    if let Some(code) = not_coordinator(ctx, CoordinatorKey::Transaction(&req.transactional_id)) {
        return EndTxnResponse {
            error_code: code,
            ..EndTxnResponse::default()
        };
    }
    let transactions = ctx.cluster.transactions();
    let (id, pid, epoch) = (
        req.transactional_id.as_str(),
        req.producer_id,
        i32::from(req.producer_epoch),
    );
    let ending = async {
        if ctx.version() >= 5 {
            transactions
                .end_v2(id, pid, epoch, req.committed)
                .await
                .map(Some)
        } else {
            transactions
                .end(id, pid, epoch, req.committed)
                .await
                .map(|()| None)
        }
    };
    let ended = ctx.until_shutdown(ending).await;
    match ended {
        Ok(None) => EndTxnResponse::default(),
        Ok(Some((producer_id, epoch))) => match i16::try_from(epoch) {
            Ok(producer_epoch) => EndTxnResponse {
                producer_id,
                producer_epoch,
                ..EndTxnResponse::default()
            },
            Err(_) => EndTxnResponse {
                error_code: KafkaCode::INVALID_REQUEST,
                ..EndTxnResponse::default()
            },
        },
        Err(e) => EndTxnResponse {
            error_code: txn_code(&e, ctx.version(), END_TXN),
            ..EndTxnResponse::default()
        },
    }
}

/// The core's view of a TxnOffsetCommit request (partitions with a
/// negative index are answered UNKNOWN_TOPIC_OR_PARTITION by the caller).
fn txn_offset_commit_of(req: &TxnOffsetCommitRequest) -> TxnOffsetCommit {
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
    TxnOffsetCommit {
        transactional_id: req.transactional_id.clone(),
        group_id: req.group_id.clone(),
        producer_id: req.producer_id,
        producer_epoch: i32::from(req.producer_epoch),
        generation_id: req.generation_id,
        member_id: req.member_id.clone(),
        group_instance_id: req.group_instance_id.clone(),
        offsets,
    }
}

pub async fn handle_txn_offset_commit(
    ctx: &Ctx<'_>,
    req: TxnOffsetCommitRequest,
) -> TxnOffsetCommitResponse {
    let commit = txn_offset_commit_of(&req);
    let code_of = |e: &ClusterError| txn_code(e, ctx.version(), TXN_OFFSET_COMMIT);
    // TxnOffsetCommit goes to the group's coordinator, as in Kafka.
    // v5+ (transactions v2): the group joins the transaction by itself.
    let txn_version = if ctx.version() >= 5 {
        TxnVersion::V2
    } else {
        TxnVersion::V1
    };
    let committed = match not_coordinator(ctx, CoordinatorKey::Group(&req.group_id)) {
        Some(code) => Err(code),
        None => ctx
            .cluster
            .transactions()
            .commit_offsets_as(&commit, txn_version)
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
    let code = |t: &str, index: i32| match u32::try_from(index) {
        Err(_) => KafkaCode::UNKNOWN_TOPIC_OR_PARTITION,
        Ok(index) => per_partition
            .get(&TopicPartition::new(t, index))
            .copied()
            .unwrap_or(request_code),
    };
    TxnOffsetCommitResponse {
        throttle_time_ms: 0,
        topics: req
            .topics
            .iter()
            .map(|t| txn_commit_answer(t, |index| code(&t.name, index)))
            .collect(),
    }
}

/// A topic's TxnOffsetCommit answer: each partition's code by its index,
/// in order.
pub(crate) fn txn_commit_answer(
    t: &TxnOffsetCommitRequestTopic,
    code: impl Fn(i32) -> KafkaCode,
) -> TxnOffsetCommitResponseTopic {
    TxnOffsetCommitResponseTopic {
        name: t.name.clone(),
        partitions: t
            .partitions
            .iter()
            .map(|p| TxnOffsetCommitResponsePartition {
                partition_index: p.partition_index,
                error_code: code(p.partition_index),
            })
            .collect(),
    }
}
