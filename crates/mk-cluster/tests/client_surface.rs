//! The core operations behind the newer Kafka client APIs: client
//! telemetry subscriptions (KIP-714) and topics described a page at a
//! time (KIP-966), client quotas (stored and described), and leader elections.
#![allow(
    clippy::too_many_lines,
    reason = "a test scenario reads top to bottom as one story; split, its steps would scatter"
)]

mod common;

use common::*;
use mk_cluster::*;

fn push(id: u8, subscription_id: i32, compression_type: i8, metrics_len: usize) -> TelemetryPush {
    TelemetryPush {
        client_instance_id: [id; 16],
        subscription_id,
        compression_type,
        metrics_len,
    }
}

#[tokio::test]
async fn clients_get_an_instance_id_and_an_empty_subscription() {
    let node = Node::new(|_| {});
    let t = node.c().telemetry();
    let fresh = t.subscription([0; 16]).unwrap();
    assert_ne!(fresh.client_instance_id, [0; 16]);
    let other = t.subscription([0; 16]).unwrap();
    assert_ne!(fresh.client_instance_id, other.client_instance_id);
    let again = t.subscription([7; 16]).unwrap();
    assert_eq!(again.client_instance_id, [7; 16]);
    assert!(again.requested_metrics.is_empty());
    assert_eq!(again.push_interval_ms, TELEMETRY_PUSH_INTERVAL_MS);

    let id = again.subscription_id;
    assert_eq!(t.push(&push(7, id, 0, 10)), Ok(()));
    assert_eq!(
        t.push(&push(0, id, 0, 10)),
        Err(TelemetryRefusal::NoInstanceId)
    );
    assert_eq!(
        t.push(&push(7, id + 1, 0, 10)),
        Err(TelemetryRefusal::UnknownSubscription)
    );
    assert_eq!(
        t.push(&push(7, id, 4, 10)),
        Err(TelemetryRefusal::UnsupportedCompression)
    );
    assert_eq!(
        t.push(&push(7, id, 0, TELEMETRY_MAX_BYTES as usize + 1)),
        Err(TelemetryRefusal::TooLarge)
    );
}

/// (topic, partitions) of a page, failures as (name, [code]).
fn shape(page: &TopicPage) -> Vec<(String, Vec<u32>)> {
    page.topics
        .iter()
        .map(|t| match t {
            PagedTopic::Found {
                name, partitions, ..
            } => (
                name.clone(),
                partitions.iter().map(|p| p.partition).collect(),
            ),
            PagedTopic::Failed { name, error } => {
                (format!("{name}: {}", error.code().as_str()), vec![])
            }
        })
        .collect()
}

fn cursor(topic: &str, partition: u32) -> TopicCursor {
    TopicCursor {
        topic: topic.into(),
        partition,
    }
}

#[tokio::test]
async fn topics_are_described_a_page_at_a_time_from_a_cursor() {
    let node = Node::new(|_| {});
    let c = node.c();
    for (t, n) in [("c", 2), ("a", 3), ("b", 1)] {
        c.topics().create(t, n, 1).unwrap();
    }
    let s = |v: &[(&str, &[u32])]| -> Vec<(String, Vec<u32>)> {
        v.iter().map(|(t, p)| (t.to_string(), p.to_vec())).collect()
    };
    let topics = c.topics();
    let first = topics.describe_page(None, None, 2).unwrap();
    assert_eq!(shape(&first), s(&[("a", &[0, 1])]));
    assert_eq!(first.next, Some(cursor("a", 2)));
    let second = topics.describe_page(None, first.next.as_ref(), 2).unwrap();
    assert_eq!(shape(&second), s(&[("a", &[2]), ("b", &[0])]));
    assert_eq!(second.next, Some(cursor("c", 0)));
    let last = topics.describe_page(None, second.next.as_ref(), 2).unwrap();
    assert_eq!(shape(&last), s(&[("c", &[0, 1])]));
    assert_eq!(last.next, None);
    // Everything at once; a limit below 1 is 1; the page's ids are the topics'.
    let all = topics.describe_page(None, None, i64::MAX).unwrap();
    assert_eq!(
        shape(&all),
        s(&[("a", &[0, 1, 2]), ("b", &[0]), ("c", &[0, 1])])
    );
    let PagedTopic::Found { topic_id, .. } = &all.topics[1] else {
        panic!("{all:?}")
    };
    assert_eq!(*topic_id, topics.id("b").unwrap());
    let one = topics.describe_page(None, None, -5).unwrap();
    assert_eq!(
        (shape(&one), one.next),
        (s(&[("a", &[0])]), Some(cursor("a", 1)))
    );

    // By name: sorted, missing and invalid names answered, not skipped.
    let names: Vec<String> = ["zz", "c", "bad name!", "a"].map(String::from).to_vec();
    let named = topics
        .describe_page(Some(&names), Some(&cursor("c", 1)), 10)
        .unwrap();
    assert_eq!(
        shape(&named),
        s(&[("c", &[1]), ("zz: UNKNOWN_TOPIC", &[])]),
        "topics before the cursor's are skipped"
    );
    let named = topics.describe_page(Some(&names), None, 10).unwrap();
    assert_eq!(
        shape(&named),
        s(&[
            ("a", &[0, 1, 2]),
            ("bad name!: INVALID_TOPIC", &[]),
            ("c", &[0, 1]),
            ("zz: UNKNOWN_TOPIC", &[]),
        ])
    );
    let e = topics
        .describe_page(Some(&names), Some(&cursor("b", 0)), 10)
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidRequest);
    // A cursor past a topic's last partition: the topic, empty.
    let past = topics
        .describe_page(None, Some(&cursor("b", 7)), 10)
        .unwrap();
    assert_eq!(shape(&past), s(&[("b", &[]), ("c", &[0, 1])]));
}

/// A quota entity as alterations name it: (type, name or default).
type Entity = Vec<(String, Option<String>)>;

fn entity(parts: &[(&str, Option<&str>)]) -> Entity {
    parts
        .iter()
        .map(|(t, n)| (t.to_string(), n.map(str::to_string)))
        .collect()
}

fn set(key: &str, value: f64) -> QuotaOp {
    QuotaOp {
        key: key.into(),
        value,
        remove: false,
    }
}

fn filter(t: &str, matching: QuotaMatch) -> QuotaFilter {
    QuotaFilter {
        entity_type: t.into(),
        matching,
    }
}

/// Each described entity as "type=name,..." (default `<default>`) with its values.
fn described(entries: Vec<QuotaEntry>) -> Vec<(String, Vec<(String, f64)>)> {
    entries
        .into_iter()
        .map(|e| {
            let name = e
                .entity
                .iter()
                .map(|(t, n)| format!("{t}={}", n.as_deref().unwrap_or("<default>")))
                .collect::<Vec<_>>()
                .join(",");
            (name, e.values.into_iter().collect())
        })
        .collect()
}

#[tokio::test]
async fn client_quotas_are_validated_stored_described_and_survive_a_restart() {
    let mut node = Node::new(|_| {});
    let q = node.c().quotas();
    let alice = entity(&[("user", Some("alice"))]);
    let alice_app = entity(&[("user", Some("alice")), ("client-id", Some("app"))]);
    let default_user = entity(&[("user", None)]);
    let ip = entity(&[("ip", Some("10.0.0.1"))]);
    q.alter(
        &alice,
        &[
            set("producer_byte_rate", 1024.0),
            set("request_percentage", 12.5),
        ],
        false,
    )
    .unwrap();
    q.alter(&alice_app, &[set("consumer_byte_rate", 2048.0)], false)
        .unwrap();
    q.alter(&default_user, &[set("producer_byte_rate", 500.0)], false)
        .unwrap();
    q.alter(&ip, &[set("connection_creation_rate", 10.0)], false)
        .unwrap();
    // validate_only changes nothing.
    q.alter(
        &entity(&[("client-id", Some("x"))]),
        &[set("producer_byte_rate", 1.0)],
        true,
    )
    .unwrap();

    // Kafka's refusals, each changing nothing.
    let refused: Vec<(Entity, Vec<QuotaOp>)> = vec![
        (vec![], vec![set("producer_byte_rate", 1.0)]),
        (
            entity(&[("group", Some("g"))]),
            vec![set("producer_byte_rate", 1.0)],
        ),
        (
            entity(&[("user", Some(""))]),
            vec![set("producer_byte_rate", 1.0)],
        ),
        (
            entity(&[("ip", Some("not-an-ip"))]),
            vec![set("connection_creation_rate", 1.0)],
        ),
        (
            entity(&[("ip", None), ("user", None)]),
            vec![set("connection_creation_rate", 1.0)],
        ),
        (alice.clone(), vec![set("connection_creation_rate", 1.0)]),
        (ip.clone(), vec![set("producer_byte_rate", 1.0)]),
        (alice.clone(), vec![set("producer_byte_rate", 1.5)]),
        (alice.clone(), vec![set("request_percentage", f64::NAN)]),
        (
            alice.clone(),
            vec![
                set("producer_byte_rate", 1.0),
                set("producer_byte_rate", 2.0),
            ],
        ),
        (
            alice.clone(),
            vec![set("consumer_byte_rate", 7.0), set("nonsense", 1.0)],
        ),
    ];
    for (e, ops) in &refused {
        let err = q.alter(e, ops, false).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidRequest, "{e:?} {ops:?}");
    }

    let names = |filters: &[QuotaFilter], strict: bool| -> Vec<String> {
        let mut n: Vec<String> = described(q.describe(filters, strict).unwrap())
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        n.sort();
        n
    };
    assert_eq!(
        names(&[], false),
        vec![
            "client-id=app,user=alice",
            "ip=10.0.0.1",
            "user=<default>",
            "user=alice"
        ]
    );
    assert_eq!(
        names(&[filter("user", QuotaMatch::Exact("alice".into()))], false),
        vec!["client-id=app,user=alice", "user=alice"]
    );
    assert_eq!(
        names(&[filter("user", QuotaMatch::Exact("alice".into()))], true),
        vec!["user=alice"]
    );
    assert_eq!(
        names(&[filter("user", QuotaMatch::Default)], false),
        vec!["user=<default>"]
    );
    assert_eq!(
        names(&[filter("user", QuotaMatch::Specified)], true),
        vec!["user=<default>", "user=alice"]
    );
    assert_eq!(
        names(&[filter("client-id", QuotaMatch::Specified)], false),
        vec!["client-id=app,user=alice"]
    );
    assert_eq!(
        names(&[filter("ip", QuotaMatch::Specified)], false),
        vec!["ip=10.0.0.1"]
    );
    for bad in [
        vec![
            filter("user", QuotaMatch::Default),
            filter("user", QuotaMatch::Specified),
        ],
        vec![
            filter("ip", QuotaMatch::Default),
            filter("user", QuotaMatch::Specified),
        ],
        vec![filter("group", QuotaMatch::Specified)],
    ] {
        let err = q.describe(&bad, false).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidRequest, "{bad:?}");
    }

    // Removing the last key removes the entity; everything survives a crash.
    let remove = QuotaOp {
        key: "consumer_byte_rate".into(),
        value: 0.0,
        remove: true,
    };
    q.alter(&alice_app, &[remove], false).unwrap();
    let before = names(&[], false);
    assert_eq!(before, vec!["ip=10.0.0.1", "user=<default>", "user=alice"]);
    node.crash_and_reopen();
    let q = node.c().quotas();
    let after: Vec<(String, Vec<(String, f64)>)> = described(q.describe(&[], false).unwrap());
    assert_eq!(after.len(), 3);
    assert!(after.contains(&(
        "user=alice".into(),
        vec![
            ("producer_byte_rate".into(), 1024.0),
            ("request_percentage".into(), 12.5)
        ]
    )));
}

fn leader(c: &BrokerCluster, t: &str, p: u32) -> (i32, i32, Vec<i32>) {
    let d = c.topics().describe(t).unwrap();
    let p = &d.partitions[p as usize];
    (p.leader_id, p.leader_epoch, p.isr.clone())
}

#[tokio::test]
async fn preferred_election_moves_leadership_back_once_the_replica_is_in_sync() {
    let (node, p0) = three_brokers(2, 3, &["a", "b", "c"]).await;
    let c = node.c();
    for _ in 0..3 {
        c.steps().replicate_all_once().unwrap();
    }
    let elect = |tp: &TopicPartition, kind| c.brokers().elect_leader(tp, kind);
    assert!(matches!(
        elect(&p0, ElectionType::Preferred),
        Err(ElectionRefusal::NotNeeded)
    ));
    assert!(matches!(
        elect(&p0, ElectionType::Unclean),
        Err(ElectionRefusal::NotNeeded)
    ));
    c.brokers().take_offline(1).unwrap();
    assert_eq!(leader(c, "t", 0).0, 2);
    assert!(matches!(
        elect(&p0, ElectionType::Preferred),
        Err(ElectionRefusal::PreferredNotAvailable(_))
    ));
    c.brokers().bring_online(1).unwrap();
    // Back online but not yet caught up in the new epoch: not in sync.
    assert!(!leader(c, "t", 0).2.contains(&1));
    assert!(matches!(
        elect(&p0, ElectionType::Preferred),
        Err(ElectionRefusal::PreferredNotAvailable(_))
    ));
    for _ in 0..3 {
        c.steps().replicate_all_once().unwrap();
    }
    assert!(leader(c, "t", 0).2.contains(&1), "{:?}", leader(c, "t", 0));
    let (_, epoch_before, _) = leader(c, "t", 0);
    let elected = elect(&p0, ElectionType::Preferred).unwrap();
    assert_eq!(
        (elected.leader_id, elected.leader_epoch),
        (1, epoch_before + 1)
    );
    assert_eq!(leader(c, "t", 0).0, 1);
    // The former leader follows again and re-enters the ISR.
    for _ in 0..3 {
        c.steps().replicate_all_once().unwrap();
    }
    assert_eq!(leader(c, "t", 0).2, vec![1, 2, 3]);
    assert_eq!(c.data().log_end_offset(&p0).unwrap(), 3);
    assert!(matches!(
        elect(&p0, ElectionType::Preferred),
        Err(ElectionRefusal::NotNeeded)
    ));
    let err = elect(&tp("t", 9), ElectionType::Preferred).unwrap_err();
    let ElectionRefusal::Cluster(e) = err else {
        panic!("{err:?}")
    };
    assert_eq!(e.code(), ErrorCode::UnknownPartition);
}

#[tokio::test]
async fn unclean_election_on_request_elects_an_out_of_sync_replica_whatever_the_config() {
    let (node, p0) = three_brokers(1, 3, &["a"]).await;
    let c = node.c();
    // Brokers 2 and 3 fall out of sync before copying "a", then the
    // leader goes offline: no in-sync replica is left, and the topic keeps
    // unclean.leader.election.enable=false, so nobody took over.
    c.steps().remove_from_isr(&p0, 2).unwrap();
    c.steps().remove_from_isr(&p0, 3).unwrap();
    assert!(c.brokers().take_offline(1).unwrap().is_empty());
    assert_eq!(leader(c, "t", 0).0, 1);
    // ElectLeaders UNCLEAN elects anyway (as Kafka, KIP-460): the first
    // online replica of the list, out of sync, in a new epoch; "a" is lost.
    let elected = c
        .brokers()
        .elect_leader(&p0, ElectionType::Unclean)
        .unwrap();
    assert_eq!((elected.leader_id, elected.leader_epoch), (2, 1));
    assert_eq!(leader(c, "t", 0), (2, 1, vec![2]));
    assert_eq!(c.data().log_end_offset(&p0).unwrap(), 0);
    assert!(matches!(
        c.brokers().elect_leader(&p0, ElectionType::Unclean),
        Err(ElectionRefusal::NotNeeded)
    ));
}

#[tokio::test]
async fn an_unreadable_quota_store_is_a_storage_error_at_open_never_a_reset() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(1_000);
    let c = open(dir.path(), &clock);
    c.quotas()
        .alter(
            &entity(&[("user", Some("a"))]),
            &[set("producer_byte_rate", 1.0)],
            false,
        )
        .unwrap();
    c.lifecycle().close().await.unwrap();
    drop(c);
    std::fs::write(dir.path().join("quotas.json"), b"{ not json").unwrap();
    let e = BrokerCluster::open_with_clock(
        MiniKafkaConfig::new(dir.path()),
        std::sync::Arc::new(clock),
    )
    .unwrap_err();
    assert_eq!(e.code(), ErrorCode::StorageError, "{e}");
    assert!(e.to_string().contains("quotas.json"), "{e}");
}
