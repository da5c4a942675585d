//! Fuzzes the MKB1 decoders, both payload versions: arbitrary bytes must
//! decode or fail with CORRUPT_BATCH, never panic; whatever decodes must
//! re-encode to the same bytes. Run with `cargo fuzz run decode_batch` from
//! crates/mk-log.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mk_core::ErrorCode;
use mk_log::{block, codec};

fuzz_target!(|data: &[u8]| {
    let frame = bytes::Bytes::copy_from_slice(data);
    // Both decoders see every input: each must refuse the other's frames
    // cleanly, not only its own damage.
    match codec::decode(&frame, 1 << 20) {
        // `codec::decode` reads both versions into records; only a version 1
        // frame is its records' own encoding.
        Ok(batch) if block::frame_version(&frame) == Some(1) => {
            let again = codec::encode(&batch).expect("a decoded batch re-encodes");
            assert_eq!(again, frame, "decode/encode is the identity on valid frames");
        }
        Ok(_) => {}
        Err(e) => assert_eq!(e.code(), ErrorCode::CorruptBatch),
    }
    match block::decode(&frame, 1 << 20) {
        Ok(batch) => {
            let again = batch.encode().expect("a decoded block batch re-encodes");
            assert_eq!(again, frame, "decode/encode is the identity on valid v2 frames");
            let header = batch.kafka_batch_header().expect("a decoded block fits Kafka's batch");
            let mut wire = header.to_vec();
            wire.extend_from_slice(batch.block());
            assert_eq!(wire[17..21], crc32c_of(&wire[21..]).to_be_bytes());
        }
        Err(e) => assert_eq!(e.code(), ErrorCode::CorruptBatch),
    }
});

fn crc32c_of(bytes: &[u8]) -> u32 {
    crc32c::crc32c(bytes)
}
