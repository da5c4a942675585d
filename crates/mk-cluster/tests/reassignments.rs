//! Partition reassignments in the core: a move between the hosted brokers
//! completes from the replication steps once the new replicas are in sync,
//! can be cancelled, is refused with Kafka's reasons, and survives a crash
//! at either of its persisted steps.

mod common;

use common::*;
use mk_cluster::*;

async fn produce(c: &BrokerCluster, p: &TopicPartition, values: &[&str]) {
    for v in values {
        let batch = RecordBatch::new(vec![Record::new(None, Some(b(v)), 1_000)]).unwrap();
        c.data().append_batch(p, batch, AckMode::One).await.unwrap();
    }
}

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

#[tokio::test]
async fn a_move_completes_once_the_new_replicas_caught_up_and_the_old_leader_hands_over() {
    let mut node = Node::new(|c| {
        c.broker_ids = vec![1, 2, 3];
        c.replica_fetch_max_bytes = 1;
    });
    let c = node.c().clone();
    c.topics().create("t", 1, 1).unwrap();
    let p0 = tp("t", 0);
    produce(&c, &p0, &["a", "b", "c"]).await;
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
    let node = Node::new(|c| c.broker_ids = vec![1, 2, 3]);
    let c = node.c();
    c.topics().create("t", 1, 2).unwrap();
    let p0 = tp("t", 0);
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
    let node = Node::new(|c| c.broker_ids = vec![1, 2, 3]);
    let c = node.c();
    c.topics().create("t", 1, 2).unwrap();
    let p0 = tp("t", 0);
    produce(c, &p0, &["a"]).await;
    c.steps().replicate_all_once().unwrap();
    // Broker 3 is offline: its new replica cannot catch up.
    c.brokers().take_offline(3).unwrap();
    c.reassignments().alter(&p0, Some(&[3, 2]), true).unwrap();
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
async fn a_crash_during_a_move_resumes_it_and_a_crash_after_it_finishes_the_removal() {
    let mut node = Node::new(|c| c.broker_ids = vec![1, 2, 3]);
    let c = node.c().clone();
    c.topics().create("t", 1, 2).unwrap();
    let p0 = tp("t", 0);
    produce(&c, &p0, &["a", "b"]).await;
    c.steps().replicate_all_once().unwrap();
    c.brokers().take_offline(3).unwrap();
    c.reassignments().alter(&p0, Some(&[2, 3]), true).unwrap();
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
