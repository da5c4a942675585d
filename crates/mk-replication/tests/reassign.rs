//! Moving replicas between brokers (Kafka's partition reassignment): the
//! adding replicas catch up as followers, the move completes once they are
//! in sync, a removed leader hands over, cancelling goes back, and a crash
//! in the middle loses nothing committed.

mod common;

use common::*;
use mk_core::ErrorCode;
use mk_replication::{PartitionReplicaSet, Reassignment, remove_replica_dirs};
use std::collections::BTreeSet;

fn replicate_until_ready(set: &mut PartitionReplicaSet) -> usize {
    for round in 1..=20 {
        set.replicate_all_once().unwrap();
        if set.reassignment_ready() {
            return round;
        }
    }
    panic!("the move never became ready: ISR {:?}", set.isr());
}

fn begin(set: &mut PartitionReplicaSet, target: &[i32]) -> Vec<i32> {
    let plan = set.plan_reassignment(target).unwrap();
    set.begin_reassignment(plan, &BTreeSet::new()).unwrap()
}

/// A partition on broker 1 holding "a", moving to `target`.
fn a_moving_from_1_to(target: &[i32]) -> (Harness, PartitionReplicaSet) {
    let (h, mut set) = Harness::holding_a(&[1]);
    begin(&mut set, target);
    (h, set)
}

/// Replicas 1 and 2 fetching one batch at a time (so a move takes several
/// rounds), holding `n` one-record batches both have.
fn in_sync_one_record_per_fetch(n: i64) -> (Harness, PartitionReplicaSet) {
    let h = Harness::with(|c| c.replica_fetch_max_bytes = 1);
    let mut set = h.create(&[1, 2]);
    for i in 0..n {
        put(&mut set, &[&format!("v{i}")]);
    }
    for _ in 0..n {
        set.replicate_all_once().unwrap();
    }
    assert_eq!(set.high_watermark(), n);
    (h, set)
}

#[test]
fn a_move_adds_followers_that_catch_up_then_the_removed_leader_hands_over() {
    let (h, mut set) = in_sync_one_record_per_fetch(3);

    assert!(begin(&mut set, &[2, 3]).is_empty());
    let r = set.reassignment().unwrap().clone();
    assert_eq!((r.adding(), r.removing()), (vec![3], vec![1]));
    assert_eq!(
        set.replicas(),
        &[2, 3, 1],
        "target first, then the removing replicas"
    );
    assert!(!set.isr().contains(&3), "a new replica starts out of sync");
    assert!(!set.reassignment_ready());
    assert_eq!(set.try_complete_reassignment().unwrap(), None);

    // One batch per fetch: the new replica needs several rounds.
    let rounds = replicate_until_ready(&mut set);
    assert!(rounds >= 3, "caught up in {rounds} round(s)");
    let done = set.try_complete_reassignment().unwrap().expect("ready");
    assert_eq!(done.replicas, vec![2, 3]);
    assert_eq!(done.removed, vec![1]);
    assert!(done.leader_moved);
    assert_eq!((done.leader.leader_id, done.leader.leader_epoch), (2, 1));
    assert_eq!(set.replicas(), &[2, 3]);
    assert_eq!(set.reassignment(), None);
    assert_eq!(set.leader_id(), 2);
    assert_eq!(
        code(set.replica_log_end_offset(1)),
        ErrorCode::UnknownPartition
    );
    assert_eq!(visible(&set), vals(&[(0, "v0"), (1, "v1"), (2, "v2")]));

    // The caller removes the directory once it persisted the new set.
    let dir = mk_replication::replica_dir(h.dir.path(), 1, &h.tp);
    assert!(dir.is_dir());
    remove_replica_dirs(h.dir.path(), &h.tp, &done.removed).unwrap();
    assert!(!dir.exists());
    remove_replica_dirs(h.dir.path(), &h.tp, &done.removed).unwrap();

    // The new set replicates and commits as any other.
    set.replicate_all_once().unwrap();
    assert_eq!(set.isr(), vec![2, 3]);
    let mut ack = put_all(&mut set, &["after"]);
    set.replicate_all_once().unwrap();
    assert_eq!(ack.try_result().unwrap().unwrap().base_offset, Some(3));
    assert_eq!(
        values(set.replica_log(3).unwrap()),
        vals(&[(0, "v0"), (1, "v1"), (2, "v2"), (3, "after")])
    );
}

#[test]
fn shrinking_and_reordering_complete_at_once() {
    let (_h, mut set) = Harness::three_with_a_replicated();
    begin(&mut set, &[1, 3]);
    assert!(set.reassignment_ready(), "nothing to add: ready at once");
    let done = set.try_complete_reassignment().unwrap().unwrap();
    assert_eq!((done.replicas, done.removed), (vec![1, 3], vec![2]));
    assert!(!done.leader_moved);
    assert_eq!(set.leader_epoch(), 0);

    let plan = set.plan_reassignment(&[3, 1]).unwrap();
    assert!(plan.is_reorder());
    begin(&mut set, &[3, 1]);
    let done = set.try_complete_reassignment().unwrap().unwrap();
    assert_eq!((done.replicas, done.removed), (vec![3, 1], vec![]));
    assert_eq!(set.leader_id(), 1, "a reorder moves no leadership");
    assert_eq!(set.isr(), vec![1, 3]);
}

#[test]
fn cancelling_goes_back_to_the_original_replicas_and_drops_the_adding_ones() {
    let (_h, mut set) = Harness::holding_a(&[1, 2]);
    set.replicate_all_once().unwrap();
    begin(&mut set, &[3, 4]);
    assert_eq!(set.replicas(), &[3, 4, 1, 2]);
    set.replicate_all_once().unwrap();
    let done = set.cancel_reassignment().unwrap();
    assert_eq!(done.replicas, vec![1, 2]);
    assert_eq!(done.removed, vec![3, 4]);
    assert!(!done.leader_moved);
    assert_eq!(set.replicas(), &[1, 2]);
    assert_eq!(set.reassignment(), None);
    assert_eq!(set.isr(), vec![1, 2]);
    assert_eq!(code(set.cancel_reassignment()), ErrorCode::InvalidRequest);
}

#[test]
fn a_new_target_replaces_a_pending_move_from_the_same_original() {
    let (_h, mut set) = a_moving_from_1_to(&[1, 2]);
    let dropped = begin(&mut set, &[1, 3]);
    assert_eq!(dropped, vec![2], "the first move's adding replica leaves");
    let r = set.reassignment().unwrap();
    assert_eq!((r.original(), r.target()), (&[1][..], &[1, 3][..]));
    replicate_until_ready(&mut set);
    let done = set.try_complete_reassignment().unwrap().unwrap();
    assert_eq!(done.replicas, vec![1, 3]);
}

#[test]
fn cancelling_refuses_when_no_original_replica_is_in_sync() {
    let (_h, mut set) = a_moving_from_1_to(&[2, 1]);
    replicate_until_ready(&mut set);
    // A preferred election during the move makes the adding replica lead;
    // the former leader is out of sync until it rejoins and catches up.
    set.promote(2).unwrap();
    assert_eq!(code(set.cancel_reassignment()), ErrorCode::NotInSyncReplica);
    assert_eq!(set.replicas(), &[2, 1], "a refused cancel changes nothing");
    set.rejoin(1).unwrap();
    set.replicate_all_once().unwrap();
    let done = set.cancel_reassignment().unwrap();
    assert_eq!((done.replicas, done.removed), (vec![1], vec![2]));
    assert!(done.leader_moved);
    assert_eq!((set.leader_id(), set.leader_epoch()), (1, 2));
    assert_eq!(visible(&set), vals(&[(0, "a")]));
}

#[test]
fn an_unclean_cancel_elects_an_original_replica_and_loses_what_it_lacks() {
    let (_h, mut set) = a_moving_from_1_to(&[2, 1]);
    assert!(
        !set.cancel_needs_unclean_election(),
        "1 leads and is in sync"
    );
    replicate_until_ready(&mut set);
    set.promote(2).unwrap();
    // Committed on the adding replica alone.
    put(&mut set, &["b"]);
    set.replicate_all_once().unwrap();
    assert_eq!(set.high_watermark(), 2);
    assert!(set.cancel_needs_unclean_election());
    assert_eq!(
        code(set.cancel_reassignment_unclean(2)),
        ErrorCode::InvalidRequest,
        "only an original replica may lead after a cancel"
    );
    assert_eq!(set.replicas(), &[2, 1], "a refused cancel changes nothing");

    let done = set.cancel_reassignment_unclean(1).unwrap();
    assert_eq!((done.replicas, done.removed), (vec![1], vec![2]));
    assert!(done.leader_moved);
    assert_eq!((done.leader.leader_id, done.leader.leader_epoch), (1, 2));
    assert_eq!(set.reassignment(), None);
    assert_eq!(set.isr(), vec![1]);
    assert_eq!(
        set.high_watermark(),
        1,
        "the HW falls to the new leader's log end"
    );
    assert_eq!(
        visible(&set),
        vals(&[(0, "a")]),
        "b is lost, as Kafka loses it"
    );
    put(&mut set, &["c"]);
    assert_eq!(visible(&set), vals(&[(0, "a"), (1, "c")]));
    assert!(!set.cancel_needs_unclean_election());
}

#[test]
fn bad_targets_are_refused_before_anything_changes() {
    let (_h, mut set) = Harness::with_replicas(&[1, 2]);
    for target in [&[][..], &[1, 1][..], &[-1, 2][..]] {
        assert_eq!(
            code(set.plan_reassignment(target)),
            ErrorCode::InvalidRequest,
            "{target:?}"
        );
    }
    // A leader that is neither original nor target (it was elected from a
    // replaced move's adding replicas) must not be dropped.
    begin(&mut set, &[3]);
    replicate_until_ready(&mut set);
    set.promote(3).unwrap();
    assert_eq!(code(set.plan_reassignment(&[4])), ErrorCode::InvalidRequest);
    assert_eq!(set.replicas(), &[3, 1, 2]);
}

#[test]
fn a_crash_in_the_middle_of_a_move_resumes_it_without_losing_committed_data() {
    let (h, mut set) = in_sync_one_record_per_fetch(4);
    begin(&mut set, &[3, 2]);
    set.replicate_all_once().unwrap();
    assert!(!set.reassignment_ready(), "broker 3 is only part way");
    let (replicas, adding, removing) = {
        let r = set.reassignment().unwrap();
        (r.replicas(), r.adding(), r.removing())
    };
    let mut set = h.crash_reopen(set);
    assert_eq!(set.replicas(), &[3, 2, 1]);
    set.restore_reassignment(Reassignment::from_parts(&replicas, &adding, &removing).unwrap())
        .unwrap();
    assert_eq!(
        visible(&set),
        vals(&[(0, "v0"), (1, "v1"), (2, "v2"), (3, "v3")])
    );
    replicate_until_ready(&mut set);
    let done = set.try_complete_reassignment().unwrap().unwrap();
    assert_eq!(done.replicas, vec![3, 2]);
    assert_eq!(done.leader.leader_id, 3);
    assert_eq!(
        visible(&set),
        vals(&[(0, "v0"), (1, "v1"), (2, "v2"), (3, "v3")])
    );
    assert_isr_identical_below_hw(&set);

    // A recorded move that does not match the replicas is refused.
    let bogus = Reassignment::new(vec![7], vec![8]);
    assert_eq!(
        code(set.restore_reassignment(bogus)),
        ErrorCode::InvalidRequest
    );
}

#[test]
fn the_recorded_form_round_trips() {
    let r = Reassignment::new(vec![1, 2, 3], vec![4, 2, 5]);
    assert_eq!(r.replicas(), vec![4, 2, 5, 1, 3]);
    assert_eq!(
        r.original(),
        &[2, 1, 3],
        "in the order of the set during the move"
    );
    assert_eq!((r.adding(), r.removing()), (vec![4, 5], vec![1, 3]));
    let back = Reassignment::from_parts(&r.replicas(), &r.adding(), &r.removing()).unwrap();
    assert_eq!(back.target(), r.target());
    assert_eq!(back, r);
    assert_eq!(Reassignment::from_parts(&[1, 2], &[], &[]), None);
}

#[test]
fn a_new_replica_that_cannot_be_opened_leaves_the_set_as_it_was() {
    let (h, mut set) = Harness::holding_a(&[1]);
    let faults = h.config.log.faults.clone();
    let start = faults.sites_passed();
    let plan = set.plan_reassignment(&[1, 2, 3]).unwrap();
    set.begin_reassignment(plan, &BTreeSet::new()).unwrap();
    let sites = faults.sites_passed() - start;
    assert!(
        sites >= 2,
        "opening two replicas passed {sites} write sites"
    );
    set.cancel_reassignment().unwrap();
    remove_replica_dirs(h.dir.path(), &h.tp, &[2, 3]).unwrap();
    let mut refused = 0;
    for site in 0..sites {
        faults.inject_at(faults.sites_passed() + site, mk_log::Fault::Io);
        let plan = set.plan_reassignment(&[1, 2, 3]).unwrap();
        match set.begin_reassignment(plan, &BTreeSet::new()) {
            Err(_) => {
                refused += 1;
                assert_eq!(set.replicas(), &[1], "site {site}");
                assert_eq!(set.reassignment(), None, "site {site}");
                assert_eq!(
                    code(set.replica_log_end_offset(2)),
                    ErrorCode::UnknownPartition
                );
                assert_eq!(
                    code(set.replica_log_end_offset(3)),
                    ErrorCode::UnknownPartition
                );
            }
            Ok(_) => {
                set.cancel_reassignment().unwrap();
            }
        }
        faults.clear();
        remove_replica_dirs(h.dir.path(), &h.tp, &[2, 3]).unwrap();
        assert_eq!(set.replicas(), &[1]);
    }
    assert_eq!(refused, sites, "every site's fault refused the move");
    assert_eq!(visible(&set), vals(&[(0, "a")]));
}
