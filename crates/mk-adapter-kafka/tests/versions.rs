//! Every advertised (API, version) pair against a live broker, and what the
//! newer versions mean: each sample request (every field set) is answered
//! with a response that decodes at its version and the connection stays;
//! then KIP-951 leader hints (Produce v10+, Fetch v16+), Fetch by topic id
//! (v13+), ListOffsets' special timestamps by version, DescribeGroups v6's
//! GROUP_ID_NOT_FOUND, ListGroups v5's types, DescribeCluster v2's fenced
//! brokers, Metadata v13 and FindCoordinator v6.

mod common;
#[path = "generated/samples.rs"]
mod samples;

use common::*;
use mk_adapter_kafka::KafkaOptions;
use mk_adapter_kafka::api::{APIS, key, offsets};
use mk_adapter_kafka::codec::Uuid;
use mk_adapter_kafka::errors::KafkaCode;
use mk_adapter_kafka::messages;
use mk_adapter_kafka::messages::describe_cluster::{
    DescribeClusterRequest, DescribeClusterResponse,
};
use mk_adapter_kafka::messages::describe_groups::{DescribeGroupsRequest, DescribeGroupsResponse};
use mk_adapter_kafka::messages::fetch::{FetchPartition, FetchRequest, FetchResponse, FetchTopic};
use mk_adapter_kafka::messages::find_coordinator::{
    FindCoordinatorRequest, FindCoordinatorResponse,
};
use mk_adapter_kafka::messages::list_groups::{ListGroupsRequest, ListGroupsResponse};
use mk_adapter_kafka::messages::list_offsets::{
    ListOffsetsPartition, ListOffsetsRequest, ListOffsetsResponse, ListOffsetsTopic,
};
use mk_adapter_kafka::messages::metadata::{MetadataRequest, MetadataResponse};
use mk_adapter_kafka::messages::produce::{
    PartitionProduceData, ProduceRequest, ProduceResponse, TopicProduceData,
};
use mk_adapter_kafka::mk_cluster::ProducerInfo;
use samples::Sample;

#[tokio::test]
async fn every_advertised_version_of_every_api_is_answered_at_its_version() {
    let h = Harness::one().await;
    let mut answered = 0;
    macro_rules! one {
        ($name:ident, $module:ident, $req:ident, $resp:ident, $key:ident, $lo:expr, $hi:expr, $flex:expr) => {{
            if let Some(spec) = APIS.iter().find(|a| a.key == messages::key::$key) {
                for v in spec.min_version..=spec.max_version {
                    let mut c = h.conn(1).await;
                    let mut req = <messages::$module::$req as Sample>::sample(v, 1);
                    quiet(&mut req);
                    let _: messages::$module::$resp = c.call(spec.key, v, &req).await;
                    // The connection still answers: nothing was refused.
                    let _: MetadataResponse = c.call(key::METADATA, 1, &all_topics()).await;
                    answered += 1;
                }
            }
        }};
    }
    for_every_api!(one);
    let advertised: usize = APIS
        .iter()
        .map(|a| usize::from((a.max_version - a.min_version + 1).unsigned_abs()))
        .sum();
    assert_eq!(answered, advertised);
    h.stop().await;
}

/// What a sample must not do to a live broker: go unanswered (a Produce
/// with acks=0 has no answer) or wait (a long poll); a Fetch session is
/// not kept either.
fn quiet(req: &mut dyn std::any::Any) {
    if let Some(p) = req.downcast_mut::<ProduceRequest>() {
        p.acks = 1;
    } else if let Some(f) = req.downcast_mut::<FetchRequest>() {
        f.max_wait_ms = 0;
        f.session_id = 0;
        f.session_epoch = -1;
    }
}

fn all_topics() -> MetadataRequest {
    MetadataRequest {
        topics: None,
        allow_auto_topic_creation: false,
        ..MetadataRequest::default()
    }
}

fn produce_req(topic: &str, partition: i32) -> ProduceRequest {
    ProduceRequest {
        acks: 1,
        timeout_ms: 5_000,
        topic_data: vec![TopicProduceData {
            name: topic.into(),
            partition_data: vec![PartitionProduceData {
                index: partition,
                records: Some(batch_bytes(value_records(&["x"]), ProducerInfo::NONE)),
            }],
            ..TopicProduceData::default()
        }],
        ..ProduceRequest::default()
    }
}

fn fetch_req(topic: &str, id: Uuid, partition: i32) -> FetchRequest {
    FetchRequest {
        max_bytes: 1 << 20,
        topics: vec![FetchTopic {
            topic: topic.into(),
            topic_id: id,
            partitions: vec![FetchPartition {
                partition,
                partition_max_bytes: 1 << 20,
                ..FetchPartition::default()
            }],
        }],
        ..FetchRequest::default()
    }
}

fn topic_id(h: &Harness, topic: &str) -> Uuid {
    Uuid(h.cluster.topics().id(topic).unwrap().0)
}

#[tokio::test]
async fn not_leader_answers_carry_the_leader_and_its_endpoint_from_produce_v10_and_fetch_v16() {
    let h = Harness::start(vec![1, 2, 3], KafkaOptions::default()).await;
    // Partition 1 of a three-broker topic is led by broker 2.
    h.cluster.topics().create("r", 3, 3).unwrap();
    let leader_port = i32::from(h.addr(2).port());
    let mut c = h.conn(1).await;
    for v in [9, 10, 11] {
        let r: ProduceResponse = c.call(key::PRODUCE, v, &produce_req("r", 1)).await;
        let p = &r.responses[0].partition_responses[0];
        assert_eq!(p.error_code, KafkaCode::NOT_LEADER_OR_FOLLOWER, "v{v}");
        if v >= 10 {
            assert_eq!(
                (p.current_leader.leader_id, p.current_leader.leader_epoch),
                (2, 0)
            );
            let ends: Vec<_> = r
                .node_endpoints
                .iter()
                .map(|n| (n.node_id, n.port))
                .collect();
            assert_eq!(ends, vec![(2, leader_port)], "v{v}");
        } else {
            assert_eq!(p.current_leader.leader_id, -1, "v9 has no hint");
        }
    }
    let id = topic_id(&h, "r");
    for v in [12, 15, 16, 18] {
        let f: FetchResponse = c.call(key::FETCH, v, &fetch_req("r", id, 1)).await;
        let p = &f.responses[0].partitions[0];
        assert_eq!(p.error_code, KafkaCode::NOT_LEADER_OR_FOLLOWER, "v{v}");
        let hinted = (p.current_leader.leader_id, f.node_endpoints.len());
        assert_eq!(hinted, if v >= 16 { (2, 1) } else { (-1, 0) }, "v{v}");
    }
    // The leader itself answers without hints.
    let mut leader = h.conn(2).await;
    let r: ProduceResponse = leader.call(key::PRODUCE, 11, &produce_req("r", 1)).await;
    assert_eq!(
        r.responses[0].partition_responses[0].error_code,
        KafkaCode::NONE
    );
    assert!(r.node_endpoints.is_empty());
    h.stop().await;
}

#[tokio::test]
async fn fetch_from_v13_names_topics_by_id() {
    let h = Harness::one().await;
    h.cluster.topics().create("ids", 1, 1).unwrap();
    let mut c = h.conn(1).await;
    let r: ProduceResponse = c.call(key::PRODUCE, 11, &produce_req("ids", 0)).await;
    assert_eq!(
        r.responses[0].partition_responses[0].error_code,
        KafkaCode::NONE
    );
    let id = topic_id(&h, "ids");
    for v in [13, 18] {
        // The name is not on the wire at v13+: only the id finds the topic.
        let f: FetchResponse = c.call(key::FETCH, v, &fetch_req("", id, 0)).await;
        assert_eq!(f.responses[0].topic_id, id, "v{v}");
        let p = &f.responses[0].partitions[0];
        assert_eq!(
            (p.error_code, p.high_watermark),
            (KafkaCode::NONE, 1),
            "v{v}"
        );
        assert!(p.records.as_ref().is_some_and(|r| !r.is_empty()), "v{v}");
        let unknown = Uuid([9; 16]);
        let f: FetchResponse = c.call(key::FETCH, v, &fetch_req("ids", unknown, 0)).await;
        assert_eq!(f.responses[0].topic_id, unknown);
        assert_eq!(
            f.responses[0].partitions[0].error_code,
            KafkaCode::UNKNOWN_TOPIC_ID,
            "v{v}"
        );
    }
    // Before v13 the name is what counts.
    let f: FetchResponse = c
        .call(key::FETCH, 12, &fetch_req("ids", Uuid::ZERO, 0))
        .await;
    assert_eq!(f.responses[0].partitions[0].high_watermark, 1);
    h.stop().await;
}

#[tokio::test]
async fn list_offsets_special_timestamps_exist_from_their_versions() {
    let h = Harness::one().await;
    h.cluster.topics().create("l", 1, 1).unwrap();
    let mut c = h.conn(1).await;
    for _ in 0..3 {
        let _: ProduceResponse = c.call(key::PRODUCE, 11, &produce_req("l", 0)).await;
    }
    let list = |timestamp| ListOffsetsRequest {
        replica_id: -1,
        topics: vec![ListOffsetsTopic {
            name: "l".into(),
            partitions: vec![ListOffsetsPartition {
                partition_index: 0,
                current_leader_epoch: -1,
                timestamp,
            }],
        }],
        timeout_ms: 1_000,
        ..ListOffsetsRequest::default()
    };
    let cases = [
        (offsets::EARLIEST_LOCAL_TIMESTAMP, 8, KafkaCode::NONE, 0),
        (
            offsets::EARLIEST_LOCAL_TIMESTAMP,
            7,
            KafkaCode::UNSUPPORTED_VERSION,
            -1,
        ),
        (offsets::LATEST_TIERED_TIMESTAMP, 9, KafkaCode::NONE, -1),
        (
            offsets::LATEST_TIERED_TIMESTAMP,
            8,
            KafkaCode::UNSUPPORTED_VERSION,
            -1,
        ),
        (
            offsets::MAX_TIMESTAMP,
            6,
            KafkaCode::UNSUPPORTED_VERSION,
            -1,
        ),
        // Every record has the same timestamp: the first of them.
        (offsets::MAX_TIMESTAMP, 10, KafkaCode::NONE, 0),
        (offsets::LATEST_TIMESTAMP, 10, KafkaCode::NONE, 3),
    ];
    for (ts, v, code, offset) in cases {
        let r: ListOffsetsResponse = c.call(key::LIST_OFFSETS, v, &list(ts)).await;
        let p = &r.topics[0].partitions[0];
        assert_eq!(
            (p.error_code, p.offset),
            (code, offset),
            "timestamp {ts} at v{v}"
        );
    }
    h.stop().await;
}

#[tokio::test]
async fn group_listings_and_descriptions_at_their_newest_versions() {
    let h = Harness::one().await;
    let mut c = h.conn(1).await;
    let describe = DescribeGroupsRequest {
        groups: vec!["nobody".into()],
        include_authorized_operations: false,
    };
    let old: DescribeGroupsResponse = c.call(key::DESCRIBE_GROUPS, 5, &describe).await;
    assert_eq!(
        (old.groups[0].error_code, old.groups[0].group_state.as_str()),
        (KafkaCode::NONE, "Dead")
    );
    let new: DescribeGroupsResponse = c.call(key::DESCRIBE_GROUPS, 6, &describe).await;
    assert_eq!(new.groups[0].error_code, KafkaCode::GROUP_ID_NOT_FOUND);
    assert_eq!(
        new.groups[0].error_message.as_deref(),
        Some("Group nobody not found.")
    );
    // A group with a committed offset is listed, of type classic.
    h.cluster.topics().create("g", 1, 1).unwrap();
    let offsets = [(mk_adapter_kafka::mk_cluster::TopicPartition::new("g", 0), 1)]
        .into_iter()
        .collect();
    h.cluster
        .groups()
        .commit("listed", -1, "", None, &offsets)
        .unwrap();
    for (types, listed) in [
        (vec![], 1),
        (vec!["Classic".to_string()], 1),
        (vec!["consumer".into()], 0),
    ] {
        let r: ListGroupsResponse = c
            .call(
                key::LIST_GROUPS,
                5,
                &ListGroupsRequest {
                    states_filter: vec![],
                    types_filter: types.clone(),
                },
            )
            .await;
        assert_eq!(r.groups.len(), listed, "types {types:?}");
        assert!(r.groups.iter().all(|g| g.group_type == "classic"));
    }
    // FindCoordinator v6: groups as before, share-group keys refused.
    for (key_type, code) in [(0, KafkaCode::NONE), (2, KafkaCode::INVALID_REQUEST)] {
        let r: FindCoordinatorResponse = c
            .call(
                key::FIND_COORDINATOR,
                6,
                &FindCoordinatorRequest {
                    key_type,
                    coordinator_keys: vec!["listed".into()],
                    ..FindCoordinatorRequest::default()
                },
            )
            .await;
        assert_eq!(r.coordinators[0].error_code, code, "key type {key_type}");
    }
    h.stop().await;
}

#[tokio::test]
async fn describe_cluster_v2_lists_offline_brokers_as_fenced_when_asked_and_metadata_v13_answers() {
    let h = Harness::start(vec![1, 2], KafkaOptions::default()).await;
    h.cluster.brokers().take_offline(2).unwrap();
    let mut c = h.conn(1).await;
    for (include, want) in [
        (false, vec![(1, false)]),
        (true, vec![(1, false), (2, true)]),
    ] {
        let r: DescribeClusterResponse = c
            .call(
                key::DESCRIBE_CLUSTER,
                2,
                &DescribeClusterRequest {
                    include_fenced_brokers: include,
                    ..DescribeClusterRequest::default()
                },
            )
            .await;
        let got: Vec<_> = r
            .brokers
            .iter()
            .map(|b| (b.broker_id, b.is_fenced))
            .collect();
        assert_eq!(got, want, "include_fenced_brokers {include}");
    }
    let m: MetadataResponse = c.call(key::METADATA, 13, &all_topics()).await;
    assert_eq!(m.error_code, KafkaCode::NONE);
    assert_eq!(m.brokers.len(), 1);
    h.stop().await;
}
