//! Crash safety by brute force: a scripted run is failed at every log write
//! in turn (mk-log's fault injector), the process is "killed" at that point
//! and the replica set is reopened. Every reopen must succeed and keep the
//! guarantees: visibility never moves backwards, acknowledged `acks=all`
//! records stay, ISR members agree below the HW, and replication resumes.

mod common;

use common::*;
use mk_core::ErrorCode;
use mk_replication::{AckMode, AppendOutcome, PartitionReplicaSet, ReplicationError};

/// The script: appends in every ack mode, replication, a promotion and a
/// rejoin, a checkpoint. Returns the first error (the injected failure).
fn script(
    set: &mut PartitionReplicaSet,
    hw_seen: &mut i64,
    acked: &mut Vec<(i64, String)>,
) -> Result<(), ReplicationError> {
    for round in 0..4 {
        for (i, acks) in [AckMode::One, AckMode::All, AckMode::Zero]
            .into_iter()
            .enumerate()
        {
            let value = format!("r{round}-{i}");
            let outcome = match set.append(batch(&[&value]), acks, None) {
                // Right after the promotion the ISR is {2}: acks=all waits
                // for broker 1 to catch up.
                Err(e) if e.code() == ErrorCode::NotEnoughReplicas => continue,
                other => other?,
            };
            if let AppendOutcome::Pending(mut h) = outcome {
                set.replicate_all_once()?;
                if let Some(Ok(r)) = h.try_result() {
                    acked.push((r.base_offset.unwrap(), value));
                }
            }
            *hw_seen = (*hw_seen).max(set.high_watermark());
        }
        set.replicate_all_once()?;
        if round == 1 {
            set.promote(2)?;
            set.rejoin(1)?;
        }
        if round == 2 {
            set.checkpoint()?;
        }
        *hw_seen = (*hw_seen).max(set.high_watermark());
    }
    Ok(())
}

#[test]
fn failing_any_log_write_then_crashing_reopens_with_every_guarantee() {
    let mut failed_at_least_once = false;
    let mut completed = false;
    // Bounded so that a script that stopped failing cannot loop forever.
    for writes_allowed in 0..1_000 {
        let h = Harness::with(|c| {
            c.min_insync_replicas = 2;
            c.log.segment_max_bytes = 256;
        });
        let faults = h.config.log.faults.clone();
        let mut set = h.create(&[1, 2, 3]);
        faults.fail_writes_after(writes_allowed);
        let (mut hw_seen, mut acked) = (0, Vec::new());
        let outcome = script(&mut set, &mut hw_seen, &mut acked);
        if let Err(e) = &outcome {
            assert!(
                e.is_storage_failure(),
                "after {writes_allowed} writes: an injected I/O failure must stay a storage failure: {e}"
            );
            failed_at_least_once = true;
        }
        let assignment = set.assignment();
        set.crash();
        faults.clear();
        let mut set = h.open(assignment);
        assert!(
            set.high_watermark() >= hw_seen,
            "after {writes_allowed} writes: HW {} < {hw_seen} seen before the crash",
            set.high_watermark()
        );
        let log = values(set.leader_log());
        for (offset, v) in &acked {
            assert!(
                log.contains(&(*offset, v.clone())),
                "after {writes_allowed} writes: acknowledged {v} at {offset} lost: {log:?}"
            );
        }
        assert_isr_identical_below_hw(&set);
        put(&mut set, &["after-restart"]);
        set.replicate_all_once().unwrap();
        set.replicate_all_once().unwrap();
        assert_eq!(set.isr(), vec![1, 2, 3], "after {writes_allowed} writes");
        assert_eq!(set.high_watermark(), set.log_end_offset());
        assert_isr_identical_below_hw(&set);
        set.close().unwrap();
        if outcome.is_ok() {
            completed = true;
            break;
        }
    }
    assert!(
        failed_at_least_once && completed,
        "every write of the script was failed once"
    );
}
