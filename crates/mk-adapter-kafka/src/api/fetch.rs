//! Fetch: Kafka's long poll over whole batches (`cluster.data().
//! fetch_batches`), answered as v2 batches: a producer's batch exactly as
//! it was produced and stored (compressed or not, its records never
//! decoded; only the base offset and leader epoch are the broker's), a
//! batch the broker built itself (JSON-TCP produce to a topic without a
//! codec, transaction markers, compacted version 1 batches) encoded
//! uncompressed. read_committed
//! answers are already filtered by the core (aborted data never leaves the
//! broker, markers do, so positions move past them), so their
//! `aborted_transactions` list is always empty. Fetch sessions (KIP-227)
//! are not kept: every answer has session id 0, which tells clients to
//! send full fetches. From v13 topics are named by their ids (an unknown
//! id is UNKNOWN_TOPIC_ID); from v16 a partition this broker does not lead
//! (NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH) carries its current
//! leader, and the answer that leader's endpoint (KIP-951).

use super::Ctx;
use super::metadata::{LeaderHint, leader_hint};
use crate::codec::{RecordSet, Uuid};
use crate::errors::{self, KafkaCode};
use crate::messages::fetch::{
    FetchRequest, FetchResponse, FetchableTopicResponse, LeaderIdAndEpoch, NodeEndpoint,
    PartitionData,
};
use crate::records;
use mk_cluster::{
    BatchFetch, FetchedBatch, Isolation, PartitionBatches, PartitionFetch, TopicId, TopicPartition,
};
use std::collections::BTreeMap;
use std::time::Duration;

/// The longest long poll a client may ask for (Kafka clients use 500 ms by
/// default); longer waits are cut to this.
const MAX_WAIT_MS: i32 = 30_000;

/// KIP-227 error codes for a session this broker never created.
const FETCH_SESSION_ID_NOT_FOUND: KafkaCode = KafkaCode(70);
const INVALID_FETCH_SESSION_EPOCH: KafkaCode = KafkaCode(71);

/// What a request asks the core for, and what it answers itself.
struct Plan {
    partitions: Vec<PartitionFetch>,
    /// Partitions answered without the core: (topic name or "", topic id,
    /// partition, code) — a negative partition, an unknown topic id.
    refused: Vec<(String, Uuid, i32, KafkaCode)>,
    /// The topic ids of the named topics (v13+ answers carry them).
    ids: BTreeMap<String, Uuid>,
}

/// Resolves the request's topics (by name, or by id from v13) into the
/// partitions to fetch.
fn plan(ctx: &Ctx<'_>, req: &FetchRequest) -> Plan {
    let by_id = ctx.version() >= 13;
    let mut plan = Plan {
        partitions: Vec::new(),
        refused: Vec::new(),
        ids: BTreeMap::new(),
    };
    for t in &req.topics {
        let name = if by_id {
            match ctx.cluster.topics().name_by_id(TopicId(t.topic_id.0)) {
                Ok(name) => {
                    plan.ids.insert(name.clone(), t.topic_id);
                    Some(name)
                }
                Err(_) => None,
            }
        } else {
            Some(t.topic.clone())
        };
        for p in &t.partitions {
            let (Some(name), Ok(index)) = (&name, u32::try_from(p.partition)) else {
                let code = if name.is_some() {
                    KafkaCode::UNKNOWN_TOPIC_OR_PARTITION
                } else {
                    KafkaCode::UNKNOWN_TOPIC_ID
                };
                let topic = name.clone().unwrap_or_default();
                plan.refused.push((topic, t.topic_id, p.partition, code));
                continue;
            };
            plan.partitions.push(PartitionFetch {
                tp: TopicPartition::new(name, index),
                offset: p.fetch_offset,
                max_bytes: usize::try_from(p.partition_max_bytes.max(0)).unwrap_or(0),
                current_leader_epoch: (p.current_leader_epoch >= 0)
                    .then_some(p.current_leader_epoch),
            });
        }
    }
    plan
}

/// The answer's topics, in the order partitions come, each named and (for
/// v13+) identified.
struct Topics<'a> {
    plan: &'a Plan,
    responses: Vec<FetchableTopicResponse>,
}

impl Topics<'_> {
    fn push(&mut self, topic: &str, id: Option<Uuid>, p: PartitionData) {
        match self.responses.last_mut() {
            Some(t) if t.topic == topic && (id.is_none() || Some(t.topic_id) == id) => {
                t.partitions.push(p);
            }
            _ => self.responses.push(FetchableTopicResponse {
                topic: topic.to_string(),
                topic_id: id
                    .or_else(|| self.plan.ids.get(topic).copied())
                    .unwrap_or(Uuid::ZERO),
                partitions: vec![p],
            }),
        }
    }
}

pub async fn handle_fetch(ctx: &Ctx<'_>, req: FetchRequest) -> FetchResponse {
    let session_error = if req.session_id != 0 {
        Some(FETCH_SESSION_ID_NOT_FOUND)
    } else if req.session_epoch > 0 {
        Some(INVALID_FETCH_SESSION_EPOCH)
    } else {
        None
    };
    if let Some(code) = session_error {
        return FetchResponse {
            error_code: code,
            ..FetchResponse::default()
        };
    }
    let isolation = if req.isolation_level == 1 {
        Isolation::ReadCommitted
    } else {
        Isolation::ReadUncommitted
    };
    let mut plan = plan(ctx, &req);
    let fetch = BatchFetch {
        partitions: std::mem::take(&mut plan.partitions),
        isolation,
        max_bytes: usize::try_from(req.max_bytes.max(0)).unwrap_or(0),
        min_bytes: usize::try_from(req.min_bytes.max(0)).unwrap_or(0),
        max_wait: Duration::from_millis(req.max_wait_ms.clamp(0, MAX_WAIT_MS) as u64),
        broker: Some(ctx.broker_id),
    };
    let results = tokio::select! {
        r = ctx.cluster.data().fetch_batches(&fetch) => r,
        _ = ctx.shutdown.cancelled() => {
            // Shutting down: answer with what is visible, without waiting.
            let now = BatchFetch { max_wait: Duration::ZERO, ..fetch.clone() };
            ctx.cluster.data().fetch_batches(&now).await
        }
    };
    let mut topics = Topics {
        plan: &plan,
        responses: Vec::new(),
    };
    let mut hints = Vec::new();
    match results {
        Ok(results) => {
            for r in results {
                let p = if zstd_before_v10(ctx, &r) {
                    failed(
                        r.tp.partition as i32,
                        KafkaCode::UNSUPPORTED_COMPRESSION_TYPE,
                    )
                } else {
                    partition(ctx, &r, isolation, &mut hints)
                };
                topics.push(&r.tp.topic, None, p);
            }
        }
        Err(e) => {
            // The whole cluster refused (closed or failed): every partition
            // gets the error.
            let code = errors::kafka_code(e.code());
            for p in &fetch.partitions {
                topics.push(&p.tp.topic, None, failed(p.tp.partition as i32, code));
            }
        }
    }
    for (topic, id, partition, code) in &plan.refused {
        topics.push(topic, Some(*id), failed(*partition, code.to_owned()));
    }
    FetchResponse {
        responses: topics.responses,
        node_endpoints: endpoints(&hints),
        ..FetchResponse::default()
    }
}

/// Kafka's rule from KIP-110: zstd needs Fetch v10, so an older request
/// is answered UNSUPPORTED_COMPRESSION_TYPE for a partition of a topic
/// that stores zstd (as Kafka decides it) or whose answer holds a zstd
/// batch (which the client could not read).
fn zstd_before_v10(ctx: &Ctx<'_>, r: &PartitionBatches) -> bool {
    use mk_cluster::block::Codec;
    if ctx.version() >= 10 || r.error.is_some() {
        return false;
    }
    let zstd_batch = r
        .batches
        .iter()
        .any(|b| matches!(b, FetchedBatch::Block(b) if b.codec() == Codec::Zstd));
    zstd_batch
        || ctx.cluster.topics().compression_codec(&r.tp.topic).ok() == Some(Some(Codec::Zstd))
}

/// One partition's answer; a leadership error from v16 on carries the
/// current leader (and its endpoint joins `hints`).
fn partition(
    ctx: &Ctx<'_>,
    r: &PartitionBatches,
    isolation: Isolation,
    hints: &mut Vec<LeaderHint>,
) -> PartitionData {
    let error_code = r
        .error
        .as_ref()
        .map_or(KafkaCode::NONE, |e| errors::kafka_code(e.code()));
    let mut current_leader = LeaderIdAndEpoch::default();
    let moved = error_code == KafkaCode::NOT_LEADER_OR_FOLLOWER
        || error_code == KafkaCode::FENCED_LEADER_EPOCH;
    if ctx.version() >= 16 && moved {
        let hint = leader_hint(ctx, &r.tp);
        current_leader = LeaderIdAndEpoch {
            leader_id: hint.leader_id,
            leader_epoch: hint.leader_epoch,
        };
        hints.push(hint);
    }
    PartitionData {
        partition_index: r.tp.partition as i32,
        error_code,
        high_watermark: r.high_watermark,
        last_stable_offset: r.last_stable_offset,
        log_start_offset: r.log_start_offset,
        aborted_transactions: match isolation {
            Isolation::ReadCommitted => Some(Vec::new()),
            Isolation::ReadUncommitted => None,
        },
        current_leader,
        records: Some(records::fetched_record_set(&r.batches)),
        ..PartitionData::default()
    }
}

/// The endpoints of the leaders named in the answer, once each.
fn endpoints(hints: &[LeaderHint]) -> Vec<NodeEndpoint> {
    let mut out: Vec<NodeEndpoint> = Vec::new();
    for e in hints.iter().filter_map(|h| h.endpoint.as_ref()) {
        if !out.iter().any(|n| n.node_id == e.broker_id) {
            out.push(NodeEndpoint {
                node_id: e.broker_id,
                host: e.host.clone(),
                port: i32::from(e.port),
                rack: None,
            });
        }
    }
    out
}

fn failed(partition: i32, code: KafkaCode) -> PartitionData {
    PartitionData {
        partition_index: partition,
        error_code: code,
        high_watermark: -1,
        last_stable_offset: -1,
        log_start_offset: -1,
        aborted_transactions: None,
        records: Some(RecordSet::default()),
        ..PartitionData::default()
    }
}
