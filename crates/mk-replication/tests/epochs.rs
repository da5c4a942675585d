//! Leader epochs, promotion, rejoin and KIP-101/279 reconciliation, plus the
//! durability of HW and epochs across restarts (spec 02, "Leader epochs,
//! promotion and divergent tails" and "On open after restart").

mod common;

use common::*;
use mk_core::ErrorCode;
use mk_log::{LogConfig, PartitionLog, RetentionPolicy};
use mk_replication::{
    AckMode, EPOCH_CHECKPOINT_FILE, EpochEndOffset, EpochEntry, HW_CHECKPOINT_FILE, LeaderAndEpoch,
    PartitionAssignment, ReplicaRole, replica_dir,
};

fn entries(pairs: &[(i32, i64)]) -> Vec<EpochEntry> {
    pairs
        .iter()
        .map(|&(epoch, start_offset)| EpochEntry {
            epoch,
            start_offset,
        })
        .collect()
}

#[test]
fn acks1_write_lost_after_promotion() {
    let (_h, mut set) = Harness::holding_a(&[1, 2]);
    set.replicate_all_once().unwrap();
    assert_eq!(
        put(&mut set, &["b"]),
        1,
        "acks=1 acknowledged by leader 1 alone"
    );

    assert_eq!(
        set.promote(2).unwrap(),
        LeaderAndEpoch {
            leader_id: 2,
            leader_epoch: 1
        }
    );
    assert_eq!(values(set.leader_log()), vals(&[(0, "a")]), "\"b\" is gone");
    assert_eq!(set.replica_role(1).unwrap(), ReplicaRole::Offline);
    assert_eq!(put(&mut set, &["c"]), 1, "the new leader reuses offset 1");

    set.rejoin(1).unwrap();
    assert_eq!(
        set.isr(),
        vec![2],
        "a rejoining replica starts outside the ISR"
    );
    let fetch = set.replicate_all_once().unwrap();
    assert_eq!(
        fetch[0].truncated_to,
        Some(1),
        "the old leader drops its tail"
    );
    assert_eq!(
        values(set.replica_log(1).unwrap()),
        vals(&[(0, "a"), (1, "c")])
    );
    assert_eq!(set.isr(), vec![1, 2]);
    assert_eq!(set.high_watermark(), 2);
    assert_isr_identical_below_hw(&set);
}

#[test]
fn acks_all_with_min_isr_two_survives_promotion_of_any_isr_member() {
    for candidate in [2, 3] {
        let (_h, mut set) = Harness::min_isr_two(&[1, 2, 3]);
        let mut acked = Vec::new();
        for (i, v) in ["a", "b", "c"].into_iter().enumerate() {
            let mut handle = put_all(&mut set, &[v]);
            if i == 1 {
                // Broker 3 falls out; ISR {1, 2} still meets the minimum.
                set.remove_from_isr(3).unwrap();
            }
            set.replicate_all_once().unwrap();
            let r = handle.try_result().unwrap().unwrap();
            acked.push((r.base_offset.unwrap(), v.to_string()));
        }
        // An unacknowledged tail that may be lost.
        put(&mut set, &["tail"]);
        if candidate == 3 {
            set.rejoin(3).unwrap();
            set.replicate_all_once().unwrap();
        }
        assert!(set.isr().contains(&candidate), "{candidate} is in sync");
        set.promote(candidate).unwrap();
        let log = values(set.leader_log());
        for (offset, v) in &acked {
            assert!(
                log.contains(&(*offset, v.clone())),
                "acks=all record {v} at {offset} lost after promoting {candidate}: {log:?}"
            );
        }
    }
}

#[test]
fn promotion_fences_old_epoch() {
    let (_h, mut set) = Harness::holding_a(&[1, 2]);
    set.replicate_all_once().unwrap();
    let le = set.promote(2).unwrap();
    assert_eq!(le.leader_epoch, 1);
    let err = set
        .append(batch(&["x"]), AckMode::One, Some(0))
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::FencedLeaderEpoch);
    assert!(err.to_string().contains("expected leader epoch 0"), "{err}");
    assert_eq!(set.log_end_offset(), 1, "a fenced request writes nothing");
    assert_eq!(
        code(set.append(batch(&["x"]), AckMode::One, Some(2))),
        ErrorCode::FencedLeaderEpoch
    );
    let r = done(set.append(batch(&["y"]), AckMode::One, Some(1)).unwrap());
    assert_eq!((r.base_offset, r.leader_epoch), (Some(1), 1));
    let stored = set.leader_log().read_batches(1, 1, None).unwrap();
    assert_eq!(
        stored[0].header.leader_epoch, 1,
        "batches carry the new epoch"
    );
}

#[test]
fn promotion_requires_an_in_sync_replica() {
    let (_h, mut set) = Harness::with_replicas(&[1, 2, 3]);
    set.remove_from_isr(3).unwrap();
    let err = set.promote(3).unwrap_err();
    assert_eq!(err.code(), ErrorCode::NotInSyncReplica);
    assert!(err.to_string().contains("broker 3"), "{err}");
    assert_eq!((set.leader_id(), set.leader_epoch()), (1, 0));
}

#[test]
fn unclean_promotion_elects_an_out_of_sync_replica_and_loses_the_tail_above_its_leo() {
    let (_h, mut set) = Harness::three_with_a_replicated();
    set.remove_from_isr(3).unwrap();
    put(&mut set, &["b", "c"]);
    set.replicate_all_once().unwrap();
    assert_eq!((set.isr(), set.high_watermark()), (vec![1, 2], 3));
    // The clean rule refuses broker 3; the unclean one takes it.
    assert_eq!(
        set.promote(3).unwrap_err().code(),
        ErrorCode::NotInSyncReplica
    );
    let le = set.promote_unclean(3).unwrap();
    assert_eq!((le.leader_id, le.leader_epoch), (3, 1));
    assert_eq!(set.isr(), vec![3]);
    assert_eq!(
        set.high_watermark(),
        1,
        "the HW falls back to the new leader's LEO"
    );
    assert_eq!(
        visible(&set),
        vals(&[(0, "a")]),
        "committed b and c are lost"
    );
    assert_eq!(put(&mut set, &["d"]), 1, "the new leader writes at its LEO");
    // A surviving replica truncates to the new leader's log as it follows.
    set.rejoin(2).unwrap();
    let fetch = set.replicate_all_once().unwrap();
    assert_eq!(fetch[0].truncated_to, Some(1), "{fetch:?}");
    assert_eq!(
        values(set.replica_log(2).unwrap()),
        vals(&[(0, "a"), (1, "d")])
    );
    assert_eq!((set.isr(), set.high_watermark()), (vec![2, 3], 2));
    assert_isr_identical_below_hw(&set);
    assert_eq!(
        set.promote_unclean(3).unwrap_err().code(),
        ErrorCode::InvalidRequest,
        "the leader is not elected again"
    );
}

#[test]
fn data_above_old_hw_on_promoted_follower_is_kept() {
    let (_h, mut set) = Harness::holding_a(&[1, 2, 3]);
    put(&mut set, &["b"]);
    set.replicate_follower_once(2).unwrap();
    assert_eq!(set.high_watermark(), 0, "broker 3 holds the HW at 0");
    set.promote(2).unwrap();
    assert_eq!(
        values(set.leader_log()),
        vals(&[(0, "a"), (1, "b")]),
        "the promoted follower is never truncated"
    );
    assert_eq!(
        set.high_watermark(),
        2,
        "HW = min LEO over the new ISR {{2}}"
    );
    assert_eq!(visible(&set), vals(&[(0, "a"), (1, "b")]));
    assert_eq!(
        set.epoch_entries(2).unwrap(),
        entries(&[(0, 0), (1, 2)]),
        "the new epoch starts at the new leader's LEO"
    );
    set.replicate_all_once().unwrap();
    assert_eq!(set.isr(), vec![2, 3]);
    set.rejoin(1).unwrap();
    let fetch = set.replicate_all_once().unwrap();
    assert!(fetch.iter().all(|f| f.truncated_to.is_none()), "{fetch:?}");
    assert_eq!(set.isr(), vec![1, 2, 3]);
    assert_isr_identical_below_hw(&set);
}

#[test]
fn divergent_tail_replaced_by_new_leader_records() {
    let (_h, mut set) = Harness::holding_a(&[1, 2]);
    set.replicate_all_once().unwrap();
    put(&mut set, &["old-1"]);
    put(&mut set, &["old-2", "old-3"]);
    set.promote(2).unwrap();
    put(&mut set, &["new-1", "new-2"]);
    put(&mut set, &["new-3"]);
    assert_eq!(set.replica_log_end_offset(1).unwrap(), 4);
    assert_eq!(
        set.log_end_offset(),
        4,
        "both logs end at 4, with different data"
    );

    set.rejoin(1).unwrap();
    let fetch = set.replicate_all_once().unwrap();
    assert_eq!(fetch[0].truncated_to, Some(1));
    assert_eq!(
        values(set.replica_log(1).unwrap()),
        vals(&[(0, "a"), (1, "new-1"), (2, "new-2"), (3, "new-3")])
    );
    assert_eq!(set.epoch_entries(1).unwrap(), set.epoch_entries(2).unwrap());
    assert_eq!(set.isr(), vec![1, 2]);
    assert_eq!(set.high_watermark(), 4);
    assert_isr_identical_below_hw(&set);
}

#[test]
fn end_offset_for_epoch_answers_like_kip_279() {
    let (_h, mut set) = Harness::replicated(&[1, 2], &["a", "b"]);
    set.promote(2).unwrap();
    set.rejoin(1).unwrap();
    set.replicate_all_once().unwrap();
    set.promote(1).unwrap(); // epoch 2, no data in epoch 1
    put(&mut set, &["c"]);
    let e = |epoch, end_offset| Some(EpochEndOffset { epoch, end_offset });
    assert_eq!(set.epoch_entries(1).unwrap(), entries(&[(0, 0), (2, 2)]));
    assert_eq!(
        set.end_offset_for_epoch(2),
        e(2, 3),
        "current epoch: the LEO"
    );
    assert_eq!(
        set.end_offset_for_epoch(1),
        e(0, 2),
        "unknown epoch: its floor"
    );
    assert_eq!(set.end_offset_for_epoch(0), e(0, 2));
    assert_eq!(set.end_offset_for_epoch(3), None, "newer than the leader");
}

/// Writes a replica directory by hand: `batches` are `(epoch, values)`.
fn write_replica(h: &Harness, broker: i32, batches: &[(i32, &[&str])]) {
    let dir = replica_dir(h.dir.path(), broker, &h.tp);
    let mut log = PartitionLog::open(&dir, LogConfig::default(), 0).unwrap();
    for (epoch, vs) in batches {
        log.set_leader_epoch(*epoch).unwrap();
        log.append(batch(vs)).unwrap();
    }
    log.close().unwrap();
}

#[test]
fn reconciliation_walks_back_through_epochs_the_leader_never_had() {
    let h = Harness::new();
    // Leader 1 has epochs 0 (offsets 0-2), 1 (3-5) and 4 (6-7); follower 2
    // has epoch 0 up to offset 4 and epoch 3 (5-6), which the leader never
    // saw. The leader's end of epoch 3 is (1, 6); the follower does not know
    // epoch 1, so it cuts back to the end of its epoch 0 (5) and asks again:
    // the leader's epoch 0 ends at 3, which is where the logs agree.
    write_replica(
        &h,
        1,
        &[
            (0, &["a"]),
            (0, &["b"]),
            (0, &["c"]),
            (1, &["L3"]),
            (1, &["L4"]),
            (1, &["L5"]),
            (4, &["L6"]),
            (4, &["L7"]),
        ],
    );
    write_replica(
        &h,
        2,
        &[
            (0, &["a"]),
            (0, &["b"]),
            (0, &["c"]),
            (0, &["F3"]),
            (0, &["F4"]),
            (3, &["F5"]),
            (3, &["F6"]),
        ],
    );
    let mut set = h.open(PartitionAssignment {
        replicas: vec![1, 2],
        leader_id: 1,
        leader_epoch: 4,
    });
    assert_eq!(set.leader_epoch(), 4);
    assert_eq!(
        set.epoch_entries(1).unwrap(),
        entries(&[(0, 0), (1, 3), (4, 6)]),
        "a missing checkpoint is rebuilt once from the batch headers"
    );
    assert_eq!(set.epoch_entries(2).unwrap(), entries(&[(0, 0), (3, 5)]));
    assert_eq!(set.isr(), vec![1]);
    let fetch = set.replicate_all_once().unwrap();
    assert_eq!(fetch[0].truncated_to, Some(3));
    assert_eq!(
        values(set.replica_log(2).unwrap()),
        values(set.leader_log()),
        "the follower now holds exactly the leader's records"
    );
    assert_eq!(set.epoch_entries(2).unwrap(), set.epoch_entries(1).unwrap());
    assert_eq!(set.isr(), vec![1, 2]);
    assert_isr_identical_below_hw(&set);
}

#[test]
fn follower_with_an_epoch_newer_than_the_leader_drops_it() {
    let h = Harness::new();
    // A crash after broker 2 was promoted to epoch 7 and wrote in it, but
    // before the cluster persisted that: the metadata still says broker 1
    // leads in epoch 6. Open must not let epoch 7 have two writers, so the
    // leader takes a fresh epoch (8), and broker 2's epoch-7 tail, which the
    // leader never had, goes away on reconciliation.
    write_replica(&h, 1, &[(0, &["a"]), (6, &["b"])]);
    write_replica(&h, 2, &[(0, &["a"]), (7, &["x"]), (7, &["y"])]);
    let mut set = h.open(PartitionAssignment {
        replicas: vec![1, 2],
        leader_id: 1,
        leader_epoch: 6,
    });
    assert_eq!(
        set.leader_epoch(),
        8,
        "a fresh epoch above every epoch seen"
    );
    assert_eq!(
        set.assignment().leader_epoch,
        8,
        "the caller must persist it"
    );
    let fetch = set.replicate_all_once().unwrap();
    assert_eq!(fetch[0].truncated_to, Some(1));
    assert_eq!(
        values(set.replica_log(2).unwrap()),
        vals(&[(0, "a"), (1, "b")])
    );
    assert_eq!(set.isr(), vec![1, 2]);
    put(&mut set, &["c"]);
    let stored = set.leader_log().read_batches(2, 1, None).unwrap();
    assert_eq!(stored[0].header.leader_epoch, 8);
}

#[test]
fn divergent_replica_with_equal_leo_is_not_in_isr_after_restart() {
    let h = Harness::new();
    write_replica(&h, 1, &[(0, &["a"]), (0, &["old-1"]), (0, &["old-2"])]);
    write_replica(&h, 2, &[(0, &["a"]), (1, &["new-1"]), (1, &["new-2"])]);
    let mut set = h.open(PartitionAssignment {
        replicas: vec![1, 2],
        leader_id: 2,
        leader_epoch: 1,
    });
    assert_eq!(set.isr(), vec![2], "equal LEOs but different epoch caches");
    assert_eq!(set.high_watermark(), 3);
    set.replicate_all_once().unwrap();
    assert_eq!(set.isr(), vec![1, 2]);
    assert_eq!(
        values(set.replica_log(1).unwrap()),
        vals(&[(0, "a"), (1, "new-1"), (2, "new-2")])
    );
    assert_isr_identical_below_hw(&set);
}

#[test]
fn leader_epoch_checkpoint_is_persisted_in_each_replica_directory() {
    let (h, mut set) = Harness::holding_a(&[1, 2]);
    set.replicate_all_once().unwrap();
    set.promote(2).unwrap();
    put(&mut set, &["b"]);
    set.replicate_all_once().unwrap();
    let read = |b| {
        std::fs::read_to_string(replica_dir(h.dir.path(), b, &h.tp).join(EPOCH_CHECKPOINT_FILE))
            .unwrap()
    };
    assert_eq!(read(2), "0\n2\n0 0\n1 1\n");
    assert_eq!(
        read(1),
        "0\n1\n0 0\n",
        "broker 1 is offline and did not fetch"
    );
    set.rejoin(1).unwrap();
    set.replicate_all_once().unwrap();
    assert_eq!(read(1), "0\n2\n0 0\n1 1\n");
    let set = h.crash_reopen(set);
    assert_eq!(set.epoch_entries(1).unwrap(), entries(&[(0, 0), (1, 1)]));
    // After an unclean restart the leader starts a new epoch at its LEO.
    assert_eq!((set.leader_id(), set.leader_epoch()), (2, 2));
    assert_eq!(
        set.epoch_entries(2).unwrap(),
        entries(&[(0, 0), (1, 1), (2, 2)])
    );
}

#[test]
fn an_unclean_restart_bumps_the_leader_epoch_so_a_tail_only_the_leader_lost_is_cut() {
    let (h, mut set) = Harness::holding_a(&[1, 2]);
    let after_a = set.leader_log().active().log_bytes;
    put(&mut set, &["b"]);
    set.replicate_all_once().unwrap();
    assert_eq!(
        values(set.replica_log(2).unwrap()),
        vals(&[(0, "a"), (1, "b")])
    );
    let assignment = set.assignment();
    set.crash();
    // A power loss took the leader's unflushed "b"; the follower kept it.
    let segment = replica_dir(h.dir.path(), 1, &h.tp).join(format!("{:020}.log", 0));
    std::fs::OpenOptions::new()
        .write(true)
        .open(&segment)
        .unwrap()
        .set_len(after_a)
        .unwrap();
    let mut set = h.open(assignment);
    assert_eq!(
        set.leader_epoch(),
        1,
        "a new epoch after the unclean restart"
    );
    // The leader writes offset 1 again before the follower fetches: in the
    // old epoch the follower's "b" would look like the leader's data.
    put(&mut set, &["c"]);
    set.replicate_all_once().unwrap();
    set.replicate_all_once().unwrap();
    assert_eq!(
        values(set.replica_log(2).unwrap()),
        vals(&[(0, "a"), (1, "c")])
    );
    assert_isr_identical_below_hw(&set);
    // A clean restart keeps the epoch.
    let set = h.reopen(set);
    assert_eq!(set.leader_epoch(), 1);
}

#[test]
fn restart_never_moves_visibility_backwards() {
    for crash in [false, true] {
        let (h, mut set) = Harness::holding_a(&[1, 2, 3]);
        put(&mut set, &["b", "c"]);
        set.remove_from_isr(3).unwrap();
        set.replicate_all_once().unwrap();
        assert_eq!(set.high_watermark(), 3);
        assert_eq!(set.replica_log_end_offset(3).unwrap(), 0);
        let before = visible(&set);
        if !crash {
            set.checkpoint().unwrap();
        }
        // The Python model restored HW = min LEO of all replicas = 0 here.
        let mut set = if crash {
            h.crash_reopen(set)
        } else {
            h.reopen(set)
        };
        assert_eq!(set.high_watermark(), 3, "crash = {crash}");
        assert_eq!(visible(&set), before);
        assert_eq!(
            set.isr(),
            vec![1, 2],
            "broker 3's LEO differs from the leader's"
        );
        set.replicate_all_once().unwrap();
        assert_eq!(set.isr(), vec![1, 2, 3]);
        assert_isr_identical_below_hw(&set);
    }
}

#[test]
fn hw_checkpoint_is_written_per_replica_on_checkpoint_and_close() {
    let (h, mut set) = Harness::replicated(&[1, 2], &["a", "b"]);
    put(&mut set, &["c"]);
    let file = |b| replica_dir(h.dir.path(), b, &h.tp).join(HW_CHECKPOINT_FILE);
    assert!(
        !file(1).exists(),
        "written by the checkpoint step, not by appends"
    );
    set.checkpoint().unwrap();
    assert_eq!(
        std::fs::read_to_string(file(1)).unwrap(),
        "0\n1\nevents 0 2\n"
    );
    assert_eq!(
        std::fs::read_to_string(file(2)).unwrap(),
        "0\n1\nevents 0 2\n"
    );
    set.replicate_all_once().unwrap();
    set.close().unwrap();
    assert_eq!(
        std::fs::read_to_string(file(1)).unwrap(),
        "0\n1\nevents 0 3\n"
    );
}

#[test]
fn damaged_hw_checkpoint_fails_open_with_storage_error() {
    let (h, set) = Harness::with_replicas(&[1, 2]);
    set.close().unwrap();
    let path = replica_dir(h.dir.path(), 2, &h.tp).join(HW_CHECKPOINT_FILE);
    std::fs::write(&path, "0\n1\nevents 0 banana\n").unwrap();
    let err = h
        .try_open(PartitionAssignment::new_partition(vec![1, 2]))
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::StorageError);
    assert!(err.is_storage_failure());
}

#[test]
fn reopen_restores_leader_epoch_isr_and_hw_from_metadata() {
    let (h, mut set) = Harness::three_with_a_replicated();
    let le = set.promote(3).unwrap();
    put(&mut set, &["b"]);
    set.rejoin(1).unwrap();
    set.replicate_all_once().unwrap();
    assert_eq!(set.isr(), vec![1, 2, 3]);
    let hw = set.high_watermark();
    let assignment = set.assignment();
    assert_eq!(
        (assignment.leader_id, assignment.leader_epoch),
        (le.leader_id, le.leader_epoch)
    );
    let set = h.reopen(set);
    assert_eq!(set.assignment(), assignment);
    assert_eq!(set.isr(), vec![1, 2, 3]);
    assert_eq!(set.high_watermark(), hw);
    assert_eq!(set.replica_role(3).unwrap(), ReplicaRole::Leader);
}

#[test]
fn follower_behind_the_leaders_log_start_restarts_at_it() {
    let h = Harness::with(|c| c.log.segment_max_bytes = 1);
    let mut set = h.create(&[1, 2]);
    set.remove_from_isr(2).unwrap();
    for i in 0..6 {
        put(&mut set, &[&format!("v{i}")]);
    }
    let deleted = set
        .apply_retention(
            START_MS,
            RetentionPolicy {
                retention_ms: None,
                retention_bytes: Some(1),
            },
        )
        .unwrap();
    assert_eq!(deleted, vec![0, 1, 2, 3, 4]);
    assert_eq!(set.log_start_offset(), 5);
    set.rejoin(2).unwrap();
    let fetch = set.replicate_all_once().unwrap();
    assert_eq!(fetch[0].reset_to, Some(5));
    let follower = set.replica_log(2).unwrap();
    assert_eq!(follower.log_start_offset(), 5);
    assert_eq!(values(follower), vals(&[(5, "v5")]));
    assert_eq!(set.isr(), vec![1, 2]);
    assert_isr_identical_below_hw(&set);
}

#[test]
fn retention_never_deletes_at_or_above_the_hw() {
    let h = Harness::with(|c| c.log.segment_max_bytes = 1);
    let mut set = h.create(&[1, 2]);
    for i in 0..4 {
        put(&mut set, &[&format!("v{i}")]);
    }
    let everything = RetentionPolicy {
        retention_ms: Some(0),
        retention_bytes: None,
    };
    assert_eq!(set.high_watermark(), 0);
    assert!(
        set.apply_retention(START_MS + 1, everything)
            .unwrap()
            .is_empty()
    );
    set.replicate_all_once().unwrap();
    assert_eq!(set.high_watermark(), 4);
    assert_eq!(
        set.apply_retention(START_MS + 1, everything).unwrap(),
        vec![0, 1, 2]
    );
    assert_eq!(set.log_start_offset(), 3);
    assert_eq!(
        set.replica_log(2).unwrap().log_start_offset(),
        3,
        "followers follow the leader's log start"
    );
    assert_eq!(
        code(set.apply_retention(
            START_MS,
            RetentionPolicy {
                retention_ms: Some(-1),
                retention_bytes: None
            }
        )),
        ErrorCode::InvalidRequest
    );
}

#[test]
fn compaction_skips_replicas_with_uncommitted_closed_segments() {
    let h = Harness::with(|c| c.log.segment_max_bytes = 1);
    let mut set = h.create(&[1, 2]);
    for v in ["a", "b"] {
        put(&mut set, &[v]);
    }
    set.roll().unwrap();
    assert!(
        set.compact(START_MS, 0)
            .unwrap()
            .iter()
            .all(|(b, _)| *b != 1)
    );
    set.replicate_all_once().unwrap();
    set.roll().unwrap();
    let compacted: Vec<i32> = set
        .compact(START_MS, 0)
        .unwrap()
        .into_iter()
        .map(|(b, _)| b)
        .collect();
    assert_eq!(compacted, vec![1, 2]);
    assert_eq!(
        visible(&set),
        vals(&[(0, "a"), (1, "b")]),
        "keyless records stay"
    );
}

#[test]
fn follower_batched_differently_in_the_same_epoch_is_realigned() {
    let h = Harness::new();
    // Only a leader that lost an unflushed tail and rewrote it in the same
    // epoch can leave a follower whose batch boundaries differ from its own.
    write_replica(&h, 1, &[(0, &["a", "b"]), (1, &["c"])]);
    write_replica(&h, 2, &[(0, &["a"]), (0, &["b", "x"])]);
    let mut set = h.open(PartitionAssignment {
        replicas: vec![1, 2],
        leader_id: 1,
        leader_epoch: 1,
    });
    let fetch = set.replicate_all_once().unwrap();
    assert_eq!(
        fetch[0].truncated_to,
        Some(0),
        "cut back to a common boundary"
    );
    assert_eq!(
        values(set.replica_log(2).unwrap()),
        vals(&[(0, "a"), (1, "b"), (2, "c")])
    );
    assert_eq!(set.isr(), vec![1, 2]);
    assert_isr_identical_below_hw(&set);
}
