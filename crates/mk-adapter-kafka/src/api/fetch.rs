//! Fetch: Kafka's long poll over whole batches (`cluster.data().
//! fetch_batches`), answered as uncompressed v2 batches. read_committed
//! answers are already filtered by the core (aborted data never leaves the
//! broker, markers do, so positions move past them), so their
//! `aborted_transactions` list is always empty. Fetch sessions (KIP-227)
//! are not kept: every answer has session id 0, which tells clients to
//! send full fetches.

use super::{Ctx, Message};
use crate::codec::{DecodeResult, Reader, Writer};
use crate::errors::{self, KafkaCode};
use crate::records;
use bytes::{Bytes, BytesMut};
use mk_cluster::{BatchFetch, Isolation, PartitionFetch, TopicPartition};
use std::time::Duration;

/// The longest long poll a client may ask for (Kafka clients use 500 ms by
/// default); longer waits are cut to this.
const MAX_WAIT_MS: i32 = 30_000;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchPartitionRequest {
    pub partition: i32,
    /// v9+; -1 when unknown.
    pub current_leader_epoch: i32,
    pub fetch_offset: i64,
    /// v12+.
    pub last_fetched_epoch: i32,
    /// v5+ (followers only).
    pub log_start_offset: i64,
    pub partition_max_bytes: i32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchTopicRequest {
    pub topic: String,
    pub partitions: Vec<FetchPartitionRequest>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForgottenTopic {
    pub topic: String,
    pub partitions: Vec<i32>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchRequest {
    pub replica_id: i32,
    pub max_wait_ms: i32,
    pub min_bytes: i32,
    pub max_bytes: i32,
    /// 0 = read_uncommitted, 1 = read_committed.
    pub isolation_level: i8,
    /// v7+.
    pub session_id: i32,
    pub session_epoch: i32,
    pub topics: Vec<FetchTopicRequest>,
    /// v7+.
    pub forgotten_topics_data: Vec<ForgottenTopic>,
    /// v11+.
    pub rack_id: String,
}

impl Message for FetchRequest {
    fn read(r: &mut Reader<'_>, v: i16) -> DecodeResult<Self> {
        let replica_id = r.i32()?;
        let max_wait_ms = r.i32()?;
        let min_bytes = r.i32()?;
        let max_bytes = r.i32()?;
        let isolation_level = r.i8()?;
        let (session_id, session_epoch) = if v >= 7 {
            (r.i32()?, r.i32()?)
        } else {
            (0, -1)
        };
        let topics = r.array(|r| {
            let topic = r.string()?;
            let partitions = r.array(|r| {
                let partition = r.i32()?;
                let current_leader_epoch = if v >= 9 { r.i32()? } else { -1 };
                let fetch_offset = r.i64()?;
                let last_fetched_epoch = if v >= 12 { r.i32()? } else { -1 };
                let log_start_offset = if v >= 5 { r.i64()? } else { -1 };
                let partition_max_bytes = r.i32()?;
                r.skip_tagged_fields()?;
                Ok(FetchPartitionRequest {
                    partition,
                    current_leader_epoch,
                    fetch_offset,
                    last_fetched_epoch,
                    log_start_offset,
                    partition_max_bytes,
                })
            })?;
            r.skip_tagged_fields()?;
            Ok(FetchTopicRequest { topic, partitions })
        })?;
        let forgotten_topics_data = if v >= 7 {
            r.array(|r| {
                let f = ForgottenTopic {
                    topic: r.string()?,
                    partitions: r.array(|r| r.i32())?,
                };
                r.skip_tagged_fields()?;
                Ok(f)
            })?
        } else {
            Vec::new()
        };
        let rack_id = if v >= 11 { r.string()? } else { String::new() };
        r.skip_tagged_fields()?;
        Ok(Self {
            replica_id,
            max_wait_ms,
            min_bytes,
            max_bytes,
            isolation_level,
            session_id,
            session_epoch,
            topics,
            forgotten_topics_data,
            rack_id,
        })
    }

    fn write(&self, w: &mut Writer, v: i16) {
        w.i32(self.replica_id);
        w.i32(self.max_wait_ms);
        w.i32(self.min_bytes);
        w.i32(self.max_bytes);
        w.i8(self.isolation_level);
        if v >= 7 {
            w.i32(self.session_id);
            w.i32(self.session_epoch);
        }
        w.array(&self.topics, |w, t| {
            w.string(&t.topic);
            w.array(&t.partitions, |w, p| {
                w.i32(p.partition);
                if v >= 9 {
                    w.i32(p.current_leader_epoch);
                }
                w.i64(p.fetch_offset);
                if v >= 12 {
                    w.i32(p.last_fetched_epoch);
                }
                if v >= 5 {
                    w.i64(p.log_start_offset);
                }
                w.i32(p.partition_max_bytes);
                w.no_tagged_fields();
            });
            w.no_tagged_fields();
        });
        if v >= 7 {
            w.array(&self.forgotten_topics_data, |w, f| {
                w.string(&f.topic);
                w.array(&f.partitions, |w, p| w.i32(*p));
                w.no_tagged_fields();
            });
        }
        if v >= 11 {
            w.string(&self.rack_id);
        }
        w.no_tagged_fields();
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbortedTransaction {
    pub producer_id: i64,
    pub first_offset: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchPartitionResponse {
    pub partition_index: i32,
    pub error_code: KafkaCode,
    pub high_watermark: i64,
    pub last_stable_offset: i64,
    /// v5+.
    pub log_start_offset: i64,
    /// Null for read_uncommitted answers.
    pub aborted_transactions: Option<Vec<AbortedTransaction>>,
    /// v11+; -1 (no preferred replica).
    pub preferred_read_replica: i32,
    pub records: Option<Bytes>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchTopicResponse {
    pub topic: String,
    pub partitions: Vec<FetchPartitionResponse>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchResponse {
    pub throttle_time_ms: i32,
    /// v7+.
    pub error_code: KafkaCode,
    pub session_id: i32,
    pub responses: Vec<FetchTopicResponse>,
}

impl Message for FetchResponse {
    fn read(r: &mut Reader<'_>, v: i16) -> DecodeResult<Self> {
        let throttle_time_ms = r.i32()?;
        let (error_code, session_id) = if v >= 7 {
            (KafkaCode(r.i16()?), r.i32()?)
        } else {
            (KafkaCode::NONE, 0)
        };
        let responses = r.array(|r| {
            let topic = r.string()?;
            let partitions = r.array(|r| {
                let partition_index = r.i32()?;
                let error_code = KafkaCode(r.i16()?);
                let high_watermark = r.i64()?;
                let last_stable_offset = r.i64()?;
                let log_start_offset = if v >= 5 { r.i64()? } else { -1 };
                let aborted_transactions = r.nullable_array(|r| {
                    let a = AbortedTransaction {
                        producer_id: r.i64()?,
                        first_offset: r.i64()?,
                    };
                    r.skip_tagged_fields()?;
                    Ok(a)
                })?;
                let preferred_read_replica = if v >= 11 { r.i32()? } else { -1 };
                let records = r.nullable_bytes()?;
                r.skip_tagged_fields()?;
                Ok(FetchPartitionResponse {
                    partition_index,
                    error_code,
                    high_watermark,
                    last_stable_offset,
                    log_start_offset,
                    aborted_transactions,
                    preferred_read_replica,
                    records,
                })
            })?;
            r.skip_tagged_fields()?;
            Ok(FetchTopicResponse { topic, partitions })
        })?;
        r.skip_tagged_fields()?;
        Ok(Self {
            throttle_time_ms,
            error_code,
            session_id,
            responses,
        })
    }

    fn write(&self, w: &mut Writer, v: i16) {
        w.i32(self.throttle_time_ms);
        if v >= 7 {
            w.i16(self.error_code.0);
            w.i32(self.session_id);
        }
        w.array(&self.responses, |w, t| {
            w.string(&t.topic);
            w.array(&t.partitions, |w, p| {
                w.i32(p.partition_index);
                w.i16(p.error_code.0);
                w.i64(p.high_watermark);
                w.i64(p.last_stable_offset);
                if v >= 5 {
                    w.i64(p.log_start_offset);
                }
                w.nullable_array(p.aborted_transactions.as_deref(), |w, a| {
                    w.i64(a.producer_id);
                    w.i64(a.first_offset);
                    w.no_tagged_fields();
                });
                if v >= 11 {
                    w.i32(p.preferred_read_replica);
                }
                w.nullable_bytes(p.records.as_deref());
                w.no_tagged_fields();
            });
            w.no_tagged_fields();
        });
        w.no_tagged_fields();
    }
}

/// KIP-227 error codes for a session this broker never created.
const FETCH_SESSION_ID_NOT_FOUND: KafkaCode = KafkaCode(70);
const INVALID_FETCH_SESSION_EPOCH: KafkaCode = KafkaCode(71);

pub async fn handle(ctx: &Ctx<'_>, req: FetchRequest) -> FetchResponse {
    let session_error = if req.session_id != 0 {
        Some(FETCH_SESSION_ID_NOT_FOUND)
    } else if req.session_epoch > 0 {
        Some(INVALID_FETCH_SESSION_EPOCH)
    } else {
        None
    };
    if let Some(code) = session_error {
        return FetchResponse {
            throttle_time_ms: 0,
            error_code: code,
            session_id: 0,
            responses: Vec::new(),
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
                throttle_time_ms: 0,
                error_code: KafkaCode::NONE,
                session_id: 0,
                responses: req
                    .topics
                    .iter()
                    .map(|t| FetchTopicResponse {
                        topic: t.topic.clone(),
                        partitions: t
                            .partitions
                            .iter()
                            .map(|p| failed(p.partition, code))
                            .collect(),
                    })
                    .collect(),
            };
        }
    };
    let mut responses: Vec<FetchTopicResponse> = Vec::new();
    let mut push = |topic: &str, p: FetchPartitionResponse| match responses.last_mut() {
        Some(t) if t.topic == topic => t.partitions.push(p),
        _ => responses.push(FetchTopicResponse {
            topic: topic.to_string(),
            partitions: vec![p],
        }),
    };
    for r in results {
        let mut out = BytesMut::with_capacity(r.bytes + r.batches.len() * 64);
        for b in &r.batches {
            records::encode_batch(b, &mut out);
        }
        let p = FetchPartitionResponse {
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
            preferred_read_replica: -1,
            records: Some(out.freeze()),
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
        throttle_time_ms: 0,
        error_code: KafkaCode::NONE,
        session_id: 0,
        responses,
    }
}

fn failed(partition: i32, code: KafkaCode) -> FetchPartitionResponse {
    FetchPartitionResponse {
        partition_index: partition,
        error_code: code,
        high_watermark: -1,
        last_stable_offset: -1,
        log_start_offset: -1,
        aborted_transactions: None,
        preferred_read_replica: -1,
        records: Some(Bytes::new()),
    }
}
