//! The core takes its locks in one order — a partition's files, then the
//! partition, then the metadata store — so operations that need more than
//! one never wait on each other in a circle. Leader promotion (partition,
//! then metadata) races topic config changes and topic deletion here; a
//! broken order hangs the threads, which the watchdog turns into a failure.

mod common;

use common::*;
use mk_cluster::*;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

const ROUNDS: usize = 400;

/// Runs `jobs` on their own threads and fails if they do not all finish
/// within a minute (they take well under a second when nothing waits in a
/// circle).
fn all_finish(jobs: Vec<Box<dyn FnOnce() + Send>>) {
    let (done, finished) = mpsc::channel();
    let count = jobs.len();
    for job in jobs {
        let done = done.clone();
        std::thread::spawn(move || {
            job();
            done.send(()).unwrap();
        });
    }
    for _ in 0..count {
        finished
            .recv_timeout(Duration::from_secs(60))
            .expect("the threads wait on each other's locks: the lock order is broken");
    }
}

fn promoting(c: &Arc<BrokerCluster>, topic: &'static str) -> Box<dyn FnOnce() + Send> {
    let c = c.clone();
    Box::new(move || {
        let p = tp(topic, 0);
        for i in 0..ROUNDS {
            // Errors are fine (the topic may be gone for a moment); a hang
            // is not.
            let _ = c.steps().promote(&p, if i % 2 == 0 { 2 } else { 1 });
        }
    })
}

/// Opens brokers 1 and 2 with `topic` (one partition on both) and runs
/// `rounds` of `change` on one thread while another promotes the
/// partition's leader back and forth; returns the cluster once both finish.
fn racing_promotions(
    dir: &std::path::Path,
    topic: &'static str,
    rounds: usize,
    change: impl Fn(&BrokerCluster, usize) + Send + 'static,
) -> Arc<BrokerCluster> {
    let clock = ManualClock::new(1_000);
    let c = open_with(dir, &clock, |c| c.with_brokers(vec![1, 2]));
    c.topics().create(topic, 1, 2).unwrap();
    let changing = {
        let c = c.clone();
        Box::new(move || {
            for i in 0..rounds {
                change(&c, i);
            }
        }) as Box<dyn FnOnce() + Send>
    };
    all_finish(vec![promoting(&c, topic), changing]);
    c
}

#[test]
fn promotions_racing_topic_config_changes_never_deadlock() {
    let dir = tempfile::tempdir().unwrap();
    let c = racing_promotions(dir.path(), "t", ROUNDS, |c, i| {
        let bytes = (1_048_576 + i).to_string();
        c.topics()
            .alter_config("t", &[set("segment.bytes", &bytes)], false)
            .unwrap();
    });
    let config = c.topics().describe("t").unwrap().config;
    assert_eq!(config.segment_bytes, Some(1_048_576 + ROUNDS as u64 - 1));
}

#[test]
fn promotions_racing_topic_deletions_never_deadlock() {
    let dir = tempfile::tempdir().unwrap();
    let c = racing_promotions(dir.path(), "d", ROUNDS / 4, |c, _| {
        c.topics().delete("d").unwrap();
        c.topics().create("d", 1, 2).unwrap();
    });
    assert_eq!(c.topics().describe("d").unwrap().partitions.len(), 1);
}
