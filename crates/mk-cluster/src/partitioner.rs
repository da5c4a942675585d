//! Kafka's default partitioner: murmur2 of the key, made positive, modulo
//! the partition count, so keys land where a Java or librdkafka producer
//! would put them (the teaching model used CRC-32 instead); and for
//! keyless records the "uniform sticky" placement of Kafka 3.3+ clients
//! (KIP-794), which a client that sends batches uses.

/// Kafka's `Utils.murmur2`: 32-bit MurmurHash2 with Kafka's seed, computed in
/// Java `int` arithmetic (wrapping, unsigned shifts).
#[allow(
    clippy::cast_possible_truncation,
    reason = "the hash mixes in the length as a Java int, wrapping as Java would"
)]
pub fn murmur2(data: &[u8]) -> i32 {
    const SEED: u32 = 0x9747_b28c;
    const M: u32 = 0x5bd1_e995;
    const R: u32 = 24;
    let len = data.len();
    let mut h: u32 = SEED ^ (len as u32);
    let mut chunks = data.chunks_exact(4);
    for c in &mut chunks {
        let mut k = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M);
        h ^= k;
    }
    let tail = chunks.remainder();
    if tail.len() >= 3 {
        h ^= u32::from(tail[2]) << 16;
    }
    if tail.len() >= 2 {
        h ^= u32::from(tail[1]) << 8;
    }
    if !tail.is_empty() {
        h ^= u32::from(tail[0]);
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^= h >> 15;
    h as i32
}

/// The partition Kafka's default partitioner picks for a keyed record:
/// `(murmur2(key) & 0x7fffffff) % partitions`.
pub fn partition_for_key(key: &[u8], partitions: u32) -> u32 {
    debug_assert!(partitions > 0);
    ((murmur2(key) & 0x7fff_ffff) as u32) % partitions.max(1)
}

/// Where a record goes when its producer names no partition, or names
/// one: the explicit partition wins, a keyed record goes where Kafka's
/// default partitioner puts it, and a record with neither goes to
/// partition 0. Kafka clients spread keyless records with a sticky
/// partition instead; the broker has no batch to stick to, so it keeps the
/// JSON protocol's old default for them. Every path that lets the broker
/// choose (JSON `produce` and `txn_produce`, the CLI's `produce`) asks
/// this function, so a key lands on the same partition on each of them.
pub fn partition_for(explicit: Option<u32>, key: Option<&[u8]>, partitions: u32) -> u32 {
    match (explicit, key) {
        (Some(p), _) => p,
        (None, Some(k)) => partition_for_key(k, partitions),
        (None, None) => 0,
    }
}

/// Where a client puts keyless records, as Kafka's producer has since 3.3
/// (KIP-794, the "uniform sticky" partitioner): every keyless record goes
/// to the current sticky partition until `batch_bytes` (Kafka's
/// `batch.size`, 16 KiB by default) have gone there, then the next one
/// takes over. So records travel in full batches and, over time, every
/// partition gets the same share. Kafka picks each next partition at
/// random (weighted by queue sizes); this one goes round the partitions in
/// order from its starting point, which gives the same even spread and
/// keeps a run repeatable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StickyPartitioner {
    batch_bytes: usize,
    current: u32,
    produced: usize,
}

impl StickyPartitioner {
    /// Kafka's default `batch.size`.
    pub const DEFAULT_BATCH_BYTES: usize = 16_384;

    /// Sticks to `start` (modulo the partition count) first.
    pub fn new(batch_bytes: usize, start: u32) -> Self {
        Self {
            batch_bytes: batch_bytes.max(1),
            current: start,
            produced: 0,
        }
    }

    /// The partition of a record of `size` bytes (key and value) among
    /// `partitions`: an explicit one wins, a key picks by murmur2, and a
    /// keyless record goes to the sticky partition.
    pub fn partition(
        &mut self,
        explicit: Option<u32>,
        key: Option<&[u8]>,
        size: usize,
        partitions: u32,
    ) -> u32 {
        match (explicit, key) {
            (Some(p), _) => p,
            (None, Some(k)) => partition_for_key(k, partitions),
            (None, None) => self.keyless(size, partitions),
        }
    }

    fn keyless(&mut self, size: usize, partitions: u32) -> u32 {
        let partitions = partitions.max(1);
        if self.produced >= self.batch_bytes {
            self.current = self.current.wrapping_add(1);
            self.produced = 0;
        }
        self.produced = self.produced.saturating_add(size);
        self.current % partitions
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kafka's own vectors (clients `UtilsTest.testMurmur2`).
    #[test]
    fn murmur2_matches_kafka_hash_vectors() {
        let cases: [(&[u8], i32); 6] = [
            (b"21", -973_932_308),
            (b"foobar", -790_332_482),
            (b"a-little-bit-long-string", -985_981_536),
            (b"a-little-bit-longer-string", -1_486_304_829),
            (
                b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8",
                -58_897_971,
            ),
            (b"abc", 479_470_107),
        ];
        for (key, expected) in cases {
            assert_eq!(murmur2(key), expected, "{}", String::from_utf8_lossy(key));
        }
    }

    #[test]
    fn keyed_partition_is_positive_hash_modulo_count() {
        // 479470107 % 7 == 2; -973932308 & 0x7fffffff == 1173551340, % 10 == 0.
        assert_eq!(partition_for_key(b"abc", 7), 479_470_107 % 7);
        assert_eq!(partition_for_key(b"21", 10), 1_173_551_340 % 10);
        for n in 1..20 {
            assert!(partition_for_key(b"some key", n) < n);
        }
    }

    #[test]
    fn keyless_records_stick_for_a_batch_then_move_on_evenly() {
        let mut s = StickyPartitioner::new(1_000, 2);
        // 300-byte records: four fill a 1000-byte batch (the fourth passes
        // the size, as Kafka's accumulator lets a batch's last record do).
        let placed: Vec<u32> = (0..16).map(|_| s.partition(None, None, 300, 3)).collect();
        assert_eq!(placed, [2, 2, 2, 2, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2]);
        // Keys and explicit partitions neither use nor move the sticky one.
        assert_eq!(s.partition(Some(1), None, 300, 3), 1);
        assert_eq!(
            s.partition(None, Some(b"abc"), 300, 7),
            partition_for_key(b"abc", 7)
        );
        assert_eq!(s.partition(None, None, 300, 3), 0);
        // A topic that grew: the sticky partition is taken modulo the count.
        assert_eq!(s.partition(None, None, 1, 1), 0);
    }

    #[test]
    fn an_explicit_partition_wins_then_the_key_then_zero() {
        assert_eq!(partition_for(Some(5), Some(b"abc"), 7), 5);
        assert_eq!(partition_for(None, Some(b"abc"), 7), 479_470_107 % 7);
        assert_eq!(partition_for(None, None, 7), 0);
    }
}
