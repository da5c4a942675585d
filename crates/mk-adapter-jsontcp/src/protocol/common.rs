//! Wire pieces that several operation families share, each with its
//! decoder and encoder side by side: topic-partitions, offset lists,
//! headers, broker id lists and the partition description of `metadata`
//! and `describe_cluster`.

use crate::wire::{
    DecodeError, Decoded, Fields, ObjWriter, bad, int_value, push_array, push_int, push_str,
    type_name, typed_int,
};
use mk_cluster::{BrokerId, Header, OffsetAndMetadata, PartitionInfo, TopicPartition};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// `ctx[i]`, the name of an array item in messages.
pub(super) fn item_ctx(name: &str, i: usize) -> String {
    format!("{name}[{i}]")
}

/// The request directions of an operation whose request is one string:
/// `Request::$variant`'s `$field`, on the wire under the same name.
macro_rules! one_string_request {
    ($variant:ident, $field:ident) => {
        pub fn decode(f: &Fields<'_>) -> Decoded<Request> {
            Ok(Request::$variant {
                $field: f.string(stringify!($field))?,
            })
        }

        pub fn encode(w: &mut ObjWriter<'_>, $field: &str) {
            w.str(stringify!($field), $field);
        }
    };
}
pub(super) use one_string_request;

/// An array item that must be an object.
pub(super) fn object_item<'a>(v: &'a Value, ctx: &str) -> Decoded<&'a Map<String, Value>> {
    v.as_object().map_or_else(
        || bad(format!("{ctx} must be an object, got {}", type_name(v))),
        Ok,
    )
}

/// Every item of the array field `name`, each an object decoded by `item`.
pub(super) fn objects<T>(
    f: &Fields<'_>,
    name: &str,
    item: impl Fn(&Fields<'_>) -> Decoded<T>,
) -> Decoded<Vec<T>> {
    f.array(name)?
        .iter()
        .enumerate()
        .map(|(i, v)| item(&Fields::item(v, name, i)?))
        .collect()
}

/// Each item of the array field `members`, decoded by `item` with the
/// item's name (`members[i]`) for the messages of its own arrays.
pub(super) fn members_of<T>(
    f: &Fields<'_>,
    item: impl Fn(&Fields<'_>, &str) -> Decoded<T>,
) -> Decoded<Vec<T>> {
    f.array("members")?
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let ctx = item_ctx("members", i);
            item(&Fields::new(object_item(v, &ctx)?, &ctx), &ctx)
        })
        .collect()
}

// ----- topic and partition ----------------------------------------------

pub(super) fn tp_of(f: &Fields<'_>) -> Decoded<TopicPartition> {
    Ok(TopicPartition::new(f.string("topic")?, f.u32("partition")?))
}

pub(super) fn write_tp(w: &mut ObjWriter<'_>, tp: &TopicPartition) {
    w.str("topic", &tp.topic)
        .int("partition", i64::from(tp.partition));
}

/// `[{topic, partition}]`.
pub(super) fn partitions_of(items: &[Value], name: &str) -> Decoded<Vec<TopicPartition>> {
    items
        .iter()
        .enumerate()
        .map(|(i, v)| tp_of(&Fields::item(v, name, i)?))
        .collect()
}

pub(super) fn write_tp_object(out: &mut Vec<u8>, tp: &TopicPartition) {
    let mut w = ObjWriter::new(out);
    write_tp(&mut w, tp);
    w.end();
}

// ----- offsets to commit ------------------------------------------------

/// `[{topic, partition, offset}]` into a map; a partition listed twice is
/// refused rather than silently keeping one of the values.
pub(super) fn offsets_of(f: &Fields<'_>, name: &str) -> Decoded<BTreeMap<TopicPartition, i64>> {
    let mut out = BTreeMap::new();
    for (i, v) in f.array(name)?.iter().enumerate() {
        let item = Fields::item(v, name, i)?;
        let tp = tp_of(&item)?;
        let offset = item.i64("offset")?;
        if out.insert(tp.clone(), offset).is_some() {
            return bad(format!("{name} lists {tp} more than once"));
        }
    }
    Ok(out)
}

/// `[{topic, partition, offset, leader_epoch?, metadata?}]` into a map: a
/// commit's offsets with the optional leader epoch (>= 0; absent or null
/// for none) and metadata string (absent or null for ""); a partition
/// listed twice is refused.
pub(super) fn commits_of(
    f: &Fields<'_>,
    name: &str,
) -> Decoded<BTreeMap<TopicPartition, OffsetAndMetadata>> {
    let mut out = BTreeMap::new();
    for (i, v) in f.array(name)?.iter().enumerate() {
        let item = Fields::item(v, name, i)?;
        let tp = tp_of(&item)?;
        let committed = OffsetAndMetadata {
            offset: item.i64("offset")?,
            leader_epoch: item
                .opt_int("leader_epoch", 0, i64::from(i32::MAX))?
                .and_then(|e| i32::try_from(e).ok()),
            metadata: item.opt_str("metadata")?.unwrap_or_default().to_string(),
        };
        if out.insert(tp.clone(), committed).is_some() {
            return bad(format!("{name} lists {tp} more than once"));
        }
    }
    Ok(out)
}

/// The fields of one committed offset: `offset`, then `leader_epoch` and
/// `metadata` only when they are set, so a commit without them reads as it
/// did before they existed.
pub(super) fn write_commit(w: &mut ObjWriter<'_>, committed: &OffsetAndMetadata) {
    w.int("offset", committed.offset);
    if let Some(epoch) = committed.leader_epoch {
        w.int("leader_epoch", i64::from(epoch));
    }
    if !committed.metadata.is_empty() {
        w.str("metadata", &committed.metadata);
    }
}

/// `[{topic, partition, offset, leader_epoch?, metadata?}]`.
pub(super) fn write_commits(
    out: &mut Vec<u8>,
    offsets: &BTreeMap<TopicPartition, OffsetAndMetadata>,
) {
    push_array(out, offsets, |out, (tp, committed)| {
        let mut w = ObjWriter::new(out);
        write_tp(&mut w, tp);
        write_commit(&mut w, committed);
        w.end();
    });
}

/// One committed offset read back: `offset` (null for none), optional
/// `leader_epoch` and `metadata`.
pub(super) fn commit_answer_of(f: &Fields<'_>) -> Decoded<Option<OffsetAndMetadata>> {
    let Some(offset) = f.opt_i64("offset")? else {
        return Ok(None);
    };
    Ok(Some(OffsetAndMetadata {
        offset,
        leader_epoch: f
            .opt_int("leader_epoch", 0, i64::from(i32::MAX))?
            .and_then(|e| i32::try_from(e).ok()),
        metadata: f.opt_str("metadata")?.unwrap_or_default().to_string(),
    }))
}

pub(super) fn write_offsets<'a>(
    out: &mut Vec<u8>,
    offsets: impl IntoIterator<Item = (&'a TopicPartition, &'a i64)>,
) {
    push_array(out, offsets, |out, (tp, offset)| {
        let mut w = ObjWriter::new(out);
        write_tp(&mut w, tp);
        w.int("offset", *offset);
        w.end();
    });
}

// ----- headers, strings, broker ids -------------------------------------

/// Optional `headers: [{key, value_b64}]`.
pub(super) fn headers_of(f: &Fields<'_>) -> Decoded<Vec<Header>> {
    let Some(items) = f.opt_array("headers")? else {
        return Ok(Vec::new());
    };
    items
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let h = Fields::item(v, "headers", i)?;
            Ok(Header::new(h.string("key")?, h.opt_b64("value_b64")?))
        })
        .collect()
}

pub(super) fn write_headers(out: &mut Vec<u8>, headers: &[Header]) {
    push_array(out, headers, |out, h| {
        let mut w = ObjWriter::new(out);
        w.str("key", &h.key).b64("value_b64", h.value.as_deref());
        w.end();
    });
}

/// `["a","b",...]` (strings are read with `Fields::strings`).
pub(super) fn write_strings(out: &mut Vec<u8>, strings: &[String]) {
    push_array(out, strings, |o, s| push_str(o, s));
}

pub(super) fn ids_of(items: &[Value]) -> Decoded<Vec<BrokerId>> {
    items
        .iter()
        .map(|v| typed_int::<i32>(v, i64::from(i32::MIN), i64::from(i32::MAX)).map_err(DecodeError))
        .collect()
}

pub(super) fn write_ids(out: &mut Vec<u8>, ids: &[BrokerId]) {
    push_array(out, ids, |o, b| push_int(o, i64::from(*b)));
}

// ----- one partition's state (metadata, describe_cluster) ---------------

/// A partition description; `topic` is the topic when the enclosing object
/// names it (`metadata`), `None` when each item carries its own.
pub(super) fn partition_info_of(
    v: &Value,
    ctx: &str,
    topic: Option<&str>,
) -> Decoded<PartitionInfo> {
    let p = Fields::new(object_item(v, ctx)?, ctx);
    let mut log_end_offsets = BTreeMap::new();
    for (b, leo) in p.object("log_end_offsets")? {
        let broker = b
            .parse::<BrokerId>()
            .map_err(|_| DecodeError(format!("{ctx}: broker id {b:?} is not a number")))?;
        let leo = int_value(leo, i64::MIN, i64::MAX).map_err(DecodeError)?;
        log_end_offsets.insert(broker, leo);
    }
    Ok(PartitionInfo {
        topic: match topic {
            Some(t) => t.to_string(),
            None => p.string("topic")?,
        },
        partition: p.u32("partition")?,
        leader_id: p.i32("leader_id")?,
        leader_epoch: p.i32("leader_epoch")?,
        replicas: ids_of(p.array("replicas")?)?,
        adding_replicas: match p.opt_array("adding_replicas")? {
            Some(ids) => ids_of(ids)?,
            None => Vec::new(),
        },
        isr: ids_of(p.array("isr")?)?,
        high_watermark: p.i64("high_watermark")?,
        last_stable_offset: p.i64("last_stable_offset")?,
        log_start_offset: p.i64("log_start_offset")?,
        log_end_offset: p.i64("log_end_offset")?,
        log_end_offsets,
        damaged: p.opt_str("damaged")?.map(str::to_string),
    })
}

/// The `partitions` array of `metadata`, whose items take their topic from
/// the enclosing object (`topic`), or of `describe_cluster` (`None`: each
/// item names its own).
pub(super) fn partition_infos_of(
    f: &Fields<'_>,
    topic: Option<&str>,
) -> Decoded<Vec<PartitionInfo>> {
    f.array("partitions")?
        .iter()
        .enumerate()
        .map(|(i, v)| partition_info_of(v, &item_ctx("partitions", i), topic))
        .collect()
}

pub(super) fn write_partition_info(out: &mut Vec<u8>, p: &PartitionInfo, with_topic: bool) {
    let mut w = ObjWriter::new(out);
    if with_topic {
        w.str("topic", &p.topic);
    }
    w.int("partition", i64::from(p.partition))
        .int("leader_id", i64::from(p.leader_id))
        .int("leader_epoch", i64::from(p.leader_epoch))
        .with("replicas", |o| write_ids(o, &p.replicas))
        .with("isr", |o| write_ids(o, &p.isr))
        .int("high_watermark", p.high_watermark)
        .int("last_stable_offset", p.last_stable_offset)
        .int("log_start_offset", p.log_start_offset)
        .with("log_end_offsets", |out| {
            let mut m = ObjWriter::new(out);
            for (b, leo) in &p.log_end_offsets {
                m.int(&b.to_string(), *leo);
            }
            m.end();
        })
        .int("log_end_offset", p.log_end_offset);
    // Only present during a move, and for a partition that damage took
    // offline, after the fields spec 06 lists.
    if !p.adding_replicas.is_empty() {
        w.with("adding_replicas", |o| write_ids(o, &p.adding_replicas));
    }
    if let Some(cause) = &p.damaged {
        w.str("damaged", cause);
    }
    w.end();
}

pub(super) fn write_partition_infos(
    w: &mut ObjWriter<'_>,
    partitions: &[PartitionInfo],
    with_topic: bool,
) {
    w.with("partitions", |out| {
        push_array(out, partitions, |o, p| {
            write_partition_info(o, p, with_topic)
        })
    });
}
