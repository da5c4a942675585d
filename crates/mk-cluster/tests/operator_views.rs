//! The operator views the console shows, through the core's API: a
//! partition's internals (segments, epoch history, open transactions),
//! records as stored with markers, aborted and unstable data marked, the
//! overview's partition health and traffic, a group's lag, and offset
//! resets planned (the dry run) and executed.

mod common;

use common::*;
use mk_cluster::*;
use std::collections::BTreeMap;

fn entry(key: Option<&str>, value: Option<&str>, ts: i64) -> ProduceEntry {
    ProduceEntry {
        key: key.map(b),
        value: value.map(b),
        timestamp_ms: Some(ts),
        ..ProduceEntry::default()
    }
}

async fn produce(c: &BrokerCluster, tp: &TopicPartition, entries: Vec<ProduceEntry>) {
    c.data()
        .produce(ProduceRequest {
            tp: tp.clone(),
            records: entries,
            acks: AckMode::One,
            producer: None,
        })
        .await
        .unwrap();
}

async fn values(c: &BrokerCluster, tp: &TopicPartition, n: usize, ts: i64) {
    for i in 0..n {
        produce(
            c,
            tp,
            vec![entry(None, Some(&format!("v{i}")), ts + i as i64)],
        )
        .await;
    }
}

#[tokio::test]
async fn partition_internals_show_segments_epochs_and_open_transactions() {
    let node = Node::new(|c| c.segment_max_bytes = 1024);
    let c = node.c();
    c.topics().create("t", 1, 1).unwrap();
    let t0 = tp("t", 0);
    values(c, &t0, 40, 1_000).await;
    let mut client = Client::init(c, "tx", 60_000).await.unwrap();
    client.add(c, std::slice::from_ref(&t0)).await.unwrap();
    let first_txn_offset = c.data().log_end_offset(&t0).unwrap();
    client.produce(c, &t0, &["in-txn"]).await.unwrap();

    let i = c.views().partition_internals(&t0).unwrap();
    assert!(
        i.segments.len() > 1,
        "1 KiB segments roll: {:?}",
        i.segments
    );
    assert!(i.segments.last().unwrap().active);
    assert!(i.segments[..i.segments.len() - 1].iter().all(|s| !s.active));
    let sizes: u64 = i.segments.iter().map(|s| s.size_bytes).sum();
    let total = c.views().partition_log_bytes().unwrap()[0].1;
    assert_eq!(sizes, total, "segment sizes add up to the log's size");
    assert_eq!(i.segments[0].base_offset, 0);
    for w in i.segments.windows(2) {
        assert_eq!(w[0].next_offset, w[1].base_offset, "contiguous");
    }
    assert_eq!(
        i.epochs,
        vec![EpochEntry {
            epoch: 0,
            start_offset: 0
        }]
    );
    assert_eq!(i.open_transactions, vec![(client.pid, first_txn_offset)]);
    assert_eq!(i.info.last_stable_offset, first_txn_offset);
    assert_eq!(i.info.high_watermark, first_txn_offset + 1);

    client.end(c, true).await.unwrap();
    let i = c.views().partition_internals(&t0).unwrap();
    assert!(i.open_transactions.is_empty());
    assert_eq!(i.info.last_stable_offset, i.info.high_watermark);
    let recent = c.transactions().recent().unwrap();
    assert_eq!(recent.len(), 1);
    assert_eq!(recent[0].state, TxnState::CompleteCommit);
    assert_eq!(recent[0].partitions, vec![t0.clone()]);
}

#[tokio::test]
async fn the_epoch_history_grows_with_each_new_leader() {
    let node = Node::new(|c| c.broker_ids = vec![1, 2]);
    let c = node.c();
    c.topics().create("t", 1, 2).unwrap();
    let t0 = tp("t", 0);
    replicating(c, values(c, &t0, 3, 1_000)).await;
    c.steps().replicate_all_once().unwrap();
    c.brokers().take_offline(1).unwrap();
    replicating(c, values(c, &t0, 2, 2_000)).await;
    let i = c.views().partition_internals(&t0).unwrap();
    assert_eq!(i.info.leader_id, 2);
    assert_eq!(
        i.epochs,
        vec![
            EpochEntry {
                epoch: 0,
                start_offset: 0
            },
            EpochEntry {
                epoch: 1,
                start_offset: 3
            },
        ]
    );
}

/// t-0 holds: 0 a keyed record with headers, 1 a tombstone, 2 aborted
/// transactional data, 3 its ABORT marker, 4 data of a transaction still
/// open, 5 a plain record after it.
async fn marked_partition(c: &BrokerCluster) -> TopicPartition {
    c.topics().create("t", 1, 1).unwrap();
    let t0 = tp("t", 0);
    let mut with_header = entry(Some("k"), Some("{\"a\":1}"), 1_000);
    with_header.headers = vec![
        Header::new("trace", Some(b("abc"))),
        Header::new("empty", None),
    ];
    produce(c, &t0, vec![with_header, entry(Some("gone"), None, 1_001)]).await; // 0, 1
    let mut aborted = Client::init(c, "a", 60_000).await.unwrap();
    aborted.add(c, std::slice::from_ref(&t0)).await.unwrap();
    aborted.produce(c, &t0, &["x"]).await.unwrap(); // 2
    aborted.end(c, false).await.unwrap(); // 3: ABORT marker
    let mut open = Client::init(c, "o", 60_000).await.unwrap();
    open.add(c, std::slice::from_ref(&t0)).await.unwrap();
    open.produce(c, &t0, &["pending"]).await.unwrap(); // 4
    produce(c, &t0, vec![entry(None, Some("after"), 5_000)]).await; // 5
    t0
}

#[tokio::test]
async fn browsing_marks_markers_aborted_and_unstable_records_and_keeps_headers() {
    let node = Node::new(|_| {});
    let c = node.c();
    let t0 = marked_partition(c).await;
    let page = c.views().browse(&t0, BrowseFrom::Offset(0), 100).unwrap();
    assert_eq!((page.start_offset, page.next_offset), (0, 6));
    assert_eq!(page.high_watermark, 6);
    assert_eq!(page.last_stable_offset, 4);
    let r = &page.records;
    assert_eq!(
        r.iter().map(|r| r.offset).collect::<Vec<_>>(),
        vec![0, 1, 2, 3, 4, 5]
    );
    assert_eq!(r[0].key.as_deref(), Some(&b"k"[..]));
    assert_eq!(
        r[0].headers,
        vec![
            Header::new("trace", Some(b("abc"))),
            Header::new("empty", None)
        ]
    );
    assert_eq!(r[0].timestamp_ms, 1_000);
    assert_eq!(r[1].value, None, "a tombstone");
    assert!(r[2].transactional && r[2].aborted && r[2].control.is_none());
    assert_eq!(r[3].control, Some(ControlType::Abort));
    assert!(!r[3].aborted, "a marker is not aborted data");
    assert!(r[4].transactional && !r[4].aborted && r[4].beyond_lso);
    assert!(r[5].beyond_lso && !r[5].transactional);
    assert!(r[..4].iter().all(|r| !r.beyond_lso));
    assert!(
        r[..2]
            .iter()
            .all(|r| !r.transactional && !r.aborted && r.control.is_none())
    );
}

#[tokio::test]
async fn browsing_pages_by_offset_or_time_and_moves_requests_into_the_log() {
    let node = Node::new(|_| {});
    let c = node.c();
    let t0 = marked_partition(c).await;
    let page = c.views().browse(&t0, BrowseFrom::Offset(1), 2).unwrap();
    assert_eq!(
        page.records.iter().map(|r| r.offset).collect::<Vec<_>>(),
        vec![1, 2]
    );
    assert_eq!(page.next_offset, 3);
    let page = c
        .views()
        .browse(&t0, BrowseFrom::Timestamp(1_001), 1)
        .unwrap();
    assert_eq!(page.start_offset, 1);
    let page = c
        .views()
        .browse(&t0, BrowseFrom::Timestamp(9_999), 10)
        .unwrap();
    assert_eq!((page.start_offset, page.records.len()), (6, 0));
    let page = c.views().browse(&t0, BrowseFrom::Offset(99), 10).unwrap();
    assert_eq!((page.start_offset, page.records.len()), (6, 0));
    let page = c.views().browse(&t0, BrowseFrom::Offset(-5), 1).unwrap();
    assert_eq!(page.start_offset, 0);
    assert_eq!(
        c.views()
            .browse(&tp("t", 7), BrowseFrom::Offset(0), 1)
            .unwrap_err()
            .code(),
        ErrorCode::UnknownPartition
    );
}

#[tokio::test]
async fn the_overview_counts_partition_health_brokers_and_traffic() {
    let node = Node::new(|c| c.broker_ids = vec![1, 2]);
    let c = node.c();
    c.topics().create("pair", 2, 2).unwrap();
    c.topics().create("solo", 1, 1).unwrap(); // on broker 1 only
    let o = c.views().overview().unwrap();
    assert_eq!(o.brokers, vec![(1, true), (2, true)]);
    assert_eq!(
        o.partitions,
        PartitionCounts {
            total: 3,
            online: 3,
            offline: 0,
            damaged: 0,
            under_replicated: 0
        }
    );
    assert!(
        o.disk
            .is_some_and(|d| d.total_bytes > 0 && d.available_bytes <= d.total_bytes)
    );
    assert_eq!(o.traffic, Traffic::default());

    let solo = tp("solo", 0);
    values(c, &solo, 3, 1_000).await;
    c.data()
        .fetch(&FetchRequest::new(solo.clone(), 1, 10))
        .unwrap();
    let t = c.views().traffic();
    assert_eq!((t.produced_records, t.fetched_records), (3, 2));
    assert!(t.fetched_bytes >= 4, "v1 and v2: {t:?}");
    assert_eq!(c.views().partition_traffic(&solo).unwrap(), t);

    c.brokers().take_offline(1).unwrap();
    let o = c.views().overview().unwrap();
    assert_eq!(o.brokers, vec![(1, false), (2, true)]);
    // solo's only replica is offline; pair's partitions moved to broker 2
    // and lost broker 1 from their ISR.
    assert_eq!(
        o.partitions,
        PartitionCounts {
            total: 3,
            online: 2,
            offline: 1,
            damaged: 0,
            under_replicated: 2
        }
    );
    let solo_info = c.topics().describe_partition(&solo).unwrap();
    assert_eq!(c.views().health_of(&solo_info), PartitionHealth::Offline);
}

/// Topic `t`: 10 values in `t-0` (timestamps from 1000), 4 in `t-1` (from
/// 2000); group `g` has committed offset 3 of `t-0` only, which is returned.
async fn group_g_committed_3_of_10() -> (Node, TopicPartition) {
    let node = Node::new(|_| {});
    let c = node.c();
    c.topics().create("t", 2, 1).unwrap();
    let (p0, p1) = (tp("t", 0), tp("t", 1));
    values(c, &p0, 10, 1_000).await;
    values(c, &p1, 4, 2_000).await;
    c.groups()
        .alter_offsets("g", &BTreeMap::from([(p0.clone(), 3)]))
        .unwrap();
    (node, p0)
}

#[tokio::test]
async fn group_lag_and_offset_resets_planned_then_executed() {
    let (node, p0) = group_g_committed_3_of_10().await;
    let c = node.c();
    let lag = c.groups().lag_of("g").unwrap();
    assert_eq!(lag.len(), 1);
    assert_eq!(
        (lag[0].committed, lag[0].high_watermark, lag[0].lag),
        (Some(3), 10, Some(7))
    );

    let plan = |target| {
        c.groups()
            .plan_offset_reset("g", &["t".to_string()], target)
            .unwrap()
    };
    let targets = |p: Vec<PlannedReset>| p.iter().map(|r| r.target).collect::<Vec<_>>();
    assert_eq!(targets(plan(ResetTarget::Latest)), vec![10, 4]);
    assert_eq!(targets(plan(ResetTarget::Earliest)), vec![0, 0]);
    assert_eq!(
        targets(plan(ResetTarget::Offset(6))),
        vec![6, 4],
        "clamped to latest"
    );
    assert_eq!(targets(plan(ResetTarget::Timestamp(2_002))), vec![10, 2]);
    let latest = plan(ResetTarget::Latest);
    assert_eq!((latest[0].current, latest[1].current), (Some(3), None));
    // The dry run changed nothing.
    assert_eq!(
        c.groups().committed("g").unwrap(),
        BTreeMap::from([(p0.clone(), 3)])
    );
}

#[tokio::test]
async fn a_group_with_members_shows_its_assignment_and_refuses_a_reset_from_outside() {
    let node = Node::new(|_| {});
    let c = node.c();
    c.topics().create("t", 2, 1).unwrap();
    // The member's assigned partitions show in its lag even before a commit.
    c.groups().join("live", "m1", &["t".to_string()]).unwrap();
    let lag = c.groups().lag_of("live").unwrap();
    assert_eq!(lag.len(), 2);
    assert!(
        lag.iter()
            .all(|l| l.committed.is_none() && l.member_id.as_deref() == Some("m1"))
    );
    let plan = c
        .groups()
        .plan_offset_reset("live", &["t".into()], ResetTarget::Earliest)
        .unwrap();
    assert!(c.groups().execute_offset_reset("live", &plan).is_err());
}

#[tokio::test]
async fn offset_resets_shift_from_commits_and_are_executed_as_planned() {
    let (node, p0) = group_g_committed_3_of_10().await;
    let c = node.c();
    let p1 = tp("t", 1);

    // Without topics: the committed partitions; shifting needs a commit.
    let shifted = c
        .groups()
        .plan_offset_reset("g", &[], ResetTarget::ShiftBy(-5))
        .unwrap();
    assert_eq!(
        shifted,
        vec![PlannedReset {
            tp: p0.clone(),
            current: Some(3),
            target: 0
        }]
    );
    assert_eq!(
        c.groups()
            .plan_offset_reset("g", &["t".into()], ResetTarget::ShiftBy(1))
            .unwrap_err()
            .code(),
        ErrorCode::InvalidRequest
    );
    assert_eq!(
        c.groups()
            .plan_offset_reset("none", &[], ResetTarget::Latest)
            .unwrap_err()
            .code(),
        ErrorCode::InvalidRequest
    );

    let latest = c
        .groups()
        .plan_offset_reset("g", &["t".into()], ResetTarget::Latest)
        .unwrap();
    c.groups().execute_offset_reset("g", &latest).unwrap();
    assert_eq!(
        c.groups().committed("g").unwrap(),
        BTreeMap::from([(p0.clone(), 10), (p1.clone(), 4)])
    );
    assert!(
        c.groups()
            .lag_of("g")
            .unwrap()
            .iter()
            .all(|l| l.lag == Some(0))
    );
}

#[tokio::test]
async fn a_damaged_partition_is_counted_and_shown_while_the_others_are_measured() {
    let mut node = Node::new(|c| c.segment_max_bytes = 1024);
    let c = node.c().clone();
    c.topics().create("fragile", 1, 1).unwrap();
    c.topics().create("sturdy", 1, 1).unwrap();
    let (fragile, sturdy) = (tp("fragile", 0), tp("sturdy", 0));
    values(&c, &fragile, 40, 1_000).await;
    values(&c, &sturdy, 2, 1_000).await;
    drop(c);
    node.close_and_reopen().await;
    // One byte of the first (closed) segment flipped while the broker was
    // stopped: the next read finds it.
    let log = node
        .dir
        .path()
        .join("broker-1/fragile-0")
        .join(format!("{:020}.log", 0));
    let mut bytes = std::fs::read(&log).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&log, bytes).unwrap();
    node.close_and_reopen().await;
    let c = node.c();
    let err = c
        .views()
        .browse(&fragile, BrowseFrom::Offset(0), 100)
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::StorageError, "{err}");

    let o = c.views().overview().unwrap();
    assert_eq!((o.partitions.damaged, o.partitions.online), (1, 1));
    assert_eq!(o.damaged.len(), 1);
    assert_eq!(o.damaged[0].0, fragile);
    let sizes = c.views().partition_log_bytes().unwrap();
    assert_eq!(
        sizes.iter().map(|(tp, _)| tp.clone()).collect::<Vec<_>>(),
        vec![sturdy.clone()]
    );
    let i = c.views().partition_internals(&fragile).unwrap();
    assert!(
        i.info.damaged.as_deref().unwrap().contains("fragile-0"),
        "{:?}",
        i.info.damaged
    );
    assert!(i.segments.is_empty() && i.epochs.is_empty());
    assert_eq!(c.views().health_of(&i.info), PartitionHealth::Damaged);
    assert_eq!(
        c.views()
            .browse(&sturdy, BrowseFrom::Offset(0), 10)
            .unwrap()
            .records
            .len(),
        2
    );
}
