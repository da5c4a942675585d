//! Benchmark of committed-offset commits through the `GroupCoordinator` on
//! a temporary directory, without fsync per commit (like the log: fsync is
//! the flush step). Prints one JSON line per figure; it never asserts a time.
#![allow(clippy::print_stdout)]

use mk_core::{ManualClock, TopicPartition};
use mk_group::{GroupConfig, GroupCoordinator};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

const TOPIC: &str = "bench";
const PARTITIONS: u32 = 100;
const GROUPS: usize = 50;
const SINGLE_COMMITS: u64 = 200_000;
const BATCHED_COMMITS: u64 = 5_000;

fn figure(name: &str, value: f64, unit: &str, workload: &str) {
    println!(
        "{{\"figure\":\"{name}\",\"value\":{value:.1},\"unit\":\"{unit}\",\"workload\":\"{workload}\"}}"
    );
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path().join("__consumer_offsets-0");
    let clock = ManualClock::new(1_000);
    let meta: BTreeMap<String, u32> = [(TOPIC.to_string(), PARTITIONS)].into();
    let mut coordinator =
        GroupCoordinator::open(&dir, GroupConfig::default(), Arc::new(clock.clone()))?;

    // One member per group owns all partitions of the topic.
    let mut members = Vec::with_capacity(GROUPS);
    for g in 0..GROUPS {
        let group = format!("group-{g:03}");
        let joined = coordinator.join(&group, "member-0", [TOPIC], &meta)?;
        members.push((group, joined.generation));
    }

    let start = Instant::now();
    for i in 0..SINGLE_COMMITS {
        let (group, generation) = &members[usize::try_from(i).unwrap() % GROUPS];
        let partition = u32::try_from(i / GROUPS as u64 % u64::from(PARTITIONS)).unwrap();
        let offsets = BTreeMap::from([(TopicPartition::new(TOPIC, partition), i as i64)]);
        coordinator.commit_offsets(group, *generation, "member-0", None, &offsets, &meta)?;
    }
    let secs = start.elapsed().as_secs_f64();
    figure(
        "group.offset_commits",
        SINGLE_COMMITS as f64 / secs,
        "commits/s",
        "GroupCoordinator::commit of 1 partition, 50 groups x 100 partitions, generation-checked, append without fsync",
    );

    let start = Instant::now();
    for i in 0..BATCHED_COMMITS {
        let (group, generation) = &members[usize::try_from(i).unwrap() % GROUPS];
        let offsets: BTreeMap<TopicPartition, i64> = (0..PARTITIONS)
            .map(|p| (TopicPartition::new(TOPIC, p), i as i64))
            .collect();
        coordinator.commit_offsets(group, *generation, "member-0", None, &offsets, &meta)?;
    }
    let secs = start.elapsed().as_secs_f64();
    figure(
        "group.offset_commits_batched",
        (BATCHED_COMMITS * u64::from(PARTITIONS)) as f64 / secs,
        "offsets/s",
        "GroupCoordinator::commit of 100 partitions in one append, 50 groups, without fsync",
    );

    let start = Instant::now();
    coordinator.flush()?;
    let flush_ms = start.elapsed().as_secs_f64() * 1e3;
    figure(
        "group.offsets_flush",
        flush_ms,
        "ms",
        "one fsync of the offsets log after the commits above",
    );

    let records = coordinator.offsets_log().leo();
    drop(coordinator);
    let start = Instant::now();
    let reopened = GroupCoordinator::open(&dir, GroupConfig::default(), Arc::new(clock))?;
    let secs = start.elapsed().as_secs_f64();
    figure(
        "group.offsets_replay",
        records as f64 / secs,
        "records/s",
        "reopen after a crash (no clean shutdown): recovery scan and replay of every commit record",
    );
    reopened.close()?;
    Ok(())
}
