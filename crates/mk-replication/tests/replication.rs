//! Follower fetch, ISR, high watermark and acks modes (spec 02, "Append" and
//! "Follower fetch, ISR, HW").

mod common;

use common::*;
use mk_core::ErrorCode;
use mk_replication::{AckMode, AppendOutcome, PartitionAssignment, ReplicaRole};

#[test]
fn new_partition_has_first_replica_as_leader_epoch_zero_full_isr_and_hw_zero() {
    let (h, set) = Harness::with_replicas(&[3, 1, 2]);
    assert_eq!(set.leader_id(), 3);
    assert_eq!(set.leader_epoch(), 0);
    assert_eq!(set.replicas(), &[3, 1, 2]);
    assert_eq!(set.isr(), vec![1, 2, 3], "sorted");
    assert_eq!(set.high_watermark(), 0);
    assert_eq!(
        set.assignment(),
        PartitionAssignment {
            replicas: vec![3, 1, 2],
            leader_id: 3,
            leader_epoch: 0
        }
    );
    for b in [1, 2, 3] {
        assert!(
            h.dir
                .path()
                .join(format!("broker-{b}"))
                .join("events-0")
                .is_dir(),
            "replica directory of broker {b}"
        );
    }
    assert_eq!(set.replica_role(3).unwrap(), ReplicaRole::Leader);
    assert_eq!(set.replica_role(1).unwrap(), ReplicaRole::Follower);
}

#[test]
fn follower_fetch_advances_hw_only_when_isr_has_data() {
    let (_h, mut set) = Harness::with_replicas(&[1, 2, 3]);
    assert_eq!(put(&mut set, &["a"]), 0);
    assert_eq!(set.high_watermark(), 0, "followers have nothing yet");
    assert!(visible(&set).is_empty());

    set.replicate_follower_once(2).unwrap();
    assert_eq!(set.replica_log_end_offset(2).unwrap(), 1);
    assert_eq!(set.isr(), vec![1, 2, 3]);
    assert_eq!(
        set.high_watermark(),
        0,
        "broker 3 is in the ISR without the data"
    );

    set.replicate_all_once().unwrap();
    assert_eq!(set.high_watermark(), 1);
    assert_eq!(visible(&set), vals(&[(0, "a")]));
    assert_isr_identical_below_hw(&set);
}

#[test]
fn follower_copies_whole_batches_unchanged_bounded_by_fetch_max_bytes() {
    let h = Harness::with(|c| c.replica_fetch_max_bytes = 1);
    let mut set = h.create(&[1, 2]);
    put(&mut set, &["a", "b", "c"]);
    put(&mut set, &["d"]);
    let fetch = set.replicate_all_once().unwrap();
    assert_eq!(fetch.len(), 1);
    assert_eq!(
        (fetch[0].broker, fetch[0].batches, fetch[0].log_end_offset),
        (2, 1, 3),
        "at least one whole batch even if it exceeds the byte bound"
    );
    assert_eq!(set.high_watermark(), 3);
    set.replicate_all_once().unwrap();
    assert_eq!(set.high_watermark(), 4);
    assert_eq!(
        frames(set.replica_log(2).unwrap(), 0, 4),
        frames(set.leader_log(), 0, 4),
        "frames are copied byte for byte"
    );
    let unbounded = Harness::new();
    let mut set = unbounded.create(&[1, 2]);
    for v in ["a", "b", "c"] {
        put(&mut set, &[v]);
    }
    let fetch = set.replicate_all_once().unwrap();
    assert_eq!(fetch[0].batches, 3);
    assert!(fetch[0].bytes > 0);
}

#[test]
fn followers_fetch_in_broker_id_order_and_record_their_fetch_time() {
    let (h, mut set) = Harness::with_replicas(&[2, 3, 1]);
    h.clock.advance(500);
    let fetches = set.replicate_all_once().unwrap();
    let order: Vec<_> = fetches.iter().map(|f| f.broker).collect();
    assert_eq!(order, vec![1, 3]);
    assert_eq!(set.last_fetch_ms(1).unwrap(), START_MS + 500);
    assert_eq!(set.last_fetch_ms(3).unwrap(), START_MS + 500);
}

#[test]
fn lagging_follower_leaves_isr_by_time() {
    let h = Harness::with(|c| c.replica_lag_time_ms = 10_000);
    let mut set = h.create(&[1, 2, 3]);
    h.clock.advance(10_000);
    set.replicate_follower_once(2).unwrap();
    assert_eq!(
        set.isr(),
        vec![1, 2, 3],
        "exactly the lag time is still in sync"
    );

    h.clock.advance(1);
    set.replicate_follower_once(2).unwrap();
    assert_eq!(
        set.isr(),
        vec![1, 2],
        "broker 3 has not fetched for 10_001 ms"
    );

    put(&mut set, &["a"]);
    set.replicate_follower_once(2).unwrap();
    assert_eq!(
        set.high_watermark(),
        1,
        "the HW no longer waits for broker 3"
    );

    set.replicate_all_once().unwrap();
    assert_eq!(
        set.isr(),
        vec![1, 2, 3],
        "broker 3 caught up and fetched again"
    );
}

#[test]
fn lagging_follower_leaves_isr_by_offsets() {
    let h = Harness::with(|c| {
        c.replica_lag_max_offsets = 2;
        c.replica_fetch_max_bytes = 1;
    });
    let mut set = h.create(&[1, 2]);
    for v in ["a", "b", "c"] {
        put(&mut set, &[v]);
    }
    set.replicate_all_once().unwrap();
    assert_eq!(set.replica_log_end_offset(2).unwrap(), 1);
    assert_eq!(set.isr(), vec![1, 2], "a lag of exactly 2 is still in sync");
    assert_eq!(set.high_watermark(), 1);

    for v in ["d", "e"] {
        put(&mut set, &[v]);
    }
    set.replicate_all_once().unwrap();
    assert_eq!(set.replica_log_end_offset(2).unwrap(), 2);
    assert_eq!(set.isr(), vec![1], "a lag of 3 offsets is out");
    assert_eq!(
        set.high_watermark(),
        5,
        "a single-replica ISR commits everything"
    );
}

#[test]
fn cannot_reenter_isr_below_hw() {
    let h = Harness::with(|c| c.replica_fetch_max_bytes = 1);
    let mut set = h.create(&[1, 2]);
    set.remove_from_isr(2).unwrap();
    for v in ["a", "b", "c"] {
        put(&mut set, &[v]);
    }
    assert_eq!(set.high_watermark(), 3);
    set.rejoin(2).unwrap();
    for expected_leo in [1, 2] {
        set.replicate_all_once().unwrap();
        assert_eq!(set.replica_log_end_offset(2).unwrap(), expected_leo);
        assert_eq!(
            set.isr(),
            vec![1],
            "fresh and within the offset lag, but below the HW 3"
        );
    }
    set.replicate_all_once().unwrap();
    assert_eq!(set.isr(), vec![1, 2]);
    assert_eq!(set.high_watermark(), 3);
}

#[test]
fn removed_follower_stops_fetching_until_it_rejoins() {
    let (_h, mut set) = Harness::with_replicas(&[1, 2, 3]);
    set.remove_from_isr(3).unwrap();
    assert_eq!(set.replica_role(3).unwrap(), ReplicaRole::Offline);
    assert_eq!(set.isr(), vec![1, 2]);
    put(&mut set, &["a"]);
    let fetches = set.replicate_all_once().unwrap();
    assert_eq!(fetches.iter().map(|f| f.broker).collect::<Vec<_>>(), [2]);
    assert_eq!(set.replica_log_end_offset(3).unwrap(), 0);
    assert_eq!(
        code(set.replicate_follower_once(3)),
        ErrorCode::InvalidRequest
    );
    set.rejoin(3).unwrap();
    set.replicate_all_once().unwrap();
    assert_eq!(set.isr(), vec![1, 2, 3]);
    assert_isr_identical_below_hw(&set);
}

#[test]
fn leader_cannot_be_removed_and_unknown_brokers_are_unknown_partition() {
    let (_h, mut set) = Harness::with_replicas(&[1, 2]);
    assert_eq!(code(set.remove_from_isr(1)), ErrorCode::InvalidRequest);
    assert_eq!(code(set.rejoin(1)), ErrorCode::InvalidRequest);
    assert_eq!(
        code(set.replicate_follower_once(1)),
        ErrorCode::InvalidRequest
    );
    assert_eq!(set.isr(), vec![1, 2]);
    for err in [
        set.remove_from_isr(9).map(|_| ()),
        set.rejoin(9).map(|_| ()),
        set.promote(9).map(|_| ()),
        set.replica_log_end_offset(9).map(|_| ()),
    ] {
        assert_eq!(code(err), ErrorCode::UnknownPartition);
    }
}

#[test]
fn acks0_returns_unknown_offsets() {
    let (_h, mut set) = Harness::with_replicas(&[1, 2]);
    let r = done(set.append(batch(&["a", "b"]), AckMode::Zero, None).unwrap());
    assert_eq!((r.base_offset, r.next_offset), (None, None));
    assert_eq!(set.log_end_offset(), 2, "acks=0 still appended");
}

#[test]
fn acks1_returns_offsets_immediately() {
    let (_h, mut set) = Harness::with_replicas(&[1, 2]);
    let r = done(set.append(batch(&["a", "b"]), AckMode::One, None).unwrap());
    assert_eq!((r.base_offset, r.next_offset), (Some(0), Some(2)));
    assert_eq!(r.leader_epoch, 0);
    assert!(!r.duplicate);
    assert_eq!(set.high_watermark(), 0, "acknowledged before replication");
}

#[test]
fn acks_all_waits_for_hw_over_the_current_isr() {
    let (h, mut set) = Harness::min_isr_two(&[1, 2, 3]);
    let mut handle = put_all(&mut set, &["a"]);
    assert_eq!((handle.base_offset(), handle.next_offset()), (0, 1));
    assert!(handle.try_result().is_none());
    set.replicate_follower_once(2).unwrap();
    assert!(
        handle.try_result().is_none(),
        "broker 3 is in the ISR without it"
    );
    set.replicate_follower_once(3).unwrap();
    let r = handle.try_result().unwrap().unwrap();
    assert_eq!((r.base_offset, r.next_offset), (Some(0), Some(1)));
    assert_eq!(set.pending_acks(), 0);

    // Kafka completes on the HW of the current ISR: a follower that falls
    // out by time does not hold the write back while the ISR is large enough.
    let mut handle = put_all(&mut set, &["b"]);
    h.clock.advance(10_001);
    set.replicate_follower_once(2).unwrap();
    assert_eq!(set.isr(), vec![1, 2]);
    assert_eq!(handle.try_result().unwrap().unwrap().base_offset, Some(1));
}

#[test]
fn acks_all_with_single_replica_isr_commits_immediately() {
    let (_h, mut set) = Harness::with_replicas(&[1]);
    let mut handle = put_all(&mut set, &["a"]);
    assert_eq!(set.high_watermark(), 1);
    assert_eq!(handle.try_result().unwrap().unwrap().base_offset, Some(0));
}

#[test]
fn acks_all_rejected_before_append_when_isr_too_small() {
    let (_h, mut set) = Harness::min_isr_two(&[1, 2]);
    set.remove_from_isr(2).unwrap();
    let err = set.append(batch(&["a"]), AckMode::All, None).unwrap_err();
    assert_eq!(err.code(), ErrorCode::NotEnoughReplicas);
    assert!(err.to_string().contains("at least 2"), "{err}");
    assert_eq!(set.log_end_offset(), 0, "nothing written");
    assert_eq!(put(&mut set, &["b"]), 0, "acks=1 is not affected");
}

#[test]
fn acks_all_fails_after_append_when_isr_shrinks() {
    let (_h, mut set) = Harness::min_isr_two(&[1, 2, 3]);
    let mut handle = put_all(&mut set, &["a"]);
    set.remove_from_isr(2).unwrap();
    assert!(
        handle.try_result().is_none(),
        "ISR {{1, 3}} still meets the minimum"
    );
    set.remove_from_isr(3).unwrap();
    let err = failed(&mut handle);
    assert_eq!(err.code(), ErrorCode::NotEnoughReplicasAfterAppend);
    assert_eq!(set.log_end_offset(), 1, "the batch was appended");
    assert_eq!(set.pending_acks(), 0);
}

#[test]
fn acks_all_fails_after_append_when_isr_shrinks_by_time() {
    let (h, mut set) = Harness::min_isr_two(&[1, 2]);
    let mut handle = put_all(&mut set, &["a"]);
    h.clock.advance(10_001);
    set.refresh_isr();
    assert_eq!(set.isr(), vec![1]);
    assert_eq!(
        failed(&mut handle).code(),
        ErrorCode::NotEnoughReplicasAfterAppend
    );
}

#[test]
fn acks_all_fails_with_fenced_leader_epoch_when_leadership_changes_first() {
    let (_h, mut set) = Harness::with_replicas(&[1, 2]);
    let mut handle = put_all(&mut set, &["a"]);
    set.promote(2).unwrap();
    let err = failed(&mut handle);
    assert_eq!(err.code(), ErrorCode::FencedLeaderEpoch);
    assert!(err.to_string().contains("epoch 1"), "{err}");
}

#[test]
fn acks_all_never_hangs_on_close_or_crash() {
    let (h, mut set) = Harness::with_replicas(&[1, 2]);
    let mut handle = put_all(&mut set, &["a"]);
    set.close().unwrap();
    assert_eq!(failed(&mut handle).code(), ErrorCode::ClusterClosed);

    let mut set = h.open(PartitionAssignment::new_partition(vec![1, 2]));
    // After the restart broker 2 lacks "a" and is out of the ISR; let it
    // catch up so the next write has to wait for it.
    set.replicate_all_once().unwrap();
    assert_eq!(set.isr(), vec![1, 2]);
    let mut handle = put_all(&mut set, &["b"]);
    set.crash();
    assert_eq!(failed(&mut handle).code(), ErrorCode::ClusterClosed);
}

#[test]
fn acks_all_handle_is_awaitable_without_a_runtime_in_this_crate() {
    // A hand-rolled no-op waker is enough to poll the handle: the crate
    // hands out a plain future and never needs an executor itself.
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};
    let (_h, mut set) = Harness::with_replicas(&[1, 2]);
    let outcome = set.append(batch(&["a"]), AckMode::All, None).unwrap();
    let mut fut = pin!(outcome.result());
    let mut cx = Context::from_waker(Waker::noop());
    assert!(fut.as_mut().poll(&mut cx).is_pending());
    set.replicate_all_once().unwrap();
    match fut.as_mut().poll(&mut cx) {
        Poll::Ready(r) => assert_eq!(r.unwrap().base_offset, Some(0)),
        Poll::Pending => panic!("the handle must be ready once the HW passed the batch"),
    }
    let done = AppendOutcome::Done(common::done(
        set.append(batch(&["b"]), AckMode::One, None).unwrap(),
    ));
    let mut fut = pin!(done.result());
    assert!(matches!(fut.as_mut().poll(&mut cx), Poll::Ready(Ok(_))));
}

#[test]
fn consumers_never_see_offsets_at_or_above_hw() {
    let (_h, mut set) = Harness::holding_a(&[1, 2]);
    set.replicate_all_once().unwrap();
    put(&mut set, &["b", "c"]);
    assert_eq!(set.high_watermark(), 1);
    assert_eq!(set.log_end_offset(), 3);
    assert_eq!(visible(&set), vals(&[(0, "a")]));
    let past_hw = set
        .leader_log()
        .fetch(1, 10, Some(set.high_watermark()))
        .unwrap();
    assert!(
        past_hw.is_empty(),
        "between HW and LEO a consumer sees nothing"
    );
}

#[test]
fn invalid_configuration_and_assignment_are_rejected_on_open() {
    let h = Harness::with(|c| c.min_insync_replicas = 0);
    assert_eq!(
        code(h.try_open(PartitionAssignment::new_partition(vec![1]))),
        ErrorCode::InvalidRequest
    );
    let h = Harness::new();
    for bad in [
        PartitionAssignment::new_partition(vec![]),
        PartitionAssignment::new_partition(vec![1, 1]),
        PartitionAssignment::new_partition(vec![-1]),
        PartitionAssignment {
            replicas: vec![1, 2],
            leader_id: 3,
            leader_epoch: 0,
        },
        PartitionAssignment {
            replicas: vec![1, 2],
            leader_id: 1,
            leader_epoch: -1,
        },
    ] {
        assert_eq!(
            code(h.try_open(bad.clone())),
            ErrorCode::InvalidRequest,
            "{bad:?}"
        );
    }
}

#[test]
fn storage_failure_on_append_is_reported_as_storage_error() {
    let h = Harness::new();
    let faults = h.config.log.faults.clone();
    let mut set = h.create(&[1, 2]);
    faults.fail_writes_after(0);
    let err = set.append(batch(&["a"]), AckMode::One, None).unwrap_err();
    assert_eq!(err.code(), ErrorCode::StorageError);
    assert!(err.is_storage_failure(), "never a client error: {err}");
    faults.clear();
}

/// DeleteRecords: the leader's log start moves (inside a batch too), never
/// past the HW; in-sync followers follow at once, a lagging one when it
/// catches up (from the start of the leader's batch), and the start
/// survives a promotion and a crash.
#[test]
fn delete_records_moves_every_replicas_log_start_up_to_the_high_watermark() {
    let (h, mut set) = Harness::with_replicas(&[1, 2, 3]);
    put(&mut set, &["a", "b", "c"]);
    put(&mut set, &["d", "e", "f"]);
    set.replicate_all_once().unwrap();
    set.replicate_all_once().unwrap();
    assert_eq!(set.high_watermark(), 6);
    set.remove_from_isr(3).unwrap();
    put(&mut set, &["g", "h", "i"]);
    set.replicate_follower_once(2).unwrap();
    set.replicate_follower_once(2).unwrap();
    assert_eq!(set.high_watermark(), 9);
    put(&mut set, &["j"]);
    // Above the HW (9, the LEO is 10), or below -1: out of range.
    assert_eq!(code(set.delete_records(10)), ErrorCode::OffsetOutOfRange);
    assert_eq!(code(set.delete_records(-2)), ErrorCode::OffsetOutOfRange);
    // Inside the second batch; broker 3 (at 6) cannot follow that far yet.
    assert_eq!(set.delete_records(4).unwrap(), 4);
    assert_eq!(set.log_start_offset(), 4);
    assert_eq!(set.replica_log(2).unwrap().log_start_offset(), 4);
    assert_eq!(set.replica_log(3).unwrap().log_start_offset(), 4);
    assert_eq!(visible(&set)[0], (4, "e".to_string()));
    // Backwards changes nothing; -1 is the HW.
    assert_eq!(set.delete_records(2).unwrap(), 4);
    assert_eq!(set.delete_records(-1).unwrap(), 9);
    assert_eq!(set.replica_log(2).unwrap().log_start_offset(), 9);
    assert_eq!(
        set.replica_log(3).unwrap().log_start_offset(),
        6,
        "as far as its log reaches"
    );
    // Broker 3 comes back and catches up: its start follows the leader's.
    set.rejoin(3).unwrap();
    set.replicate_follower_once(3).unwrap();
    set.replicate_follower_once(3).unwrap();
    assert_eq!(set.replica_log(3).unwrap().log_start_offset(), 9);
    assert_eq!(
        values(set.replica_log(3).unwrap()),
        values(set.leader_log())
    );
    set.replicate_all_once().unwrap();
    set.promote(2).unwrap();
    assert_eq!(set.log_start_offset(), 9);
    let set = h.crash_reopen(set);
    for b in [1, 2, 3] {
        assert_eq!(set.replica_log(b).unwrap().log_start_offset(), 9, "{b}");
    }
}

/// A follower that fell behind the leader's log start while it was away
/// starts over from the start of the leader's batch holding that start,
/// then takes the start itself.
#[test]
fn a_follower_behind_a_log_start_inside_a_batch_starts_over_at_that_batch() {
    let (_h, mut set) = Harness::three_with_a_replicated();
    set.remove_from_isr(3).unwrap();
    put(&mut set, &["b", "c", "d"]);
    put(&mut set, &["e", "f"]);
    set.replicate_follower_once(2).unwrap();
    set.replicate_follower_once(2).unwrap();
    assert_eq!(set.high_watermark(), 6);
    assert_eq!(set.delete_records(3).unwrap(), 3);
    set.rejoin(3).unwrap();
    let fetch = set.replicate_follower_once(3).unwrap();
    assert_eq!(fetch.reset_to, Some(1), "the batch b..d starts at 1");
    let log = set.replica_log(3).unwrap();
    assert_eq!(log.log_start_offset(), 3);
    assert_eq!(values(log), vals(&[(3, "d"), (4, "e"), (5, "f")]));
}
