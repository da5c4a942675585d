//! Partition reassignments in the core: a move between the hosted brokers
//! completes from the replication steps once the new replicas are in sync,
//! can be cancelled, is refused with Kafka's reasons, and survives a crash
//! at either of its persisted steps.

mod common;

use common::*;
use mk_cluster::*;
use std::sync::Arc;

fn placement(c: &BrokerCluster, p: &TopicPartition) -> (Vec<i32>, i32, i32) {
    let d = c.topics().describe_partition(p).unwrap();
    (d.replicas, d.leader_id, d.leader_epoch)
}

fn replica_dir(node: &Node, broker: i32, p: &TopicPartition) -> std::path::PathBuf {
    node.dir
        .path()
        .join(format!("broker-{broker}"))
        .join(p.dir_name())
}

fn refusal(r: Result<(), ReassignmentRefusal>) -> ReassignmentRefusal {
    r.expect_err("expected a refusal")
}

/// Three brokers and topic `t` (one partition of `rf` replicas) holding
/// `values`, every follower in sync; then broker `offline` is taken offline
/// and a move of `t-0` to `target` is requested, so a move to the offline
/// broker stays pending.
async fn pending_move(
    rf: usize,
    values: &[&str],
    offline: i32,
    target: &[i32],
) -> (Node, TopicPartition) {
    let (node, p0) = three_brokers(1, rf, values).await;
    let c = node.c();
    if rf > 1 {
        c.steps().replicate_all_once().unwrap();
    }
    c.brokers().take_offline(offline).unwrap();
    c.reassignments().alter(&p0, Some(target), true).unwrap();
    (node, p0)
}

#[tokio::test]
async fn a_move_completes_once_the_new_replicas_caught_up_and_the_old_leader_hands_over() {
    let mut node = Node::new(|c| {
        c.broker_ids = vec![1, 2, 3];
        c.replica_fetch_max_bytes = 1;
    });
    let c = node.c().clone();
    c.topics().create("t", 1, 1).unwrap();
    let p0 = tp("t", 0);
    append_each(&c, &p0, &["a", "b", "c"]).await;
    assert_eq!(placement(&c, &p0), (vec![1], 1, 0));

    c.reassignments().alter(&p0, Some(&[2, 3]), true).unwrap();
    let ongoing = c.reassignments().list(None).unwrap();
    assert_eq!(
        ongoing,
        vec![OngoingReassignment {
            partition: p0.clone(),
            replicas: vec![2, 3, 1],
            adding: vec![2, 3],
            removing: vec![1],
        }]
    );
    assert_eq!(
        placement(&c, &p0),
        (vec![2, 3, 1], 1, 0),
        "Metadata shows the set during the move"
    );
    assert!(replica_dir(&node, 3, &p0).is_dir());
    // One batch per fetch: the first round cannot finish the move.
    c.steps().replicate_all_once().unwrap();
    assert_eq!(
        c.reassignments()
            .list(Some(std::slice::from_ref(&p0)))
            .unwrap()
            .len(),
        1
    );
    for _ in 0..3 {
        c.steps().replicate_all_once().unwrap();
    }
    assert!(c.reassignments().list(None).unwrap().is_empty());
    assert_eq!(
        placement(&c, &p0),
        (vec![2, 3], 2, 1),
        "the removed leader handed over"
    );
    assert!(
        !replica_dir(&node, 1, &p0).exists(),
        "the removed replica's data is gone"
    );
    assert_eq!(read_uncommitted(&c, &p0), vec!["a", "b", "c"]);
    assert!(matches!(
        c.brokers().elect_leader(&p0, ElectionType::Preferred),
        Err(ElectionRefusal::NotNeeded)
    ));

    // The new set is what the metadata keeps.
    node.close_and_reopen().await;
    let c = node.c().clone();
    assert_eq!(placement(&c, &p0).0, vec![2, 3]);
    assert_eq!(read_uncommitted(&c, &p0), vec!["a", "b", "c"]);
}

#[tokio::test]
async fn requests_are_refused_with_kafkas_reasons() {
    let (node, p0) = three_brokers(1, 2, &[]).await;
    let c = node.c();
    for target in [&[][..], &[1, 1][..], &[1, 9][..], &[-1][..]] {
        assert!(
            matches!(
                refusal(c.reassignments().alter(&p0, Some(target), true)),
                ReassignmentRefusal::InvalidAssignment(_)
            ),
            "{target:?}"
        );
    }
    assert!(matches!(
        refusal(c.reassignments().alter(&p0, None, true)),
        ReassignmentRefusal::NoneInProgress(_)
    ));
    assert!(matches!(
        refusal(c.reassignments().alter(&p0, Some(&[1, 2, 3]), false)),
        ReassignmentRefusal::ReplicationFactorChange(_)
    ));
    for missing in [tp("nope", 0), tp("t", 7)] {
        let ReassignmentRefusal::Cluster(e) =
            refusal(c.reassignments().alter(&missing, Some(&[1]), true))
        else {
            panic!("{missing}")
        };
        assert!(
            matches!(
                e.code(),
                ErrorCode::UnknownTopic | ErrorCode::UnknownPartition
            ),
            "{e}"
        );
    }
    assert_eq!(
        placement(c, &p0),
        (vec![1, 2], 1, 0),
        "refusals change nothing"
    );
    // Same size, other brokers: allowed without a replication factor change.
    c.reassignments().alter(&p0, Some(&[2, 1]), false).unwrap();
    assert_eq!(
        placement(c, &p0),
        (vec![2, 1], 1, 0),
        "a reorder completes at once"
    );
    assert!(c.reassignments().list(None).unwrap().is_empty());
}

#[tokio::test]
async fn cancelling_returns_to_the_original_replicas_and_removes_the_new_ones() {
    // Broker 3 is offline: its new replica cannot catch up.
    let (node, p0) = pending_move(2, &["a"], 3, &[3, 2]).await;
    let c = node.c();
    for _ in 0..3 {
        c.steps().replicate_all_once().unwrap();
    }
    assert_eq!(
        c.reassignments().list(None).unwrap().len(),
        1,
        "still pending"
    );
    c.reassignments().alter(&p0, None, true).unwrap();
    assert!(c.reassignments().list(None).unwrap().is_empty());
    let (replicas, leader, _) = placement(c, &p0);
    assert_eq!(
        (replicas, leader),
        (vec![2, 1], 1),
        "Kafka's order: the set during the move minus the adding"
    );
    assert!(!replica_dir(&node, 3, &p0).exists());
    assert!(matches!(
        refusal(c.reassignments().alter(&p0, None, true)),
        ReassignmentRefusal::NoneInProgress(_)
    ));
    assert_eq!(read_uncommitted(c, &p0), vec!["a"]);
}

#[tokio::test]
async fn the_replicas_a_move_adds_do_not_make_a_partition_under_replicated() {
    // Broker 3 offline keeps its new replica out of the ISR.
    let (node, p0) = pending_move(2, &["a"], 3, &[3, 2]).await;
    let c = node.c();
    let urp = || c.views().overview().unwrap().partitions.under_replicated;
    let d = c.topics().describe_partition(&p0).unwrap();
    assert_eq!(
        (d.replicas.clone(), d.adding_replicas.clone(), d.isr.clone()),
        (vec![3, 2, 1], vec![3], vec![1, 2])
    );
    assert_eq!(d.replication_factor(), 2);
    assert!(
        !d.is_under_replicated(),
        "both original replicas are in sync: Kafka does not count the adding one"
    );
    assert_eq!(urp(), 0);
    // An original replica falling out of sync does make it under-replicated.
    c.brokers().take_offline(2).unwrap();
    let d = c.topics().describe_partition(&p0).unwrap();
    assert_eq!(d.isr, vec![1]);
    assert!(d.is_under_replicated());
    assert_eq!(urp(), 1);
    // Once the move completes, the target's size is the replication factor.
    c.brokers().bring_online(2).unwrap();
    c.brokers().bring_online(3).unwrap();
    for _ in 0..3 {
        c.steps().replicate_all_once().unwrap();
    }
    let d = c.topics().describe_partition(&p0).unwrap();
    assert_eq!(
        (d.replicas.clone(), d.adding_replicas.clone()),
        (vec![3, 2], vec![])
    );
    assert!(!d.is_under_replicated());
    assert_eq!(urp(), 0);
}

/// A move of `t`-0 from [1] to [2, 3] (broker 3 offline keeps it
/// pending) whose adding replica 2 was elected and then took "b" alone:
/// broker 1 went offline, so no original replica is in sync.
async fn a_move_led_by_its_adding_replica() -> (Node, TopicPartition) {
    let (node, p0) = pending_move(1, &["a"], 3, &[2, 3]).await;
    let c = node.c();
    for _ in 0..2 {
        c.steps().replicate_all_once().unwrap();
    }
    c.brokers()
        .elect_leader(&p0, ElectionType::Preferred)
        .unwrap();
    c.brokers().take_offline(1).unwrap();
    append_each(c, &p0, &["b"]).await;
    assert_eq!(placement(c, &p0), (vec![2, 3, 1], 2, 1));
    assert_eq!(c.topics().describe_partition(&p0).unwrap().isr, vec![2]);
    (node, p0)
}

fn allow_unclean(c: &BrokerCluster) {
    let on = ConfigChange::Set {
        key: "unclean.leader.election.enable".into(),
        value: "true".into(),
    };
    c.topics().alter_config("t", &[on], false).unwrap();
}

#[tokio::test]
async fn a_cancel_that_needs_an_unclean_election_is_refused_unless_the_topic_allows_it() {
    let (mut node, p0) = a_move_led_by_its_adding_replica().await;
    let c = node.c().clone();
    let ReassignmentRefusal::InvalidAssignment(why) =
        refusal(c.reassignments().alter(&p0, None, true))
    else {
        panic!("expected INVALID_REPLICA_ASSIGNMENT")
    };
    assert!(why.contains("unclean.leader.election.enable"), "{why}");
    assert_eq!(placement(&c, &p0), (vec![2, 3, 1], 2, 1), "nothing changed");
    assert_eq!(c.reassignments().list(None).unwrap().len(), 1);

    // Allowed: no original replica is online, so broker 1 leads from its
    // offline broker and nothing serves until it returns (Kafka: leader -1).
    allow_unclean(&c);
    assert_eq!(
        placement(&c, &p0).1,
        2,
        "turning it on changes no served leader"
    );
    c.reassignments().alter(&p0, None, true).unwrap();
    assert!(c.reassignments().list(None).unwrap().is_empty());
    assert_eq!(placement(&c, &p0), (vec![1], 1, 2));
    assert_eq!(c.brokers().available_leader(&p0).unwrap(), None);
    assert_eq!(c.views().overview().unwrap().partitions.offline, 1);
    for b in [2, 3] {
        assert!(!replica_dir(&node, b, &p0).exists(), "broker {b}");
    }
    drop(c);

    // The revert was recorded before use.
    node.crash_and_reopen();
    let c = node.c().clone();
    let (replicas, leader, epoch) = placement(&c, &p0);
    assert_eq!((replicas, leader), (vec![1], 1));
    assert!(epoch >= 2, "epoch {epoch}");
    assert!(c.reassignments().list(None).unwrap().is_empty());
    assert_eq!(c.brokers().available_leader(&p0).unwrap(), Some(1));
    assert_eq!(
        read_uncommitted(&c, &p0),
        vec!["a"],
        "b was only on broker 2"
    );
    append_each(&c, &p0, &["c"]).await;
    assert_eq!(read_uncommitted(&c, &p0), vec!["a", "c"]);
}

#[tokio::test]
async fn an_unclean_cancel_elects_an_online_original_replica_at_once() {
    let (node, p0) = a_move_led_by_its_adding_replica().await;
    let c = node.c();
    // Back online but not caught up: still out of the ISR.
    c.brokers().bring_online(1).unwrap();
    assert_eq!(c.topics().describe_partition(&p0).unwrap().isr, vec![2]);
    allow_unclean(c);
    c.reassignments().alter(&p0, None, true).unwrap();
    assert_eq!(placement(c, &p0), (vec![1], 1, 2));
    assert_eq!(c.brokers().available_leader(&p0).unwrap(), Some(1));
    assert_eq!(read_uncommitted(c, &p0), vec!["a"]);
    append_each(c, &p0, &["c"]).await;
    assert_eq!(read_uncommitted(c, &p0), vec!["a", "c"]);
}

#[tokio::test]
async fn a_crash_during_a_move_resumes_it_and_a_crash_after_it_finishes_the_removal() {
    let (mut node, p0) = pending_move(2, &["a", "b"], 3, &[2, 3]).await;
    let c = node.c().clone();
    c.steps().replicate_all_once().unwrap();
    drop(c);

    // The move is recorded: it resumes (and a restart brings broker 3 back).
    node.crash_and_reopen();
    let c = node.c().clone();
    assert_eq!(c.reassignments().list(None).unwrap()[0].adding, vec![3]);
    for _ in 0..3 {
        c.steps().replicate_all_once().unwrap();
    }
    assert!(c.reassignments().list(None).unwrap().is_empty());
    assert_eq!(placement(&c, &p0).0, vec![2, 3]);
    assert_eq!(read_uncommitted(&c, &p0), vec!["a", "b"]);
    drop(c);

    // A crash between recording the completed move and removing the
    // directory that left: the record says which directory to remove.
    node.crash_and_reopen();
    let leftover = replica_dir(&node, 1, &p0);
    std::fs::create_dir_all(&leftover).unwrap();
    std::fs::write(leftover.join("00000000000000000000.log"), b"").unwrap();
    let path = node.dir.path().join("metadata.json");
    let mut meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    meta["topics"]["t"]["partitions"][0]["deleting_replicas"] = serde_json::json!([1]);
    node.crash_and_reopen_with(|| std::fs::write(&path, meta.to_string()).unwrap());
    assert!(!leftover.exists());
    let c = node.c().clone();
    assert_eq!(placement(&c, &p0).0, vec![2, 3]);
    assert_eq!(read_uncommitted(&c, &p0), vec!["a", "b"]);
    let again: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert!(
        again["topics"]["t"]["partitions"][0]
            .get("deleting_replicas")
            .is_none()
    );
}

#[tokio::test]
async fn a_crash_before_the_new_replica_was_created_opens_it_empty_and_it_catches_up() {
    let (mut node, p0) = pending_move(1, &["a", "b"], 2, &[1, 2]).await;
    let c = node.c().clone();
    drop(c);
    // The move was recorded; the crash came before broker 2's directory
    // was made.
    let new_dir = replica_dir(&node, 2, &p0);
    node.crash_and_reopen_with(|| std::fs::remove_dir_all(&new_dir).unwrap());
    let c = node.c().clone();
    assert_eq!(c.reassignments().list(None).unwrap()[0].adding, vec![2]);
    assert!(
        c.topics()
            .describe_partition(&p0)
            .unwrap()
            .damaged
            .is_none()
    );
    for _ in 0..2 {
        c.steps().replicate_all_once().unwrap();
    }
    assert!(c.reassignments().list(None).unwrap().is_empty());
    // Epoch 1: after an unclean shutdown the leader takes a new epoch.
    assert_eq!(placement(&c, &p0), (vec![1, 2], 1, 1));
    let d = c.topics().describe_partition(&p0).unwrap();
    assert_eq!(d.log_end_offsets.get(&2), Some(&2));
}

#[tokio::test]
async fn deleting_a_topic_in_the_middle_of_a_move_removes_every_replica() {
    let (mut node, p0) = pending_move(1, &["a"], 3, &[3]).await;
    let c = node.c().clone();
    c.topics().delete("t").unwrap();
    drop(c);
    for b in [1, 3] {
        assert!(!replica_dir(&node, b, &p0).exists(), "broker {b}");
    }
    // Nothing is left that the next open would refuse as unknown.
    node.crash_and_reopen();
    assert!(node.c().topics().list().unwrap().is_empty());
}

/// One move under a fault at `site` (counted from the request on; `None`:
/// no fault), then a crash and a clean reopen: the broker opens, the move
/// ends either undone or done (never half), no directory is left of a
/// replica outside the set, and every record is there. Returns the write
/// sites the move passed.
fn move_under_fault(site: Option<(u64, Fault)>) -> u64 {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(1_000_000);
    let faults = Arc::new(FaultInjector::new());
    let mut config = MiniKafkaConfig::new(dir.path());
    config.broker_ids = vec![1, 2, 3];
    let open = || {
        BrokerCluster::open_with_faults(config.clone(), Arc::new(clock.clone()), faults.clone())
            .unwrap()
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let p0 = tp("t", 0);
    let c = open();
    c.topics().create("t", 1, 2).unwrap();
    rt.block_on(append_each(&c, &p0, &["a", "b", "c"]));
    c.steps().replicate_all_once().unwrap();
    let start = faults.sites_passed();
    if let Some((s, f)) = site {
        faults.inject_at(start + s, f);
    }
    let what = format!("{site:?}");
    // Under a fault any step may fail (typed); the broker must not lie.
    let _ = c.reassignments().alter(&p0, Some(&[3, 2]), true);
    for _ in 0..3 {
        let _ = c.steps().replicate_all_once();
    }
    let used = faults.sites_passed() - start;
    c.lifecycle().crash();
    drop(c);
    faults.clear();

    let c = open();
    for _ in 0..3 {
        c.steps().replicate_all_once().unwrap();
    }
    let replicas = placement(&c, &p0).0;
    let pending = c.reassignments().list(None).unwrap();
    assert!(
        (replicas == [1, 2] && pending.is_empty())
            || (replicas == [3, 2] && pending.is_empty())
            || (replicas == [3, 2, 1] && pending.len() == 1),
        "{what}: replicas {replicas:?}, pending {pending:?}"
    );
    if !pending.is_empty() {
        // A move left pending by the fault completes now.
        for _ in 0..3 {
            c.steps().replicate_all_once().unwrap();
        }
        assert_eq!(placement(&c, &p0).0, vec![3, 2], "{what}");
    }
    let replicas = placement(&c, &p0).0;
    for b in [1, 2, 3] {
        let held = dir
            .path()
            .join(format!("broker-{b}"))
            .join(p0.dir_name())
            .exists();
        assert_eq!(
            held,
            replicas.contains(&b),
            "{what}: broker {b}'s directory"
        );
    }
    assert_eq!(read_uncommitted(&c, &p0), vec!["a", "b", "c"], "{what}");
    c.lifecycle().crash();
    used
}

#[test]
fn a_fault_at_any_write_of_a_move_leaves_it_undone_or_done_after_a_restart() {
    let sites = move_under_fault(None);
    assert!(sites > 5, "the move passed {sites} write sites");
    for s in 0..sites {
        for f in [Fault::Io, Fault::Torn] {
            move_under_fault(Some((s, f)));
        }
    }
}

#[tokio::test]
async fn a_preferred_election_picks_the_first_replica_of_the_new_assignment() {
    // Broker 3 offline keeps the move pending; its target starts with 2.
    let (node, p0) = pending_move(2, &["a"], 3, &[2, 1, 3]).await;
    let c = node.c();
    assert_eq!(placement(c, &p0), (vec![2, 1, 3], 1, 0));
    let elected = c
        .brokers()
        .elect_leader(&p0, ElectionType::Preferred)
        .unwrap();
    assert_eq!((elected.leader_id, elected.leader_epoch), (2, 1));
    c.brokers().bring_online(3).unwrap();
    for _ in 0..3 {
        c.steps().replicate_all_once().unwrap();
    }
    assert!(c.reassignments().list(None).unwrap().is_empty());
    assert_eq!(placement(c, &p0), (vec![2, 1, 3], 2, 1));
    assert!(matches!(
        c.brokers().elect_leader(&p0, ElectionType::Preferred),
        Err(ElectionRefusal::NotNeeded)
    ));
    assert_eq!(read_uncommitted(c, &p0), vec!["a"]);
}
