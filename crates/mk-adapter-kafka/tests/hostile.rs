//! Hostile frames against every generated decoder: a valid sample request
//! of every API at every version of its schema (so every advertised one
//! too, through the broker's own `decode_request`) is mutated — every
//! 4-byte window set to 0x7fffffff and to 0xffffffff (counts and lengths
//! of two billion, negative lengths), a maximal varint written at every
//! offset, truncated at every byte, and seeded random bit flips — and
//! decoded. Decoding never panics, and never allocates more than a bound
//! proportional to the frame: a counting global allocator (this test
//! binary's only test, so nothing else allocates meanwhile) measures every
//! byte each decode allocates, which must stay within
//! `4 * largest struct * frame length + 64 KiB`.
//!
//! The random flips take their seed from `MK_HOSTILE_SEED` (default
//! fixed); a failure names the seed, the API, version and mutation.

#[path = "generated/samples.rs"]
mod samples;

use bytes::Bytes;
use mk_adapter_kafka::api;
use mk_adapter_kafka::codec::{Message, Writer};
use mk_adapter_kafka::frame::RequestHeader;
use mk_adapter_kafka::messages::{self, Request, SCHEMAS};
use samples::Sample;
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};
use std::alloc::System;

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// A request frame (without its size prefix): header and body.
fn frame<M: Message>(key: i16, v: i16, flexible: bool, body: &M) -> Vec<u8> {
    let mut w = Writer::new(false);
    RequestHeader {
        api_key: key,
        api_version: v,
        correlation_id: 7,
        client_id: Some("hostile".into()),
    }
    .write(&mut w, flexible);
    w.flexible = flexible;
    body.write(&mut w, v);
    w.into_bytes().to_vec()
}

/// Every sample request frame: (name, key, version, bytes).
fn sample_frames() -> Vec<(&'static str, i16, i16, Vec<u8>)> {
    let mut out = Vec::new();
    macro_rules! one {
        ($name:ident, $module:ident, $req:ident, $resp:ident, $key:ident, $lo:expr, $hi:expr, $flex:expr) => {{
            for v in $lo..=$hi {
                let body = <messages::$module::$req as Sample>::sample(v, 1);
                let key = messages::key::$key;
                out.push((stringify!($name), key, v, frame(key, v, v >= $flex, &body)));
            }
        }};
    }
    for_every_api!(one);
    out
}

/// The size of the largest generated struct: what one item of an array
/// can cost per byte of the frame.
fn largest_struct() -> usize {
    let mut largest = 0;
    macro_rules! one {
        ($ours:ty, $theirs:ty, $lo:expr, $hi:expr, $flex:expr) => {
            largest = largest.max(std::mem::size_of::<$ours>());
        };
    }
    for_every_struct!(one);
    largest
}

/// The mutations of one frame, each with a label for failures.
fn mutations(frame: &[u8], seed: u64) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    // The header's key and version stay, so the same decoder is reached.
    for at in 4..frame.len().saturating_sub(3) {
        for word in [0x7fff_ffffu32, 0xffff_ffff] {
            let mut m = frame.to_vec();
            m[at..at + 4].copy_from_slice(&word.to_be_bytes());
            out.push((format!("{word:#x} at {at}"), m));
        }
    }
    for at in 4..frame.len() {
        let mut m = frame[..at].to_vec();
        m.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x0f]);
        m.extend_from_slice(frame.get(at + 5..).unwrap_or_default());
        out.push((format!("max varint at {at}"), m));
    }
    for len in 0..frame.len() {
        out.push((format!("truncated to {len}"), frame[..len].to_vec()));
    }
    let mut state = seed;
    for flip in 0..64 {
        let mut m = frame.to_vec();
        for _ in 0..1 + flip % 4 {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let bit = usize::try_from(state >> 33).unwrap_or(0) % (8 * (m.len() - 4));
            m[4 + bit / 8] ^= 1 << (bit % 8);
        }
        out.push((format!("bit flips #{flip}"), m));
    }
    out
}

/// Decodes with both entry points and returns the bytes allocated.
fn decode_counting(frame: Bytes) -> usize {
    let region = Region::new(GLOBAL);
    let _ = api::decode_request(&frame);
    let _ = Request::decode_frame(&frame);
    region.change().bytes_allocated
}

#[test]
fn mutated_frames_of_every_decoder_never_panic_nor_allocate_beyond_a_bound() {
    let seed: u64 = std::env::var("MK_HOSTILE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x9e37_79b9_7f4a_7c15);
    let per_byte = 4 * largest_struct();
    let frames = sample_frames();
    let versions: usize = SCHEMAS
        .iter()
        .map(|s| usize::from((s.max_version - s.min_version + 1).unsigned_abs()))
        .sum();
    assert_eq!(frames.len(), versions, "a frame per schema version");
    let mut decoded = 0;
    for (name, key, v, frame) in &frames {
        // The sample itself decodes, through the router when served.
        let (_, body) = Request::decode_frame(&Bytes::from(frame.clone()))
            .unwrap_or_else(|e| panic!("{name} v{v}: the valid sample fails: {e}"));
        assert_eq!(messages::schema(*key).map(|s| s.name), Some(*name));
        drop(body);
        if api::spec(*key).is_some_and(|s| s.supports(*v)) {
            api::decode_request(&Bytes::from(frame.clone()))
                .unwrap_or_else(|e| panic!("{name} v{v}: the router refuses the sample: {e}"));
        }
        for (what, m) in mutations(frame, seed) {
            let len = m.len();
            let allocated = decode_counting(Bytes::from(m));
            let bound = per_byte * len + 64 * 1024;
            assert!(
                allocated <= bound,
                "{name} v{v}, {what} (seed {seed}): {allocated} bytes allocated \
                 decoding {len} bytes, more than {bound}"
            );
            decoded += 1;
        }
    }
    assert!(decoded > 100_000, "{decoded} mutated frames");
}
