//! The codec of a produced batch and its decompression, answered as Kafka
//! answers them. The decoding is the log's one bounded decoder
//! (`block::decompress`: gzip, snappy raw or xerial-framed, LZ4 frames,
//! zstd), which no claimed size can make produce more than the caller's
//! limit, so a small "bomb" cannot balloon the broker; this module only
//! names its failures in Kafka's codes.

use crate::errors::KafkaCode;
use crate::records::RecordError;
use bytes::Bytes;
use mk_cluster::LogError;
use mk_cluster::block;
#[cfg(test)]
use mk_cluster::block::XERIAL_MAGIC;

/// The compression codec of a batch (attributes bits 0-2): the log's own.
pub use mk_cluster::block::Codec;

/// Kafka's attribute bits read as a [`Codec`], with Kafka's answer for bits
/// that name none.
pub trait AttributeCodec: Sized {
    /// The codec named by attribute bits 0-2; UNSUPPORTED_COMPRESSION_TYPE
    /// for an unknown one.
    fn from_attributes(bits: i16) -> Result<Self, RecordError>;
}

impl AttributeCodec for Codec {
    fn from_attributes(bits: i16) -> Result<Self, RecordError> {
        u16::try_from(bits)
            .ok()
            .and_then(Codec::from_id)
            .ok_or_else(|| RecordError {
                code: KafkaCode::UNSUPPORTED_COMPRESSION_TYPE,
                message: format!("unknown compression codec {bits}"),
            })
    }
}

/// The records of a batch, decompressed, at most `limit` bytes: a batch
/// that would grow past the limit is MESSAGE_TOO_LARGE, damaged data
/// CORRUPT_MESSAGE.
pub fn decompress(codec: Codec, data: &Bytes, limit: usize) -> Result<Bytes, RecordError> {
    block::decompress(codec, data, limit).map_err(|e| match e {
        LogError::DecompressedTooLarge { limit } => RecordError {
            code: KafkaCode::MESSAGE_TOO_LARGE,
            message: format!("the records decompress to more than {limit} bytes"),
        },
        LogError::CorruptBatch(message) => RecordError {
            code: KafkaCode::CORRUPT_MESSAGE,
            message,
        },
        other => RecordError {
            code: KafkaCode::CORRUPT_MESSAGE,
            message: other.to_string(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn payload() -> Vec<u8> {
        (0..10_000u32)
            .flat_map(|i| (i % 251).to_be_bytes())
            .collect()
    }

    #[test]
    fn every_codec_round_trips_within_the_limit() {
        let data = payload();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&data).unwrap();
        let gz = gz.finish().unwrap();
        let snappy = snap::raw::Encoder::new().compress_vec(&data).unwrap();
        let mut lz4 = lz4_flex::frame::FrameEncoder::new(Vec::new());
        lz4.write_all(&data).unwrap();
        let lz4 = lz4.finish().unwrap();
        let zstd = zstd::encode_all(&data[..], 3).unwrap();
        for (codec, bytes) in [
            (Codec::Gzip, gz),
            (Codec::Snappy, snappy),
            (Codec::Lz4, lz4),
            (Codec::Zstd, zstd),
        ] {
            let bytes = Bytes::from(bytes);
            assert_eq!(
                decompress(codec, &bytes, data.len()).unwrap(),
                data,
                "{codec:?}"
            );
            let e = decompress(codec, &bytes, data.len() - 1).unwrap_err();
            assert_eq!(
                e.code,
                KafkaCode::MESSAGE_TOO_LARGE,
                "{codec:?}: {}",
                e.message
            );
        }
    }

    #[test]
    fn xerial_framed_snappy_is_read() {
        let data = payload();
        let mut framed = XERIAL_MAGIC.to_vec();
        framed.extend_from_slice(&1i32.to_be_bytes());
        framed.extend_from_slice(&1i32.to_be_bytes());
        for chunk in data.chunks(3000) {
            let block = snap::raw::Encoder::new().compress_vec(chunk).unwrap();
            framed.extend_from_slice(&i32::try_from(block.len()).unwrap().to_be_bytes());
            framed.extend_from_slice(&block);
        }
        assert_eq!(
            decompress(Codec::Snappy, &Bytes::from(framed), data.len()).unwrap(),
            data
        );
    }

    #[test]
    fn garbage_is_corrupt_not_a_panic() {
        for codec in [Codec::Gzip, Codec::Snappy, Codec::Lz4, Codec::Zstd] {
            let e =
                decompress(codec, &Bytes::from_static(b"\xff\xfe garbage"), 1 << 20).unwrap_err();
            assert!(
                e.code == KafkaCode::CORRUPT_MESSAGE || e.code == KafkaCode::MESSAGE_TOO_LARGE,
                "{codec:?}"
            );
        }
    }

    #[test]
    fn a_snappy_block_claiming_gigabytes_is_refused_before_allocating() {
        // A raw snappy block whose length preamble claims ~4 GiB.
        let bomb = Bytes::from_static(&[0xff, 0xff, 0xff, 0xff, 0x0f, 0x00]);
        let e = decompress(Codec::Snappy, &bomb, 1 << 20).unwrap_err();
        assert_eq!(e.code, KafkaCode::MESSAGE_TOO_LARGE, "{}", e.message);
    }
}
