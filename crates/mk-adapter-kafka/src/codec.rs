//! The primitive types of the Kafka wire protocol: fixed-width big-endian
//! integers, varints, (compact) strings, bytes and arrays, UUIDs and tagged
//! fields — decoded through the project's one bounded cursor
//! (`ByteReader`), so no length or count read off the wire can size an
//! allocation beyond the bytes actually present.
//!
//! A `Reader` and a `Writer` know whether the message version being handled
//! is *flexible* (KIP-482): then strings, bytes and arrays use the compact
//! (unsigned-varint, length + 1) forms and every struct ends with a tagged
//! field section. Message modules therefore describe each field once and
//! the flexible/classic difference lives here.

use bytes::{BufMut, Bytes, BytesMut};
use mk_cluster::{ByteReader, Truncated};

/// Why a request could not be decoded. The connection that sent it is
/// closed (Kafka's behaviour for a request it cannot parse).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("request truncated: {0}")]
    Truncated(#[from] Truncated),
    #[error("invalid request: {0}")]
    Invalid(String),
}

pub type DecodeResult<T> = Result<T, DecodeError>;

/// A message body of the protocol (or a struct inside one): decoded and
/// encoded at a version. Every generated request, response and nested
/// struct implements both directions (the broker needs one of each; tests
/// and the conformance suite use the other). The reader or writer already
/// knows whether the version is flexible.
pub trait Message: Sized {
    fn read(r: &mut Reader<'_>, version: i16) -> DecodeResult<Self>;
    fn write(&self, w: &mut Writer, version: i16);
}

fn invalid<T>(msg: impl Into<String>) -> DecodeResult<T> {
    Err(DecodeError::Invalid(msg.into()))
}

/// A 16-byte UUID (topic ids). All zeroes is Kafka's "no id".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Uuid(pub [u8; 16]);

impl Uuid {
    pub const ZERO: Uuid = Uuid([0; 16]);

    pub fn is_zero(&self) -> bool {
        *self == Self::ZERO
    }
}

/// A bounded reader of one message body (or of one record batch).
#[derive(Debug)]
pub struct Reader<'a> {
    r: ByteReader<'a>,
    /// The buffer `r` reads, so byte fields are handed out as zero-copy
    /// slices of the request.
    src: &'a Bytes,
    /// Compact forms and tagged fields (a flexible message version).
    pub flexible: bool,
}

impl<'a> Reader<'a> {
    pub fn new(src: &'a Bytes, flexible: bool) -> Self {
        Self {
            r: ByteReader::new(src),
            src,
            flexible,
        }
    }

    pub fn remaining(&self) -> usize {
        self.r.remaining()
    }

    pub fn is_empty(&self) -> bool {
        self.r.is_empty()
    }

    pub fn position(&self) -> usize {
        self.r.position()
    }

    /// Whether the next `n` bytes are present and all zero (reads nothing).
    pub fn peek_zeros(&self, n: usize) -> bool {
        let at = self.r.position();
        self.src
            .get(at..at.saturating_add(n))
            .is_some_and(|b| b.len() == n && b.iter().all(|&x| x == 0))
    }

    pub fn i8(&mut self) -> DecodeResult<i8> {
        Ok(self.r.i8()?)
    }
    pub fn i16(&mut self) -> DecodeResult<i16> {
        Ok(self.r.i16()?)
    }
    pub fn i32(&mut self) -> DecodeResult<i32> {
        Ok(self.r.i32()?)
    }
    pub fn i64(&mut self) -> DecodeResult<i64> {
        Ok(self.r.i64()?)
    }
    pub fn u32(&mut self) -> DecodeResult<u32> {
        Ok(self.r.u32()?)
    }
    pub fn u16(&mut self) -> DecodeResult<u16> {
        Ok(self.r.u16()?)
    }
    pub fn f64(&mut self) -> DecodeResult<f64> {
        Ok(f64::from_bits(self.r.u64()?))
    }

    /// A boolean: any non-zero byte is true (as Kafka reads it).
    pub fn bool(&mut self) -> DecodeResult<bool> {
        Ok(self.r.u8()? != 0)
    }

    pub fn uuid(&mut self) -> DecodeResult<Uuid> {
        Ok(Uuid(self.r.array()?))
    }

    /// An unsigned varint of at most 5 bytes (a u32).
    #[inline]
    pub fn uvarint(&mut self) -> DecodeResult<u32> {
        let mut value: u32 = 0;
        for i in 0..5 {
            let b = self.r.u8()?;
            if i == 4 && b > 0x0f {
                return invalid("unsigned varint does not fit 32 bits");
            }
            value |= u32::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        invalid("unsigned varint longer than 5 bytes")
    }

    /// An unsigned varint of at most 10 bytes (a u64).
    #[inline]
    pub fn uvarlong(&mut self) -> DecodeResult<u64> {
        let mut value: u64 = 0;
        for i in 0..10 {
            let b = self.r.u8()?;
            if i == 9 && b > 0x01 {
                return invalid("unsigned varlong does not fit 64 bits");
            }
            value |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        invalid("unsigned varlong longer than 10 bytes")
    }

    /// A zigzag-encoded signed varint (record fields).
    #[inline]
    pub fn varint(&mut self) -> DecodeResult<i32> {
        let u = self.uvarint()?;
        Ok(((u >> 1) as i32) ^ -((u & 1) as i32))
    }

    /// A zigzag-encoded signed varlong (record timestamps).
    #[inline]
    pub fn varlong(&mut self) -> DecodeResult<i64> {
        let u = self.uvarlong()?;
        Ok(((u >> 1) as i64) ^ -((u & 1) as i64))
    }

    /// The next `n` bytes, borrowed (for walking records without keeping
    /// them).
    #[inline]
    pub fn slice(&mut self, n: usize) -> DecodeResult<&'a [u8]> {
        Ok(self.r.take(n)?)
    }

    /// The next `n` bytes as a zero-copy slice.
    pub fn bytes_exact(&mut self, n: usize) -> DecodeResult<Bytes> {
        let s = self.r.take(n)?;
        Ok(self.src.slice_ref(s))
    }

    /// A length prefix of a string/bytes/array: `None` for null. Classic
    /// forms use a signed int (-1 = null), compact forms `uvarint(n + 1)`.
    fn length(&mut self, classic_i16: bool, what: &str) -> DecodeResult<Option<usize>> {
        let n: i64 = if self.flexible {
            i64::from(self.uvarint()?) - 1
        } else if classic_i16 {
            i64::from(self.i16()?)
        } else {
            i64::from(self.i32()?)
        };
        match n {
            -1 => Ok(None),
            n if n < 0 => invalid(format!("{what} length {n} is negative")),
            n => usize::try_from(n)
                .map(Some)
                .or_else(|_| invalid(format!("{what} length {n} does not fit this platform"))),
        }
    }

    fn utf8(&mut self, n: usize, what: &str) -> DecodeResult<String> {
        let s = self.r.take(n)?;
        match std::str::from_utf8(s) {
            Ok(s) => Ok(s.to_string()),
            Err(_) => invalid(format!("{what} is not valid UTF-8")),
        }
    }

    /// A nullable string.
    pub fn nullable_string(&mut self) -> DecodeResult<Option<String>> {
        match self.length(true, "string")? {
            None => Ok(None),
            Some(n) => self.utf8(n, "string").map(Some),
        }
    }

    /// A non-null string.
    pub fn string(&mut self) -> DecodeResult<String> {
        match self.nullable_string()? {
            Some(s) => Ok(s),
            None => invalid("a non-nullable string is null"),
        }
    }

    /// Nullable bytes (zero-copy).
    pub fn nullable_bytes(&mut self) -> DecodeResult<Option<Bytes>> {
        match self.length(false, "bytes")? {
            None => Ok(None),
            Some(n) => self.bytes_exact(n).map(Some),
        }
    }

    /// Non-null bytes.
    pub fn bytes(&mut self) -> DecodeResult<Bytes> {
        match self.nullable_bytes()? {
            Some(b) => Ok(b),
            None => invalid("non-nullable bytes are null"),
        }
    }

    /// A nullable array; every item must take at least one byte, so the
    /// claimed count is checked against the bytes left before anything is
    /// allocated, and the vector grows only with items actually decoded.
    pub fn nullable_array<T>(
        &mut self,
        mut item: impl FnMut(&mut Self) -> DecodeResult<T>,
    ) -> DecodeResult<Option<Vec<T>>> {
        let Some(n) = self.length(false, "array")? else {
            return Ok(None);
        };
        let n = self.r.check_count(n, 1)?;
        let mut out = Vec::with_capacity(n.min(MAX_PREALLOCATED_ITEMS));
        for _ in 0..n {
            out.push(item(self)?);
        }
        Ok(Some(out))
    }

    /// A non-null array (a null one decodes as empty, which is how Kafka's
    /// own readers treat the arrays clients leave null).
    pub fn array<T>(
        &mut self,
        item: impl FnMut(&mut Self) -> DecodeResult<T>,
    ) -> DecodeResult<Vec<T>> {
        Ok(self.nullable_array(item)?.unwrap_or_default())
    }

    /// The tagged-field section that ends every struct of a flexible
    /// version. `known` is offered each (tag, body) first and answers
    /// whether it read the field, which must then use its whole body;
    /// unknown tags are skipped, as the protocol requires.
    pub fn tagged_fields(
        &mut self,
        mut known: impl FnMut(u32, &mut Reader<'_>) -> DecodeResult<bool>,
    ) -> DecodeResult<()> {
        if !self.flexible {
            return Ok(());
        }
        let count = self.uvarint()?;
        let count = self.r.check_count(count as usize, 2)?;
        let mut last: Option<u32> = None;
        for _ in 0..count {
            let tag = self.uvarint()?;
            if last.is_some_and(|l| tag <= l) {
                return invalid(format!("tagged field {tag} out of order"));
            }
            last = Some(tag);
            let size = self.uvarint()? as usize;
            let body = self.bytes_exact(size)?;
            let mut sub = Reader {
                r: ByteReader::new(&body),
                src: &body,
                flexible: true,
            };
            if known(tag, &mut sub)? {
                sub.finish("tagged field")?;
            }
        }
        Ok(())
    }

    /// A nullable struct: an `int8` marker (negative for null) before it.
    pub fn nullable_struct<T: Message>(&mut self, version: i16) -> DecodeResult<Option<T>> {
        if self.i8()? < 0 {
            Ok(None)
        } else {
            T::read(self, version).map(Some)
        }
    }

    /// Skips the tagged-field section (no known tags).
    pub fn skip_tagged_fields(&mut self) -> DecodeResult<()> {
        if !self.flexible {
            return Ok(());
        }
        let count = self.uvarint()?;
        let count = self.r.check_count(count as usize, 2)?;
        for _ in 0..count {
            let _tag = self.uvarint()?;
            let size = self.uvarint()? as usize;
            self.r.take(size)?;
        }
        Ok(())
    }

    /// Fails unless every byte was read (garbage after a valid message).
    pub fn finish(&self, what: &str) -> DecodeResult<()> {
        if self.r.is_empty() {
            Ok(())
        } else {
            invalid(format!(
                "{} unexpected byte(s) after the {what}",
                self.r.remaining()
            ))
        }
    }
}

/// The most items an array decode reserves room for up front; beyond that
/// the vector grows with the items actually decoded.
const MAX_PREALLOCATED_ITEMS: usize = 1024;

/// The records of a response (Fetch, ShareFetch) as the parts they are
/// made of: the batch headers the broker builds and the record blocks as
/// the log stored them. The writer sends the large parts as they are,
/// without copying them into the response ([`Writer::record_set`]), so a
/// fetch answer's stored bytes are copied once, into the socket. Read back
/// (by tests and clients), a record set is one part.
#[derive(Clone, Default)]
pub struct RecordSet {
    parts: Vec<Bytes>,
    len: usize,
}

impl RecordSet {
    /// Appends `part` (an empty one adds nothing).
    pub fn push(&mut self, part: Bytes) {
        if !part.is_empty() {
            self.len += part.len();
            self.parts.push(part);
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn parts(&self) -> &[Bytes] {
        &self.parts
    }

    /// The records as one buffer (copied together when there are several
    /// parts).
    pub fn to_bytes(&self) -> Bytes {
        match self.parts.as_slice() {
            [] => Bytes::new(),
            [one] => one.clone(),
            parts => {
                let mut out = BytesMut::with_capacity(self.len);
                for p in parts {
                    out.put_slice(p);
                }
                out.freeze()
            }
        }
    }
}

/// Shown as its bytes, as a `Bytes` field is.
impl std::fmt::Debug for RecordSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("RecordSet").field(&self.to_bytes()).finish()
    }
}

impl From<Bytes> for RecordSet {
    fn from(b: Bytes) -> Self {
        let mut set = RecordSet::default();
        set.push(b);
        set
    }
}

/// Equal when the bytes are, however they are split into parts.
impl PartialEq for RecordSet {
    fn eq(&self, other: &Self) -> bool {
        let bytes = |s: &RecordSet| {
            s.parts
                .iter()
                .flat_map(|p| p.iter())
                .copied()
                .collect::<Vec<u8>>()
        };
        self.len == other.len && bytes(self) == bytes(other)
    }
}

impl Eq for RecordSet {}

/// Parts of a record set at least this large are sent as they are; smaller
/// ones (batch headers) are copied into the response.
const SHARED_PART_MIN: usize = 512;

/// A writer of one message body. Encoding never fails: values that cannot
/// be represented (a string longer than the protocol allows) are cut.
#[derive(Debug)]
pub struct Writer {
    pub buf: BytesMut,
    pub flexible: bool,
    /// What was written before `buf` when a record set's large parts were
    /// written as they are: bytes split off `buf`, and those parts. Empty
    /// otherwise.
    done: Vec<Bytes>,
}

impl Writer {
    pub fn new(flexible: bool) -> Self {
        Self::with_buf(BytesMut::with_capacity(256), flexible)
    }

    pub fn with_buf(buf: BytesMut, flexible: bool) -> Self {
        Self {
            buf,
            flexible,
            done: Vec::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.done.iter().map(Bytes::len).sum::<usize>() + self.buf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A record set (not null): its length, then its parts, the large ones
    /// joining the message as they are, without being copied.
    pub fn record_set(&mut self, records: &RecordSet) {
        self.length(Some(records.len()), false);
        for part in records.parts() {
            if part.len() < SHARED_PART_MIN {
                self.buf.put_slice(part);
            } else {
                if !self.buf.is_empty() {
                    self.done.push(self.buf.split().freeze());
                }
                self.done.push(part.clone());
            }
        }
    }

    /// A nullable record set.
    pub fn nullable_record_set(&mut self, records: Option<&RecordSet>) {
        match records {
            None => self.length(None, false),
            Some(r) => self.record_set(r),
        }
    }

    /// Whether a record set's parts were written as they are (the message
    /// is not one buffer).
    pub fn has_parts(&self) -> bool {
        !self.done.is_empty()
    }

    /// The message as the parts it was written in (one part unless a
    /// record set's parts were written as they are).
    pub fn into_parts(mut self) -> Vec<Bytes> {
        if self.done.is_empty() || !self.buf.is_empty() {
            self.done.push(self.buf.freeze());
        }
        self.done
    }

    pub fn i8(&mut self, v: i8) {
        self.buf.put_i8(v);
    }
    pub fn i16(&mut self, v: i16) {
        self.buf.put_i16(v);
    }
    pub fn i32(&mut self, v: i32) {
        self.buf.put_i32(v);
    }
    pub fn i64(&mut self, v: i64) {
        self.buf.put_i64(v);
    }
    pub fn u32(&mut self, v: u32) {
        self.buf.put_u32(v);
    }
    pub fn u16(&mut self, v: u16) {
        self.buf.put_u16(v);
    }
    pub fn f64(&mut self, v: f64) {
        self.buf.put_u64(v.to_bits());
    }
    pub fn bool(&mut self, v: bool) {
        self.buf.put_u8(u8::from(v));
    }
    pub fn uuid(&mut self, v: Uuid) {
        self.buf.put_slice(&v.0);
    }

    pub fn uvarint(&mut self, v: u32) {
        self.uvarlong(u64::from(v));
    }

    pub fn uvarlong(&mut self, mut v: u64) {
        // Seven bits per byte, low bits first: the low byte of `v` carries
        // them, with the top bit saying more follow.
        while v >= 0x80 {
            self.buf.put_u8(v.to_le_bytes()[0] | 0x80);
            v >>= 7;
        }
        self.buf.put_u8(v.to_le_bytes()[0]);
    }

    pub fn varint(&mut self, v: i32) {
        self.uvarint(((v << 1) ^ (v >> 31)) as u32);
    }

    pub fn varlong(&mut self, v: i64) {
        self.uvarlong(((v << 1) ^ (v >> 63)) as u64);
    }

    fn length(&mut self, len: Option<usize>, classic_i16: bool) {
        if self.flexible {
            self.uvarint(len.map_or(0, |n| length_as::<u32>(n) + 1));
        } else if classic_i16 {
            self.i16(len.map_or(-1, length_as::<i16>));
        } else {
            self.i32(len.map_or(-1, length_as::<i32>));
        }
    }

    pub fn nullable_string(&mut self, s: Option<&str>) {
        match s {
            None => self.length(None, true),
            Some(s) => {
                let s = cut_to_char_boundary(s, i16::MAX as usize);
                self.length(Some(s.len()), true);
                self.buf.put_slice(s.as_bytes());
            }
        }
    }

    pub fn string(&mut self, s: &str) {
        self.nullable_string(Some(s));
    }

    pub fn nullable_bytes(&mut self, b: Option<&[u8]>) {
        match b {
            None => self.length(None, false),
            Some(b) => {
                self.length(Some(b.len()), false);
                self.buf.put_slice(b);
            }
        }
    }

    pub fn bytes(&mut self, b: &[u8]) {
        self.nullable_bytes(Some(b));
    }

    /// The length prefix of an array of `n` items (`None` for null); the
    /// caller writes the items.
    pub fn array_len(&mut self, n: Option<usize>) {
        self.length(n, false);
    }

    pub fn array<T>(&mut self, items: &[T], mut item: impl FnMut(&mut Self, &T)) {
        self.array_len(Some(items.len()));
        for i in items {
            item(self, i);
        }
    }

    pub fn nullable_array<T>(&mut self, items: Option<&[T]>, item: impl FnMut(&mut Self, &T)) {
        match items {
            None => self.array_len(None),
            Some(items) => self.array(items, item),
        }
    }

    /// An empty tagged-field section (flexible versions only).
    pub fn no_tagged_fields(&mut self) {
        if self.flexible {
            self.uvarint(0);
        }
    }

    /// A tagged-field section with the given (tag, body) pairs, ascending.
    pub fn tagged_fields(&mut self, fields: &[(u32, &[u8])]) {
        if !self.flexible {
            return;
        }
        self.uvarint(length_as::<u32>(fields.len()));
        for (tag, body) in fields {
            self.uvarint(*tag);
            self.uvarint(length_as::<u32>(body.len()));
            self.buf.put_slice(body);
        }
    }

    /// One field of a tagged-field section (after its count): the tag, the
    /// body's size and the body `field` writes.
    pub fn tagged_field(&mut self, tag: u32, field: impl FnOnce(&mut Writer)) {
        let mut body = Writer::with_buf(BytesMut::new(), true);
        field(&mut body);
        self.uvarint(tag);
        self.uvarint(u32::try_from(body.len()).unwrap_or(u32::MAX));
        self.buf.put_slice(&body.into_bytes());
    }

    /// A nullable struct: an `int8` marker (-1 for null, 1) before it.
    pub fn nullable_struct<T: Message>(&mut self, value: Option<&T>, version: i16) {
        match value {
            None => self.i8(-1),
            Some(v) => {
                self.i8(1);
                v.write(self, version);
            }
        }
    }

    /// The message as one buffer (its parts copied together when a record
    /// set's parts were written as they are).
    pub fn into_bytes(self) -> Bytes {
        match self.into_parts().as_slice() {
            [one] => one.clone(),
            parts => RecordSet {
                len: parts.iter().map(Bytes::len).sum(),
                parts: parts.to_vec(),
            }
            .to_bytes(),
        }
    }
}

/// A length the writer puts on the wire, in the protocol's type. What the
/// broker sends is either read from a request of the same width or built
/// within the protocol's limits, so a length that does not fit is a bug,
/// and a frame with a wrapped length would be worse than a failed one.
fn length_as<T: TryFrom<usize>>(n: usize) -> T {
    T::try_from(n).unwrap_or_else(|_| panic!("length {n} does not fit the protocol's field"))
}

fn cut_to_char_boundary(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reader(bytes: &[u8], flexible: bool) -> (Bytes, bool) {
        (Bytes::copy_from_slice(bytes), flexible)
    }

    #[test]
    fn varints_round_trip_at_their_edges() {
        for v in [0, 1, -1, 63, -64, 64, i32::MAX, i32::MIN] {
            let mut w = Writer::new(false);
            w.varint(v);
            let b = w.into_bytes();
            assert_eq!(Reader::new(&b, false).varint().unwrap(), v);
        }
        for v in [0i64, -1, i64::MAX, i64::MIN, 1 << 40] {
            let mut w = Writer::new(false);
            w.varlong(v);
            let b = w.into_bytes();
            assert_eq!(Reader::new(&b, false).varlong().unwrap(), v);
        }
        let (b, f) = reader(&[0xff, 0xff, 0xff, 0xff, 0xff, 0x01], false);
        assert!(Reader::new(&b, f).uvarint().is_err());
    }

    #[test]
    fn compact_and_classic_strings_and_nulls() {
        for flexible in [false, true] {
            let mut w = Writer::new(flexible);
            w.string("topic");
            w.nullable_string(None);
            w.nullable_bytes(Some(b""));
            w.nullable_bytes(None);
            let b = w.into_bytes();
            let mut r = Reader::new(&b, flexible);
            assert_eq!(r.string().unwrap(), "topic");
            assert_eq!(r.nullable_string().unwrap(), None);
            assert_eq!(r.nullable_bytes().unwrap(), Some(Bytes::new()));
            assert_eq!(r.nullable_bytes().unwrap(), None);
            r.finish("test").unwrap();
        }
    }

    #[test]
    fn huge_and_negative_counts_fail_without_allocating() {
        // i32::MAX items claimed, four bytes present.
        let (b, f) = reader(&[0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 1], false);
        let e = Reader::new(&b, f).array(|r| r.i32()).unwrap_err();
        assert!(matches!(e, DecodeError::Truncated(_)), "{e}");
        let (b, f) = reader(&[0xff, 0xff, 0xff, 0xfe], false);
        let e = Reader::new(&b, f).array(|r| r.i32()).unwrap_err();
        assert!(e.to_string().contains("negative"), "{e}");
        // A compact count of u32::MAX - 1 items.
        let (b, f) = reader(&[0xff, 0xff, 0xff, 0xff, 0x0f], true);
        assert!(Reader::new(&b, f).array(|r| r.i32()).is_err());
        // A 2 GiB string.
        let (b, f) = reader(&[0x7f, 0xff, b'a'], false);
        assert!(Reader::new(&b, f).string().is_err());
    }

    #[test]
    fn unknown_tagged_fields_are_skipped_and_known_ones_read() {
        let mut w = Writer::new(true);
        w.tagged_fields(&[(0, &[1, 2]), (5, &[0, 0, 0, 9])]);
        w.i8(7);
        let b = w.into_bytes();
        let mut r = Reader::new(&b, true);
        let mut seen = None;
        r.tagged_fields(|tag, sub| {
            if tag == 5 {
                seen = Some(sub.i32()?);
            }
            Ok(tag == 5)
        })
        .unwrap();
        assert_eq!(seen, Some(9));
        assert_eq!(r.i8().unwrap(), 7);
    }
}
