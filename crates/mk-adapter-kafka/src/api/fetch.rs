//! Fetch: Kafka's long poll over whole batches (`cluster.data().
//! fetch_batches`), answered as uncompressed v2 batches. read_committed
//! answers are already filtered by the core (aborted data never leaves the
//! broker, markers do, so positions move past them), so their
//! `aborted_transactions` list is always empty. Fetch sessions (KIP-227)
//! are not kept: every answer has session id 0, which tells clients to
//! send full fetches.

use super::Ctx;
use crate::errors::{self, KafkaCode};
use crate::messages::fetch::{FetchRequest, FetchResponse, FetchableTopicResponse, PartitionData};
use crate::records;
use bytes::{Bytes, BytesMut};
use mk_cluster::{BatchFetch, Isolation, PartitionFetch, TopicPartition};
use std::time::Duration;

/// The longest long poll a client may ask for (Kafka clients use 500 ms by
/// default); longer waits are cut to this.
const MAX_WAIT_MS: i32 = 30_000;

/// KIP-227 error codes for a session this broker never created.
const FETCH_SESSION_ID_NOT_FOUND: KafkaCode = KafkaCode(70);
const INVALID_FETCH_SESSION_EPOCH: KafkaCode = KafkaCode(71);

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
    let mut partitions = Vec::new();
    // Partition numbers that cannot be one (negative) are answered as
    // unknown without asking the core.
    let mut invalid: Vec<(String, i32)> = Vec::new();
    for t in &req.topics {
        for p in &t.partitions {
            match u32::try_from(p.partition) {
                Ok(index) => partitions.push(PartitionFetch {
                    tp: TopicPartition::new(&t.topic, index),
                    offset: p.fetch_offset,
                    max_bytes: usize::try_from(p.partition_max_bytes.max(0)).unwrap_or(0),
                    current_leader_epoch: (p.current_leader_epoch >= 0)
                        .then_some(p.current_leader_epoch),
                }),
                Err(_) => invalid.push((t.topic.clone(), p.partition)),
            }
        }
    }
    let fetch = BatchFetch {
        partitions,
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
    let results = match results {
        Ok(r) => r,
        Err(e) => {
            // The whole cluster refused (closed or failed): every partition
            // gets the error.
            let code = errors::kafka_code(e.code());
            return FetchResponse {
                responses: req
                    .topics
                    .iter()
                    .map(|t| FetchableTopicResponse {
                        topic: t.topic.clone(),
                        partitions: t
                            .partitions
                            .iter()
                            .map(|p| failed(p.partition, code))
                            .collect(),
                        ..FetchableTopicResponse::default()
                    })
                    .collect(),
                ..FetchResponse::default()
            };
        }
    };
    let mut responses: Vec<FetchableTopicResponse> = Vec::new();
    let mut push = |topic: &str, p: PartitionData| match responses.last_mut() {
        Some(t) if t.topic == topic => t.partitions.push(p),
        _ => responses.push(FetchableTopicResponse {
            topic: topic.to_string(),
            partitions: vec![p],
            ..FetchableTopicResponse::default()
        }),
    };
    for r in results {
        let mut out = BytesMut::with_capacity(r.bytes + r.batches.len() * 64);
        for b in &r.batches {
            records::encode_batch(b, &mut out);
        }
        let p = PartitionData {
            partition_index: r.tp.partition as i32,
            error_code: r
                .error
                .as_ref()
                .map_or(KafkaCode::NONE, |e| errors::kafka_code(e.code())),
            high_watermark: r.high_watermark,
            last_stable_offset: r.last_stable_offset,
            log_start_offset: r.log_start_offset,
            aborted_transactions: match isolation {
                Isolation::ReadCommitted => Some(Vec::new()),
                Isolation::ReadUncommitted => None,
            },
            records: Some(out.freeze()),
            ..PartitionData::default()
        };
        push(&r.tp.topic, p);
    }
    for (topic, partition) in invalid {
        push(
            &topic,
            failed(partition, KafkaCode::UNKNOWN_TOPIC_OR_PARTITION),
        );
    }
    FetchResponse {
        responses,
        ..FetchResponse::default()
    }
}

fn failed(partition: i32, code: KafkaCode) -> PartitionData {
    PartitionData {
        partition_index: partition,
        error_code: code,
        high_watermark: -1,
        last_stable_offset: -1,
        log_start_offset: -1,
        aborted_transactions: None,
        records: Some(Bytes::new()),
        ..PartitionData::default()
    }
}
