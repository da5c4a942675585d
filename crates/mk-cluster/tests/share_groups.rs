//! Share groups through the core: ShareFetch reads the partition's real
//! log (batches as stored, markers and aborted transactions included),
//! acquires for the member, and hands back the batches of what it
//! acquired; read_committed shares only committed records; a fetch with
//! nothing to acquire waits for records; a restart keeps what was
//! acknowledged.

mod common;

use common::{Client, Node, b, tp};
use mk_cluster::share::{AckBatch, AckType, ShareFetchRequest};
use mk_cluster::*;
use std::time::Duration;

/// One broker with the share topic `q` (one partition).
fn with_q() -> Node {
    let node = Node::new(|_| {});
    node.c().topics().create("q", 1, 1).unwrap();
    node
}

fn limits(max_wait_ms: u64) -> ShareFetchLimits {
    ShareFetchLimits {
        max_wait: Duration::from_millis(max_wait_ms),
        max_records: 100,
        max_bytes: 1 << 20,
        broker: None,
    }
}

async fn produce(c: &BrokerCluster, values: &[&str]) {
    let records: Vec<(&str, i64)> = values.iter().map(|v| (*v, 1_000)).collect();
    produce_at(c, &records).await;
}

/// One batch (acks=all) to `q-0` of the values with their timestamps.
async fn produce_at(c: &BrokerCluster, records: &[(&str, i64)]) {
    let batch = RecordBatch::new(
        records
            .iter()
            .map(|(v, ts)| Record::new(None, Some(b(v)), *ts))
            .collect(),
    )
    .unwrap();
    append(c, batch).await;
}

/// Appends `batch` to `q-0` with acks=all.
async fn append(c: &BrokerCluster, batch: RecordBatch) {
    c.data()
        .submit_append(&tp("q", 0), batch, AckMode::All, None)
        .unwrap()
        .wait()
        .await
        .unwrap();
}

fn join(c: &BrokerCluster, member: &str) {
    let hb = ShareHeartbeat {
        group_id: "g".into(),
        member_id: member.into(),
        subscribed_topic_names: Some(vec!["q".into()]),
        ..ShareHeartbeat::default()
    };
    let a = c.groups().share_heartbeat(hb).unwrap();
    assert_eq!(a.assignment, Some(vec![tp("q", 0)]));
}

fn request(
    member: &str,
    epoch: i32,
    acks: Vec<(TopicPartition, Vec<AckBatch>)>,
) -> ShareFetchRequest {
    ShareFetchRequest {
        group_id: "g".into(),
        member_id: member.into(),
        session_epoch: epoch,
        partitions: if epoch == 0 { vec![tp("q", 0)] } else { vec![] },
        forgotten: vec![],
        acks,
    }
}

/// A ShareFetch of `req` that must succeed.
async fn fetch(c: &BrokerCluster, req: &ShareFetchRequest, max_wait_ms: u64) -> ShareFetchAnswer {
    c.groups()
        .share_fetch(req, limits(max_wait_ms))
        .await
        .unwrap()
}

/// Acknowledgements of `q-0`: one batch from `first` to `last`.
fn acks_of(first: i64, last: i64, types: Vec<AckType>) -> Vec<(TopicPartition, Vec<AckBatch>)> {
    vec![(tp("q", 0), vec![AckBatch { first, last, types }])]
}

fn values(answer: &ShareFetchAnswer) -> Vec<String> {
    let Some(p) = answer.partitions.iter().find(|p| p.tp == tp("q", 0)) else {
        return Vec::new();
    };
    assert!(p.error.is_none(), "{:?}", p.error);
    p.batches
        .iter()
        .flat_map(|b| {
            b.records()
                .unwrap()
                .records_with_offsets()
                .map(|(o, r)| (o, r.value.clone()))
                .collect::<Vec<_>>()
        })
        .filter(|(o, _)| p.acquired.iter().any(|r| r.first <= *o && *o <= r.last))
        .map(|(_, v)| String::from_utf8(v.unwrap().to_vec()).unwrap())
        .collect()
}

fn earliest(c: &BrokerCluster, isolation: ShareIsolation) {
    let settings = GroupSettings {
        share_auto_offset_reset: Some(ShareAutoOffsetReset::Earliest),
        share_isolation_level: Some(isolation),
        ..GroupSettings::default()
    };
    c.groups().set_settings("g", settings).unwrap();
}

/// `share.auto.offset.reset=by_duration:PT1M`: a share group's first fetch
/// of a partition starts at the first record at most a minute old by the
/// cluster clock (the time index's answer); with no record that recent it
/// starts at the end, and only later records are handed out.
#[tokio::test]
async fn a_by_duration_reset_starts_at_the_first_record_that_recent() {
    for (records, want) in [
        (
            &[
                ("old", 1_000),
                ("older", 500),
                ("recent", 950_000),
                ("now", 1_000_000),
            ][..],
            vec!["recent", "now"],
        ),
        (&[("old", 1_000), ("older", 500)][..], vec![]),
    ] {
        let node = with_q();
        let c = node.c();
        produce_at(c, records).await;
        let settings = GroupSettings {
            share_auto_offset_reset: ShareAutoOffsetReset::parse("by_duration:PT1M"),
            ..GroupSettings::default()
        };
        c.groups().set_settings("g", settings).unwrap();
        join(c, "m1");
        let got = fetch(c, &request("m1", 0, vec![]), 0).await;
        assert_eq!(values(&got), want);
        produce(c, &["later"]).await;
        let got = fetch(c, &request("m1", 1, vec![]), 0).await;
        assert_eq!(values(&got), vec!["later"]);
    }
}

#[tokio::test]
async fn a_share_fetch_hands_out_records_once_and_again_after_a_release() {
    let node = with_q();
    let c = node.c();
    earliest(c, ShareIsolation::ReadUncommitted);
    produce(c, &["a", "b", "c"]).await;
    join(c, "m1");
    join(c, "m2");
    let got = fetch(c, &request("m1", 0, vec![]), 0).await;
    assert_eq!(values(&got), vec!["a", "b", "c"]);
    assert_eq!(got.lock_duration_ms, 30_000);
    let other = fetch(c, &request("m2", 0, vec![]), 0).await;
    assert!(
        other.partitions.iter().all(|p| p.acquired.is_empty()),
        "m1 holds them all"
    );
    let acks = acks_of(
        0,
        2,
        vec![AckType::Accept, AckType::Release, AckType::Reject],
    );
    let got = fetch(c, &request("m1", 1, acks), 0).await;
    assert!(got.acks.iter().all(|(_, r)| r.is_ok()), "{:?}", got.acks);
    assert_eq!(
        values(&got),
        vec!["b"],
        "the released record, delivered again"
    );
    assert_eq!(got.partitions[0].acquired[0].delivery_count, 2);
}

#[tokio::test]
async fn read_committed_shares_only_committed_records() {
    let node = with_q();
    let c = node.c();
    earliest(c, ShareIsolation::ReadCommitted);
    let q = tp("q", 0);
    let mut t = Client::init(c, "tx", 60_000).await.unwrap();
    t.add(c, std::slice::from_ref(&q)).await.unwrap();
    t.produce(c, &q, &["aborted-1", "aborted-2"]).await.unwrap();
    t.end(c, false).await.unwrap();
    let mut t = Client::init(c, "tx", 60_000).await.unwrap();
    t.add(c, std::slice::from_ref(&q)).await.unwrap();
    t.produce(c, &q, &["committed"]).await.unwrap();
    // Open transaction: nothing past the LSO is shared yet.
    join(c, "m1");
    let got = fetch(c, &request("m1", 0, vec![]), 0).await;
    assert!(values(&got).is_empty(), "{got:?}");
    t.end(c, true).await.unwrap();
    produce(c, &["plain"]).await;
    let got = fetch(c, &request("m1", 1, vec![]), 0).await;
    assert_eq!(values(&got), vec!["committed", "plain"]);
    let p = c.groups().describe_share("g").unwrap().unwrap();
    assert_eq!(p.partitions.len(), 1);
}

#[tokio::test]
async fn a_fetch_with_nothing_to_hand_out_waits_for_records() {
    let node = with_q();
    let c = node.c().clone();
    join(&c, "m1");
    let first = fetch(&c, &request("m1", 0, vec![]), 0).await;
    assert!(values(&first).is_empty(), "latest: nothing yet");
    let waiting = {
        let c = c.clone();
        tokio::spawn(async move {
            c.groups()
                .share_fetch(&request("m1", 1, vec![]), limits(30_000))
                .await
        })
    };
    tokio::task::yield_now().await;
    produce(&c, &["late"]).await;
    let got = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("woken by the produce")
        .unwrap()
        .unwrap();
    assert_eq!(values(&got), vec!["late"]);
}

#[tokio::test]
async fn acknowledgements_survive_a_crash() {
    let mut node = with_q();
    earliest(node.c(), ShareIsolation::ReadUncommitted);
    produce(node.c(), &["a", "b"]).await;
    join(node.c(), "m1");
    fetch(node.c(), &request("m1", 0, vec![]), 0).await;
    let acks = acks_of(0, 0, vec![AckType::Accept]);
    let answers = node
        .c()
        .groups()
        .share_acknowledge(&request("m1", 1, acks))
        .unwrap();
    assert!(answers[0].1.is_ok());
    node.crash_and_reopen();
    earliest(node.c(), ShareIsolation::ReadUncommitted);
    assert_eq!(
        node.c().groups().describe_share_offsets("g", None).unwrap(),
        vec![(tp("q", 0), Some(1))]
    );
    join(node.c(), "m1");
    let got = fetch(node.c(), &request("m1", 0, vec![]), 0).await;
    assert_eq!(
        values(&got),
        vec!["b"],
        "only the unacknowledged record comes back"
    );
    assert_eq!(got.partitions[0].acquired[0].delivery_count, 2);
}

/// A compacted `q` whose first batch, an idempotent producer's record
/// overwritten later, compaction left without records (the producer's last
/// batch): no record is acquired for its offset, the overwriting record is.
#[tokio::test]
async fn a_batch_compaction_emptied_is_never_acquired() {
    let node = Node::new(|_| {});
    let c = node.c();
    let overrides = TopicConfigOverrides {
        cleanup_policy: Some(CleanupPolicy::Compact),
        segment_bytes: Some(Some(1024)),
        ..TopicConfigOverrides::default()
    };
    c.topics()
        .create_with_overrides("q", 1, 1, &overrides)
        .unwrap();
    let keyed = |value: &str| {
        RecordBatch::new(vec![Record::new(Some(b("k")), Some(b(value)), 1_000)]).unwrap()
    };
    let old = keyed(&"o".repeat(1_100)).with_producer(ProducerInfo {
        producer_id: 7,
        producer_epoch: 0,
        base_sequence: 0,
    });
    append(c, old).await;
    append(c, keyed("new")).await;
    let summary = c.steps().compact("q", Some(0)).unwrap();
    assert_eq!((summary.records_before, summary.records_after), (1, 0));
    earliest(c, ShareIsolation::ReadUncommitted);
    join(c, "m1");
    let got = fetch(c, &request("m1", 0, vec![]), 0).await;
    assert_eq!(values(&got), vec!["new"]);
    let p = &got.partitions[0];
    let acquired: Vec<(i64, i64)> = p.acquired.iter().map(|r| (r.first, r.last)).collect();
    assert_eq!(acquired, vec![(1, 1)], "offset 0 holds no record");
    assert!(
        p.batches.iter().all(|b| b.data_records() > 0),
        "no batch without records is handed out"
    );
}
