//! The binary layout of the records of the internal `__consumer_offsets`
//! log. All integers are big-endian; strings are UTF-8 with a `u16` length.
//!
//! Keys start with a `u16` key version that says what the record is, like
//! Kafka's (1 = committed offset, 2 = group metadata, 3 = share-partition
//! state):
//!
//! ```text
//! offset key:      u16 1 | u16 len | group | u16 len | topic | u32 partition
//! group key:       u16 2 | u16 len | group
//! share key:       u16 3 | u16 len | group | u16 len | topic | u32 partition
//! config key:      u16 4 | u16 len | group
//! offset value v2: u8 2 | i64 offset | i32 leader epoch (-1: none)
//!                  | u32 len | metadata (UTF-8)
//! offset value v1: u8 1 | i64 offset
//! group value v1:  u8 1 | i32 generation | u8 assignor
//! group value v2:  u8 2 | u8 type | i32 epoch | u8 assignor
//! share value:     u8 1 (value version) | i64 start offset | u32 runs |
//!                  runs x (i64 first | i64 last | u8 state | u16 delivery count)
//! config value:    u8 1 (value version) | u16 count |
//!                  count x (u16 len | name | u16 len | value)
//! ```
//!
//! Commits are written as version 2 (the committer's leader epoch and
//! metadata string, which OffsetFetch answers). Version 1 values, written
//! before commits kept them, stay readable forever: they load with no
//! leader epoch and empty metadata, so a data directory of an earlier build
//! opens unchanged (a fixture test holds this).
//!
//! A classic group's value is written as version 1, as before KIP-848
//! groups existed, so data directories of earlier builds and of this one
//! read the same. Version 2 adds the group type (0 classic, 1 consumer,
//! 2 share); its `epoch` is a classic group's generation or a consumer or
//! share group's group epoch, and its assignor byte is 0 for the latter
//! two (their members name the server assignor on every heartbeat).
//!
//! A share value is the state of one share partition (KIP-932): its start
//! offset and the runs of its in-flight window, contiguous from the start,
//! each Available (0), Acknowledged (2) or Archived (4) with its delivery
//! count. Acquired records are written as Available with the count they
//! reached, so a restart hands them out again without forgetting how often
//! they were delivered.
//!
//! A config value holds a group's dynamic group configs (Kafka's
//! `share.record.lock.duration.ms` and the like) as text, as they were set.
//!
//! A `None` value is a tombstone: the offset, group, share state or config was
//! deleted. Decoding is strict (exact lengths, valid UTF-8, known versions,
//! contiguous runs) because a record we cannot interpret must stop the
//! broker, not be skipped.

use crate::assignor::AssignorKind;
use crate::commits::OffsetAndMetadata;
use crate::group::GroupType;
use crate::share::{RecordState, ShareSnapshot};
use bytes::{BufMut, Bytes, BytesMut};
use mk_core::{ByteReader, TopicPartition, Truncated};

/// Key version of a committed-offset record.
pub const OFFSET_KEY_VERSION: u16 = 1;
/// Key version of a group-metadata record.
pub const GROUP_KEY_VERSION: u16 = 2;
/// Key version of a share-partition state record.
pub const SHARE_KEY_VERSION: u16 = 3;
/// Key version of a group's dynamic configs.
pub const CONFIG_KEY_VERSION: u16 = 4;
/// The value version of classic group metadata, of share states, and of
/// committed offsets written before they kept a leader epoch and metadata
/// (still read).
pub const VALUE_VERSION: u8 = 1;
/// The value version every committed offset is written with.
pub const OFFSET_VALUE_VERSION: u8 = 2;
/// The value version of a group record that names its type.
pub const TYPED_GROUP_VALUE_VERSION: u8 = 2;

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
    /// The state of one share partition of one share group.
    Share {
        group: String,
        partition: TopicPartition,
    },
    /// The dynamic configs of one group.
    Config { group: String },
}

/// The value of a group-metadata record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupMetadata {
    pub group_type: GroupType,
    /// A classic group's generation, a consumer or share group's epoch.
    pub generation: i32,
    /// The assignor of a classic group's coordinator-assigned members.
    pub assignor: AssignorKind,
}

impl GroupMetadata {
    /// A classic group's record.
    pub const fn classic(generation: i32, assignor: AssignorKind) -> Self {
        Self {
            group_type: GroupType::Classic,
            generation,
            assignor,
        }
    }
}

fn put_str(buf: &mut BytesMut, s: &str) {
    // Callers validate lengths before encoding (ids and topic names are far
    // shorter than 64 KiB): a longer string is a broken invariant.
    let len = u16::try_from(s.len()).expect("callers keep stored strings under 64 KiB");
    buf.put_u16(len);
    buf.put_slice(s.as_bytes());
}

/// A key of one group's partition: `version`, group id, topic, partition.
fn partition_key(version: u16, group: &str, partition: &TopicPartition) -> Bytes {
    let mut buf = BytesMut::with_capacity(10 + group.len() + partition.topic.len());
    buf.put_u16(version);
    put_str(&mut buf, group);
    put_str(&mut buf, &partition.topic);
    buf.put_u32(partition.partition);
    buf.freeze()
}

/// A key of a whole group: `version`, group id.
fn whole_group_key(version: u16, group: &str) -> Bytes {
    let mut buf = BytesMut::with_capacity(4 + group.len());
    buf.put_u16(version);
    put_str(&mut buf, group);
    buf.freeze()
}

/// Encodes the key of a committed offset.
pub fn offset_key(group: &str, partition: &TopicPartition) -> Bytes {
    partition_key(OFFSET_KEY_VERSION, group, partition)
}

/// Encodes the key of a share partition's state.
pub fn share_key(group: &str, partition: &TopicPartition) -> Bytes {
    partition_key(SHARE_KEY_VERSION, group, partition)
}

/// Encodes the key of a group's dynamic configs.
pub fn config_key(group: &str) -> Bytes {
    whole_group_key(CONFIG_KEY_VERSION, group)
}

/// Encodes a group's dynamic configs (names and values are short: at most
/// a handful of known names with numbers or words).
pub fn config_value(configs: &[(String, String)]) -> Bytes {
    let mut buf = BytesMut::new();
    buf.put_u8(VALUE_VERSION);
    buf.put_u16(u16::try_from(configs.len()).unwrap_or(u16::MAX));
    for (name, value) in configs {
        put_str(&mut buf, name);
        put_str(&mut buf, value);
    }
    buf.freeze()
}

/// Decodes a group's dynamic configs.
pub fn decode_config_value(bytes: &[u8]) -> Decoded<Vec<(String, String)>> {
    let mut r = ByteReader::new(bytes);
    value_version(&mut r)?;
    let n = r.u16().map_err(field("config count"))?;
    let mut out = Vec::new();
    for _ in 0..n {
        let name = string(&mut r, "config name")?;
        let value = string(&mut r, "config value")?;
        out.push((name, value));
    }
    finish(&r, "config value")?;
    Ok(out)
}

/// Encodes a share partition's state.
pub fn share_value(s: &ShareSnapshot) -> Bytes {
    let mut buf = BytesMut::with_capacity(13 + s.runs.len() * 19);
    buf.put_u8(VALUE_VERSION);
    buf.put_i64(s.start_offset);
    // A window holds at most `max_in_flight` records, far below u32::MAX
    // runs.
    buf.put_u32(u32::try_from(s.runs.len()).unwrap_or(u32::MAX));
    for (first, last, state, count) in &s.runs {
        buf.put_i64(*first);
        buf.put_i64(*last);
        buf.put_u8(state.to_byte());
        buf.put_u16(*count);
    }
    buf.freeze()
}

/// Encodes the key of a group's metadata.
pub fn group_key(group: &str) -> Bytes {
    whole_group_key(GROUP_KEY_VERSION, group)
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

/// Encodes a group's metadata (version 1 for a classic group, 2 for the
/// others).
pub fn group_value(meta: GroupMetadata) -> Bytes {
    let mut buf = BytesMut::with_capacity(7);
    if meta.group_type == GroupType::Classic {
        buf.put_u8(VALUE_VERSION);
    } else {
        buf.put_u8(TYPED_GROUP_VALUE_VERSION);
        buf.put_u8(meta.group_type.to_byte());
    }
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
    #[error(
        "unknown key version {0}; expected {OFFSET_KEY_VERSION}, {GROUP_KEY_VERSION}, {SHARE_KEY_VERSION} or {CONFIG_KEY_VERSION}"
    )]
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
    #[error("share state: {0}")]
    BadShareState(String),
    #[error("unknown group type byte {0}")]
    UnknownGroupType(u8),
    #[error(
        "unknown group value version {0}; expected {VALUE_VERSION} or {TYPED_GROUP_VALUE_VERSION}"
    )]
    UnknownGroupValueVersion(u8),
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

/// The group id, topic and partition of a [`partition_key`].
fn group_partition(r: &mut ByteReader<'_>) -> Decoded<(String, TopicPartition)> {
    let group = string(r, "group id")?;
    let topic = string(r, "topic")?;
    let partition = r.u32().map_err(field("partition"))?;
    Ok((group, TopicPartition::new(topic, partition)))
}

/// Decodes a key.
pub fn decode_key(bytes: &[u8]) -> Decoded<OffsetsKey> {
    let mut r = ByteReader::new(bytes);
    let key = match r.u16().map_err(field("key version"))? {
        OFFSET_KEY_VERSION => {
            let (group, partition) = group_partition(&mut r)?;
            OffsetsKey::Offset { group, partition }
        }
        GROUP_KEY_VERSION => OffsetsKey::Group {
            group: string(&mut r, "group id")?,
        },
        CONFIG_KEY_VERSION => OffsetsKey::Config {
            group: string(&mut r, "group id")?,
        },
        SHARE_KEY_VERSION => {
            let (group, partition) = group_partition(&mut r)?;
            OffsetsKey::Share { group, partition }
        }
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

/// Decodes a share partition's state: runs contiguous from the start
/// offset, none Acquired, the count of runs bounded by the bytes present.
pub fn decode_share_value(bytes: &[u8]) -> Decoded<ShareSnapshot> {
    let mut r = ByteReader::new(bytes);
    value_version(&mut r)?;
    let start_offset = r.i64().map_err(field("start offset"))?;
    let n = r.u32().map_err(field("run count"))?;
    let bad = |m: String| CodecError::BadShareState(m);
    if start_offset < 0 {
        return Err(bad(format!("start offset {start_offset} is negative")));
    }
    let mut runs = Vec::new();
    let mut next = start_offset;
    for _ in 0..n {
        let first = r.i64().map_err(field("run first offset"))?;
        let last = r.i64().map_err(field("run last offset"))?;
        let b = r.u8().map_err(field("run state"))?;
        let count = r.u16().map_err(field("delivery count"))?;
        let state = RecordState::from_byte(b)
            .filter(|s| *s != RecordState::Acquired)
            .ok_or_else(|| bad(format!("run state byte {b} is not 0, 2 or 4")))?;
        if first != next || last < first {
            return Err(bad(format!(
                "run {first}..={last} does not continue at {next}"
            )));
        }
        next = last
            .checked_add(1)
            .ok_or_else(|| bad("run ends at i64::MAX".into()))?;
        runs.push((first, last, state, count));
    }
    finish(&r, "share value")?;
    Ok(ShareSnapshot { start_offset, runs })
}

/// Decodes a group's metadata (either version).
pub fn decode_group_value(bytes: &[u8]) -> Decoded<GroupMetadata> {
    let mut r = ByteReader::new(bytes);
    let group_type = match r.u8().map_err(field("value version"))? {
        VALUE_VERSION => GroupType::Classic,
        TYPED_GROUP_VALUE_VERSION => {
            let b = r.u8().map_err(field("group type"))?;
            GroupType::from_byte(b).ok_or(CodecError::UnknownGroupType(b))?
        }
        other => return Err(CodecError::UnknownGroupValueVersion(other)),
    };
    let generation = r.i32().map_err(field("generation"))?;
    let b = r.u8().map_err(field("assignor"))?;
    finish(&r, "group value")?;
    if generation < 0 {
        return Err(CodecError::NegativeGeneration(generation));
    }
    let assignor = AssignorKind::from_byte(b).ok_or(CodecError::UnknownAssignor(b))?;
    Ok(GroupMetadata {
        group_type,
        generation,
        assignor,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A share state of two runs from offset 5: 5..=6 Available (two
    /// deliveries) and 7 Acknowledged.
    fn two_runs_from_5() -> ShareSnapshot {
        ShareSnapshot {
            start_offset: 5,
            runs: vec![
                (5, 6, RecordState::Available, 2),
                (7, 7, RecordState::Acknowledged, 1),
            ],
        }
    }

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
        let meta = GroupMetadata::classic(5, AssignorKind::Sticky);
        assert_eq!(group_value(meta).as_ref(), &[1, 0, 0, 0, 5, 2][..]);
        assert_eq!(decode_group_value(&group_value(meta)).unwrap(), meta);
        // Version 1, written before commits kept an epoch and metadata.
        assert_eq!(
            decode_offset_value(&[1, 0, 0, 0, 0, 0, 0, 0, 42]).unwrap(),
            OffsetAndMetadata::new(42)
        );
        let consumer = GroupMetadata {
            group_type: GroupType::Consumer,
            generation: 7,
            assignor: AssignorKind::RoundRobin,
        };
        assert_eq!(group_value(consumer).as_ref(), &[2, 1, 0, 0, 0, 7, 0][..]);
        assert_eq!(
            decode_group_value(&group_value(consumer)).unwrap(),
            consumer
        );
        let share = GroupMetadata {
            group_type: GroupType::Share,
            ..consumer
        };
        assert_eq!(group_value(share).as_ref(), &[2, 2, 0, 0, 0, 7, 0][..]);
        assert_eq!(
            decode_key(&group_key("gg")).unwrap(),
            OffsetsKey::Group { group: "gg".into() }
        );
    }

    #[test]
    fn share_state_layout_is_golden_and_checked() {
        let key = share_key("g", &TopicPartition::new("t", 1));
        assert_eq!(
            key.as_ref(),
            &[0, 3, 0, 1, b'g', 0, 1, b't', 0, 0, 0, 1][..]
        );
        assert_eq!(
            decode_key(&key).unwrap(),
            OffsetsKey::Share {
                group: "g".into(),
                partition: TopicPartition::new("t", 1)
            }
        );
        let s = two_runs_from_5();
        let v = share_value(&s);
        assert_eq!(
            v.as_ref(),
            &[
                1, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 2, //
                0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 6, 0, 0, 2, //
                0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 7, 2, 0, 1,
            ][..]
        );
        assert_eq!(decode_share_value(&v).unwrap(), s);
    }

    #[test]
    fn config_records_round_trip() {
        let key = config_key("g");
        assert_eq!(key.as_ref(), &[0, 4, 0, 1, b'g'][..]);
        assert_eq!(
            decode_key(&key).unwrap(),
            OffsetsKey::Config { group: "g".into() }
        );
        let configs = vec![(
            "share.isolation.level".to_string(),
            "read_committed".to_string(),
        )];
        let v = config_value(&configs);
        assert_eq!(&v[..3], &[1, 0, 1][..]);
        assert_eq!(decode_config_value(&v).unwrap(), configs);
        assert!(decode_config_value(&v[..v.len() - 1]).is_err());
    }

    #[test]
    fn a_share_state_with_a_hole_an_acquired_run_or_missing_bytes_is_refused() {
        let s = two_runs_from_5();
        let v = share_value(&s);
        // A hole, an Acquired run, a huge count without the bytes.
        let hole = ShareSnapshot {
            start_offset: 5,
            runs: vec![(6, 6, RecordState::Archived, 1)],
        };
        assert!(matches!(
            decode_share_value(&share_value(&hole)),
            Err(CodecError::BadShareState(_))
        ));
        let mut acquired = v.to_vec();
        acquired[29] = 1;
        assert!(matches!(
            decode_share_value(&acquired),
            Err(CodecError::BadShareState(_))
        ));
        let mut huge = v[..13].to_vec();
        huge[9..13].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(matches!(
            decode_share_value(&huge),
            Err(CodecError::Truncated { .. })
        ));
    }

    #[test]
    fn unknown_group_types_and_value_versions_are_refused() {
        assert_eq!(
            decode_group_value(&[2, 9, 0, 0, 0, 1, 0]).unwrap_err(),
            CodecError::UnknownGroupType(9)
        );
        assert_eq!(
            decode_group_value(&[3, 0, 0, 0, 1, 0]).unwrap_err(),
            CodecError::UnknownGroupValueVersion(3)
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
