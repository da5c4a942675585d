//! Nothing lost on version 2 logs: the crash, fault-injection and recovery
//! tests of version 1 (recovery.rs, cleanup.rs, group_commit.rs) again on
//! logs of producers' blocks, compressed with every codec — a fault of
//! every kind at every write and fsync site, torn version 2 tails, CRC
//! damage inside a block, and a crash at every step of compacting
//! compressed batches.

mod common;

use bytes::Bytes;
use common::blocks::*;
use common::*;
use mk_log::block::{self, Codec};
use mk_log::{AppendInfo, Fault, LogConfig, PartitionLog, Record, RecordBatch};
use std::path::Path;

type Expected = Vec<(i64, Option<Bytes>, Option<Bytes>, i64)>;

/// The `k`-th batch of a run: 1-3 records, the codecs in turn, as the
/// produce path hands them to the log (records only in the block).
fn produced(k: usize) -> (Vec<Record>, RecordBatch) {
    let rs = records(k * 3, 1 + k % 3);
    let block = block_batch(&rs, CODECS[k % CODECS.len()], None);
    (rs, RecordBatch::from_block(block).unwrap())
}

/// What a reader must see of the appends that were acknowledged.
fn expected(acked: &[(AppendInfo, Vec<Record>)]) -> Expected {
    acked
        .iter()
        .flat_map(|(info, rs)| {
            rs.iter().enumerate().map(move |(i, r)| {
                (
                    info.base_offset + i as i64,
                    r.key.clone(),
                    r.value.clone(),
                    r.timestamp_ms,
                )
            })
        })
        .collect()
}

/// Appends `n` produced batches (a flush after every fourth), keeping
/// those acknowledged.
fn run(log: &mut PartitionLog, n: usize) -> Vec<(AppendInfo, Vec<Record>)> {
    run_flushing(log, n, true)
}

fn run_flushing(log: &mut PartitionLog, n: usize, flush: bool) -> Vec<(AppendInfo, Vec<Record>)> {
    let mut acked = Vec::new();
    for k in 0..n {
        let (rs, batch) = produced(k);
        if let Ok(info) = log.append(batch) {
            assert_eq!(block::frame_version(&frame_at(log, info)), Some(2));
            acked.push((info, rs));
        }
        if flush && k % 4 == 3 {
            let _ = log.flush();
        }
    }
    acked
}

/// The stored frame an append wrote.
fn frame_at(log: &PartitionLog, info: AppendInfo) -> Bytes {
    log.read_batches(info.base_offset, 1, None).unwrap()[0]
        .frame
        .clone()
}

#[test]
fn a_fault_of_every_kind_at_every_site_of_version_2_appends_loses_nothing_acknowledged() {
    let cfg = small_config();
    // A run without faults: how many write and fsync sites it passes.
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), &cfg);
    let sites_before = cfg.faults.sites_passed();
    let all = run(&mut log, 24);
    let sites = cfg.faults.sites_passed() - sites_before;
    assert!(log.segments().len() >= 3, "the run rolls segments");
    assert!(sites >= 30, "only {sites} sites");
    drop(log);
    let (mut checked, mut refused) = (0, 0);
    for fault in Fault::ALL {
        for site in 0..sites {
            let cfg = small_config();
            let (dir, mut log) = temp_log(&cfg);
            cfg.faults
                .inject_at(cfg.faults.sites_passed() + site, fault);
            let acked = run(&mut log, 24);
            refused += u64::from(acked.len() < 24);
            cfg.faults.clear();
            drop(log); // the process dies: no clean shutdown
            let mut log = PartitionLog::open(dir.path(), cfg.clone(), 0).unwrap_or_else(|e| {
                panic!("{fault:?} at site {site}: the log does not reopen: {e}")
            });
            assert_eq!(
                dump(&log),
                expected(&acked),
                "{fault:?} at site {site}: every acknowledged record, nothing else"
            );
            // And the log takes new version 2 writes where it ends.
            let leo = log.leo();
            let (rs, batch) = produced(99);
            let info = log.append(batch).unwrap();
            assert_eq!(info.base_offset, leo);
            assert_eq!(dump(&log).len(), expected(&acked).len() + rs.len());
            checked += 1;
        }
    }
    assert_eq!(checked, 3 * sites);
    assert!(refused >= sites, "faults refused appends in {refused} runs");
    assert_eq!(
        expected(&all).len(),
        48,
        "the fault-free run acknowledged all"
    );
}

#[test]
fn a_torn_version_2_tail_is_cut_and_every_codec_survives_a_crash() {
    let cfg = LogConfig::default();
    let (dir, mut log) = temp_log(&cfg);
    let acked = run(&mut log, 10);
    let want = expected(&acked);
    drop(log); // crash without flush: the writes reached the OS
    let path = seg_file(dir.path(), 0, "log");
    let good_len = std::fs::metadata(&path).unwrap().len();
    // Half a compressed version 2 frame: valid magic and length, then the
    // process died.
    let mut torn = block_batch(&records(500, 3), Codec::Zstd, None);
    torn.assign(want.len() as i64, 0).unwrap();
    let mut frame = torn.encode().unwrap().to_vec();
    frame.truncate(frame.len() - 5);
    append_bytes(&path, &frame);
    let mut log = open(dir.path(), &cfg);
    assert_eq!(dump(&log), want);
    assert_eq!(std::fs::metadata(&path).unwrap().len(), good_len, "cut");
    let (_, batch) = produced(7);
    assert_eq!(log.append(batch).unwrap().base_offset, want.len() as i64);
}

#[test]
fn crc_damage_in_a_version_2_block_refuses_to_open_unless_it_is_the_torn_last_frame() {
    let cfg = LogConfig::default();
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), &cfg);
    let acked = run(&mut log, 10);
    drop(log);
    // A flipped byte inside the compressed block of the 6th batch, intact
    // batches after it: damage at rest, nothing may be cut.
    let path = seg_file(dir.path(), 0, "log");
    let sixth = acked[5].0;
    let at = usize::try_from(sixth.position).unwrap() + 12 + block::BLOCK_PAYLOAD_HEADER_BYTES + 2;
    assert!(
        at < usize::try_from(sixth.position + sixth.size).unwrap(),
        "inside the block"
    );
    let bytes = flip_byte(&path, at, 0xff);
    assert_open_refused(dir.path(), &cfg, "not a torn write");
    assert_untouched(&path, &bytes);
    // The way out the message names: cut there. Five batches remain.
    cut_file(&path, sixth.position);
    assert_eq!(reopened(dir.path(), &cfg), expected(&acked[..5]));

    // Damage in the last frame's block has nothing intact after it: a
    // torn write, cut.
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), &cfg);
    let acked = run(&mut log, 5);
    drop(log);
    let last = acked[4].0;
    let path = seg_file(dir.path(), 0, "log");
    flip_byte(
        &path,
        usize::try_from(last.position + last.size).unwrap() - 3,
        0xff,
    );
    let log = open(dir.path(), &cfg);
    assert_eq!(dump(&log), expected(&acked[..4]));
    assert_eq!(std::fs::metadata(&path).unwrap().len(), last.position);
}

#[test]
fn damage_in_a_closed_version_2_segment_refuses_to_open_and_repairs_nothing() {
    let cfg = small_config();
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), &cfg);
    // Never flushed, so a reopen after the crash reads every segment.
    run_flushing(&mut log, 24, false);
    drop(log);
    let path = seg_file(dir.path(), 0, "log");
    let bytes = flip_byte(&path, file_len(&path) / 2, 0x55);
    assert_open_refused(dir.path(), &cfg, "corrupt closed segment");
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
}

/// A group of produced batches goes down as one vectored write of each
/// frame's head and its block where the producer left it, in more parts
/// than one `pwritev` takes: the segment then holds exactly each batch's
/// encoded frame, back to back. A torn group write of blocks leaves, after
/// a reopen, those frames and at most whole frames of the torn half.
#[test]
fn a_group_of_blocks_lands_as_its_frames_and_a_torn_one_is_cut() {
    let cfg = LogConfig::default();
    let (dir, mut log) = temp_log(&cfg);
    let group = || (0..700).map(|k| produced(k).1).collect::<Vec<_>>();
    let batches = group();
    let answers = log.append_group(batches.clone());
    let mut want = Vec::new();
    for (batch, answer) in batches.iter().zip(&answers) {
        let mut block = batch.block().unwrap().clone();
        block
            .assign(answer.as_ref().unwrap().base_offset, 0)
            .unwrap();
        want.extend_from_slice(&block.encode().unwrap());
    }
    let path = seg_file(dir.path(), 0, "log");
    assert_eq!(std::fs::read(&path).unwrap(), want, "frames back to back");
    let leo = log.leo();
    cfg.faults.inject_at(cfg.faults.sites_passed(), Fault::Torn);
    assert!(log.append_group(group()).iter().all(Result::is_err));
    drop(log); // the process dies
    cfg.faults.clear();
    let mut log = open(dir.path(), &cfg);
    let kept = std::fs::read(&path).unwrap();
    assert_eq!(&kept[..want.len()], &want[..]);
    assert!(kept.len() <= want.len() + want.len() / 2 && log.leo() >= leo);
    assert_eq!(
        dump(&log).len() as i64,
        log.leo(),
        "every kept frame reads whole"
    );
    let (_, batch) = produced(7);
    assert_eq!(log.append(batch).unwrap().base_offset, log.leo() - 2);
}

/// A log of compressed producer batches worth compacting: keys repeat
/// across batches, some batches lose records, some lose none.
fn compactable(dir: &Path, cfg: &LogConfig) -> PartitionLog {
    let mut log = open(dir, cfg);
    for k in 0..40 {
        let rs: Vec<Record> = (0..1 + k % 3)
            .map(|j| {
                let i = k * 3 + j;
                // Keys k0..k9 repeat; every fifth batch has keys of its own.
                let key = if k % 5 == 0 {
                    format!("own{i}")
                } else {
                    format!("k{}", i % 10)
                };
                Record::new(Some(b(&key)), Some(b(&format!("v{i}"))), 1_000 + i as i64)
            })
            .collect();
        let codec = CODECS[k % CODECS.len()];
        log.append(RecordBatch::from_block(block_batch(&rs, codec, None)).unwrap())
            .unwrap();
    }
    log.roll().unwrap();
    log
}

/// The versions and codecs of the stored frames.
fn frames(log: &PartitionLog) -> Vec<(u8, Option<Codec>)> {
    log.read_batches(log.log_start_offset(), usize::MAX, None)
        .unwrap()
        .iter()
        .map(|s| {
            let v = block::frame_version(&s.frame).unwrap();
            (v, s.block().unwrap().map(|b| b.codec()))
        })
        .collect()
}

#[test]
fn a_crash_at_every_step_of_compacting_compressed_batches_reopens_to_old_or_new() {
    let cfg = small_config();
    let (ref_dir, reference, old, new) = reference_compaction(&cfg, compactable);
    assert!(new.len() < old.len(), "compaction removed records");
    // Every batch stays a version 2 block in its producer's codec: those
    // that lost nothing as produced, those that lost records rebuilt from
    // the survivors (as Kafka's cleaner does).
    let before = frames(&compactable(tempfile::tempdir().unwrap().path(), &cfg));
    let stored = frames(&reference);
    assert!(stored.iter().all(|(v, _)| *v == 2), "{stored:?}");
    assert!(
        stored.iter().any(|(_, c)| !matches!(c, Some(Codec::None))),
        "compressed blocks survive compaction compressed: {stored:?}"
    );
    let codecs = |f: &[(u8, Option<Codec>)]| {
        let mut c: Vec<String> = f.iter().map(|(_, c)| format!("{c:?}")).collect();
        c.sort();
        c.dedup();
        c
    };
    assert_eq!(codecs(&stored), codecs(&before), "no codec is lost");
    assert!(
        reference
            .read_batches(reference.log_start_offset(), usize::MAX, None)
            .unwrap()
            .iter()
            .any(|s| {
                let b = s.block().unwrap().unwrap();
                (b.header().record_count as i64) < i64::from(b.header().last_offset_delta) + 1
                    && b.codec() != Codec::None
            }),
        "some compressed batch was rebuilt with fewer records than offsets"
    );
    drop(reference);
    assert_eq!(reopened(ref_dir.path(), &cfg), new, "and reopen as such");

    compact_crashing_at_every_step(&cfg, compactable, &old, &new);
}
