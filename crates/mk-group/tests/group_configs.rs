//! Dynamic group configs (Kafka's GROUP resources): described with their
//! defaults, set and deleted all or nothing with Kafka's names and bounds,
//! kept across a restart, and in effect: a share group's lock duration and
//! reset policy, a consumer group's heartbeat interval.

mod common;

use common::share::{FakeLog, ShareClient, share_join};
use common::{Fixture, code, consumer_join, tp};
use mk_core::ErrorCode;
use mk_group::share::RecordState;

fn set(
    f: &mut Fixture,
    changes: &[(&str, Option<&str>)],
    validate_only: bool,
) -> mk_group::Result<()> {
    let changes: Vec<(String, Option<String>)> = changes
        .iter()
        .map(|(n, v)| (n.to_string(), v.map(str::to_string)))
        .collect();
    f.c().alter_group_configs("q", &changes, validate_only)
}

/// Sets share group q's lock duration and reset policy in one change.
fn set_lock_and_reset(f: &mut Fixture, lock_ms: &str, reset: &str) {
    let changes = [
        ("share.record.lock.duration.ms", Some(lock_ms)),
        ("share.auto.offset.reset", Some(reset)),
    ];
    set(f, &changes, false).unwrap();
}

/// q's lock duration and reset policy as described: (value, is default).
fn lock_and_reset(f: &mut Fixture) -> [(String, bool); 2] {
    [
        value(f, "share.record.lock.duration.ms"),
        value(f, "share.auto.offset.reset"),
    ]
}

fn value(f: &mut Fixture, name: &str) -> (String, bool) {
    let e = f
        .c()
        .describe_group_configs("q")
        .into_iter()
        .find(|e| e.name == name)
        .unwrap();
    (e.value, e.is_default)
}

#[test]
fn configs_are_described_set_and_deleted_with_kafkas_rules() {
    let mut f = Fixture::new();
    let all = f.c().describe_group_configs("q");
    assert_eq!(all.len(), 7);
    assert!(all.iter().all(|e| e.is_default));
    assert_eq!(
        lock_and_reset(&mut f),
        [("30000".into(), true), ("latest".into(), true)]
    );
    set_lock_and_reset(&mut f, "15000", "EARLIEST");
    assert_eq!(
        lock_and_reset(&mut f),
        [("15000".into(), false), ("earliest".into(), false)]
    );
    set(&mut f, &[("share.auto.offset.reset", None)], false).unwrap();
    assert_eq!(
        value(&mut f, "share.auto.offset.reset"),
        ("latest".into(), true)
    );
    f.restart();
    assert_eq!(
        value(&mut f, "share.record.lock.duration.ms"),
        ("15000".into(), false),
        "kept across a restart"
    );
    assert!(value(&mut f, "share.auto.offset.reset").1);
}

#[test]
fn a_bad_change_applies_nothing_and_validate_only_changes_nothing() {
    let mut f = Fixture::new();
    // All or nothing: the good change is not applied with the bad one.
    for (bad, word) in [
        (
            ("share.record.lock.duration.ms", Some("1000")),
            "[15000, 60000]",
        ),
        (
            ("consumer.heartbeat.interval.ms", Some("soon")),
            "milliseconds",
        ),
        (
            ("share.isolation.level", Some("serializable")),
            "read_committed",
        ),
        (("no.such.config", Some("1")), "unknown group config"),
    ] {
        let (c, msg) = code(set(
            &mut f,
            &[("share.isolation.level", Some("read_committed")), bad],
            false,
        ));
        assert_eq!(c, ErrorCode::InvalidConfig, "{msg}");
        assert!(msg.contains(word), "{msg} should say {word}");
        assert!(value(&mut f, "share.isolation.level").1, "nothing applied");
    }
    set(
        &mut f,
        &[("share.isolation.level", Some("read_committed"))],
        true,
    )
    .unwrap();
    assert!(
        value(&mut f, "share.isolation.level").1,
        "validate_only changes nothing"
    );
}

/// Kafka 4.1's third reset strategy, `by_duration:<ISO-8601 duration>`:
/// accepted in Java's `Duration.parse` spellings (any case), described in
/// `Duration.toString`'s, kept across a restart; a negative, empty or
/// malformed duration is INVALID_CONFIG.
#[test]
fn share_auto_offset_reset_takes_kafkas_durations() {
    let mut f = Fixture::new();
    for (given, described) in [
        ("by_duration:P1DT2H", "by_duration:PT26H"),
        ("BY_DURATION:pt1m30.25s", "by_duration:PT1M30.25S"),
        ("by_duration:PT0,5S", "by_duration:PT0.5S"),
        ("by_duration:P0D", "by_duration:PT0S"),
    ] {
        set(&mut f, &[("share.auto.offset.reset", Some(given))], false).unwrap();
        assert_eq!(
            value(&mut f, "share.auto.offset.reset"),
            (described.into(), false),
            "{given}"
        );
    }
    set(
        &mut f,
        &[("share.auto.offset.reset", Some("by_duration:PT2H"))],
        false,
    )
    .unwrap();
    f.restart();
    assert_eq!(
        value(&mut f, "share.auto.offset.reset"),
        ("by_duration:PT2H".into(), false),
        "kept across a restart"
    );
    for bad in [
        "by_duration:-PT1H",
        "by_duration:PT-1H",
        "by_duration:",
        "by_duration:P",
        "by_duration:PT",
        "by_duration:1H",
        "by_duration:PT1H2H",
        "by_duration:PT1.0000000001S",
        "by_duration:P99999999999999D",
        "by_time:PT1H",
    ] {
        let (c, msg) = code(set(
            &mut f,
            &[("share.auto.offset.reset", Some(bad))],
            false,
        ));
        assert_eq!(c, ErrorCode::InvalidConfig, "{bad}: {msg}");
        assert!(msg.contains("by_duration:PnDTnHnMn.nS"), "{msg}");
    }
    assert_eq!(
        value(&mut f, "share.auto.offset.reset"),
        ("by_duration:PT2H".into(), false),
        "a refused change leaves the value"
    );
}

#[test]
fn share_configs_take_effect() {
    let mut f = Fixture::new();
    set_lock_and_reset(&mut f, "15000", "earliest");
    let mut log = FakeLog::new();
    log.append(&tp("queue", 0), 2, true);
    share_join(&mut f, "q", "a", &["queue"]);
    let mut a = ShareClient::new("q", "a");
    let (plan, got) = a
        .fetch(&mut f, &log, &[tp("queue", 0)], vec![], 10)
        .unwrap();
    assert_eq!(plan.lock_duration_ms, 15_000);
    assert_eq!(got[0].acquired[0].first, 0, "earliest");
    f.clock.advance(15_001);
    f.expire();
    let state = f
        .c()
        .share_partition("q", &tp("queue", 0))
        .unwrap()
        .state_of(0);
    assert_eq!(
        state,
        Some((RecordState::Available, 1)),
        "the 15 s lock ran out"
    );
}

#[test]
fn a_consumer_group_heartbeats_at_its_configured_interval() {
    let mut f = Fixture::new();
    f.c()
        .alter_group_configs(
            "g",
            &[("consumer.heartbeat.interval.ms".into(), Some("7000".into()))],
            false,
        )
        .unwrap();
    let hb = consumer_join("g", "m", "orders");
    let (c, meta) = f.parts();
    assert_eq!(
        c.consumer_heartbeat(hb, meta)
            .unwrap()
            .heartbeat_interval_ms,
        7000
    );
}
