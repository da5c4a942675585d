//! The data path on the wire: `produce` (single record or batch, plain or
//! idempotent), `fetch` (with isolation and long poll) and `list_offsets`.
//! Each operation is a module with its four directions side by side, as in
//! `topics.rs`. The hottest request, a batched produce, usually arrives
//! through the fast path of `fast.rs`, which must decode exactly like
//! [`produce::decode`].

use super::common::{headers_of, objects, tp_of, write_headers, write_tp};
use super::{Request, Response};
use crate::wire::{DecodeError, Decoded, Fields, ObjWriter, bad, int_value, push_array, type_name};
use mk_cluster::{
    AckMode, Bytes, ConsumerRecord, FetchRequest, FetchResult, Isolation, OffsetSpec, ProduceEntry,
    ProduceRequest, ProduceResponse, ProducerInfo, TopicPartition,
};
use serde_json::Value;
use std::str::FromStr;

/// The records of a produce request: the core table's single record
/// (`key_b64` / `value_b64`) or the extended table's `records` batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProduceRecords {
    Single {
        key: Option<Bytes>,
        value: Option<Bytes>,
    },
    Batch(Vec<ProduceEntry>),
}

/// A produce request as it travels on the wire. Without a partition the
/// core routes it (`cluster.data().route_produce`: by key, else 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProduceSpec {
    pub topic: String,
    pub partition: Option<u32>,
    pub acks: AckMode,
    pub producer: Option<ProducerInfo>,
    pub records: ProduceRecords,
}

impl ProduceSpec {
    /// A request for an explicit partition.
    pub fn to_partition(
        tp: &TopicPartition,
        acks: AckMode,
        producer: Option<ProducerInfo>,
        records: ProduceRecords,
    ) -> Self {
        Self {
            topic: tp.topic.clone(),
            partition: Some(tp.partition),
            acks,
            producer,
            records,
        }
    }

    /// The core request (one batch), without copying the records; `route`
    /// is the core's decision of the partition (`route_produce`).
    pub fn into_core<E>(
        self,
        route: impl FnOnce(&str, Option<u32>, &[ProduceEntry]) -> Result<TopicPartition, E>,
    ) -> Result<ProduceRequest, E> {
        let records = match self.records {
            ProduceRecords::Single { key, value } => vec![ProduceEntry {
                key,
                value,
                ..ProduceEntry::default()
            }],
            ProduceRecords::Batch(entries) => entries,
        };
        Ok(ProduceRequest {
            tp: route(&self.topic, self.partition, &records)?,
            records,
            acks: self.acks,
            producer: self.producer,
        })
    }

    pub fn is_batch(&self) -> bool {
        matches!(self.records, ProduceRecords::Batch(_))
    }
}

/// `produce`: topic, partition (default: the core routes it by key, else
/// 0), acks (default "1"), either
/// key_b64/value_b64 or `records`, optional producer_id, producer_epoch and
/// base_sequence -> partition, offset (base; null for acks=0), count (batch
/// only), duplicate (an idempotent retry only).
pub(super) mod produce {
    use super::*;

    pub fn decode(f: &Fields<'_>) -> Decoded<Request> {
        let topic = f.string("topic")?;
        let partition = f.opt_u32("partition")?;
        let records = match f.opt_array("records")? {
            Some(items) => {
                if f.get("key_b64").is_some() || f.get("value_b64").is_some() {
                    return bad(
                        "a produce request has either \"records\" or key_b64/value_b64, not both",
                    );
                }
                ProduceRecords::Batch(records_of(items)?)
            }
            None => ProduceRecords::Single {
                key: f.opt_b64("key_b64")?,
                value: f.opt_b64("value_b64")?,
            },
        };
        Ok(Request::Produce(ProduceSpec {
            topic,
            partition,
            acks: acks_of(f)?,
            producer: producer_of(f)?,
            records,
        }))
    }

    pub fn encode(w: &mut ObjWriter<'_>, p: &ProduceSpec) {
        w.str("topic", &p.topic);
        if let Some(partition) = p.partition {
            w.int("partition", i64::from(partition));
        }
        w.str("acks", p.acks.as_str());
        match &p.records {
            ProduceRecords::Single { key, value } => {
                w.b64("key_b64", key.as_deref())
                    .b64("value_b64", value.as_deref());
            }
            ProduceRecords::Batch(entries) => {
                w.with("records", |out| {
                    push_array(out, entries, |out, e| {
                        let mut r = ObjWriter::new(out);
                        r.b64("key_b64", e.key.as_deref())
                            .b64("value_b64", e.value.as_deref())
                            .with("headers", |out| write_headers(out, &e.headers));
                        if let Some(ts) = e.timestamp_ms {
                            r.int("timestamp_ms", ts);
                        }
                        r.end();
                    })
                });
            }
        }
        if let Some(pi) = p.producer {
            w.int("producer_id", pi.producer_id)
                .int("producer_epoch", i64::from(pi.producer_epoch))
                .int("base_sequence", i64::from(pi.base_sequence));
        }
    }

    pub fn encode_response(w: &mut ObjWriter<'_>, response: &ProduceResponse, batch: bool) {
        w.int("partition", i64::from(response.partition))
            .opt_int("offset", response.base_offset);
        if batch {
            w.int("count", response.count as i64);
        }
        if response.duplicate {
            w.bool("duplicate", true);
        }
    }

    /// `batch`: whether the request was a batch (only then is there a
    /// count).
    pub fn decode_response(f: &Fields<'_>, batch: bool) -> Decoded<Response> {
        Ok(Response::Produce {
            response: ProduceResponse {
                partition: f.u32("partition")?,
                base_offset: f.opt_i64("offset")?,
                count: if batch {
                    f.int_as::<usize>("count", 0, i64::MAX)?
                } else {
                    1
                },
                duplicate: f.get("duplicate").is_some() && f.bool("duplicate")?,
            },
            batch,
        })
    }

    fn acks_of(f: &Fields<'_>) -> Decoded<AckMode> {
        match f.get("acks") {
            None => Ok(AckMode::One),
            Some(Value::String(s)) => AckMode::from_str(s).map_err(|e| DecodeError(e.to_string())),
            Some(v @ Value::Number(_)) => {
                let n = int_value(v, -1, 1)
                    .map_err(|why| DecodeError(format!("field \"acks\" {why}")))?;
                AckMode::try_from(n).map_err(|e| DecodeError(e.to_string()))
            }
            Some(v) => bad(format!(
                "field \"acks\" must be \"0\", \"1\", \"all\", \"-1\" or 0, 1, -1; got {}",
                type_name(v)
            )),
        }
    }

    /// The idempotence fields: all three or none.
    fn producer_of(f: &Fields<'_>) -> Decoded<Option<ProducerInfo>> {
        let present = ["producer_id", "producer_epoch", "base_sequence"]
            .iter()
            .filter(|n| f.get(n).is_some())
            .count();
        match present {
            0 => Ok(None),
            3 => Ok(Some(ProducerInfo {
                producer_id: f.i64("producer_id")?,
                producer_epoch: f.i32("producer_epoch")?,
                base_sequence: f.i32("base_sequence")?,
            })),
            _ => {
                bad("idempotent produce needs all of producer_id, producer_epoch and base_sequence")
            }
        }
    }

    fn records_of(items: &[Value]) -> Decoded<Vec<ProduceEntry>> {
        items
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let r = Fields::item(v, "records", i)?;
                Ok(ProduceEntry {
                    key: r.opt_b64("key_b64")?,
                    value: r.opt_b64("value_b64")?,
                    headers: headers_of(&r)?,
                    timestamp_ms: r.opt_i64("timestamp_ms")?,
                })
            })
            .collect()
    }
}

/// `fetch`: topic, partition, offset, max_records (default 100), isolation
/// (default read_uncommitted), optional max_bytes and max_wait_ms (long
/// poll) -> records, high_watermark, last_stable_offset, log_start_offset,
/// next_offset.
pub(super) mod fetch {
    use super::*;

    pub fn decode(f: &Fields<'_>) -> Decoded<Request> {
        let isolation = match f.opt_str("isolation")? {
            None => Isolation::ReadUncommitted,
            Some(s) => Isolation::parse(s).map_err(|e| DecodeError(e.to_string()))?,
        };
        Ok(Request::Fetch {
            request: FetchRequest {
                tp: tp_of(f)?,
                offset: f.i64("offset")?,
                max_records: f.opt_i64("max_records")?.unwrap_or(100),
                max_bytes: f
                    .opt_int("max_bytes", 0, i64::MAX)?
                    .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
                isolation,
            },
            max_wait_ms: f.opt_int_as("max_wait_ms", 0, i64::from(i32::MAX))?,
        })
    }

    pub fn encode(w: &mut ObjWriter<'_>, request: &FetchRequest, max_wait_ms: Option<u32>) {
        w.str("topic", &request.tp.topic)
            .int("partition", i64::from(request.tp.partition))
            .int("offset", request.offset)
            .int("max_records", request.max_records)
            .str("isolation", request.isolation.as_str());
        if let Some(b) = request.max_bytes {
            w.int("max_bytes", i64::try_from(b).unwrap_or(i64::MAX));
        }
        if let Some(ms) = max_wait_ms {
            w.int("max_wait_ms", i64::from(ms));
        }
    }

    pub fn encode_response(w: &mut ObjWriter<'_>, f: &FetchResult) {
        w.with("records", |out| push_array(out, &f.records, write_record))
            .int("high_watermark", f.high_watermark)
            .int("last_stable_offset", f.last_stable_offset)
            .int("log_start_offset", f.log_start_offset)
            .int("next_offset", f.next_offset);
    }

    pub fn decode_response(f: &Fields<'_>) -> Decoded<Response> {
        Ok(Response::Fetch(FetchResult {
            records: objects(f, "records", |r| {
                Ok(ConsumerRecord {
                    offset: r.i64("offset")?,
                    key: r.opt_b64("key_b64")?,
                    value: r.opt_b64("value_b64")?,
                    timestamp_ms: r.i64("timestamp_ms")?,
                    headers: headers_of(r)?,
                })
            })?,
            high_watermark: f.i64("high_watermark")?,
            last_stable_offset: f.i64("last_stable_offset")?,
            log_start_offset: f.i64("log_start_offset")?,
            next_offset: f.i64("next_offset")?,
        }))
    }

    fn write_record(out: &mut Vec<u8>, r: &ConsumerRecord) {
        let mut w = ObjWriter::new(out);
        w.int("offset", r.offset)
            .b64("key_b64", r.key.as_deref())
            .b64("value_b64", r.value.as_deref())
            .int("timestamp_ms", r.timestamp_ms)
            .with("headers", |out| write_headers(out, &r.headers));
        w.end();
    }
}

/// `list_offsets`: topic, partition, at ("earliest", "latest" or a
/// timestamp in ms) -> offset (null when no record is at or after the
/// timestamp).
pub(super) mod list_offsets {
    use super::*;

    pub fn decode(f: &Fields<'_>) -> Decoded<Request> {
        let at = match f.require("at")? {
            Value::String(s) if s == "earliest" => OffsetSpec::Earliest,
            Value::String(s) if s == "latest" => OffsetSpec::Latest,
            Value::String(s) => {
                return bad(format!(
                    "field \"at\" must be \"earliest\", \"latest\" or a timestamp in ms, got {s:?}"
                ));
            }
            _ => OffsetSpec::Timestamp(f.i64("at")?),
        };
        Ok(Request::ListOffsets { tp: tp_of(f)?, at })
    }

    pub fn encode(w: &mut ObjWriter<'_>, tp: &TopicPartition, at: OffsetSpec) {
        write_tp(w, tp);
        match at {
            OffsetSpec::Earliest => w.str("at", "earliest"),
            OffsetSpec::Latest => w.str("at", "latest"),
            OffsetSpec::Timestamp(ts) => w.int("at", ts),
            // A Kafka-protocol query; the JSON server does not accept it
            // (spec 06 fixes "at"), so it is spelled out only to be refused.
            OffsetSpec::MaxTimestamp => w.str("at", "max_timestamp"),
        };
    }

    pub fn encode_response(w: &mut ObjWriter<'_>, offset: Option<i64>) {
        w.opt_int("offset", offset);
    }

    pub fn decode_response(f: &Fields<'_>) -> Decoded<Response> {
        Ok(Response::ListOffsets(f.opt_i64("offset")?))
    }
}
