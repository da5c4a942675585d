//! CRC-32C arithmetic: the CRC of a concatenation from the CRCs of its
//! parts. A producer's block is covered by two CRCs (Kafka's, which produce
//! checks, and the MKB1 frame's); with these the block's bytes are read
//! once, when produce checks Kafka's CRC, and every other CRC over them
//! (the frame's at append, Kafka's again after the broker changes a header
//! field) costs a few hundred word operations instead of a pass.
//!
//! A CRC here is a polynomial over GF(2) in the reflected bit order CRC-32C
//! uses (bit 31 is the coefficient of x^0). Appending `n` bytes B to A gives
//! `crc(A‖B) = crc(A) · x^(8n) mod P  ⊕  crc(B)`: the initial and final
//! inversions of CRC-32C cancel out in that identity, so it holds for the
//! CRC values themselves.

/// The Castagnoli polynomial, reflected.
const POLY: u32 = 0x82f6_3b78;
/// Below this many bytes a plain CRC pass is cheaper than the arithmetic.
pub(crate) const COMBINE_MIN_BYTES: usize = 16 * 1024;

/// `a · b mod P`, both reflected.
const fn mul(a: u32, mut b: u32) -> u32 {
    let mut p = 0u32;
    let mut m = 1u32 << 31;
    while m != 0 {
        if a & m != 0 {
            p ^= b;
        }
        m >>= 1;
        b = if b & 1 != 0 { (b >> 1) ^ POLY } else { b >> 1 };
    }
    p
}

/// `x^(2^k) mod P` for every k a `usize` bit count can need.
const X2N: [u32; 64] = {
    let mut t = [0u32; 64];
    let mut p = 1u32 << 30; // x^1
    let mut k = 0;
    while k < 64 {
        t[k] = p;
        p = mul(p, p);
        k += 1;
    }
    t
};

/// `x^(8 n) mod P`: appending `n` zero bytes.
fn zeros(n: usize) -> u32 {
    let mut p = 1u32 << 31; // x^0
    let mut n = n;
    let mut k = 3; // 8 n = n · 2^3
    while n != 0 {
        if n & 1 != 0 {
            p = mul(X2N[k], p);
        }
        n >>= 1;
        k += 1;
    }
    p
}

/// The CRC-32C of a whole buffer, for the passes over entire batches (a
/// frame read back, a produced batch): crc-fast folds 64 bytes at a time
/// with carry-less multiplies where the CPU has them, about 3.8 times the
/// crc32c crate's three-way `crc32` instruction loop on 1 MB here. Small
/// CRCs and the arithmetic above keep the crc32c crate; both compute the
/// same function (tested below).
pub(crate) fn whole(bytes: &[u8]) -> u32 {
    crc_fast::crc32_iscsi(bytes)
}

/// `crc(A‖B)` from `crc(A)`, `crc(B)` and B's length.
pub(crate) fn combine(crc_a: u32, crc_b: u32, len_b: usize) -> u32 {
    mul(zeros(len_b), crc_a) ^ crc_b
}

/// `crc(B)` from `crc(A‖B)`, `crc(A)` and B's length.
pub(crate) fn suffix(crc_ab: u32, crc_a: u32, len_b: usize) -> u32 {
    crc_ab ^ mul(zeros(len_b), crc_a)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(seed: u64, n: usize) -> Vec<u8> {
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x.to_le_bytes()[0]
            })
            .collect()
    }

    /// Every length up to a few cache lines (the folding's edges), then
    /// large buffers at every alignment within a word.
    #[test]
    fn the_whole_buffer_pass_is_the_crc32c_crates_function() {
        assert_eq!(whole(b"123456789"), 0xe306_9283, "CRC-32C's check value");
        let data = bytes(7, (1 << 20) + 300);
        for n in 0..600 {
            assert_eq!(whole(&data[..n]), crc32c::crc32c(&data[..n]), "{n} bytes");
        }
        for start in 0..8 {
            for n in [4095, 65_536, 1 << 20] {
                let part = &data[start..start + n];
                assert_eq!(whole(part), crc32c::crc32c(part), "{n} bytes at {start}");
            }
        }
    }

    #[test]
    fn combining_and_splitting_agree_with_a_plain_pass() {
        for (i, (a_len, b_len)) in [
            (0, 0),
            (0, 5),
            (5, 0),
            (40, 1),
            (62, 4096),
            (3, 1 << 20),
            (61, 65_537),
        ]
        .into_iter()
        .enumerate()
        {
            let a = bytes(i as u64, a_len);
            let b = bytes(100 + i as u64, b_len);
            let whole: Vec<u8> = a.iter().chain(&b).copied().collect();
            let (ca, cb, cab) = (
                crc32c::crc32c(&a),
                crc32c::crc32c(&b),
                crc32c::crc32c(&whole),
            );
            assert_eq!(combine(ca, cb, b_len), cab, "{a_len} + {b_len}");
            assert_eq!(suffix(cab, ca, b_len), cb, "{a_len} + {b_len}");
            assert_eq!(
                crc32c::crc32c_combine(ca, cb, b_len),
                cab,
                "the crate agrees"
            );
        }
    }
}
