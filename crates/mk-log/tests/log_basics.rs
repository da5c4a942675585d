//! PartitionLog: append, fetch, read_batches, segments, sparse index,
//! replay, truncation, deletion, timestamps.

mod common;

use common::*;
use mk_core::ErrorCode;
use mk_log::{LogConfig, PartitionLog, Record, RecordBatch, codec};

#[test]
fn empty_dir_gets_one_empty_segment_at_zero() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path(), &LogConfig::default());
    assert_eq!(log.log_start_offset(), 0);
    assert_eq!(log.leo(), 0);
    assert_eq!(log.segments().len(), 1);
    assert!(log.closed_segments().is_empty());
    assert_eq!(files(dir.path()), vec!["00000000000000000000.log"]);
    assert!(log.fetch(0, 10, None).unwrap().is_empty());
}

#[test]
fn append_assigns_offsets_and_epoch_and_fetch_returns_records() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = PartitionLog::open(dir.path(), LogConfig::default(), 3).unwrap();
    let a = log.append(value_batch(&["a", "b"], 10)).unwrap();
    let c = log.append(value_batch(&["c"], 11)).unwrap();
    assert_eq!((a.base_offset, a.next_offset, a.leader_epoch), (0, 2, 3));
    assert_eq!((c.base_offset, c.next_offset, c.position), (2, 3, a.size));
    assert_eq!(log.leo(), 3);
    let got = log.fetch(1, 10, None).unwrap();
    assert_eq!(got.iter().map(|r| r.offset).collect::<Vec<_>>(), vec![1, 2]);
    assert_eq!(got[0].record.value, Some(b("b")));
    assert_eq!(got[1].batch.leader_epoch, 3);
    assert_eq!(
        log.fetch(0, 2, None).unwrap().len(),
        2,
        "max_records bounds the result"
    );
    assert_eq!(
        log.fetch(0, 10, Some(1)).unwrap().len(),
        1,
        "end offset bounds the result"
    );
    assert!(
        log.fetch(3, 10, None).unwrap().is_empty(),
        "offset == LEO gives nothing"
    );
    assert!(
        log.fetch(0, 0, None).unwrap().is_empty(),
        "max_records 0 gives nothing"
    );
    for bad in [-1, 4] {
        assert_eq!(
            log.fetch(bad, 10, None).unwrap_err().code(),
            ErrorCode::OffsetOutOfRange
        );
    }
}

#[test]
fn none_and_empty_bytes_survive_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), &LogConfig::default());
    log.append(
        RecordBatch::new(vec![
            Record::new(None, None, 1),
            Record::new(Some(b("")), Some(b("")), 2),
        ])
        .unwrap(),
    )
    .unwrap();
    let got = log.fetch(0, 10, None).unwrap();
    assert_eq!(
        (got[0].record.key.clone(), got[0].record.value.clone()),
        (None, None)
    );
    assert_eq!(
        (got[1].record.key.clone(), got[1].record.value.clone()),
        (Some(b("")), Some(b("")))
    );
}

#[test]
fn segments_roll_by_size_with_twenty_digit_names() {
    let cfg = small_config();
    let (dir, log) = keyed_log(&cfg, 40);
    let segs = log.segments();
    assert!(segs.len() > 2, "{segs:?}");
    for w in segs.windows(2) {
        assert_eq!(w[1].base_offset, w[0].next_offset, "contiguous");
        assert!(w[0].log_bytes <= cfg.segment_max_bytes);
    }
    let names = files(dir.path());
    assert!(names.contains(&format!("{:020}.log", segs[1].base_offset)));
    assert!(
        names
            .iter()
            .all(|n| n.split('.').next().unwrap().len() == 20)
    );
}

#[test]
fn roll_closes_active_only_when_it_has_data() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), &LogConfig::default());
    log.roll().unwrap();
    assert_eq!(log.segments().len(), 1);
    log.append(value_batch(&["x"], 1)).unwrap();
    log.roll().unwrap();
    assert_eq!(log.segments().len(), 2);
    assert_eq!(log.active().base_offset, 1);
    log.append(value_batch(&["y"], 1)).unwrap();
    assert_eq!(dump(&log).len(), 2);
}

#[test]
fn sparse_index_has_entries_only_at_interval_boundaries_and_floor_lookup_works() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = LogConfig {
        segment_max_bytes: 1 << 20,
        index_interval_bytes: 300,
        ..LogConfig::default()
    };
    let mut log = open(dir.path(), &cfg);
    let mut infos = Vec::new();
    for i in 0..50 {
        infos.push(log.append(keyed(i, 1000, i as i64)).unwrap());
    }
    log.roll().unwrap();
    // The next flush writes the closed segment's index files (the roll
    // leaves them to it, outside the partition lock).
    assert!(!dir.path().join("00000000000000000000.index").exists());
    log.flush().unwrap();
    let index = mk_log::index::OffsetIndex::from_bytes(
        &std::fs::read(dir.path().join("00000000000000000000.index")).unwrap(),
    )
    .unwrap();
    // Expected entries: the first batch, then each batch starting at least
    // 300 bytes after the last indexed position.
    let mut expected = Vec::new();
    let mut last: Option<u64> = None;
    for info in &infos {
        if last.is_none_or(|l| info.position - l >= 300) {
            expected.push((u32::try_from(info.base_offset).unwrap(), info.position));
            last = Some(info.position);
        }
    }
    assert_eq!(index.entries(), expected.as_slice());
    assert!(index.len() < infos.len() / 2, "index is sparse");
    for (i, info) in infos.iter().enumerate() {
        let (rel, pos) = index.floor(u32::try_from(i).unwrap()).unwrap();
        assert!(rel as usize <= i && pos <= info.position);
        // Every offset is found by scanning forward from the floor entry.
        assert_eq!(
            log.fetch(i as i64, 1, None).unwrap()[0].record.value,
            Some(b(&format!("v{i}")))
        );
    }
}

#[test]
fn replay_across_segments_from_any_offset_gives_the_same_records() {
    let cfg = small_config();
    let (dir, mut log) = temp_log(&cfg);
    for i in 0..30 {
        let n = 1 + i % 3;
        let vals: Vec<String> = (0..n).map(|j| format!("r{i}-{j}")).collect();
        let refs: Vec<&str> = vals.iter().map(String::as_str).collect();
        log.append(value_batch(&refs, i as i64)).unwrap();
    }
    assert!(log.segments().len() > 3);
    let all = dump(&log);
    assert_eq!(all.len() as i64, log.leo());
    for start in 0..log.leo() {
        let part = log.fetch(start, usize::MAX, None).unwrap();
        let start_index = usize::try_from(start).unwrap();
        assert_eq!(part.len(), all.len() - start_index, "from {start}");
        for (r, a) in part.iter().zip(&all[start_index..]) {
            assert_eq!((r.offset, &r.record.value), (a.0, &a.2));
        }
    }
    // And the same after a clean reopen (trusted segments, lazy indexes)...
    log.close().unwrap();
    let log = open(dir.path(), &cfg);
    assert_eq!(dump(&log), all);
    // ...and after a crash (full recovery scan).
    drop(log);
    let _ = std::fs::remove_file(dir.path().join("clean-shutdown"));
    let log = open(dir.path(), &cfg);
    assert_eq!(dump(&log), all);
}

#[test]
fn read_batches_returns_whole_batches_bounded_by_bytes_and_end() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), &LogConfig::default());
    let mut sizes = Vec::new();
    for i in 0..5 {
        sizes.push(
            usize::try_from(log.append(value_batch(&["a", "b", "c"], i)).unwrap().size).unwrap(),
        );
    }
    // Offset 4 lies inside the second batch (3..6): it starts the result.
    let got = log.read_batches(4, usize::MAX, None).unwrap();
    assert_eq!(
        got.iter().map(|b| b.base_offset()).collect::<Vec<_>>(),
        vec![3, 6, 9, 12]
    );
    // At least one batch even if it alone exceeds max_bytes.
    assert_eq!(log.read_batches(0, 1, None).unwrap().len(), 1);
    // Stops before exceeding max_bytes.
    assert_eq!(
        log.read_batches(0, sizes[0] + sizes[1] + 1, None)
            .unwrap()
            .len(),
        2
    );
    // Stops before a batch that starts at/after the end.
    assert_eq!(log.read_batches(0, usize::MAX, Some(6)).unwrap().len(), 2);
    assert!(log.read_batches(15, 100, None).unwrap().is_empty());
    assert_eq!(
        log.read_batches(16, 100, None).unwrap_err().code(),
        ErrorCode::OffsetOutOfRange
    );
    // Frames are the exact stored bytes.
    let decoded = got[0].decode().unwrap();
    assert_eq!(codec::encode(&decoded).unwrap(), got[0].frame);
}

#[test]
fn a_bounded_read_leaves_the_frame_it_will_not_take_unread() {
    // Frames of about 200 KB; a read bounded to 300 KB takes one. The
    // second does not fit: its header tells, and its body stays on disk
    // (a consumer fetching 1 MB batches one at a time read every batch
    // twice when it was read to learn that).
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig::default();
    let mut log = open(dir.path(), &config);
    let value = "x".repeat(200_000);
    let mut sizes = Vec::new();
    for i in 0..4 {
        sizes.push(log.append(value_batch(&[&value], i)).unwrap().size);
    }
    let max_bytes = 300_000;
    // What the first read may take: the limit, the index interval behind
    // the offset, a frame header.
    let bound = (max_bytes + codec::FRAME_HEADER_BYTES) as u64 + config.index_interval_bytes;
    for offset in 0..4 {
        for locate in [false, true] {
            let before = log.bytes_read();
            let got = if locate {
                log.locate_batches(offset, max_bytes, None).unwrap()
            } else {
                log.read_batches(offset, max_bytes, None).unwrap()
            };
            let read = log.bytes_read() - before;
            assert_eq!(
                got.iter().map(|b| b.base_offset()).collect::<Vec<_>>(),
                vec![offset]
            );
            assert!(
                read >= sizes[usize::try_from(offset).unwrap()] && read <= bound,
                "offset {offset}: read {read} bytes for one frame of {}, at most {bound} expected",
                sizes[usize::try_from(offset).unwrap()]
            );
        }
    }
    // A limit with room for three takes three, in one read.
    let before = log.bytes_read();
    let three = sizes[..3].iter().sum::<u64>();
    let got = log
        .locate_batches(0, usize::try_from(three).unwrap() + 10, None)
        .unwrap();
    assert_eq!(got.len(), 3);
    assert!(log.bytes_read() - before <= three + 10 + bound - max_bytes as u64);
}

#[test]
fn a_bounded_read_across_segments_reads_the_next_one_for_the_room_left() {
    // One ~200 KB frame per segment: a read bounded to 300 KB takes the
    // first and stops at the next segment's header without reading the
    // frame behind it.
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        segment_max_bytes: 100_000,
        ..LogConfig::default()
    };
    let mut log = open(dir.path(), &config);
    let value = "x".repeat(200_000);
    let mut sizes = Vec::new();
    for i in 0..4 {
        sizes.push(log.append(value_batch(&[&value], i)).unwrap().size);
    }
    assert_eq!(log.segments().len(), 4);
    let max_bytes = 300_000;
    let before = log.bytes_read();
    let got = log.locate_batches(1, max_bytes, None).unwrap();
    assert_eq!(got.len(), 1);
    let read = log.bytes_read() - before;
    // The frame, and of the next segment no more than the room left (at
    // least a small first read).
    let room = max_bytes as u64 - sizes[1];
    assert!(
        read <= sizes[1] + room.max(4096),
        "read {read} bytes for one frame of {}",
        sizes[1]
    );
}

#[test]
fn replica_appends_require_the_next_offset_and_keep_bytes_identical() {
    let leader_dir = tempfile::tempdir().unwrap();
    let follower_dir = tempfile::tempdir().unwrap();
    let mut leader = PartitionLog::open(leader_dir.path(), small_config(), 4).unwrap();
    let mut follower = PartitionLog::open(follower_dir.path(), small_config(), 0).unwrap();
    for i in 0..20 {
        leader.append(keyed(i, 5, i as i64)).unwrap();
    }
    let batches = leader.read_batches(0, usize::MAX, None).unwrap();
    assert_eq!(
        follower
            .append_replica_frame(&batches[1])
            .unwrap_err()
            .code(),
        ErrorCode::InvalidRecord,
        "base offset must equal LEO"
    );
    for b in &batches {
        follower.append_replica_frame(b).unwrap();
    }
    assert_eq!(follower.read_batches(0, usize::MAX, None).unwrap(), batches);
    assert_eq!(
        follower.fetch(0, 100, None).unwrap()[0].batch.leader_epoch,
        4
    );
    let mut unassigned = keyed(0, 1, 0);
    assert_eq!(
        follower
            .append_replica_batch(unassigned.clone())
            .unwrap_err()
            .code(),
        ErrorCode::InvalidRecord
    );
    unassigned.assign(follower.leo(), 4).unwrap();
    follower.append_replica_batch(unassigned).unwrap();
    assert_eq!(follower.leo(), 21);
}

#[test]
fn oversized_batch_is_invalid_record_and_writes_nothing() {
    let cfg = LogConfig {
        max_batch_bytes: 100,
        ..LogConfig::default()
    };
    let (_dir, mut log) = temp_log(&cfg);
    let big = RecordBatch::new(vec![Record::new(
        None,
        Some(bytes::Bytes::from(vec![0u8; 200])),
        0,
    )])
    .unwrap();
    assert_eq!(
        log.append(big).unwrap_err().code(),
        ErrorCode::InvalidRecord
    );
    assert_eq!(log.leo(), 0);
    assert_eq!(log.active().log_bytes, 0);
}

#[test]
fn truncate_to_works_only_at_batch_boundaries() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), &LogConfig::default());
    for i in 0..4 {
        log.append(value_batch(&["a", "b"], i)).unwrap(); // batches 0..2, 2..4, 4..6, 6..8
    }
    assert_eq!(
        log.truncate_to(3).unwrap_err().code(),
        ErrorCode::InvalidRecord
    );
    assert_eq!(
        log.truncate_to(9).unwrap_err().code(),
        ErrorCode::OffsetOutOfRange
    );
    log.truncate_to(8).unwrap();
    assert_eq!(log.leo(), 8, "truncating to LEO is a no-op");
    log.truncate_to(4).unwrap();
    assert_eq!(log.leo(), 4);
    assert_eq!(dump(&log).len(), 4);
    let next = log.append(value_batch(&["c"], 9)).unwrap();
    assert_eq!(next.base_offset, 4);
    log.truncate_to(0).unwrap();
    assert_eq!((log.leo(), dump(&log).len()), (0, 0));
}

#[test]
fn truncation_removes_later_segments_and_keeps_earlier_ones_untouched() {
    let cfg = small_config();
    let (dir, mut log) = keyed_log(&cfg, 60);
    let segs = log.segments();
    assert!(segs.len() >= 4);
    let first = dir.path().join("00000000000000000000.log");
    let first_bytes = std::fs::read(&first).unwrap();
    let first_mtime = std::fs::metadata(&first).unwrap().modified().unwrap();
    // Cut in the middle of the second segment.
    let cut = segs[1].base_offset + 2;
    log.truncate_to(cut).unwrap();
    let after = log.segments();
    assert_eq!(after.len(), 2, "later segments removed whole");
    assert_eq!(
        after[0].base_offset, segs[0].base_offset,
        "segment boundaries kept"
    );
    assert_eq!(after[1].base_offset, segs[1].base_offset);
    assert_eq!(log.leo(), cut);
    assert_eq!(
        std::fs::read(&first).unwrap(),
        first_bytes,
        "retained log not rewritten"
    );
    assert_eq!(
        std::fs::metadata(&first).unwrap().modified().unwrap(),
        first_mtime
    );
    assert!(!files(dir.path()).contains(&format!("{:020}.log", segs[2].base_offset)));
    // The truncated log reopens to the same state after a crash.
    let before = dump(&log);
    drop(log);
    let log = open(dir.path(), &cfg);
    assert_eq!(dump(&log), before);
    assert_eq!(log.leo(), cut);
}

#[test]
fn delete_closed_segments_accepts_only_a_prefix() {
    let (_dir, mut log) = keyed_log(&small_config(), 40);
    let closed: Vec<i64> = log
        .closed_segments()
        .iter()
        .map(|s| s.base_offset)
        .collect();
    assert!(closed.len() >= 3);
    let err = log.delete_closed_segments(&[closed[1]]).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidRequest);
    let active = log.active().base_offset;
    assert_eq!(
        log.delete_closed_segments(&[active]).unwrap_err().code(),
        ErrorCode::InvalidRequest
    );
    log.delete_closed_segments(&closed[..2]).unwrap();
    assert_eq!(log.log_start_offset(), closed[2]);
    assert_eq!(
        log.fetch(closed[2] - 1, 1, None).unwrap_err().code(),
        ErrorCode::OffsetOutOfRange
    );
    assert_eq!(log.fetch(closed[2], 1, None).unwrap()[0].offset, closed[2]);
}

#[test]
fn offset_for_timestamp_finds_the_first_record_at_or_after() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = LogConfig {
        segment_max_bytes: 600,
        index_interval_bytes: 100,
        ..LogConfig::default()
    };
    let mut log = open(dir.path(), &cfg);
    // Timestamps mostly increase, with one record out of order.
    let ts: Vec<i64> = (0..40)
        .map(|i| if i == 20 { 5 } else { 1000 + i * 10 })
        .collect();
    for (i, t) in ts.iter().enumerate() {
        log.append(keyed(i, 1000, *t)).unwrap();
    }
    assert!(log.segments().len() > 2);
    let check = |log: &PartitionLog| {
        for target in [-5, 0, 5, 6, 1000, 1001, 1150, 1190, 1390, 1391, 5000] {
            let expected = ts.iter().position(|t| *t >= target).map(|p| p as i64);
            assert_eq!(
                log.offset_for_timestamp(target).unwrap(),
                expected,
                "target {target}"
            );
        }
    };
    check(&log);
    log.close().unwrap();
    check(&open(dir.path(), &cfg));
}
