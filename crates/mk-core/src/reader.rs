//! `ByteReader`: the one bounds-checked big-endian cursor every decoder of
//! the project reads through (MKB1 frames, checkpoints, the offsets log,
//! producer snapshots, the Kafka wire protocol).
//!
//! It is the ground the invariant "no decoder trusts a length it reads"
//! stands on: a read can only ever hand out bytes that are actually present,
//! so a claimed length or count can make a decode fail, never allocate.
//! Callers turn a [`Truncated`] into their own typed error with context.

/// A read ran past the end of the buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Truncated {
    /// Bytes the read wanted.
    pub wanted: usize,
    /// Bytes that were left.
    pub remaining: usize,
    /// Position of the read in the buffer.
    pub position: usize,
}

impl std::fmt::Display for Truncated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} byte(s) wanted at position {}, but only {} left",
            self.wanted, self.position, self.remaining
        )
    }
}

impl std::error::Error for Truncated {}

/// One method per integer width: `fn u16(&mut self) -> Result<u16, _>` reads
/// the next two bytes as a big-endian `u16`, and so on.
macro_rules! read_be {
    ($($name:ident: $t:ty),* $(,)?) => {$(
        #[doc = concat!("The next `", stringify!($t), "`, big-endian.")]
        #[inline]
        pub fn $name(&mut self) -> Result<$t, Truncated> {
            Ok(<$t>::from_be_bytes(self.array()?))
        }
    )*};
}

/// A cursor over a byte slice. Every read is checked against the bytes left.
///
/// Its methods are `#[inline]` because the MKB1 decoder on the fetch path
/// calls them per field of every record, from other crates.
#[derive(Debug, Clone)]
pub struct ByteReader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> ByteReader<'a> {
    #[inline]
    pub fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    /// Bytes not yet read.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// True when every byte was read.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// How many bytes were read so far.
    #[inline]
    pub fn position(&self) -> usize {
        self.pos
    }

    /// The whole underlying buffer (for zero-copy slicing by position).
    #[inline]
    pub fn buffer(&self) -> &'a [u8] {
        self.buf
    }

    /// The next `n` bytes, if that many are left.
    #[inline]
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], Truncated> {
        if n > self.remaining() {
            return Err(Truncated {
                wanted: n,
                remaining: self.remaining(),
                position: self.pos,
            });
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// Everything not yet read.
    #[inline]
    pub fn rest(&mut self) -> &'a [u8] {
        let s = &self.buf[self.pos..];
        self.pos = self.buf.len();
        s
    }

    #[inline]
    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], Truncated> {
        let s = self.take(N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    read_be! {
        u8: u8,
        i8: i8,
        u16: u16,
        i16: i16,
        u32: u32,
        i32: i32,
        u64: u64,
        i64: i64,
    }

    /// A count of items that each take at least `min_item_bytes`: refused
    /// (as truncation) when the bytes left cannot possibly hold that many,
    /// so a caller may size a `Vec` from the result without trusting it.
    #[inline]
    pub fn check_count(&self, count: usize, min_item_bytes: usize) -> Result<usize, Truncated> {
        let needed = count.saturating_mul(min_item_bytes.max(1));
        if needed > self.remaining() {
            return Err(Truncated {
                wanted: needed,
                remaining: self.remaining(),
                position: self.pos,
            });
        }
        Ok(count)
    }

    /// A `u32` count followed by items that each take at least
    /// `min_item_bytes`, checked like [`check_count`](Self::check_count).
    #[inline]
    pub fn u32_count(&mut self, min_item_bytes: usize) -> Result<usize, Truncated> {
        let count = self.u32()? as usize;
        self.check_count(count, min_item_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_big_endian_and_stops_at_the_end() {
        let mut r = ByteReader::new(&[0, 1, 0xff, 0xff, 0xff, 0xfe, 7]);
        assert_eq!(r.u16().unwrap(), 1);
        assert_eq!(r.i32().unwrap(), -2);
        assert_eq!(r.remaining(), 1);
        let e = r.u16().unwrap_err();
        assert_eq!(
            e,
            Truncated {
                wanted: 2,
                remaining: 1,
                position: 6
            }
        );
        // A failed read consumes nothing.
        assert_eq!(r.u8().unwrap(), 7);
        assert!(r.is_empty());
    }

    #[test]
    fn huge_lengths_and_counts_fail_without_allocating() {
        let mut r = ByteReader::new(&[1, 2, 3]);
        assert!(r.take(usize::MAX).is_err());
        assert!(r.check_count(usize::MAX, 8).is_err());
        assert!(r.check_count(i32::MAX as usize, 1).is_err());
        assert_eq!(r.check_count(3, 1).unwrap(), 3);
        assert_eq!(r.check_count(0, 100).unwrap(), 0);
        let mut counted = ByteReader::new(&[0, 0, 0, 2, 1, 2]);
        assert!(counted.clone().u32_count(2).is_err(), "2 items of 2 bytes");
        assert_eq!(counted.u32_count(1).unwrap(), 2);
        assert_eq!(counted.remaining(), 2);
    }
}
