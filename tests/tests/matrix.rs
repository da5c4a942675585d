//! The behavior matrix of the teaching model, end to end through the Direct
//! API: every row is a test that opens a real cluster on a temp dir.
#![allow(
    clippy::too_many_lines,
    reason = "a test scenario reads top to bottom as one story; split, its steps would scatter"
)]

mod common;

use bytes::Bytes;
use common::*;
use mk_adapter_direct::mk_cluster::*;
use mk_client::*;
use std::collections::BTreeMap;
use std::io::Write;

// ----- log: batches, CRC, index, recovery, replay ------------------------

#[tokio::test]
async fn e2e_batches_are_binary_safe() {
    let env = Env::with_topic("bin", 1);
    let binary = Bytes::from((0u8..=255).collect::<Vec<u8>>());
    let r = env
        .client
        .produce(ProduceRequest {
            tp: tp("bin", 0),
            records: vec![
                ProduceEntry {
                    key: None,
                    value: None,
                    ..ProduceEntry::default()
                },
                ProduceEntry {
                    key: Some(Bytes::new()),
                    value: Some(Bytes::new()),
                    ..ProduceEntry::default()
                },
                ProduceEntry {
                    key: Some(binary.clone()),
                    value: Some(binary.clone()),
                    headers: vec![
                        Header::new("h", None),
                        Header::new("bin", Some(binary.clone())),
                    ],
                    timestamp_ms: Some(42),
                },
            ],
            acks: AckMode::One,
            producer: None,
        })
        .await
        .unwrap();
    assert_eq!((r.base_offset, r.count), (Some(0), 3));
    let got = env
        .client
        .fetch(&FetchRequest::new(tp("bin", 0), 0, 10))
        .unwrap()
        .records;
    assert_eq!((got[0].key.clone(), got[0].value.clone()), (None, None));
    assert_eq!(
        (got[1].key.clone(), got[1].value.clone()),
        (Some(Bytes::new()), Some(Bytes::new()))
    );
    assert_eq!(got[2].key, Some(binary.clone()));
    assert_eq!(got[2].value, Some(binary.clone()));
    assert_eq!(
        got[2].headers,
        vec![Header::new("h", None), Header::new("bin", Some(binary))]
    );
    assert_eq!(got[2].timestamp_ms, 42);
    assert_eq!(
        got[0].timestamp_ms,
        env.clock.now_ms(),
        "default timestamp is the cluster clock"
    );
}

fn small_segments(c: &mut MiniKafkaConfig) {
    c.segment_max_bytes = 600;
    c.index_interval_bytes = 128;
}

#[tokio::test]
async fn e2e_sparse_offset_lookup_and_replay_across_segments() {
    let mut env = Env::with(small_segments);
    env.admin.create_topic("r", 1, 1).unwrap();
    env.produce_each("r", 0, "v", 0..60).await;
    let dir = env.replica_dir(1, "r", 0);
    let segments = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".log")
        })
        .count();
    assert!(segments > 4, "the log spans {segments} segments");
    let all = env.values("r", 0);
    for start in [0, 1, 17, 33, 59] {
        let got = env
            .client
            .fetch(&FetchRequest::new(tp("r", 0), start, 1000))
            .unwrap()
            .records;
        assert_eq!(got.len(), 60 - usize::try_from(start).unwrap());
        assert_eq!(got[0].offset, start);
        assert_eq!(
            String::from_utf8_lossy(got[0].value.as_deref().unwrap()),
            format!("v{start}")
        );
    }
    env.restart().await;
    assert_eq!(env.values("r", 0), all, "replay after a clean restart");
    env.crash_restart();
    assert_eq!(env.values("r", 0), all, "replay after a crash");
}

#[tokio::test]
async fn e2e_torn_tail_is_repaired_and_closed_segment_corruption_takes_the_partition_offline() {
    let env = Env::with(small_segments);
    env.admin.create_topic("t", 1, 1).unwrap();
    env.produce_each("t", 0, "v", 0..40).await;
    let before = env.values("t", 0);
    env.cluster.lifecycle().crash();
    // A torn write at the end of the active segment.
    let dir = env.replica_dir(1, "t", 0);
    let mut logs: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    logs.sort();
    let active = logs.last().unwrap().clone();
    std::fs::OpenOptions::new()
        .append(true)
        .open(&active)
        .unwrap()
        .write_all(b"MKB1\x00\x00\x00\x50partial")
        .unwrap();
    let c = env.try_reopen().unwrap();
    let got = c
        .data()
        .fetch(&FetchRequest::new(tp("t", 0), 0, 1000))
        .unwrap();
    assert_eq!(
        got.records.len(),
        before.len(),
        "acknowledged data intact, torn tail gone"
    );
    c.lifecycle().crash();
    drop(c);
    // Corruption inside a closed segment takes that partition offline; the
    // broker opens, says so, and serves everything else.
    let mut bytes = std::fs::read(&logs[0]).unwrap();
    bytes[30] ^= 0xff;
    std::fs::write(&logs[0], bytes).unwrap();
    let c = env.try_reopen().unwrap();
    let err = c
        .data()
        .fetch(&FetchRequest::new(tp("t", 0), 0, 1000))
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::StorageError, "{err}");
    let damaged = c.topics().describe("t").unwrap().partitions[0]
        .damaged
        .clone();
    assert!(
        damaged
            .as_deref()
            .is_some_and(|d| d.contains("corrupt closed segment")),
        "{damaged:?}"
    );
    c.topics().create("u", 1, 1).unwrap();
    assert!(
        c.data()
            .fetch(&FetchRequest::new(tp("u", 0), 0, 10))
            .is_ok()
    );
}

// ----- producer: partitioning and batching ---------------------------------

#[tokio::test]
async fn e2e_keyed_records_land_on_the_murmur2_partition() {
    let env = Env::with_topic("k", 5);
    let p = env.producer(ProducerOptions::default());
    let mut futs = Vec::new();
    for key in ["21", "foobar", "abc", "a-little-bit-long-string"] {
        futs.push((
            key,
            p.send(ProducerRecord::new("k", Some(b(key)), Some(b("v"))))
                .unwrap(),
        ));
    }
    p.flush().await.unwrap();
    for (key, f) in futs {
        let md = f.await.unwrap();
        assert_eq!(
            md.partition,
            partitioner::partition_for_key(key.as_bytes(), 5),
            "{key}"
        );
    }
    // Kafka: (murmur2("21") & 0x7fffffff) % 5 == 1173551340 % 5 == 0.
    assert_eq!(partitioner::partition_for_key(b"21", 5), 0);
}

#[tokio::test]
async fn e2e_keyless_records_stick_to_one_partition_per_batch_then_move() {
    let env = Env::with_topic("s", 3);
    let p = env.producer(ProducerOptions {
        linger_ms: 100,
        ..ProducerOptions::default()
    });
    let first: Vec<_> = (0..5)
        .map(|_| {
            p.send(ProducerRecord::new("s", None, Some(b("x"))))
                .unwrap()
        })
        .collect();
    assert_eq!(
        p.run_due_flushes().unwrap(),
        0,
        "linger not expired: nothing sent"
    );
    env.clock.advance(100);
    assert_eq!(
        p.run_due_flushes().unwrap(),
        1,
        "one batch for the sticky partition"
    );
    let second: Vec<_> = (0..5)
        .map(|_| {
            p.send(ProducerRecord::new("s", None, Some(b("y"))))
                .unwrap()
        })
        .collect();
    p.flush().await.unwrap();
    let mut parts1 = Vec::new();
    for f in first {
        parts1.push(f.await.unwrap());
    }
    let mut parts2 = Vec::new();
    for f in second {
        parts2.push(f.await.unwrap());
    }
    assert!(
        parts1.iter().all(|m| m.partition == parts1[0].partition),
        "one partition per batch"
    );
    assert!(
        parts1
            .iter()
            .enumerate()
            .all(|(i, m)| m.offset == Some(i as i64)),
        "in order, one batch"
    );
    assert!(parts2.iter().all(|m| m.partition == parts2[0].partition));
    assert_ne!(
        parts1[0].partition, parts2[0].partition,
        "the sticky partition advanced after the send"
    );
}

#[tokio::test]
async fn e2e_batching_by_size_and_buffer_budget() {
    let env = Env::with_topic("b", 1);
    let p = env.producer(ProducerOptions {
        batch_size: 200,
        linger_ms: 1_000_000,
        max_buffer_bytes: 400,
        ..ProducerOptions::default()
    });
    // 39 + 61 = 100 bytes each: the second record fills the batch (200).
    let v = "x".repeat(61);
    let mut f1 = p
        .send(ProducerRecord::new("b", None, Some(b(&v))).with_partition(0))
        .unwrap();
    assert!(f1.try_result().is_none(), "queued, linger not expired");
    assert_eq!(p.buffered_bytes(), 100);
    let f2 = p
        .send(ProducerRecord::new("b", None, Some(b(&v))).with_partition(0))
        .unwrap();
    assert_eq!(p.buffered_bytes(), 0, "a full batch is sent at once");
    assert_eq!(f1.await.unwrap().offset, Some(0));
    assert_eq!(f2.await.unwrap().offset, Some(1));
    let big = "y".repeat(400);
    let err = p
        .send(ProducerRecord::new("b", None, Some(b(&big))))
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::ProducerBufferFull);
    assert_eq!(
        p.send(ProducerRecord::new("nope", None, None))
            .unwrap_err()
            .code(),
        ErrorCode::UnknownTopic
    );
    assert_eq!(
        p.send(ProducerRecord::new("b", None, None).with_partition(7))
            .unwrap_err()
            .code(),
        ErrorCode::UnknownPartition
    );
    // crash() cancels queued work; close refuses later sends.
    let queued = p
        .send(ProducerRecord::new("b", None, Some(b("z"))))
        .unwrap();
    p.crash();
    assert_eq!(queued.await.unwrap_err().code(), ErrorCode::ClusterClosed);
    assert!(
        p.send(ProducerRecord::new("b", None, Some(b("z"))))
            .is_err()
    );
}

// ----- consumers: positions, commits, groups ------------------------------

/// A consumer of `group` that resets by `reset`, assigned partition p-0.
fn assigned_p0(env: &Env, group: &str, reset: OffsetReset) -> Consumer {
    let c = env
        .cluster
        .consumer(
            group,
            ConsumerOptions {
                auto_offset_reset: reset,
                ..ConsumerOptions::default()
            },
        )
        .unwrap();
    c.assign(&[tp("p", 0)]).unwrap();
    c
}

#[tokio::test]
async fn e2e_position_commit_rewind_and_restart() {
    let mut env = Env::with_topic("p", 1);
    env.produce_each("p", 0, "m", 0..10).await;
    let c = env
        .cluster
        .consumer("g", ConsumerOptions::default())
        .unwrap();
    c.assign(&[tp("p", 0)]).unwrap();
    assert_eq!(c.poll(4).unwrap().len(), 4);
    assert_eq!(c.position(&tp("p", 0)).unwrap(), 4);
    assert_eq!(c.lag(&tp("p", 0)).unwrap(), 6);
    c.commit().unwrap();
    c.seek(&tp("p", 0), 1).unwrap();
    assert_eq!(c.poll(1).unwrap()[0].record.offset, 1, "rewind re-reads");
    assert_eq!(
        c.seek(&tp("p", 0), -1).unwrap_err().code(),
        ErrorCode::InvalidRequest
    );
    assert_eq!(
        c.seek(&tp("p", 1), 0).unwrap_err().code(),
        ErrorCode::InvalidRequest
    );
    env.restart().await;
    let c = env
        .cluster
        .consumer("g", ConsumerOptions::default())
        .unwrap();
    c.assign(&[tp("p", 0)]).unwrap();
    assert_eq!(c.committed(&tp("p", 0)).unwrap(), Some(4));
    assert_eq!(
        c.poll(100).unwrap()[0].record.offset,
        4,
        "a restarted consumer resumes from its commit"
    );
    // Reset policies.
    let latest = assigned_p0(&env, "other", OffsetReset::Latest);
    assert!(latest.poll(10).unwrap().is_empty());
    assert_eq!(latest.position(&tp("p", 0)).unwrap(), 10);
    let strict = assigned_p0(&env, "strict", OffsetReset::Error);
    assert_eq!(
        strict.poll(10).unwrap_err().code(),
        ErrorCode::OffsetOutOfRange
    );
}

#[tokio::test]
async fn e2e_single_owner_and_generation_fencing() {
    let env = Env::with_topic("g", 4);
    let a = env.member("grp", "a");
    let bb = env.member("grp", "b");
    assert_eq!(a.subscribe(&["g"]).unwrap().len(), 4);
    let owned_b = bb.subscribe(&["g"]).unwrap();
    a.poll(10).unwrap();
    assert_eq!(
        a.commit().unwrap_err().code(),
        ErrorCode::IllegalGeneration,
        "stale generation is fenced"
    );
    let owned_a = a.refresh_assignment().unwrap();
    assert!(
        owned_a.iter().all(|tp| !owned_b.contains(tp)),
        "single owner per partition"
    );
    assert_eq!(owned_a.len() + owned_b.len(), 4);
    a.commit().unwrap();
    // A member cannot commit what it does not own.
    let err = env
        .client
        .commit_offsets(
            "grp",
            "a",
            a.generation().unwrap(),
            &BTreeMap::from([(owned_b[0].clone(), 1)]),
        )
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::NotPartitionOwner);
    // Expiry by session timeout rebalances: b stops heartbeating, a does
    // not, so only b expires and a takes everything over.
    env.clock.advance(env.config.group_session_timeout_ms - 1);
    a.heartbeat().unwrap();
    env.clock.advance(2);
    let expired = env.admin.expire_group_members().unwrap();
    assert_eq!(expired, vec![("grp".to_string(), "b".to_string())]);
    assert_eq!(a.refresh_assignment().unwrap().len(), 4);
    // The expired member is no member any more (Kafka checks the member
    // before its generation).
    assert_eq!(bb.heartbeat().unwrap_err().code(), ErrorCode::UnknownMember);
}

// ----- retention and compaction --------------------------------------------

#[tokio::test]
async fn e2e_retention_deletes_a_prefix_and_fetch_below_start_is_out_of_range() {
    let env = Env::with(small_segments);
    env.admin
        .create_topic_with_config(
            "logs",
            1,
            1,
            TopicConfig {
                retention_ms: Some(10_000),
                ..TopicConfig::default()
            },
        )
        .unwrap();
    env.produce_each("logs", 0, "old", 0..30).await;
    env.clock.advance(60_000);
    env.produce_each("logs", 0, "new", 0..5).await;
    let deleted = env.admin.apply_retention("logs", None).unwrap();
    assert!(!deleted[&0].is_empty());
    let start = env.cluster.data().log_start_offset(&tp("logs", 0)).unwrap();
    assert!(start > 0);
    assert_eq!(
        env.client
            .fetch(&FetchRequest::new(tp("logs", 0), start - 1, 1))
            .unwrap_err()
            .code(),
        ErrorCode::OffsetOutOfRange
    );
    let c = env
        .cluster
        .consumer("late", ConsumerOptions::default())
        .unwrap();
    c.assign(&[tp("logs", 0)]).unwrap();
    assert_eq!(
        c.poll(1).unwrap()[0].record.offset,
        start,
        "earliest resets to the new log start"
    );
}

#[tokio::test]
async fn e2e_compaction_keeps_latest_per_key_and_survives_a_crash_mid_swap() {
    let mut env = Env::with(small_segments);
    env.admin
        .create_topic_with_config(
            "kv",
            1,
            1,
            TopicConfig {
                cleanup_policy: CleanupPolicy::Compact,
                ..TopicConfig::default()
            },
        )
        .unwrap();
    for i in 0..40 {
        env.client
            .produce(ProduceRequest {
                tp: tp("kv", 0),
                records: vec![ProduceEntry {
                    key: Some(b(&format!("k{}", i % 4))),
                    value: Some(b(&format!("v{i}"))),
                    ..ProduceEntry::default()
                }],
                acks: AckMode::One,
                producer: None,
            })
            .await
            .unwrap();
    }
    env.admin.roll(&tp("kv", 0)).unwrap();
    let before = env.values("kv", 0);
    // A crash injected in the middle of the swap leaves old or new, never a mix.
    env.cluster.failure_injector().crash_at_step(3);
    let err = env.admin.compact("kv", None).unwrap_err();
    assert_eq!(
        err.code(),
        ErrorCode::ClusterFailed,
        "an I/O failure is terminal"
    );
    env.cluster.failure_injector().clear();
    env.crash_restart();
    let after_crash = env.values("kv", 0);
    let compacted: Vec<(i64, String)> = (36..40).map(|o| (o, format!("v{o}"))).collect();
    assert!(
        after_crash == before || after_crash == compacted,
        "neither old nor new: {after_crash:?}"
    );
    let s = env.admin.compact("kv", None).unwrap();
    assert!(s.records_after <= s.records_before);
    assert_eq!(env.values("kv", 0), compacted);
}

// ----- replication ---------------------------------------------------------

#[tokio::test]
async fn e2e_follower_fetch_isr_and_high_watermark() {
    let env = Env::new(vec![1, 2, 3], 1);
    env.admin.create_topic("r", 1, 3).unwrap();
    env.produce("r", 0, &["a", "b"], AckMode::One)
        .await
        .unwrap();
    let info = env.partition("r", 0);
    assert_eq!(
        (info.high_watermark, info.log_end_offset),
        (0, 2),
        "HW waits for the ISR"
    );
    assert!(
        env.values("r", 0).is_empty(),
        "consumers never see offsets >= HW"
    );
    env.admin.replicate_once().unwrap();
    let info = env.partition("r", 0);
    assert_eq!(info.high_watermark, 2);
    assert_eq!(
        info.log_end_offsets,
        BTreeMap::from([(1, 2), (2, 2), (3, 2)])
    );
    // A failed follower leaves the ISR; the HW then moves with the others.
    env.admin.remove_from_isr(&tp("r", 0), 3).unwrap();
    assert_eq!(env.partition("r", 0).isr, vec![1, 2]);
    env.produce("r", 0, &["c"], AckMode::One).await.unwrap();
    env.admin.replicate_once().unwrap();
    let info = env.partition("r", 0);
    assert_eq!(info.high_watermark, 3);
    assert_eq!(
        info.log_end_offsets[&3], 2,
        "the failed broker fetched nothing"
    );
    // When it comes back it catches up and re-enters the ISR.
    env.admin.rejoin(&tp("r", 0), 3).unwrap();
    env.admin.replicate_once().unwrap();
    let info = env.partition("r", 0);
    assert!(
        info.isr.contains(&3),
        "a caught-up follower re-enters the ISR: {:?}",
        info.isr
    );
    // A follower that stops fetching leaves the ISR by time.
    env.clock.advance(env.config.replica_lag_time_ms + 1);
    env.cluster.steps().refresh_isr().unwrap();
    assert_eq!(env.partition("r", 0).isr, vec![1]);
}

#[tokio::test]
async fn e2e_ack_modes_and_acknowledged_write_loss() {
    let env = Env::new(vec![1, 2], 2);
    env.admin.create_topic("a", 1, 2).unwrap();
    let r0 = env.produce("a", 0, &["zero"], AckMode::Zero).await.unwrap();
    assert_eq!(r0.base_offset, None, "acks=0: offsets unknown");
    let r1 = env.produce("a", 0, &["one"], AckMode::One).await.unwrap();
    assert_eq!(r1.base_offset, Some(1), "acks=1: immediate");
    // acks=all waits for the ISR...
    let pending = env.submit("a", "all", AckMode::All, None).unwrap();
    let waiter = tokio::spawn(pending.wait());
    env.admin.replicate_once().unwrap();
    assert_eq!(waiter.await.unwrap().unwrap().base_offset, Some(2));
    // ...is rejected before append when the ISR is too small...
    env.admin.remove_from_isr(&tp("a", 0), 2).unwrap();
    let err = env
        .produce("a", 0, &["nope"], AckMode::All)
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::NotEnoughReplicas);
    // ...and an acks=1 write that only the leader had is lost on promotion.
    env.admin.rejoin(&tp("a", 0), 2).unwrap();
    env.admin.replicate_once().unwrap();
    let lost = env.produce("a", 0, &["lost"], AckMode::One).await.unwrap();
    env.admin.promote(&tp("a", 0), 2).unwrap();
    assert!(
        !env.values("a", 0)
            .iter()
            .any(|(o, v)| *o == lost.base_offset.unwrap() && v == "lost")
    );
}

#[tokio::test]
async fn e2e_acks_all_fails_after_append_when_the_isr_shrinks() {
    let env = Env::new(vec![1, 2], 2);
    env.admin.create_topic("a", 1, 2).unwrap();
    let pending = env.submit("a", "x", AckMode::All, None).unwrap();
    let waiter = tokio::spawn(pending.wait());
    env.admin.remove_from_isr(&tp("a", 0), 2).unwrap();
    let err = waiter.await.unwrap().unwrap_err();
    assert_eq!(err.code(), ErrorCode::NotEnoughReplicasAfterAppend);
}

#[tokio::test]
async fn e2e_promotion_fences_the_old_epoch_and_replaces_the_divergent_tail() {
    let env = Env::new(vec![1, 2], 1);
    env.admin.create_topic("d", 1, 2).unwrap();
    env.produce("d", 0, &["a", "b"], AckMode::One)
        .await
        .unwrap();
    env.admin.replicate_once().unwrap();
    env.produce("d", 0, &["old-tail"], AckMode::One)
        .await
        .unwrap();
    let le = env.admin.promote(&tp("d", 0), 2).unwrap();
    assert_eq!((le.leader_id, le.leader_epoch), (2, 1));
    let stale = env.submit("d", "z", AckMode::One, Some(0));
    assert_eq!(stale.unwrap_err().code(), ErrorCode::FencedLeaderEpoch);
    assert_eq!(
        env.admin.promote(&tp("d", 0), 1).unwrap_err().code(),
        ErrorCode::NotInSyncReplica
    );
    env.produce("d", 0, &["new-tail"], AckMode::One)
        .await
        .unwrap();
    env.admin.rejoin(&tp("d", 0), 1).unwrap();
    env.admin.replicate_once().unwrap();
    env.admin.replicate_once().unwrap();
    let info = env.partition("d", 0);
    assert_eq!(info.log_end_offsets[&1], info.log_end_offsets[&2]);
    assert_eq!(env.values("d", 0).last().unwrap().1, "new-tail");
    // Byte-identical replicas below the HW, checked on the files after a
    // clean close.
    let hw = info.high_watermark;
    env.cluster.lifecycle().close().await.unwrap();
    let frames = |broker: i32| {
        let log = mk_log::PartitionLog::open(
            &env.replica_dir(broker, "d", 0),
            mk_log::LogConfig::default(),
            0,
        )
        .unwrap();
        let frames: Vec<bytes::Bytes> = log
            .read_batches(0, usize::MAX, Some(hw))
            .unwrap()
            .into_iter()
            .map(|b| b.frame)
            .collect();
        log.close().unwrap();
        frames
    };
    let (f1, f2) = (frames(1), frames(2));
    assert!(!f1.is_empty());
    assert_eq!(f1, f2, "replicas agree byte for byte below the HW");
}

#[tokio::test]
async fn e2e_idempotent_retry_returns_original_offsets_and_survives_restart() {
    let mut env = Env::with_topic("i", 1);
    let id = env.client.init_producer(Some("app")).unwrap();
    let send = |seq: i32| ProduceRequest {
        producer: Some(ProducerInfo {
            producer_id: id.producer_id,
            producer_epoch: id.epoch,
            base_sequence: seq,
        }),
        ..values_request("i", 0, &["v", "v"], AckMode::All)
    };
    let first = env.client.produce(send(0)).await.unwrap();
    let retry = env.client.produce(send(0)).await.unwrap();
    assert_eq!(retry.base_offset, first.base_offset);
    assert!(retry.duplicate);
    assert_eq!(
        env.cluster.data().log_end_offset(&tp("i", 0)).unwrap(),
        2,
        "the retry appended nothing"
    );
    let gap = env.client.produce(send(5)).await.unwrap_err();
    assert_eq!(gap.code(), ErrorCode::OutOfOrderSequence);
    assert!(gap.to_string().contains("expected sequence 2"), "{gap}");
    env.crash_restart();
    let after = env.client.produce(send(0)).await.unwrap();
    assert_eq!(
        after.base_offset, first.base_offset,
        "producer state rebuilt after a crash"
    );
    // A newer instance fences the older one.
    let newer = env.client.init_producer(Some("app")).unwrap();
    assert_eq!(newer.producer_id, id.producer_id);
    assert_eq!(newer.epoch, id.epoch + 1);
    let fenced = env.client.produce(send(2)).await.unwrap_err();
    assert_eq!(fenced.code(), ErrorCode::ProducerFenced);
}

// ----- transactions ----------------------------------------------------------

#[tokio::test]
async fn e2e_transaction_isolation_and_abort() {
    let env = Env::with_topic("t", 1);
    let h = env.client.begin_txn("tx").await.unwrap();
    env.client
        .txn_produce(&h, "t", None, Some(b("in-txn")), None)
        .await
        .unwrap();
    env.produce("t", 0, &["plain"], AckMode::One).await.unwrap();
    let rc = FetchRequest::new(tp("t", 0), 0, 10).with_isolation(Isolation::ReadCommitted);
    let r = env.client.fetch(&rc).unwrap();
    assert!(
        r.records.is_empty(),
        "the open transaction holds back the LSO, also for later records"
    );
    assert_eq!(r.last_stable_offset, 0);
    assert_eq!(
        env.client
            .fetch(&FetchRequest::new(tp("t", 0), 0, 10))
            .unwrap()
            .records
            .len(),
        2,
        "read_uncommitted sees both"
    );
    env.client.abort_txn(&h).await.unwrap();
    let r = env.client.fetch(&rc).unwrap();
    assert_eq!(r.records.len(), 1, "aborted records are hidden forever");
    assert_eq!(r.records[0].value, Some(b("plain")));
    assert_eq!(
        env.client.commit_txn(&h).await.unwrap_err().code(),
        ErrorCode::InvalidTxnState
    );
}

#[tokio::test]
async fn e2e_atomic_output_and_input_offsets() {
    let env = Env::with_topic("out", 1);
    env.admin.create_topic("in", 1, 1).unwrap();
    let h = env.client.begin_txn("rpw").await.unwrap();
    env.client
        .txn_produce(&h, "out", None, Some(b("result")), None)
        .await
        .unwrap();
    env.client
        .txn_send_offsets(&h, "grp", &BTreeMap::from([(tp("in", 0), 7)]))
        .unwrap();
    assert_eq!(
        env.cluster
            .groups()
            .fetch_committed("grp", &tp("in", 0))
            .unwrap(),
        None,
        "staged, not stored"
    );
    env.client.commit_txn(&h).await.unwrap();
    assert_eq!(
        env.cluster
            .groups()
            .fetch_committed("grp", &tp("in", 0))
            .unwrap(),
        Some(7)
    );
    let rc = FetchRequest::new(tp("out", 0), 0, 10).with_isolation(Isolation::ReadCommitted);
    assert_eq!(
        env.client.fetch(&rc).unwrap().records.len(),
        1,
        "records and offsets became visible together"
    );
    // A zombie (older epoch) is fenced.
    let newer = env.client.begin_txn("rpw").await.unwrap();
    let err = env
        .client
        .txn_produce(&h, "out", None, Some(b("zombie")), None)
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::ProducerFenced);
    env.client.abort_txn(&newer).await.unwrap();
}

#[tokio::test]
async fn e2e_journal_recovery_completes_a_prepared_commit_after_a_crash() {
    let mut env = Env::new(vec![1, 2], 2);
    env.admin.create_topic("o", 1, 2).unwrap();
    let h = {
        let c = env.cluster.clone();
        let h = c.transactions().begin("jr").await.unwrap();
        let send = tokio::spawn({
            let c = c.clone();
            let h = h.clone();
            async move {
                c.transactions()
                    .send(&h, "o", None, Some(Bytes::from_static(b"r")), None)
                    .await
            }
        });
        while !send.is_finished() {
            env.admin.replicate_once().unwrap();
            tokio::task::yield_now().await;
        }
        send.await.unwrap().unwrap();
        c.transactions()
            .send_offsets(&h, "g", &BTreeMap::from([(tp("o", 0), 1)]))
            .unwrap();
        h
    };
    // Commit: PrepareCommit is journaled and the marker appended on the
    // leader, but the follower never fetches, so acks=all never completes.
    let commit = tokio::spawn({
        let c = env.cluster.clone();
        let h = h.clone();
        async move { c.transactions().commit(&h).await }
    });
    for _ in 0..100 {
        tokio::task::yield_now().await;
        if env
            .cluster
            .transactions()
            .describe("jr")
            .unwrap()
            .unwrap()
            .state
            == TxnState::PrepareCommit
        {
            break;
        }
    }
    assert_eq!(
        env.cluster
            .transactions()
            .describe("jr")
            .unwrap()
            .unwrap()
            .state,
        TxnState::PrepareCommit
    );
    env.crash_restart();
    let _ = commit.await;
    let d = env.cluster.transactions().describe("jr").unwrap().unwrap();
    assert_eq!(
        d.state,
        TxnState::CompleteCommit,
        "recovery completes the commit"
    );
    assert_eq!(
        env.cluster
            .groups()
            .fetch_committed("g", &tp("o", 0))
            .unwrap(),
        Some(1),
        "staged offsets stored"
    );
    env.admin.replicate_once().unwrap();
    env.admin.replicate_once().unwrap();
    let rc = FetchRequest::new(tp("o", 0), 0, 10).with_isolation(Isolation::ReadCommitted);
    assert_eq!(
        env.client.fetch(&rc).unwrap().records.len(),
        1,
        "the record is committed, with its marker"
    );
}
