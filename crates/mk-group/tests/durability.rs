//! Durability of committed offsets in the `__consumer_offsets` log: restart
//! after a clean close and after a crash, replay after compaction,
//! tombstones, persisted generations, and loud storage failures.

mod common;

use bytes::Bytes;
use common::{Fixture, SESSION_MS, code, offsets, tp};
use mk_core::{Clock, ErrorCode};
use mk_group::{GroupConfig, GroupError, GroupState, codec};
use mk_log::{LogConfig, PartitionLog, Record, RecordBatch};
use mk_storage::FaultInjector;
use std::sync::Arc;

/// Commits `rounds` rounds of offsets: group g1 through the group protocol,
/// group g2 with plain commits.
fn commit_rounds(f: &mut Fixture, rounds: i64) {
    let a = f.join("g1", "a", &["orders", "payments"]);
    let meta = f.meta.clone();
    for r in 0..rounds {
        f.commit_ok(
            "g1",
            "a",
            a.generation,
            &[("orders", (r % 4) as u32, r), ("payments", 1, 100 + r)],
        );
        f.c()
            .commit_direct(
                "g2",
                &offsets(&[("audit", (r % 3) as u32, 1_000 + r)]),
                &meta,
            )
            .unwrap();
    }
}

/// Every group with its committed offsets as `(topic, partition, offset)`.
type Snapshot = Vec<(String, Vec<(String, u32, i64)>)>;

fn snapshot(f: &mut Fixture) -> Snapshot {
    let groups = f.c().list_groups();
    groups
        .into_iter()
        .map(|g| {
            let offs = f
                .c()
                .committed_offsets(&g)
                .into_iter()
                .map(|(tp, o)| (tp.topic, tp.partition, o))
                .collect();
            (g, offs)
        })
        .collect()
}

/// Every committed offset is the same after a process kill and reopen.
fn assert_a_crash_loses_nothing(f: &mut Fixture) {
    let before = snapshot(f);
    f.crash();
    assert_eq!(snapshot(f), before);
}

#[test]
fn committed_offsets_survive_a_clean_restart() {
    let mut f = Fixture::new();
    commit_rounds(&mut f, 10);
    let before = snapshot(&mut f);
    assert_eq!(f.c().fetch_committed("g1", &tp("payments", 1)), Some(109));
    f.restart();
    assert_eq!(snapshot(&mut f), before);
    assert_eq!(f.c().fetch_committed("g1", &tp("orders", 1)), Some(9));
    assert_eq!(f.c().fetch_committed("g2", &tp("audit", 0)), Some(1_009));
}

#[test]
fn committed_offsets_survive_a_crash_without_close() {
    let mut f = Fixture::new();
    commit_rounds(&mut f, 10);
    // No flush, no close: the appends reached the OS, which is what a
    // process kill (as opposed to a power loss) needs.
    assert_a_crash_loses_nothing(&mut f);
}

#[test]
fn a_restarted_consumer_resumes_from_its_committed_offset() {
    let mut f = Fixture::new();
    f.join_and_commit("g", "a", "payments", &[(0, 42), (1, 7)]);
    f.crash();
    // The consumer re-joins; its starting positions are the committed offsets.
    let again = f.join("g", "a", &["payments"]);
    let starts: Vec<Option<i64>> = again
        .partitions
        .iter()
        .map(|p| f.c().fetch_committed("g", p))
        .collect();
    assert_eq!(starts, vec![Some(42), Some(7)]);
}

#[test]
fn generation_survives_restart_so_stale_members_stay_fenced() {
    let mut f = Fixture::new();
    f.join("g", "a", &["orders"]);
    let before = f.join("g", "b", &["orders"]);
    f.crash();
    // Members are not persisted (they re-join), the generation is.
    let d = f.c().describe_group("g").unwrap();
    assert_eq!(
        (d.state, d.generation),
        (GroupState::Empty, before.generation)
    );
    assert!(d.members.is_empty());
    let after = f.join("g", "a", &["orders"]);
    assert_eq!(after.generation, before.generation + 1);
    // A member that held the generation before the restart is fenced by it:
    // a, now a member again, may not commit with its old generation...
    let (c, _) = f.refused_commit("g", "a", before.generation, &[("orders", 3, 1)]);
    assert_eq!(c, ErrorCode::IllegalGeneration);
    // ...and b, which has not rejoined, is not a member at all.
    let (c, _) = f.refused_commit("g", "b", before.generation, &[("orders", 3, 1)]);
    assert_eq!(c, ErrorCode::UnknownMember);
    assert_eq!(
        code(f.c().heartbeat("g", "b", before.generation)).0,
        ErrorCode::UnknownMember
    );
    assert!(f.c().committed_offsets("g").is_empty());
}

#[test]
fn assignor_choice_survives_restart() {
    let mut f = Fixture::new();
    let (c, meta) = f.parts();
    c.join_with_assignor(
        "g",
        "a",
        ["orders"],
        Some(mk_group::AssignorKind::Sticky),
        meta,
    )
    .unwrap();
    f.restart();
    assert_eq!(
        f.c().describe_group("g").unwrap().assignor,
        mk_group::AssignorKind::Sticky
    );
}

#[test]
fn replay_after_compaction_gives_the_same_offsets() {
    let mut f = Fixture::new();
    commit_rounds(&mut f, 50);
    f.c().delete_group_offsets("g2", &[tp("audit", 1)]).unwrap();
    let before = snapshot(&mut f);
    let generations = f.generation("g1");
    let records_before = f.leo() - f.c().offsets_log().log_start_offset();
    let now = f.clock.now_ms();
    let result = f.c().compact(now).unwrap();
    assert!(!result.segments.is_empty());
    assert!(
        result.records_after < result.records_before,
        "compaction removed nothing: {result:?}"
    );
    // The latest record of each key: 4 orders and 1 payments offsets of g1,
    // 2 audit offsets and 1 (young) audit tombstone of g2, and g1's group
    // record (g2 only commits plainly, so it has none).
    assert_eq!(result.records_after, 4 + 1 + 2 + 1 + 1);
    assert!(records_before > result.records_after as i64);
    assert_eq!(
        snapshot(&mut f),
        before,
        "compaction changes no in-memory state"
    );
    f.crash();
    assert_eq!(snapshot(&mut f), before);
    assert_eq!(f.generation("g1"), generations);
    f.restart();
    assert_eq!(snapshot(&mut f), before);
}

#[test]
fn commits_after_compaction_are_replayed_on_top_of_the_compacted_log() {
    let mut f = Fixture::new();
    commit_rounds(&mut f, 20);
    let now = f.clock.now_ms();
    f.c().compact(now).unwrap();
    commit_rounds(&mut f, 3);
    assert_a_crash_loses_nothing(&mut f);
}

#[test]
fn tombstones_outlive_their_value_and_go_after_the_delete_retention() {
    let config = GroupConfig {
        session_timeout_ms: SESSION_MS,
        offsets_delete_retention_ms: 60_000,
        ..GroupConfig::default()
    };
    let mut f = Fixture::with_config(config);
    let meta = f.meta.clone();
    f.c()
        .commit_direct("g", &offsets(&[("orders", 0, 5), ("orders", 1, 6)]), &meta)
        .unwrap();
    f.c().delete_group_offsets("g", &[tp("orders", 0)]).unwrap();
    let total_records = |f: &mut Fixture| {
        let log = f.c().offsets_log();
        log.fetch(log.log_start_offset(), usize::MAX, None)
            .unwrap()
            .len()
    };
    // Young tombstone: the deleted value is compacted away, the tombstone kept.
    let now = f.clock.now_ms();
    f.c().compact(now).unwrap();
    assert_eq!(total_records(&mut f), 2);
    f.crash();
    assert_eq!(f.c().committed_offsets("g"), offsets(&[("orders", 1, 6)]));
    // Old tombstone: dropped, and the deleted offset does not come back.
    f.clock.advance(60_001);
    let now = f.clock.now_ms();
    f.c().compact(now).unwrap();
    assert_eq!(total_records(&mut f), 1);
    f.crash();
    assert_eq!(f.c().committed_offsets("g"), offsets(&[("orders", 1, 6)]));
}

#[test]
fn compaction_deletes_leading_segments_it_emptied() {
    let mut f = Fixture::new();
    let meta = f.meta.clone();
    for i in 0..5 {
        f.c()
            .commit_direct("g", &offsets(&[("orders", 0, i)]), &meta)
            .unwrap();
    }
    let now = f.clock.now_ms();
    f.c().compact(now).unwrap();
    // A second round rolls again and empties the first segment entirely.
    f.c()
        .commit_direct("g", &offsets(&[("orders", 0, 99)]), &meta)
        .unwrap();
    f.c().compact(now).unwrap();
    let log = f.c().offsets_log();
    assert!(
        log.closed_segments().iter().all(|s| s.log_bytes > 0),
        "{:?}",
        log.segments()
    );
    assert_eq!(log.log_start_offset(), 5);
    f.crash();
    assert_eq!(f.c().fetch_committed("g", &tp("orders", 0)), Some(99));
}

#[test]
fn deleted_group_stays_deleted_after_restart() {
    let mut f = Fixture::new();
    commit_rounds(&mut f, 3);
    f.leave("g1", "a");
    assert!(f.c().delete_groups(&["g1".to_string()]).unwrap()[0].is_ok());
    f.crash();
    assert_eq!(f.c().list_groups(), vec!["g2".to_string()]);
    assert_eq!(f.c().describe_group("g1"), None);
}

#[test]
fn write_failure_is_a_storage_failure_and_changes_nothing() {
    let faults = Arc::new(FaultInjector::new());
    let config = GroupConfig {
        session_timeout_ms: SESSION_MS,
        offsets_log: LogConfig {
            faults: faults.clone(),
            ..LogConfig::default()
        },
        ..GroupConfig::default()
    };
    let mut f = Fixture::with_config(config);
    let a = f.join_and_commit("g", "a", "payments", &[(0, 1)]);
    faults.fail_writes_after(0);
    let e = f
        .commit("g", "a", a.generation, &offsets(&[("payments", 0, 2)]))
        .unwrap_err();
    assert!(e.is_storage_failure(), "{e}");
    assert_eq!(e.code(), ErrorCode::StorageError);
    assert_eq!(f.c().fetch_committed("g", &tp("payments", 0)), Some(1));
    // A join whose generation cannot be persisted is not published either.
    let (c, meta) = f.parts();
    let e = c.join("g", "b", ["payments"], meta).unwrap_err();
    assert!(e.is_storage_failure(), "{e}");
    let d = c.describe_group("g").unwrap();
    assert_eq!((d.generation, d.members.len()), (a.generation, 1));
    // The log refuses writes from now on, even with the fault cleared.
    faults.clear();
    let e = f
        .commit("g", "a", a.generation, &offsets(&[("payments", 0, 3)]))
        .unwrap_err();
    assert!(e.is_storage_failure(), "{e}");
}

#[test]
fn fsync_failure_in_flush_is_a_storage_failure() {
    let faults = Arc::new(FaultInjector::new());
    let config = GroupConfig {
        offsets_log: LogConfig {
            faults: faults.clone(),
            ..LogConfig::default()
        },
        ..GroupConfig::default()
    };
    let mut f = Fixture::with_config(config);
    let meta = f.meta.clone();
    f.c()
        .commit_direct("g", &offsets(&[("orders", 0, 1)]), &meta)
        .unwrap();
    f.c().flush().unwrap();
    f.c()
        .commit_direct("g", &offsets(&[("orders", 0, 2)]), &meta)
        .unwrap();
    faults.fail_syncs(true);
    let e = f.c().flush().unwrap_err();
    assert!(e.is_storage_failure(), "{e}");
}

fn append_raw(f: &Fixture, key: Option<Bytes>, value: Option<Bytes>) {
    let mut log = PartitionLog::open(&f.offsets_dir(), LogConfig::default(), 0).unwrap();
    log.append(RecordBatch::new(vec![Record::new(key, value, 0)]).unwrap())
        .unwrap();
    log.close().unwrap();
}

#[test]
fn an_uninterpretable_offsets_record_fails_open_loudly() {
    let cases: [(Option<Bytes>, Option<Bytes>, &str); 3] = [
        (
            None,
            Some(codec::offset_value(&mk_group::OffsetAndMetadata::new(1))),
            "no key",
        ),
        (
            Some(Bytes::from_static(&[0, 9])),
            None,
            "unknown key version 9",
        ),
        (
            Some(codec::offset_key("g", &tp("orders", 0))),
            Some(Bytes::from_static(&[7, 0])),
            "unknown offset value version 7",
        ),
    ];
    for (key, value, reason) in cases {
        let mut f = Fixture::new();
        let meta = f.meta.clone();
        f.c()
            .commit_direct("g", &offsets(&[("orders", 1, 1)]), &meta)
            .unwrap();
        let leo = f.leo();
        f.close();
        append_raw(&f, key, value);
        let e = f.reopen().unwrap_err();
        assert!(
            matches!(e, GroupError::CorruptOffsetsLog { offset, .. } if offset == leo),
            "{e}"
        );
        assert!(e.is_storage_failure());
        assert_eq!(e.code(), ErrorCode::StorageError);
        assert!(e.to_string().contains(reason), "{e}");
    }
}

/// Copies the offsets log of a fixture into the fixture's offsets dir.
fn install_fixture(f: &Fixture, name: &str) {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    std::fs::create_dir_all(f.offsets_dir()).unwrap();
    for entry in std::fs::read_dir(&src).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), f.offsets_dir().join(entry.file_name())).unwrap();
    }
}

/// `tests/fixtures/offsets-log-v1` is an offsets log written by the build
/// before commits kept leader epochs and metadata (main at 2f6f2a1): g1
/// committed orders-0 = 5, orders-1 = 7, payments-1 = 100 as a member of
/// generation 1, then orders-0 = 6, and left (generation 2); g2 made plain
/// commits audit-2 = 1000 and audit-0 = 3 and deleted audit-0. Its values
/// are version 1; they load as offsets without epoch or metadata, and new
/// commits (version 2) go on beside them.
#[test]
fn an_offsets_log_written_before_commit_metadata_still_loads() {
    let mut f = Fixture::new();
    f.close();
    std::fs::remove_dir_all(f.offsets_dir()).unwrap();
    install_fixture(&f, "offsets-log-v1");
    f.reopen().unwrap();
    let g1 = f.c().committed_offsets_with_metadata("g1");
    let expected = [
        (tp("orders", 0), 6),
        (tp("orders", 1), 7),
        (tp("payments", 1), 100),
    ];
    assert_eq!(
        g1,
        expected
            .iter()
            .map(|(tp, o)| (tp.clone(), mk_group::OffsetAndMetadata::new(*o)))
            .collect()
    );
    assert_eq!(
        f.c().committed_offsets("g2"),
        offsets(&[("audit", 2, 1_000)])
    );
    assert_eq!(f.generation("g1"), 2);
    assert_eq!(f.c().describe_group("g1").unwrap().state, GroupState::Empty);
    // New commits are written beside the old records and both survive.
    let meta = f.meta.clone();
    let rich = std::collections::BTreeMap::from([(
        tp("orders", 1),
        mk_group::OffsetAndMetadata::from_wire(8, 4, Some("m".into())),
    )]);
    f.c()
        .commit_offsets_with_metadata("g1", -1, "", None, &rich, &meta)
        .unwrap();
    f.restart();
    assert_eq!(f.c().fetch_committed("g1", &tp("orders", 0)), Some(6));
    assert_eq!(
        f.c().fetch_committed_with_metadata("g1", &tp("orders", 1)),
        Some(mk_group::OffsetAndMetadata::from_wire(
            8,
            4,
            Some("m".into())
        ))
    );
}

#[test]
fn leader_epochs_and_metadata_survive_restart_crash_and_compaction() {
    let mut f = Fixture::new();
    let meta = f.meta.clone();
    let rich = |o: i64, e: i32, m: &str| {
        std::collections::BTreeMap::from([(
            tp("orders", 0),
            mk_group::OffsetAndMetadata::from_wire(o, e, Some(m.to_string())),
        )])
    };
    for round in 0..5 {
        f.c()
            .commit_offsets_with_metadata("g", -1, "", None, &rich(round, 2, "older"), &meta)
            .unwrap();
    }
    f.c()
        .commit_offsets_with_metadata("g", -1, "", None, &rich(9, 7, "latest ✓"), &meta)
        .unwrap();
    let want = Some(mk_group::OffsetAndMetadata::from_wire(
        9,
        7,
        Some("latest ✓".into()),
    ));
    f.crash();
    assert_eq!(
        f.c().fetch_committed_with_metadata("g", &tp("orders", 0)),
        want
    );
    let now = f.clock.now_ms();
    f.c().compact(now).unwrap();
    f.restart();
    assert_eq!(
        f.c().fetch_committed_with_metadata("g", &tp("orders", 0)),
        want
    );
}
