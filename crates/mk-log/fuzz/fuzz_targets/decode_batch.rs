//! Fuzzes the MKB1 decoder: arbitrary bytes must decode or fail with
//! CORRUPT_BATCH, never panic; whatever decodes must re-encode to the same
//! bytes. Run with `cargo fuzz run decode_batch` from crates/mk-log.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mk_core::ErrorCode;
use mk_log::codec;

fuzz_target!(|data: &[u8]| {
    let frame = bytes::Bytes::copy_from_slice(data);
    match codec::decode(&frame, 1 << 20) {
        Ok(batch) => {
            let again = codec::encode(&batch).expect("a decoded batch re-encodes");
            assert_eq!(again, frame, "decode/encode is the identity on valid frames");
        }
        Err(e) => assert_eq!(e.code(), ErrorCode::CorruptBatch),
    }
});
