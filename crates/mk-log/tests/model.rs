//! A property test that drives a PartitionLog with random operations
//! (append, roll, truncate, clean reopen, crash reopen, prefix deletion) and
//! compares it with a plain in-memory model after every step.

mod common;

use common::*;
use mk_log::{LogConfig, PartitionLog, Record, RecordBatch};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Append(usize),
    Roll,
    Truncate(prop::sample::Index),
    CleanReopen,
    CrashReopen,
    Flush,
    DeleteOldest,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (1usize..5).prop_map(Op::Append),
        1 => Just(Op::Roll),
        1 => any::<prop::sample::Index>().prop_map(Op::Truncate),
        1 => Just(Op::CleanReopen),
        1 => Just(Op::CrashReopen),
        1 => Just(Op::Flush),
        1 => Just(Op::DeleteOldest),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn log_matches_model_under_random_operations(ops in prop::collection::vec(op(), 1..60)) {
        let dir = tempfile::tempdir().unwrap();
        let cfg = LogConfig { segment_max_bytes: 400, index_interval_bytes: 120, ..LogConfig::default() };
        let mut log = Some(PartitionLog::open(dir.path(), cfg.clone(), 0).unwrap());
        // Model: (offset, value) of every retained record, batch boundaries, log start.
        let mut records: Vec<(i64, String)> = Vec::new();
        let mut boundaries: Vec<i64> = vec![0];
        let mut counter = 0usize;
        for op in ops {
            let l = log.as_mut().unwrap();
            match op {
                Op::Append(n) => {
                    let base = l.leo();
                    let recs: Vec<Record> = (0..n).map(|j| {
                        counter += 1;
                        records.push((base + j as i64, format!("v{counter}")));
                        Record::new(None, Some(b(&format!("v{counter}"))), counter as i64)
                    }).collect();
                    l.append(RecordBatch::new(recs).unwrap()).unwrap();
                    boundaries.push(base + n as i64);
                }
                Op::Roll => l.roll().unwrap(),
                Op::Truncate(i) => {
                    let start = l.log_start_offset();
                    let candidates: Vec<i64> = boundaries.iter().copied().filter(|b| *b >= start).collect();
                    let to = *i.get(&candidates);
                    l.truncate_to(to).unwrap();
                    records.retain(|(o, _)| *o < to);
                    boundaries.retain(|b| *b <= to);
                }
                Op::CleanReopen => {
                    log.take().unwrap().close().unwrap();
                    log = Some(PartitionLog::open(dir.path(), cfg.clone(), 0).unwrap());
                }
                Op::CrashReopen => {
                    drop(log.take());
                    log = Some(PartitionLog::open(dir.path(), cfg.clone(), 0).unwrap());
                }
                Op::Flush => l.flush().unwrap(),
                Op::DeleteOldest => {
                    if let Some(first) = l.closed_segments().first().copied() {
                        l.delete_closed_segments(&[first.base_offset]).unwrap();
                        records.retain(|(o, _)| *o >= first.next_offset);
                    }
                }
            }
            let l = log.as_ref().unwrap();
            let got: Vec<(i64, String)> = l
                .fetch(l.log_start_offset(), usize::MAX, None)
                .unwrap()
                .into_iter()
                .map(|r| (r.offset, String::from_utf8(r.record.value.unwrap().to_vec()).unwrap()))
                .collect();
            prop_assert_eq!(&got, &records);
            let expected_leo = boundaries.last().copied().unwrap_or(0).max(l.log_start_offset());
            prop_assert_eq!(l.leo(), expected_leo);
            let segs = l.segments();
            for w in segs.windows(2) {
                prop_assert!(w[1].base_offset >= w[0].next_offset);
            }
        }
    }
}
