//! The binary layout of the records of the internal `__consumer_offsets`
//! log. All integers are big-endian; strings are UTF-8 with a `u16` length.
//!
//! Keys start with a `u16` key version that says what the record is, like
//! Kafka's (1 = committed offset, 2 = group metadata):
//!
//! ```text
//! offset key:      u16 1 | u16 len | group | u16 len | topic | u32 partition
//! group key:       u16 2 | u16 len | group
//! offset value v2: u8 2 | i64 offset | i32 leader epoch (-1: none)
//!                  | u32 len | metadata (UTF-8)
//! offset value v1: u8 1 | i64 offset
//! group value:     u8 1 (value version) | i32 generation | u8 assignor
//! ```
//!
//! Commits are written as version 2 (the committer's leader epoch and
//! metadata string, which OffsetFetch answers). Version 1 values, written
//! before commits kept them, stay readable forever: they load with no
//! leader epoch and empty metadata, so a data directory of an earlier build
//! opens unchanged (a fixture test holds this). A `None` value is a
//! tombstone: the offset (or the group) was deleted.
//! Decoding is strict (exact lengths, valid UTF-8, known versions) because a
//! record we cannot interpret must stop the broker, not be skipped.

use crate::assignor::AssignorKind;
use crate::commits::OffsetAndMetadata;
use bytes::{BufMut, Bytes, BytesMut};
use mk_core::{ByteReader, TopicPartition, Truncated};

/// Key version of a committed-offset record.
pub const OFFSET_KEY_VERSION: u16 = 1;
/// Key version of a group-metadata record.
pub const GROUP_KEY_VERSION: u16 = 2;
/// The value version of group metadata, and of committed offsets written
/// before they kept a leader epoch and metadata (still read).
pub const VALUE_VERSION: u8 = 1;
/// The value version every committed offset is written with.
pub const OFFSET_VALUE_VERSION: u8 = 2;

/// What a record of the offsets log is about.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum OffsetsKey {
    /// The committed offset of one partition for one group.
    Offset {
        group: String,
        partition: TopicPartition,
    },
    /// The last generation (and assignor) of one group.
    Group { group: String },
}

/// The value of a group-metadata record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupMetadata {
    pub generation: i32,
    pub assignor: AssignorKind,
}

fn put_str(buf: &mut BytesMut, s: &str) {
    // Callers validate lengths before encoding (ids and topic names are far
    // shorter than 64 KiB), so the cast cannot truncate.
    debug_assert!(s.len() <= usize::from(u16::MAX));
    buf.put_u16(s.len() as u16);
    buf.put_slice(s.as_bytes());
}

/// Encodes the key of a committed offset.
pub fn offset_key(group: &str, partition: &TopicPartition) -> Bytes {
    let mut buf = BytesMut::with_capacity(10 + group.len() + partition.topic.len());
    buf.put_u16(OFFSET_KEY_VERSION);
    put_str(&mut buf, group);
    put_str(&mut buf, &partition.topic);
    buf.put_u32(partition.partition);
    buf.freeze()
}

/// Encodes the key of a group's metadata.
pub fn group_key(group: &str) -> Bytes {
    let mut buf = BytesMut::with_capacity(4 + group.len());
    buf.put_u16(GROUP_KEY_VERSION);
    put_str(&mut buf, group);
    buf.freeze()
}

/// Encodes a committed offset with its leader epoch and metadata (value
/// version 2).
pub fn offset_value(committed: &OffsetAndMetadata) -> Bytes {
    let metadata = committed.metadata.as_bytes();
    // The coordinator bounds metadata (`offset_metadata_max_bytes`, far
    // below 4 GiB) before anything is encoded.
    let len = u32::try_from(metadata.len()).unwrap_or(u32::MAX);
    let mut buf = BytesMut::with_capacity(17 + metadata.len());
    buf.put_u8(OFFSET_VALUE_VERSION);
    buf.put_i64(committed.offset);
    buf.put_i32(committed.leader_epoch.unwrap_or(-1));
    buf.put_u32(len);
    buf.put_slice(metadata);
    buf.freeze()
}

/// Encodes a group's metadata.
pub fn group_value(meta: GroupMetadata) -> Bytes {
    let mut buf = BytesMut::with_capacity(6);
    buf.put_u8(VALUE_VERSION);
    buf.put_i32(meta.generation);
    buf.put_u8(meta.assignor.to_byte());
    buf.freeze()
}

/// Why a record of the offsets log cannot be interpreted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    #[error("record has no key")]
    NoKey,
    #[error("truncated {what}: {source}")]
    Truncated {
        what: &'static str,
        source: Truncated,
    },
    #[error("{what} is not UTF-8")]
    NotUtf8 { what: &'static str },
    #[error("{count} trailing bytes after the {what}")]
    TrailingBytes { what: &'static str, count: usize },
    #[error("unknown key version {0}; expected {OFFSET_KEY_VERSION} or {GROUP_KEY_VERSION}")]
    UnknownKeyVersion(u16),
    #[error("unknown value version {0}; expected {VALUE_VERSION}")]
    UnknownValueVersion(u8),
    #[error("unknown offset value version {0}; expected {VALUE_VERSION} or {OFFSET_VALUE_VERSION}")]
    UnknownOffsetValueVersion(u8),
    #[error("leader epoch {0} is below -1")]
    InvalidLeaderEpoch(i32),
    #[error("committed offset {0} is negative")]
    NegativeOffset(i64),
    #[error("generation {0} is negative")]
    NegativeGeneration(i32),
    #[error("unknown assignor byte {0}")]
    UnknownAssignor(u8),
}

type Decoded<T> = Result<T, CodecError>;

/// Names the field a truncated read was after.
fn field(what: &'static str) -> impl FnOnce(Truncated) -> CodecError {
    move |source| CodecError::Truncated { what, source }
}

/// A `u16`-length-prefixed UTF-8 string.
fn string(r: &mut ByteReader<'_>, what: &'static str) -> Decoded<String> {
    let len = usize::from(r.u16().map_err(field(what))?);
    let bytes = r.take(len).map_err(field(what))?;
    String::from_utf8(bytes.to_vec()).map_err(|_| CodecError::NotUtf8 { what })
}

fn finish(r: &ByteReader<'_>, what: &'static str) -> Decoded<()> {
    match r.remaining() {
        0 => Ok(()),
        count => Err(CodecError::TrailingBytes { what, count }),
    }
}

/// Decodes a key.
pub fn decode_key(bytes: &[u8]) -> Decoded<OffsetsKey> {
    let mut r = ByteReader::new(bytes);
    let key = match r.u16().map_err(field("key version"))? {
        OFFSET_KEY_VERSION => {
            let group = string(&mut r, "group id")?;
            let topic = string(&mut r, "topic")?;
            let partition = r.u32().map_err(field("partition"))?;
            OffsetsKey::Offset {
                group,
                partition: TopicPartition::new(topic, partition),
            }
        }
        GROUP_KEY_VERSION => OffsetsKey::Group {
            group: string(&mut r, "group id")?,
        },
        other => return Err(CodecError::UnknownKeyVersion(other)),
    };
    finish(&r, "key")?;
    Ok(key)
}

fn value_version(r: &mut ByteReader<'_>) -> Decoded<()> {
    match r.u8().map_err(field("value version"))? {
        VALUE_VERSION => Ok(()),
        other => Err(CodecError::UnknownValueVersion(other)),
    }
}

/// Decodes a committed offset of either value version.
pub fn decode_offset_value(bytes: &[u8]) -> Decoded<OffsetAndMetadata> {
    let mut r = ByteReader::new(bytes);
    let version = r.u8().map_err(field("value version"))?;
    let offset = match version {
        VALUE_VERSION | OFFSET_VALUE_VERSION => r.i64().map_err(field("offset"))?,
        other => return Err(CodecError::UnknownOffsetValueVersion(other)),
    };
    if offset < 0 {
        return Err(CodecError::NegativeOffset(offset));
    }
    let mut committed = OffsetAndMetadata::new(offset);
    if version == OFFSET_VALUE_VERSION {
        let epoch = r.i32().map_err(field("leader epoch"))?;
        committed.leader_epoch = match epoch {
            -1 => None,
            e if e < -1 => return Err(CodecError::InvalidLeaderEpoch(e)),
            e => Some(e),
        };
        let len = usize::try_from(r.u32().map_err(field("metadata"))?).unwrap_or(usize::MAX);
        let bytes = r.take(len).map_err(field("metadata"))?;
        committed.metadata = String::from_utf8(bytes.to_vec())
            .map_err(|_| CodecError::NotUtf8 { what: "metadata" })?;
    }
    finish(&r, "offset value")?;
    Ok(committed)
}

/// Decodes a group's metadata.
pub fn decode_group_value(bytes: &[u8]) -> Decoded<GroupMetadata> {
    let mut r = ByteReader::new(bytes);
    value_version(&mut r)?;
    let generation = r.i32().map_err(field("generation"))?;
    let b = r.u8().map_err(field("assignor"))?;
    finish(&r, "group value")?;
    if generation < 0 {
        return Err(CodecError::NegativeGeneration(generation));
    }
    let assignor = AssignorKind::from_byte(b).ok_or(CodecError::UnknownAssignor(b))?;
    Ok(GroupMetadata {
        generation,
        assignor,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_key_layout_is_golden() {
        let key = offset_key("g1", &TopicPartition::new("t", 258));
        assert_eq!(
            key.as_ref(),
            &[0, 1, 0, 2, b'g', b'1', 0, 1, b't', 0, 0, 1, 2][..]
        );
        assert_eq!(
            decode_key(&key).unwrap(),
            OffsetsKey::Offset {
                group: "g1".into(),
                partition: TopicPartition::new("t", 258)
            }
        );
    }

    #[test]
    fn keys_are_unambiguous_where_a_separator_would_not_be() {
        // With a "group/topic" text key these two would collide.
        let a = offset_key("a/b", &TopicPartition::new("c", 0));
        let b = offset_key("a", &TopicPartition::new("b/c", 0));
        assert_ne!(a, b);
        assert_ne!(group_key("g"), offset_key("g", &TopicPartition::new("", 0)));
    }

    #[test]
    fn group_key_and_values_layout_is_golden() {
        assert_eq!(group_key("gg").as_ref(), &[0, 2, 0, 2, b'g', b'g'][..]);
        let committed = OffsetAndMetadata {
            offset: 0x0102,
            leader_epoch: Some(3),
            metadata: "ab".into(),
        };
        assert_eq!(
            offset_value(&committed).as_ref(),
            &[
                2, 0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 0, 3, 0, 0, 0, 2, b'a', b'b'
            ][..]
        );
        assert_eq!(
            decode_offset_value(&offset_value(&committed)).unwrap(),
            committed
        );
        let plain = OffsetAndMetadata::new(7);
        assert_eq!(
            offset_value(&plain).as_ref(),
            &[
                2, 0, 0, 0, 0, 0, 0, 0, 7, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0
            ][..]
        );
        let meta = GroupMetadata {
            generation: 5,
            assignor: AssignorKind::Sticky,
        };
        assert_eq!(group_value(meta).as_ref(), &[1, 0, 0, 0, 5, 2][..]);
        assert_eq!(decode_group_value(&group_value(meta)).unwrap(), meta);
        // Version 1, written before commits kept an epoch and metadata.
        assert_eq!(
            decode_offset_value(&[1, 0, 0, 0, 0, 0, 0, 0, 42]).unwrap(),
            OffsetAndMetadata::new(42)
        );
        assert_eq!(
            decode_key(&group_key("gg")).unwrap(),
            OffsetsKey::Group { group: "gg".into() }
        );
    }

    #[test]
    fn malformed_records_are_refused_with_a_reason() {
        let message = |e: CodecError| e.to_string();
        assert_eq!(
            message(decode_key(&[]).unwrap_err()),
            "truncated key version: 2 byte(s) wanted at position 0, but only 0 left"
        );
        assert_eq!(
            decode_key(&[0, 9]).unwrap_err(),
            CodecError::UnknownKeyVersion(9)
        );
        assert!(message(decode_key(&[0, 9]).unwrap_err()).contains("unknown key version 9"));
        assert_eq!(
            message(decode_key(&[0, 2, 0, 5, b'a']).unwrap_err()),
            "truncated group id: 5 byte(s) wanted at position 4, but only 1 left"
        );
        assert_eq!(
            decode_key(&[0, 2, 0, 1, 0xff]).unwrap_err(),
            CodecError::NotUtf8 { what: "group id" }
        );
        let mut long = group_key("g").to_vec();
        long.push(0);
        assert_eq!(
            message(decode_key(&long).unwrap_err()),
            "1 trailing bytes after the key"
        );
        assert!(
            message(decode_offset_value(&[3, 0, 0, 0, 0, 0, 0, 0, 1]).unwrap_err())
                .contains("unknown offset value version 3")
        );
        assert_eq!(
            decode_offset_value(&offset_value(&OffsetAndMetadata::new(-1))).unwrap_err(),
            CodecError::NegativeOffset(-1)
        );
        assert_eq!(
            decode_offset_value(&[1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]).unwrap_err(),
            CodecError::NegativeOffset(-1)
        );
        // A v1 value does not carry the v2 fields; a v2 value must.
        assert!(
            message(decode_offset_value(&[2, 0, 0, 0, 0, 0, 0, 0, 1]).unwrap_err())
                .contains("truncated leader epoch")
        );
        let huge = [
            2, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff,
        ];
        assert!(message(decode_offset_value(&huge).unwrap_err()).contains("truncated metadata"));
        let bad_epoch = [
            2, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xfe, 0, 0, 0, 0,
        ];
        assert_eq!(
            decode_offset_value(&bad_epoch).unwrap_err(),
            CodecError::InvalidLeaderEpoch(-2)
        );
        let not_utf8 = [2, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0xff];
        assert_eq!(
            decode_offset_value(&not_utf8).unwrap_err(),
            CodecError::NotUtf8 { what: "metadata" }
        );
        let mut trailing = offset_value(&OffsetAndMetadata::new(1)).to_vec();
        trailing.push(0);
        assert!(message(decode_offset_value(&trailing).unwrap_err()).contains("trailing"));
        assert!(message(decode_offset_value(&[1, 0]).unwrap_err()).contains("truncated offset"));
        assert_eq!(
            decode_group_value(&[1, 0, 0, 0, 1, 7]).unwrap_err(),
            CodecError::UnknownAssignor(7)
        );
        assert_eq!(
            decode_group_value(&[1, 0xff, 0xff, 0xff, 0xff, 0]).unwrap_err(),
            CodecError::NegativeGeneration(-1)
        );
    }
}
