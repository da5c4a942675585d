//! The record model: `Record`, `Header`, `RecordBatch` and its invariants.
//!
//! `None` and empty bytes are different values everywhere: a `None` value is
//! a tombstone, `Some(b"")` is an empty value.

use crate::block::BlockBatch;
use crate::codec::BatchHeader;
use crate::error::{LogError, Result};
use bytes::Bytes;

/// One header of a record. The key is UTF-8; the value may be absent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    pub key: String,
    pub value: Option<Bytes>,
}

impl Header {
    pub fn new(key: impl Into<String>, value: Option<Bytes>) -> Self {
        Self {
            key: key.into(),
            value,
        }
    }
}

/// One record: key, value, timestamp and headers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
    pub timestamp_ms: i64,
    pub headers: Vec<Header>,
}

impl Record {
    /// A record without headers.
    pub fn new(key: Option<Bytes>, value: Option<Bytes>, timestamp_ms: i64) -> Self {
        Self {
            key,
            value,
            timestamp_ms,
            headers: Vec::new(),
        }
    }

    /// Adds headers.
    pub fn with_headers(mut self, headers: Vec<Header>) -> Self {
        self.headers = headers;
        self
    }

    /// The bytes a reader receives for this record: key, value and every
    /// header key and value. Fetch byte limits count this, not the encoded
    /// frame, so a limit means the same whatever the wire encoding.
    pub fn payload_bytes(&self) -> usize {
        let len = |b: &Option<Bytes>| b.as_ref().map_or(0, Bytes::len);
        len(&self.key)
            + len(&self.value)
            + self
                .headers
                .iter()
                .map(|h| h.key.len() + len(&h.value))
                .sum::<usize>()
    }
}

/// The kind of a control batch (a transaction marker).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ControlType {
    Commit,
    Abort,
}

/// The producer fields of a batch; `NONE` (all -1) for a plain producer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProducerInfo {
    pub producer_id: i64,
    pub producer_epoch: i32,
    pub base_sequence: i32,
}

impl ProducerInfo {
    /// No producer identity, no sequence.
    pub const NONE: ProducerInfo = ProducerInfo {
        producer_id: -1,
        producer_epoch: -1,
        base_sequence: -1,
    };
}

/// The current (and only) batch format version.
pub const FORMAT_VERSION: u8 = 1;

/// A batch of records, the unit of append, replication and storage.
///
/// Fields are private so the invariants of spec 01 hold for every value:
/// construct with [`RecordBatch::new`] or [`RecordBatch::marker`], refine
/// with the `with_*` builders, and let the log assign the base offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordBatch {
    records: Vec<Record>,
    offset_deltas: Vec<i32>,
    last_offset_delta: i32,
    base_offset: Option<i64>,
    leader_epoch: i32,
    producer: ProducerInfo,
    transactional_id: Option<String>,
    control: Option<ControlType>,
    /// The producer's block these records came from, kept so the log
    /// stores (and a fetch sends) it as produced: an MKB1 version 2 frame.
    /// Any change to the records or their identity drops it.
    block: Option<Box<BlockBatch>>,
}

impl RecordBatch {
    /// A data batch with offset deltas `0..n`. A data batch needs at least
    /// one record.
    pub fn new(records: Vec<Record>) -> Result<Self> {
        if records.is_empty() {
            return Err(LogError::InvalidRecord(
                "a data batch needs at least one record".into(),
            ));
        }
        let n = i32::try_from(records.len()).map_err(|_| {
            LogError::InvalidRecord(format!("{} records do not fit a batch", records.len()))
        })?;
        Ok(Self {
            offset_deltas: (0..n).collect(),
            last_offset_delta: n - 1,
            records,
            base_offset: None,
            leader_epoch: -1,
            producer: ProducerInfo::NONE,
            transactional_id: None,
            control: None,
            block: None,
        })
    }

    /// A control batch (transaction marker) for `transactional_id`, written
    /// by the producer `producer`. It has no records.
    pub fn marker(
        kind: ControlType,
        transactional_id: impl Into<String>,
        producer: ProducerInfo,
    ) -> Self {
        Self {
            records: Vec::new(),
            offset_deltas: Vec::new(),
            last_offset_delta: 0,
            base_offset: None,
            leader_epoch: -1,
            producer,
            transactional_id: Some(transactional_id.into()),
            control: Some(kind),
            block: None,
        }
    }

    /// Replaces the offset deltas (as left by compaction): they must be
    /// strictly increasing, non-negative, one per record, and
    /// `last_offset_delta` must be at least the last of them.
    pub fn with_offset_deltas(mut self, deltas: Vec<i32>, last_offset_delta: i32) -> Result<Self> {
        self.block = None;
        check_deltas(
            &deltas,
            self.records.len(),
            last_offset_delta,
            self.control.is_some(),
        )
        .map_err(LogError::InvalidRecord)?;
        self.offset_deltas = deltas;
        self.last_offset_delta = last_offset_delta;
        Ok(self)
    }

    /// Sets producer id, epoch and base sequence. A batch with records
    /// drops a kept block; a batch whose records are only in its block
    /// ([`RecordBatch::from_block`]) keeps it, and then cannot be written
    /// unless the block says the same ([`RecordBatch::validate`]).
    pub fn with_producer(mut self, producer: ProducerInfo) -> Self {
        if !self.is_block_only() {
            self.block = None;
        }
        self.producer = producer;
        self
    }

    /// Marks the batch transactional (see [`RecordBatch::with_producer`]
    /// for a batch whose records are only in its block).
    pub fn with_transactional_id(mut self, transactional_id: impl Into<String>) -> Self {
        if !self.is_block_only() {
            self.block = None;
        }
        self.transactional_id = Some(transactional_id.into());
        self
    }

    /// A producer's batch whose records stay in its block, as produced: the
    /// produce path's batch. The producer validated nothing the broker
    /// trusts; the caller (the Kafka adapter) validated the block's records
    /// once, and nothing on the way to the log decodes them again: the log
    /// writes the block as an MKB1 version 2 frame. [`RecordBatch::records`]
    /// is empty; [`RecordBatch::record_count`] is the block's count.
    pub fn from_block(block: BlockBatch) -> Result<Self> {
        let h = block.header();
        if h.control.is_some() {
            return Err(LogError::InvalidRecord(
                "a producer's block cannot be a control batch".into(),
            ));
        }
        if block.is_emptied() {
            return Err(LogError::InvalidRecord(
                "a producer's batch needs at least one record".into(),
            ));
        }
        Ok(Self {
            records: Vec::new(),
            offset_deltas: Vec::new(),
            last_offset_delta: h.last_offset_delta,
            base_offset: None,
            leader_epoch: -1,
            producer: h.producer,
            transactional_id: block.transactional_id().map(str::to_string),
            control: None,
            block: Some(Box::new(block)),
        })
    }

    /// Whether the batch's records are only in its block (see
    /// [`RecordBatch::from_block`]).
    pub fn is_block_only(&self) -> bool {
        self.block.is_some() && self.records.is_empty() && self.control.is_none()
    }

    /// How many records the batch holds (0 for a marker), whether decoded
    /// or only in its block.
    pub fn record_count(&self) -> usize {
        match &self.block {
            Some(b) if self.is_block_only() => b.header().record_count as usize,
            _ => self.records.len(),
        }
    }

    /// The records, decoded from the block (bounded by `limit` bytes
    /// decompressed) when they are only there: for the few checks that need
    /// records before a batch is stored (keys on compacted topics).
    pub fn decoded(&self, limit: usize) -> Result<std::borrow::Cow<'_, RecordBatch>> {
        match &self.block {
            Some(b) if self.is_block_only() => Ok(std::borrow::Cow::Owned(b.records(limit)?)),
            _ => Ok(std::borrow::Cow::Borrowed(self)),
        }
    }

    /// Recompresses a batch kept as produced whose codec is not `to`'s (a
    /// topic's `compression.type`, as Kafka's validator recompresses),
    /// decompressing within `limit` bytes; returns whether it changed.
    /// A batch of the broker's own records (decoded, without a block: a
    /// JSON-TCP or direct produce) becomes a block of `to`'s codec, as
    /// Kafka compresses an uncompressed producer batch for such a topic,
    /// unless `to` is `uncompressed`. Markers are left as they are.
    pub fn recompress(&mut self, to: crate::block::Compression, limit: usize) -> Result<bool> {
        let own = self.block.is_none() && self.control.is_none() && self.base_offset.is_none();
        if own && !self.records.is_empty() {
            if to.codec == crate::block::Codec::None {
                return Ok(false);
            }
            let block = crate::block_records::compressed_block(self, to)?;
            *self = Self::from_block(block)?;
            return Ok(true);
        }
        if !self.is_block_only() {
            return Ok(false);
        }
        match self.block.as_deref() {
            Some(b) if b.codec() != to.codec => {
                let recompressed = b.recompressed(to, limit)?;
                self.block = Some(Box::new(recompressed));
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// Assigns base offset and leader epoch. A batch is assigned once.
    pub fn assign(&mut self, base_offset: i64, leader_epoch: i32) -> Result<()> {
        if let Some(existing) = self.base_offset {
            return Err(LogError::InvalidRecord(format!(
                "batch already assigned base offset {existing}"
            )));
        }
        if base_offset < 0 {
            return Err(LogError::InvalidRecord(format!(
                "base offset must be >= 0, got {base_offset}"
            )));
        }
        if leader_epoch < 0 {
            return Err(LogError::InvalidRecord(format!(
                "leader epoch must be >= 0, got {leader_epoch}"
            )));
        }
        self.base_offset = Some(base_offset);
        self.leader_epoch = leader_epoch;
        Ok(())
    }

    /// Forgets the offsets `assign` gave, so that the batch can be assigned
    /// again (a group append falling back to lone appends).
    pub(crate) fn unassign(&mut self) {
        self.base_offset = None;
    }

    /// The core's view of an emptied batch ([`BlockBatch::emptied`]): the
    /// one data batch without records, which only compaction writes and
    /// readers meet in the log. Its block goes with it, so writing the
    /// batch again writes the same frame.
    pub(crate) fn emptied_from(block: &BlockBatch) -> Self {
        debug_assert!(block.is_emptied());
        let h = block.header();
        Self {
            records: Vec::new(),
            offset_deltas: Vec::new(),
            last_offset_delta: h.last_offset_delta,
            base_offset: Some(h.base_offset),
            leader_epoch: h.leader_epoch,
            producer: h.producer,
            transactional_id: block.transactional_id().map(str::to_string),
            control: None,
            block: Some(Box::new(block.clone())),
        }
    }

    /// Builds a batch from decoded parts, checking every invariant. Used by
    /// the decoder and by compaction.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn from_parts(
        records: Vec<Record>,
        offset_deltas: Vec<i32>,
        last_offset_delta: i32,
        base_offset: i64,
        leader_epoch: i32,
        producer: ProducerInfo,
        transactional_id: Option<String>,
        control: Option<ControlType>,
    ) -> std::result::Result<Self, String> {
        if control.is_some() && transactional_id.is_none() {
            return Err("a control batch needs a transactional id".into());
        }
        if control.is_none() && records.is_empty() {
            return Err("a data batch needs at least one record".into());
        }
        check_deltas(
            &offset_deltas,
            records.len(),
            last_offset_delta,
            control.is_some(),
        )?;
        if base_offset < 0 {
            return Err(format!("base offset must be >= 0, got {base_offset}"));
        }
        if base_offset
            .checked_add(i64::from(last_offset_delta))
            .is_none()
        {
            return Err(format!(
                "base offset {base_offset} plus last offset delta {last_offset_delta} overflows"
            ));
        }
        Ok(Self {
            records,
            offset_deltas,
            last_offset_delta,
            base_offset: Some(base_offset),
            leader_epoch,
            producer,
            transactional_id,
            control,
            block: None,
        })
    }

    /// Keeps the producer's `block` with these records (which must be its
    /// records: same count, offsets span, producer and transactional id),
    /// so the log stores the block as produced.
    pub fn with_block(mut self, block: BlockBatch) -> Result<Self> {
        let h = block.header();
        // A marker's block holds Kafka's control record; the core's marker
        // has no records.
        let same = (h.control.is_some() || h.record_count as usize == self.records.len())
            && h.last_offset_delta == self.last_offset_delta
            && h.producer == self.producer
            && block.transactional_id() == self.transactional_id.as_deref()
            && h.control == self.control;
        if !same {
            return Err(LogError::InvalidRecord(
                "a block must hold exactly the batch's records".into(),
            ));
        }
        self.block = Some(Box::new(block));
        Ok(self)
    }

    /// The producer's block these records came from, when kept.
    pub fn block(&self) -> Option<&BlockBatch> {
        self.block.as_deref()
    }

    pub fn records(&self) -> &[Record] {
        &self.records
    }
    pub fn into_records(self) -> Vec<Record> {
        self.records
    }
    pub fn offset_deltas(&self) -> &[i32] {
        &self.offset_deltas
    }
    pub fn last_offset_delta(&self) -> i32 {
        self.last_offset_delta
    }
    /// `None` until the log assigns it.
    pub fn base_offset(&self) -> Option<i64> {
        self.base_offset
    }
    /// -1 until assigned.
    pub fn leader_epoch(&self) -> i32 {
        self.leader_epoch
    }
    pub fn producer(&self) -> ProducerInfo {
        self.producer
    }
    pub fn producer_id(&self) -> i64 {
        self.producer.producer_id
    }
    pub fn producer_epoch(&self) -> i32 {
        self.producer.producer_epoch
    }
    pub fn base_sequence(&self) -> i32 {
        self.producer.base_sequence
    }
    pub fn transactional_id(&self) -> Option<&str> {
        self.transactional_id.as_deref()
    }
    pub fn is_transactional(&self) -> bool {
        self.transactional_id.is_some()
    }
    pub fn control(&self) -> Option<ControlType> {
        self.control
    }
    pub fn is_control(&self) -> bool {
        self.control.is_some()
    }
    /// Always 1 in this version.
    pub fn format_version(&self) -> u8 {
        FORMAT_VERSION
    }

    /// `last_offset_delta + 1`: how many offsets the batch occupies.
    pub fn logical_count(&self) -> i64 {
        i64::from(self.last_offset_delta) + 1
    }

    /// The header the batch has on disk, once assigned (`None` before).
    pub fn header(&self) -> Option<BatchHeader> {
        self.base_offset
            .map(|base| BatchHeader::of_batch(self, base))
    }

    /// The offset after the batch, once assigned.
    pub fn next_offset(&self) -> Option<i64> {
        self.base_offset.map(|b| b + self.logical_count())
    }

    /// `base_sequence + logical_count - 1`, or -1 without a sequence.
    pub fn last_sequence(&self) -> i32 {
        last_sequence(self.producer.base_sequence, self.last_offset_delta)
    }

    /// The greatest record timestamp (a kept block's max timestamp), -1
    /// for no records.
    pub fn max_timestamp_ms(&self) -> i64 {
        match &self.block {
            Some(b) => b.max_timestamp(),
            None => self.record_timestamps().max().unwrap_or(-1),
        }
    }

    /// The smallest record timestamp (a kept block's first timestamp, the
    /// base its records' deltas start from), -1 for no records.
    pub fn min_timestamp_ms(&self) -> i64 {
        match &self.block {
            Some(b) => b.first_timestamp(),
            None => self.record_timestamps().min().unwrap_or(-1),
        }
    }

    fn record_timestamps(&self) -> impl Iterator<Item = i64> + '_ {
        self.records.iter().map(|r| r.timestamp_ms)
    }

    /// The batch's size as a Kafka broker measures it against
    /// `max.message.bytes`: a kept block's v2 batch (61 header bytes and
    /// its records section, as produced); for decoded records, the header
    /// and every record's key, value and headers.
    pub fn kafka_size_bytes(&self) -> usize {
        let records = match &self.block {
            Some(b) if self.is_block_only() => b.block().len(),
            _ => self.records.iter().map(Record::payload_bytes).sum(),
        };
        crate::block::KAFKA_BATCH_HEADER_BYTES + records
    }

    /// Stamps a LogAppendTime topic's append time, as Kafka does: a kept
    /// block gets the time as its max timestamp and the timestamp-type
    /// attribute (its records are not touched; Kafka's CRC is recomputed);
    /// decoded records get it as their timestamp.
    pub fn stamp_log_append_time(&mut self, now_ms: i64) {
        if self.is_block_only() {
            if let Some(b) = self.block.as_mut() {
                b.set_log_append_time(now_ms);
            }
            return;
        }
        self.block = None;
        for r in &mut self.records {
            r.timestamp_ms = now_ms;
        }
    }

    /// Records with their absolute offsets (the batch must be assigned).
    pub fn records_with_offsets(&self) -> impl Iterator<Item = (i64, &Record)> {
        let base = self.base_offset.unwrap_or(0);
        self.offset_deltas
            .iter()
            .zip(&self.records)
            .map(move |(d, r)| (base + i64::from(*d), r))
    }

    /// Validates the invariants that the builders cannot check alone.
    pub fn validate(&self) -> Result<()> {
        if let Some(b) = self.block.as_deref().filter(|_| self.is_block_only()) {
            // The block's own rules hold by construction; the batch must
            // still say what the block says.
            let h = b.header();
            if h.producer != self.producer
                || b.transactional_id() != self.transactional_id.as_deref()
                || h.last_offset_delta != self.last_offset_delta
            {
                return Err(LogError::InvalidRecord(
                    "a batch kept as produced cannot change its producer or transactional id"
                        .into(),
                ));
            }
            return Ok(());
        }
        if self.control.is_some() && self.transactional_id.is_none() {
            return Err(LogError::InvalidRecord(
                "a control batch needs a transactional id".into(),
            ));
        }
        if self.control.is_some() && !self.records.is_empty() {
            return Err(LogError::InvalidRecord(
                "a control batch has no records".into(),
            ));
        }
        if self.control.is_none() && self.records.is_empty() {
            return Err(LogError::InvalidRecord(
                "a data batch needs at least one record".into(),
            ));
        }
        check_deltas(
            &self.offset_deltas,
            self.records.len(),
            self.last_offset_delta,
            self.control.is_some(),
        )
        .map_err(LogError::InvalidRecord)
    }

    /// Keeps only the records for which `keep(offset, record)` is true;
    /// `last_offset_delta` is unchanged, so surviving offsets never move.
    pub(crate) fn retain_records(&mut self, mut keep: impl FnMut(i64, &Record) -> bool) {
        let before = self.records.len();
        let base = self.base_offset.unwrap_or(0);
        let mut deltas = Vec::with_capacity(self.offset_deltas.len());
        let mut records = Vec::with_capacity(self.records.len());
        for (d, r) in self.offset_deltas.drain(..).zip(self.records.drain(..)) {
            if keep(base + i64::from(d), &r) {
                deltas.push(d);
                records.push(r);
            }
        }
        if records.len() != before {
            // The block holds records that are gone: compaction rebuilds
            // one from the survivors (`block_records::rebuild`).
            self.block = None;
        }
        self.offset_deltas = deltas;
        self.records = records;
    }
}

/// `base_sequence + last_offset_delta`, or -1 when there is no sequence.
pub fn last_sequence(base_sequence: i32, last_offset_delta: i32) -> i32 {
    if base_sequence < 0 {
        -1
    } else {
        // Sequences wrap like Kafka's: after i32::MAX comes 0.
        let wrapped =
            (i64::from(base_sequence) + i64::from(last_offset_delta)) % (i64::from(i32::MAX) + 1);
        i32::try_from(wrapped).expect("a remainder modulo 2^31 fits i32")
    }
}

fn check_deltas(
    deltas: &[i32],
    record_count: usize,
    last_offset_delta: i32,
    control: bool,
) -> std::result::Result<(), String> {
    if deltas.len() != record_count {
        return Err(format!(
            "expected one offset delta per record ({record_count}), got {}",
            deltas.len()
        ));
    }
    let mut previous: Option<i32> = None;
    for &d in deltas {
        if d < 0 {
            return Err(format!("offset delta must be >= 0, got {d}"));
        }
        if let Some(p) = previous
            && d <= p
        {
            return Err(format!(
                "offset deltas must be strictly increasing, got {d} after {p}"
            ));
        }
        previous = Some(d);
    }
    if control && last_offset_delta != 0 {
        return Err(format!(
            "a control batch has last offset delta 0, got {last_offset_delta}"
        ));
    }
    if last_offset_delta < previous.unwrap_or(0) {
        return Err(format!(
            "last offset delta {last_offset_delta} is below the last record delta {}",
            previous.unwrap_or(0)
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(v: &str) -> Record {
        Record::new(None, Some(Bytes::copy_from_slice(v.as_bytes())), 1)
    }

    #[test]
    fn empty_data_batch_is_invalid_record() {
        let err = RecordBatch::new(vec![]).unwrap_err();
        assert_eq!(err.code(), mk_core::ErrorCode::InvalidRecord);
    }

    #[test]
    fn deltas_default_to_zero_to_n_and_derived_fields_follow() {
        let mut b = RecordBatch::new(vec![rec("a"), rec("b"), rec("c")])
            .unwrap()
            .with_producer(ProducerInfo {
                producer_id: 7,
                producer_epoch: 0,
                base_sequence: 10,
            });
        assert_eq!(b.offset_deltas(), &[0, 1, 2]);
        assert_eq!(b.last_offset_delta(), 2);
        assert_eq!(b.logical_count(), 3);
        assert_eq!(b.next_offset(), None);
        assert_eq!(b.last_sequence(), 12);
        b.assign(5, 0).unwrap();
        assert_eq!(b.next_offset(), Some(8));
        assert_eq!(
            b.assign(9, 0).unwrap_err().code(),
            mk_core::ErrorCode::InvalidRecord
        );
    }

    #[test]
    fn bad_deltas_are_rejected() {
        let b = RecordBatch::new(vec![rec("a"), rec("b")]).unwrap();
        assert!(b.clone().with_offset_deltas(vec![1, 1], 1).is_err());
        assert!(b.clone().with_offset_deltas(vec![-1, 1], 1).is_err());
        assert!(b.clone().with_offset_deltas(vec![0, 3], 2).is_err());
        assert!(b.clone().with_offset_deltas(vec![0], 2).is_err());
        let gapped = b.with_offset_deltas(vec![0, 3], 5).unwrap();
        assert_eq!(gapped.logical_count(), 6);
    }

    #[test]
    fn control_batch_has_no_records_and_delta_zero() {
        let c = RecordBatch::marker(ControlType::Commit, "tx", ProducerInfo::NONE);
        assert!(c.validate().is_ok());
        assert_eq!(c.logical_count(), 1);
        assert_eq!(c.max_timestamp_ms(), -1);
        assert!(c.is_transactional());
    }

    #[test]
    fn negative_assignment_is_invalid() {
        let mut b = RecordBatch::new(vec![rec("a")]).unwrap();
        assert!(b.assign(-1, 0).is_err());
        assert!(b.assign(0, -1).is_err());
        assert_eq!(b.base_offset(), None);
    }

    #[test]
    fn sequence_wraps_like_kafka() {
        assert_eq!(last_sequence(i32::MAX, 1), 0);
        assert_eq!(last_sequence(-1, 5), -1);
    }
}
