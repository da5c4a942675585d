//! Every lab runs as a test and its key facts hold.

use mk_labs::{LAB_NAMES, run_lab};

async fn lab(name: &str) -> mk_labs::LabReport {
    let dir = tempfile::tempdir().unwrap();
    let report = run_lab(name, dir.path())
        .await
        .unwrap_or_else(|e| panic!("lab {name}: {e}"));
    assert!(
        report.steps.len() >= 4,
        "{name} narrates its steps: {:?}",
        report.steps
    );
    report
}

#[tokio::test]
async fn lab_leader_failure_acks1_loses_and_acks_all_survives() {
    let r = lab("leader_failure").await;
    assert_eq!(r.facts["acks1_acknowledged_offset"], 0);
    assert_eq!(r.facts["acks1_write_lost"], 1, "{:#?}", r.steps);
    assert_eq!(r.facts["acks_all_write_survived"], 1, "{:#?}", r.steps);
}

#[tokio::test]
async fn lab_rebalance_generations_stale_view_and_no_overlap() {
    let r = lab("rebalance").await;
    assert_eq!(r.facts["generation_after_a"], 1);
    assert_eq!(r.facts["generation_after_b"], 2);
    assert_eq!(r.facts["stale_commit_rejected"], 1);
    assert_eq!(r.facts["overlap_after_refresh"], 0);
    assert_eq!(r.facts["partitions_after_leave"], 4);
}

#[tokio::test]
async fn lab_divergent_tail_is_replaced_and_replicas_converge() {
    let r = lab("divergent_tail").await;
    assert_eq!(r.facts["divergent_tail_replaced"], 1, "{:#?}", r.steps);
    assert_eq!(r.facts["replicas_converged"], 1, "{:#?}", r.steps);
    assert_eq!(r.facts["leader_epoch"], 1);
}

#[tokio::test]
async fn lab_exactly_once_survives_a_crash_mid_transaction() {
    let r = lab("exactly_once").await;
    assert_eq!(r.facts["committed_outputs"], 4, "{:#?}", r.steps);
    assert_eq!(r.facts["distinct_outputs"], 4);
    assert_eq!(r.facts["final_committed_offset"], 4);
    assert!(
        r.facts["uncommitted_visible_outputs"] > 4,
        "the aborted attempt is still in the log"
    );
}

#[tokio::test]
async fn unknown_lab_is_invalid_request() {
    let dir = tempfile::tempdir().unwrap();
    let err = run_lab("nope", dir.path()).await.unwrap_err();
    assert_eq!(err.code(), mk_cluster::ErrorCode::InvalidRequest);
    assert_eq!(LAB_NAMES.len(), 4);
}
