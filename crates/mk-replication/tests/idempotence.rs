//! The broker half of the idempotent producer (spec 02, "Idempotent
//! producer"): duplicates, sequences, epoch fencing, registration, state
//! after promotion, truncation and restart.

mod common;

use bytes::Bytes;
use common::*;
use mk_core::ErrorCode;
use mk_log::{ControlType, ProducerInfo, Record, RecordBatch, RetentionPolicy};
use mk_replication::{
    AckMode, ActiveProducer, PartitionReplicaSet, ProduceResult, ProducerIdentity,
    ProducerIdentityStore, ReplicationError, replica_dir,
};

/// Appends `batch` with acks=1 on the leader and returns its result.
/// A replica set of one replica, the leader (broker 1).
fn leader_alone() -> (Harness, PartitionReplicaSet) {
    let (h, set) = Harness::with_replicas(&[1]);
    (h, set)
}

fn acks_one(set: &mut PartitionReplicaSet, batch: RecordBatch) -> ProduceResult {
    done(set.append(batch, AckMode::One, None).unwrap())
}

/// Appends `batch` with acks=1 and returns why the leader refused it.
fn refused(set: &mut PartitionReplicaSet, batch: RecordBatch) -> ReplicationError {
    set.append(batch, AckMode::One, None).unwrap_err()
}

/// Appends `batch`, which must be refused with `code` and a message
/// naming `says` (`why` is the scenario, for the failure message).
fn refused_saying(
    set: &mut PartitionReplicaSet,
    batch: RecordBatch,
    code: ErrorCode,
    says: &str,
    why: &str,
) {
    let err = refused(set, batch);
    assert_eq!(err.code(), code, "{why}: {err}");
    assert!(err.to_string().contains(says), "{why}: {err}");
}

/// Appends `batch` with acks=1: taken at `base`, as a retry of an earlier
/// batch when `duplicate`.
fn assert_acked(set: &mut PartitionReplicaSet, batch: RecordBatch, base: i64, duplicate: bool) {
    let r = acks_one(set, batch);
    assert_eq!((r.base_offset, r.duplicate), (Some(base), duplicate));
}

/// Size retention of one byte: every segment but the active one goes.
fn retain_one_byte(set: &mut PartitionReplicaSet) {
    let policy = RetentionPolicy {
        retention_ms: None,
        retention_bytes: Some(1),
    };
    set.apply_retention(START_MS, policy).unwrap();
}

#[test]
fn exact_retry_returns_original_offsets() {
    let (_h, mut set) = leader_alone();
    let first = acks_one(&mut set, idem(7, 0, 0, &["a", "b"]));
    assert_eq!((first.base_offset, first.next_offset), (Some(0), Some(2)));
    put(&mut set, &["plain"]);

    let retry = acks_one(&mut set, idem(7, 0, 0, &["a", "b"]));
    assert_eq!((retry.base_offset, retry.next_offset), (Some(0), Some(2)));
    assert!(retry.duplicate);
    assert_eq!(set.log_end_offset(), 3, "a duplicate writes nothing");

    let mut handle = pending(
        set.append(idem(7, 0, 0, &["a", "b"]), AckMode::All, None)
            .unwrap(),
    );
    let r = handle.try_result().unwrap().unwrap();
    assert_eq!((r.base_offset, r.duplicate), (Some(0), true));

    let r = done(
        set.append(idem(7, 0, 0, &["a", "b"]), AckMode::Zero, None)
            .unwrap(),
    );
    assert_eq!((r.base_offset, r.duplicate), (None, true));
    assert_eq!(set.log_end_offset(), 3);
}

#[test]
fn duplicate_with_acks_all_waits_for_the_original_batch_to_commit() {
    let (_h, mut set) = Harness::with_replicas(&[1, 2]);
    let mut first = pending(
        set.append(idem(7, 0, 0, &["a"]), AckMode::All, None)
            .unwrap(),
    );
    let mut retry = pending(
        set.append(idem(7, 0, 0, &["a"]), AckMode::All, None)
            .unwrap(),
    );
    assert!(first.try_result().is_none());
    assert!(retry.try_result().is_none());
    set.replicate_all_once().unwrap();
    assert_eq!(first.try_result().unwrap().unwrap().base_offset, Some(0));
    let r = retry.try_result().unwrap().unwrap();
    assert_eq!((r.base_offset, r.duplicate), (Some(0), true));
    assert_eq!(set.log_end_offset(), 1);
}

#[test]
fn five_in_flight_retries_deduplicated() {
    let (_h, mut set) = leader_alone();
    for seq in 0..5 {
        let r = acks_one(&mut set, idem(1, 0, seq, &[&format!("m{seq}")]));
        assert_eq!(r.base_offset, Some(i64::from(seq)));
    }
    for seq in [3, 0, 4, 1, 2] {
        let r = acks_one(&mut set, idem(1, 0, seq, &[&format!("m{seq}")]));
        assert_eq!(
            r.base_offset,
            Some(i64::from(seq)),
            "retry of sequence {seq}"
        );
        assert!(r.duplicate);
    }
    assert_eq!(set.log_end_offset(), 5);
    assert_eq!(set.producer_entry(1).unwrap().batches.len(), 5);

    acks_one(&mut set, idem(1, 0, 5, &["m5"]));
    refused_saying(
        &mut set,
        idem(1, 0, 0, &["m0"]),
        ErrorCode::OutOfOrderSequence,
        "expected sequence 6, got 0",
        "the sixth-oldest batch is no longer retained",
    );
}

#[test]
fn sequence_gap_is_out_of_order_and_writes_nothing() {
    let (_h, mut set) = leader_alone();
    acks_one(&mut set, idem(1, 0, 0, &["a", "b"]));
    refused_saying(
        &mut set,
        idem(1, 0, 3, &["d"]),
        ErrorCode::OutOfOrderSequence,
        "expected sequence 2, got 3",
        "a gap",
    );
    assert_eq!(set.log_end_offset(), 2);
    refused_saying(
        &mut set,
        idem(2, 0, 1, &["x"]),
        ErrorCode::OutOfOrderSequence,
        "expected sequence 0, got 1",
        "a new producer starts at 0",
    );
}

#[test]
fn newer_epoch_fences_older() {
    let (_h, mut set) = leader_alone();
    acks_one(&mut set, idem(1, 0, 0, &["a"]));
    acks_one(&mut set, idem(1, 0, 1, &["b"]));
    let r = acks_one(&mut set, idem(1, 1, 0, &["c"]));
    assert_eq!(r.base_offset, Some(2), "a newer epoch starts at sequence 0");
    refused_saying(
        &mut set,
        idem(1, 0, 2, &["zombie"]),
        ErrorCode::ProducerFenced,
        "epoch 0 is older than the current epoch 1",
        "a zombie",
    );
    assert_eq!(
        code(set.append(idem(1, 0, 0, &["a"]), AckMode::One, None)),
        ErrorCode::ProducerFenced,
        "even an exact retry of the old epoch is fenced"
    );
    assert_eq!(set.log_end_offset(), 3);
}

#[test]
fn registration_fences_older_epochs_before_they_write() {
    let h = Harness::new();
    let mut store = ProducerIdentityStore::open(h.dir.path()).unwrap();
    let mut set = h.create(&[1, 2]);
    let old = store.allocate("orders-producer").unwrap();
    assert_eq!(
        old,
        ProducerIdentity {
            producer_id: 1,
            epoch: 0
        }
    );
    set.register_producer(old.producer_id, old.epoch).unwrap();
    acks_one(&mut set, idem(1, 0, 0, &["a"]));

    let new = store.allocate("orders-producer").unwrap();
    assert_eq!(
        new,
        ProducerIdentity {
            producer_id: 1,
            epoch: 1
        }
    );
    set.register_producer(new.producer_id, new.epoch).unwrap();
    assert_eq!(set.registered_epoch(1), Some(1));
    assert_eq!(
        code(set.append(idem(1, 0, 1, &["zombie"]), AckMode::One, None)),
        ErrorCode::ProducerFenced,
        "the old instance is fenced before the new one wrote anything"
    );
    assert_eq!(code(set.register_producer(1, 0)), ErrorCode::ProducerFenced);
    assert_eq!(
        code(set.append(idem(1, 1, 1, &["b"]), AckMode::One, None)),
        ErrorCode::OutOfOrderSequence
    );
    acks_one(&mut set, idem(1, 1, 0, &["b"]));
    assert_eq!(
        code(set.register_producer(-1, 0)),
        ErrorCode::InvalidRequest
    );
}

#[test]
fn transactional_batches_go_through_the_same_sequence_checks() {
    let (_h, mut set) = leader_alone();
    let tx = |seq: i32, v: &str| idem(4, 0, seq, &[v]).with_transactional_id("tx-1");
    acks_one(&mut set, tx(0, "a"));
    let dup = acks_one(&mut set, tx(0, "a"));
    assert!(dup.duplicate);
    assert_eq!(
        code(set.append(tx(2, "c"), AckMode::One, None)),
        ErrorCode::OutOfOrderSequence
    );
    let marker = |epoch| {
        RecordBatch::marker(
            ControlType::Commit,
            "tx-1",
            ProducerInfo {
                producer_id: 4,
                producer_epoch: epoch,
                base_sequence: -1,
            },
        )
    };
    let r = acks_one(&mut set, marker(0));
    assert_eq!(r.base_offset, Some(1), "a marker carries no sequence");
    assert_eq!(set.leader_log().first_unstable_offset(), None);
    acks_one(&mut set, tx(1, "b"));
    // The coordinator fences a producer by writing a marker in a newer
    // epoch; the producer's old epoch is then fenced and its sequences reset.
    acks_one(&mut set, marker(1));
    assert_eq!(
        code(set.append(tx(2, "c"), AckMode::One, None)),
        ErrorCode::ProducerFenced
    );
    assert_eq!(
        code(set.append(marker(0), AckMode::One, None)),
        ErrorCode::ProducerFenced
    );
    done(
        set.append(
            idem(4, 1, 0, &["d"]).with_transactional_id("tx-1"),
            AckMode::One,
            None,
        )
        .unwrap(),
    );
}

#[test]
fn batches_with_a_producer_id_need_a_sequence_and_an_epoch() {
    let (_h, mut set) = leader_alone();
    assert_eq!(
        code(set.append(idem(1, 0, -1, &["a"]), AckMode::One, None)),
        ErrorCode::InvalidRecord
    );
    assert_eq!(
        code(set.append(idem(1, -1, 0, &["a"]), AckMode::One, None)),
        ErrorCode::InvalidRecord
    );
    assert_eq!(set.log_end_offset(), 0);
}

/// Producer `pid` at `epoch` writes m0, m1 and m2 (sequences 0-2) with
/// acks=all, each replicated and acknowledged before the next.
fn write_m0_to_m2_acked(set: &mut PartitionReplicaSet, pid: i64, epoch: i32) {
    for seq in 0..3 {
        let batch = idem(pid, epoch, seq, &[&format!("m{seq}")]);
        let mut handle = pending(set.append(batch, AckMode::All, None).unwrap());
        set.replicate_all_once().unwrap();
        handle.try_result().unwrap().unwrap();
    }
}

#[test]
fn promoted_follower_deduplicates_retries() {
    let (_h, mut set) = Harness::with_replicas(&[1, 2]);
    write_m0_to_m2_acked(&mut set, 9, 0);
    set.promote(2).unwrap();
    assert_acked(&mut set, idem(9, 0, 1, &["m1"]), 1, true);
    assert_acked(&mut set, idem(9, 0, 3, &["m3"]), 3, false);
}

#[test]
fn follower_truncation_rebuilds_producer_state() {
    let (_h, mut set) = Harness::with_replicas(&[1, 2]);
    acks_one(&mut set, idem(3, 0, 0, &["a"]));
    set.replicate_all_once().unwrap();
    acks_one(&mut set, idem(3, 0, 1, &["lost"]));
    set.promote(2).unwrap();
    assert_eq!(
        set.producer_entry(3).unwrap().batches.len(),
        1,
        "the new leader never had sequence 1"
    );
    assert_acked(&mut set, idem(3, 0, 1, &["again"]), 1, false);

    set.rejoin(1).unwrap();
    set.replicate_all_once().unwrap();
    assert_eq!(set.isr(), vec![1, 2]);
    set.promote(1).unwrap();
    let entry = set.producer_entry(3).unwrap();
    let offsets: Vec<i64> = entry.batches.iter().map(|b| b.base_offset).collect();
    assert_eq!(offsets, vec![0, 1]);
    assert_eq!(entry.batches[1].last_sequence, 1);
    let r = acks_one(&mut set, idem(3, 0, 1, &["again"]));
    assert_eq!(
        (r.base_offset, r.duplicate),
        (Some(1), true),
        "broker 1 dropped its own sequence 1 and took the leader's"
    );
    assert_eq!(values(set.leader_log()), vals(&[(0, "a"), (1, "again")]));
}

#[test]
fn restart_keeps_hw_and_producer_state() {
    for crash_after_checkpoint in [false, true] {
        let (h, mut set) = Harness::min_isr_two(&[1, 2, 3]);
        set.register_producer(5, 2).unwrap();
        write_m0_to_m2_acked(&mut set, 5, 2);
        set.checkpoint().unwrap();
        let hw = set.high_watermark();
        let mut set = if crash_after_checkpoint {
            h.crash_reopen(set)
        } else {
            h.reopen(set)
        };
        assert_eq!(set.high_watermark(), hw);
        assert_eq!(set.isr(), vec![1, 2, 3]);
        assert_eq!(
            set.registered_epoch(5),
            Some(2),
            "registrations are in the snapshot"
        );
        assert_acked(&mut set, idem(5, 2, 1, &["m1"]), 1, true);
        assert_eq!(
            code(set.append(idem(5, 2, 7, &["x"]), AckMode::One, None)),
            ErrorCode::OutOfOrderSequence
        );
        assert_eq!(
            code(set.append(idem(5, 1, 0, &["x"]), AckMode::One, None)),
            ErrorCode::ProducerFenced
        );
        let r = acks_one(&mut set, idem(5, 2, 3, &["m3"]));
        assert_eq!(r.base_offset, Some(3));
    }
}

#[test]
fn producer_state_comes_from_the_snapshot_plus_the_tail_not_a_full_scan() {
    let h = Harness::with(|c| c.log.segment_max_bytes = 1);
    let mut set = h.create(&[1]);
    acks_one(&mut set, idem(8, 0, 0, &["first"]));
    put(&mut set, &["filler"]);
    set.checkpoint().unwrap();
    let snapshot = replica_dir(h.dir.path(), 1, &h.tp).join(format!("{:020}.snapshot", 2));
    assert!(snapshot.exists(), "snapshot at the LEO of the checkpoint");
    // Retention removes the segment holding producer 8's batch; only the
    // snapshot still remembers it.
    retain_one_byte(&mut set);
    assert_eq!(set.log_start_offset(), 1);
    acks_one(&mut set, idem(8, 0, 1, &["second"]));
    let mut set = h.crash_reopen(set);
    let entry = set.producer_entry(8).unwrap();
    let offsets: Vec<i64> = entry.batches.iter().map(|b| b.base_offset).collect();
    assert_eq!(
        offsets,
        vec![0, 2],
        "snapshot (offset 0) plus replayed tail (offset 2)"
    );
    assert_acked(&mut set, idem(8, 0, 0, &["first"]), 0, true);
}

#[test]
fn retention_does_not_lose_the_latest_producer_sequences() {
    let h = Harness::with(|c| c.log.segment_max_bytes = 1);
    let mut set = h.create(&[1]);
    acks_one(&mut set, idem(6, 0, 0, &["s0"]));
    set.checkpoint().unwrap();
    acks_one(&mut set, idem(6, 0, 1, &["s1"]));
    put(&mut set, &["filler-1"]);
    put(&mut set, &["filler-2"]);
    // Every segment but the active one goes, including the one with seq 1;
    // the snapshot of the checkpoint (offset 1) is now below the log start.
    retain_one_byte(&mut set);
    assert_eq!(set.log_start_offset(), 3);
    let mut set = h.crash_reopen(set);
    assert_acked(&mut set, idem(6, 0, 1, &["s1"]), 1, true);
    assert_acked(&mut set, idem(6, 0, 2, &["s2"]), 4, false);
}

#[test]
fn next_sequence_is_what_the_check_expects_per_producer_and_epoch() {
    let (_h, mut set) = leader_alone();
    assert_eq!(
        set.next_sequence(3, 0),
        0,
        "an unknown producer starts at 0"
    );
    done(
        set.append(idem(3, 0, 0, &["a", "b"]), AckMode::One, None)
            .unwrap(),
    );
    assert_eq!(set.next_sequence(3, 0), 2);
    done(
        set.append(idem(3, 0, 2, &["c"]), AckMode::One, None)
            .unwrap(),
    );
    assert_eq!(set.next_sequence(3, 0), 3);
    // The value is accepted, one more is not.
    assert_eq!(
        code(set.append(idem(3, 0, 4, &["x"]), AckMode::One, None)),
        ErrorCode::OutOfOrderSequence
    );
    assert_eq!(set.next_sequence(3, 1), 0, "a newer epoch starts at 0");
    assert_eq!(set.next_sequence(9, 0), 0);
    done(
        set.append(idem(3, 0, 3, &["d"]), AckMode::One, None)
            .unwrap(),
    );
    assert_eq!(set.next_sequence(3, 0), 4);
}

/// An idempotent batch of one record stamped `timestamp`.
fn idem_at(pid: i64, seq: i32, value: &'static str, timestamp: i64) -> RecordBatch {
    let record = Record::new(None, Some(Bytes::from_static(value.as_bytes())), timestamp);
    RecordBatch::new(vec![record])
        .expect("valid batch")
        .with_producer(ProducerInfo {
            producer_id: pid,
            producer_epoch: 0,
            base_sequence: seq,
        })
}

/// DescribeProducers' source: the leader's producer state, each producer
/// with its epoch, last sequence, last timestamp and the start of its open
/// transaction.
#[test]
fn active_producers_show_epochs_sequences_and_open_transactions() {
    let (_h, mut set) = Harness::with_replicas(&[1, 2]);
    assert!(set.active_producers().is_empty());
    put(&mut set, &["plain"]);
    acks_one(&mut set, idem(7, 2, 0, &["a", "b"]));
    acks_one(&mut set, idem(7, 2, 2, &["c"]));
    let tx = idem_at(9, 0, "t", START_MS + 5).with_transactional_id("tx-9");
    acks_one(&mut set, tx);
    let expected = vec![
        ActiveProducer {
            producer_id: 7,
            epoch: 2,
            last_sequence: 2,
            last_timestamp: START_MS,
            current_txn_start_offset: None,
        },
        ActiveProducer {
            producer_id: 9,
            epoch: 0,
            last_sequence: 0,
            last_timestamp: START_MS + 5,
            current_txn_start_offset: Some(4),
        },
    ];
    assert_eq!(set.active_producers(), expected);
    let commit = RecordBatch::marker(
        ControlType::Commit,
        "tx-9",
        ProducerInfo {
            producer_id: 9,
            producer_epoch: 0,
            base_sequence: -1,
        },
    );
    acks_one(&mut set, commit);
    assert_eq!(set.active_producers()[1].current_txn_start_offset, None);
    assert_eq!(set.active_producers()[1].last_sequence, 0);
    assert_eq!(set.active_producers()[1].last_timestamp, START_MS + 5);
}

/// The last timestamp survives a crash: from the snapshot when retention
/// removed the batch that set it, from the replayed tail when a newer batch
/// came after the snapshot.
#[test]
fn a_producers_last_timestamp_survives_a_crash_from_the_snapshot_and_from_the_log() {
    let h = Harness::with(|c| c.log.segment_max_bytes = 1);
    let mut set = h.create(&[1]);
    acks_one(&mut set, idem_at(8, 0, "first", START_MS + 7));
    put(&mut set, &["filler"]);
    set.checkpoint().unwrap();
    retain_one_byte(&mut set);
    assert_eq!(set.log_start_offset(), 1, "the batch is gone from the log");
    let mut set = h.crash_reopen(set);
    assert_eq!(set.active_producers()[0].last_timestamp, START_MS + 7);
    acks_one(&mut set, idem_at(8, 1, "second", START_MS + 9));
    let set = h.crash_reopen(set);
    assert_eq!(set.active_producers()[0].last_timestamp, START_MS + 9);
}

#[test]
fn compaction_keeps_a_producers_last_sequence_for_a_replica_that_replays_the_log() {
    // Kafka's cleaner keeps the batch with a producer's last sequence,
    // emptied when its records are all superseded, because a replica that
    // rebuilds its producer state from the log needs it.
    let h = Harness::with(|c| c.log.segment_max_bytes = 1);
    let mut set = h.create(&[1]);
    let keyed = |value: &str| {
        let key = Some(bytes::Bytes::from_static(b"k"));
        let value = Some(bytes::Bytes::copy_from_slice(value.as_bytes()));
        RecordBatch::new(vec![mk_log::Record::new(key, value, START_MS)]).unwrap()
    };
    let seq = |s: i32, value: &str| {
        keyed(value).with_producer(ProducerInfo {
            producer_id: 6,
            producer_epoch: 0,
            base_sequence: s,
        })
    };
    assert_acked(&mut set, seq(0, "s0"), 0, false);
    assert_acked(&mut set, keyed("newer"), 1, false);
    put(&mut set, &["filler"]);
    let compacted = set.compact(START_MS, 0).unwrap();
    assert_eq!(compacted.len(), 1);
    assert_eq!(compacted[0].1.batches_emptied, 1, "{compacted:?}");
    assert!(values(set.leader_log()).iter().all(|(o, _)| *o != 0));
    // A crash before any checkpoint: no snapshot, the state is the log's.
    let dir = replica_dir(h.dir.path(), 1, &h.tp);
    let snapshots = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension() == Some("snapshot".as_ref()))
        .count();
    assert_eq!(snapshots, 0);
    let mut set = h.crash_reopen(set);
    assert_acked(&mut set, seq(0, "s0"), 0, true);
    assert_acked(&mut set, seq(1, "s1"), 3, false);
}
