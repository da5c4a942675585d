//! The lab operations on the wire (served only with `--lab`): the explicit
//! steps of spec 00 and the failure-injection controls of the replication
//! labs. Each operation is a module with its four directions side by side,
//! as in `topics.rs`; operations without request fields keep only their
//! response directions here.

use super::common::{objects, tp_of, write_strings, write_tp};
use super::{Request, Response};
use crate::wire::{DecodeError, Decoded, Fields, ObjWriter, int_value, push_array, push_int};
use mk_cluster::{BrokerId, CompactionSummary, LeaderAndEpoch, RetentionPolicy, TopicPartition};
use std::collections::BTreeMap;

/// `promote`, `rejoin` and `remove_from_isr` name one replica: topic,
/// partition, broker_id.
pub(super) mod replica {
    use super::*;

    pub fn decode(f: &Fields<'_>) -> Decoded<(TopicPartition, BrokerId)> {
        Ok((tp_of(f)?, f.i32("broker_id")?))
    }

    pub fn encode(w: &mut ObjWriter<'_>, tp: &TopicPartition, broker_id: BrokerId) {
        write_tp(w, tp);
        w.int("broker_id", i64::from(broker_id));
    }
}

/// `promote`: a replica -> leader_id, leader_epoch (`rejoin` and
/// `remove_from_isr` answer nothing).
pub(super) mod promote {
    use super::*;

    pub fn encode_response(w: &mut ObjWriter<'_>, le: &LeaderAndEpoch) {
        w.int("leader_id", i64::from(le.leader_id))
            .int("leader_epoch", i64::from(le.leader_epoch));
    }

    pub fn decode_response(f: &Fields<'_>) -> Decoded<Response> {
        Ok(Response::Promote(LeaderAndEpoch {
            leader_id: f.i32("leader_id")?,
            leader_epoch: f.i32("leader_epoch")?,
        }))
    }
}

/// `expire_group_members`: nothing -> expired [{group_id, member_id}].
pub(super) mod expire_group_members {
    use super::*;

    pub fn encode_response(w: &mut ObjWriter<'_>, expired: &[(String, String)]) {
        w.with("expired", |out| {
            push_array(out, expired, |out, (g, m)| {
                let mut w = ObjWriter::new(out);
                w.str("group_id", g).str("member_id", m);
                w.end();
            })
        });
    }

    pub fn decode_response(f: &Fields<'_>) -> Decoded<Response> {
        Ok(Response::ExpireGroupMembers(objects(f, "expired", |e| {
            Ok((e.string("group_id")?, e.string("member_id")?))
        })?))
    }
}

/// `roll`: topic, partition -> nothing (closes the active segment of every
/// replica).
pub(super) mod roll {
    use super::*;

    pub fn decode(f: &Fields<'_>) -> Decoded<Request> {
        Ok(Request::Roll { tp: tp_of(f)? })
    }

    pub fn encode(w: &mut ObjWriter<'_>, tp: &TopicPartition) {
        write_tp(w, tp);
    }
}

/// `apply_retention`: topic, optional retention_ms and retention_bytes
/// (instead of the topic's own) -> deleted_segments (base offsets of every
/// partition), partitions [{partition, deleted_segments}].
pub(super) mod apply_retention {
    use super::*;

    pub fn decode(f: &Fields<'_>) -> Decoded<Request> {
        let retention_ms = f.opt_i64("retention_ms")?;
        let retention_bytes = f.opt_i64("retention_bytes")?;
        Ok(Request::ApplyRetention {
            topic: f.string("topic")?,
            overrides: (retention_ms.is_some() || retention_bytes.is_some()).then_some(
                RetentionPolicy {
                    retention_ms,
                    retention_bytes,
                },
            ),
        })
    }

    pub fn encode(w: &mut ObjWriter<'_>, topic: &str, overrides: Option<&RetentionPolicy>) {
        w.str("topic", topic);
        if let Some(p) = overrides {
            if let Some(ms) = p.retention_ms {
                w.int("retention_ms", ms);
            }
            if let Some(b) = p.retention_bytes {
                w.int("retention_bytes", b);
            }
        }
    }

    pub fn encode_response(w: &mut ObjWriter<'_>, by_partition: &BTreeMap<u32, Vec<i64>>) {
        w.with("deleted_segments", |out| {
            push_array(out, by_partition.values().flatten(), |o, b| push_int(o, *b))
        })
        .with("partitions", |out| {
            push_array(out, by_partition, |out, (p, bases)| {
                let mut w = ObjWriter::new(out);
                w.int("partition", i64::from(*p))
                    .with("deleted_segments", |out| {
                        push_array(out, bases, |o, b| push_int(o, *b))
                    });
                w.end();
            })
        });
    }

    pub fn decode_response(f: &Fields<'_>) -> Decoded<Response> {
        let mut out = BTreeMap::new();
        for (partition, bases) in objects(f, "partitions", |p| {
            let bases = p
                .array("deleted_segments")?
                .iter()
                .map(|b| int_value(b, i64::MIN, i64::MAX).map_err(DecodeError))
                .collect::<Decoded<Vec<_>>>()?;
            Ok((p.u32("partition")?, bases))
        })? {
            out.insert(partition, bases);
        }
        Ok(Response::ApplyRetention(out))
    }
}

/// `compact`: topic, optional delete_retention_ms -> records_before,
/// records_after.
pub(super) mod compact {
    use super::*;

    pub fn decode(f: &Fields<'_>) -> Decoded<Request> {
        Ok(Request::Compact {
            topic: f.string("topic")?,
            delete_retention_ms: f.opt_i64("delete_retention_ms")?,
        })
    }

    pub fn encode(w: &mut ObjWriter<'_>, topic: &str, delete_retention_ms: Option<i64>) {
        w.str("topic", topic);
        if let Some(ms) = delete_retention_ms {
            w.int("delete_retention_ms", ms);
        }
    }

    pub fn encode_response(w: &mut ObjWriter<'_>, c: &CompactionSummary) {
        w.int("records_before", c.records_before as i64)
            .int("records_after", c.records_after as i64);
    }

    pub fn decode_response(f: &Fields<'_>) -> Decoded<Response> {
        Ok(Response::Compact(CompactionSummary {
            records_before: f.int("records_before", 0, i64::MAX)? as u64,
            records_after: f.int("records_after", 0, i64::MAX)? as u64,
        }))
    }
}

/// `expire_transactions`: nothing -> aborted (transactional ids).
pub(super) mod expire_transactions {
    use super::*;

    pub fn encode_response(w: &mut ObjWriter<'_>, ids: &[String]) {
        w.with("aborted", |out| write_strings(out, ids));
    }

    pub fn decode_response(f: &Fields<'_>) -> Decoded<Response> {
        Ok(Response::ExpireTransactions(f.strings("aborted")?))
    }
}
