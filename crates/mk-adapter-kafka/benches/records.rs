//! The produce path's record work in the Kafka adapter, without the network
//! or the log: `decode_produced` over a batch shaped like librdkafka's
//! (about 1 MB, 100 B values, no keys, timestamps a few ms apart), which
//! checks Kafka's CRC over the batch, walks every record in place and builds
//! the stored block. Prints one JSON line per figure; asserts nothing about
//! time.
#![allow(clippy::print_stdout)]

use bytes::{Bytes, BytesMut};
use mk_adapter_kafka::records::{DecodeLimits, decode_produced, encode_batch};
use mk_cluster::{Record, RecordBatch};
use std::time::Instant;

fn emit(figure: &str, value: f64, unit: &str, workload: &str) {
    println!(
        "{{\"figure\":\"{figure}\",\"value\":{value:.2},\"unit\":\"{unit}\",\"workload\":\"{workload}\"}}"
    );
}

/// A produced v2 batch of `n` records with `value_len`-byte values, as our
/// encoder writes one (the same bytes a producer sends).
fn produced(n: usize, value_len: usize) -> Bytes {
    let value = Bytes::from(vec![0x5a; value_len]);
    let base = 1_764_000_000_000i64;
    let records = (0..n)
        .map(|i| Record::new(None, Some(value.clone()), base + (i / 1500) as i64))
        .collect();
    let mut batch = RecordBatch::new(records).expect("non-empty");
    batch.assign(0, 0).expect("offsets");
    let mut out = BytesMut::new();
    encode_batch(&batch, &mut out);
    out.freeze()
}

fn main() {
    let limits = DecodeLimits {
        max_uncompressed_bytes: 64 << 20,
    };
    for (value_len, n) in [(100usize, 9_000usize), (1024, 1_000)] {
        let bytes = produced(n, value_len);
        let rounds = (200_000_000 / bytes.len()).max(1);
        // The median of three runs of `rounds` decodes each.
        let mut runs: Vec<f64> = (0..3)
            .map(|_| {
                let start = Instant::now();
                for _ in 0..rounds {
                    let got = decode_produced(std::hint::black_box(&bytes), limits, 0, None)
                        .expect("a sound batch");
                    std::hint::black_box(got);
                }
                start.elapsed().as_secs_f64() * 1e9 / (rounds * n) as f64
            })
            .collect();
        runs.sort_by(f64::total_cmp);
        let label = if value_len == 100 { "100B" } else { "1KiB" };
        emit(
            &format!("kafka.decode_produced.{label}.ns_per_record"),
            runs[1],
            "ns/record",
            &format!(
                "decode_produced of a {} B batch of {n} records with {value_len} B values (CRC, record walk, stored block), about 200 MB per run, median of 3 runs",
                bytes.len()
            ),
        );
    }
}
