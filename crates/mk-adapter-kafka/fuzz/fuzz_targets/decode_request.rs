//! Fuzzes Kafka request decoding: arbitrary bytes (a frame without its size
//! prefix) must decode or fail with a typed error, never panic, and never
//! allocate beyond what the bytes could hold. The first two bytes pick the
//! API key and the next two the version, so every generated decoder is
//! reached: through the broker's router (`api::decode_request`, the served
//! APIs and versions, exactly as a connection decodes) and through
//! `Request::decode_frame` (every API of every schema). Run with
//! `cargo fuzz run decode_request` from crates/mk-adapter-kafka.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let frame = bytes::Bytes::copy_from_slice(data);
    let _ = mk_adapter_kafka::api::decode_request(&frame);
    let _ = mk_adapter_kafka::messages::Request::decode_frame(&frame);
});
