//! Fuzzes the produce path's RecordBatch v2 decoder (with decompression):
//! arbitrary bytes decode or fail with a Kafka error code, never panic and
//! never decompress beyond the limit. Run with `cargo fuzz run
//! decode_records` from crates/mk-adapter-kafka.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mk_adapter_kafka::records::{DecodeLimits, decode_produced};

fuzz_target!(|data: &[u8]| {
    let records = bytes::Bytes::copy_from_slice(data);
    let limits = DecodeLimits {
        max_uncompressed_bytes: 1 << 20,
    };
    if let Ok(b) = decode_produced(&records, limits, 0, Some("t")) {
        assert!(b.record_count >= 1);
    }
});
