//! Decompression of produced record batches — gzip (flate2), snappy (snap;
//! raw blocks or the xerial framing Java clients write), lz4 (the LZ4 frame
//! format, lz4_flex) and zstd (the zstd crate) — each bounded: no codec may
//! produce more than the caller's limit, whatever sizes the compressed data
//! claims, so a small "bomb" cannot balloon the broker.

use crate::errors::KafkaCode;
use crate::records::RecordError;
use bytes::Bytes;
use std::io::Read;

/// The compression codec of a batch (attributes bits 0-2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    None,
    Gzip,
    Snappy,
    Lz4,
    Zstd,
}

impl Codec {
    /// The same codec as the log's version 2 frames name it.
    pub fn block_codec(self) -> mk_cluster::block::Codec {
        use mk_cluster::block::Codec as B;
        match self {
            Codec::None => B::None,
            Codec::Gzip => B::Gzip,
            Codec::Snappy => B::Snappy,
            Codec::Lz4 => B::Lz4,
            Codec::Zstd => B::Zstd,
        }
    }

    pub fn from_attributes(bits: i16) -> Result<Self, RecordError> {
        Ok(match bits {
            0 => Codec::None,
            1 => Codec::Gzip,
            2 => Codec::Snappy,
            3 => Codec::Lz4,
            4 => Codec::Zstd,
            other => {
                return Err(RecordError {
                    code: KafkaCode::UNSUPPORTED_COMPRESSION_TYPE,
                    message: format!("unknown compression codec {other}"),
                });
            }
        })
    }
}

/// The xerial snappy-java stream header ("\x82SNAPPY\0").
const XERIAL_MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];

/// The zstd window a produced batch may ask for (16 MiB): larger windows
/// would let a tiny frame make the decoder allocate a large buffer.
const ZSTD_WINDOW_LOG_MAX: u32 = 24;

fn too_large(limit: usize) -> RecordError {
    RecordError {
        code: KafkaCode::MESSAGE_TOO_LARGE,
        message: format!("the records decompress to more than {limit} bytes"),
    }
}

fn corrupt(codec: Codec, e: impl std::fmt::Display) -> RecordError {
    RecordError {
        code: KafkaCode::CORRUPT_MESSAGE,
        message: format!("cannot decompress {codec:?} records: {e}"),
    }
}

/// The records of a batch, decompressed, at most `limit` bytes.
pub fn decompress(codec: Codec, data: &Bytes, limit: usize) -> Result<Bytes, RecordError> {
    match codec {
        Codec::None => {
            if data.len() > limit {
                return Err(too_large(limit));
            }
            Ok(data.clone())
        }
        Codec::Gzip => read_bounded(codec, flate2::read::GzDecoder::new(&data[..]), limit),
        Codec::Lz4 => read_bounded(codec, lz4_flex::frame::FrameDecoder::new(&data[..]), limit),
        Codec::Zstd => {
            let mut d =
                zstd::stream::read::Decoder::new(&data[..]).map_err(|e| corrupt(codec, e))?;
            d.window_log_max(ZSTD_WINDOW_LOG_MAX)
                .map_err(|e| corrupt(codec, e))?;
            read_bounded(codec, d, limit)
        }
        Codec::Snappy => snappy(data, limit),
    }
}

fn read_bounded(codec: Codec, reader: impl Read, limit: usize) -> Result<Bytes, RecordError> {
    let mut out = Vec::new();
    reader
        .take(limit as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| corrupt(codec, e))?;
    if out.len() > limit {
        return Err(too_large(limit));
    }
    Ok(Bytes::from(out))
}

fn snappy(data: &[u8], limit: usize) -> Result<Bytes, RecordError> {
    if !data.starts_with(&XERIAL_MAGIC) {
        let mut out = Vec::new();
        snappy_block(data, limit, &mut out)?;
        return Ok(Bytes::from(out));
    }
    // xerial framing: magic, version i32, compatible version i32, then
    // blocks of (length i32, raw snappy).
    let mut r = mk_cluster::ByteReader::new(&data[XERIAL_MAGIC.len()..]);
    r.take(8).map_err(|e| corrupt(Codec::Snappy, e))?;
    let mut out = Vec::new();
    while !r.is_empty() {
        let n = r.i32().map_err(|e| corrupt(Codec::Snappy, e))?;
        if n < 0 {
            return Err(corrupt(Codec::Snappy, format!("block length {n}")));
        }
        let block = r.take(n as usize).map_err(|e| corrupt(Codec::Snappy, e))?;
        let room = limit.saturating_sub(out.len());
        snappy_block(block, room, &mut out)?;
    }
    Ok(Bytes::from(out))
}

/// Decompresses one raw snappy block onto `out`, refusing one that claims
/// more than `room` bytes before allocating for it.
fn snappy_block(block: &[u8], room: usize, out: &mut Vec<u8>) -> Result<(), RecordError> {
    let len = snap::raw::decompress_len(block).map_err(|e| corrupt(Codec::Snappy, e))?;
    if len > room {
        return Err(too_large(room));
    }
    let start = out.len();
    out.resize(start + len, 0);
    snap::raw::Decoder::new()
        .decompress(block, &mut out[start..])
        .map_err(|e| corrupt(Codec::Snappy, e))?;
    Ok(())
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
