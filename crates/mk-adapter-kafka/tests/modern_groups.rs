//! KIP-848 and KIP-932 through a live Kafka listener, each request encoded
//! as a Kafka client encodes it: a consumer group's heartbeat, describe and
//! epoch-checked commits; a share group's heartbeat, fetch, acknowledge
//! and offset admin; ListGroups v5 types; DescribeGroups v6 for groups that
//! are not classic; the features ApiVersions reports.

mod common;

use common::{Harness, value_records};
use mk_adapter_kafka::api::key;
use mk_adapter_kafka::codec::Uuid;
use mk_adapter_kafka::errors::KafkaCode;
use mk_adapter_kafka::messages::consumer_group_describe::{
    ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse,
};
use mk_adapter_kafka::messages::consumer_group_heartbeat::{
    ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse, TopicPartitions,
};
use mk_adapter_kafka::messages::describe_groups::{DescribeGroupsRequest, DescribeGroupsResponse};
use mk_adapter_kafka::messages::describe_share_group_offsets::{
    DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsRequestGroup,
    DescribeShareGroupOffsetsResponse,
};
use mk_adapter_kafka::messages::list_groups::{ListGroupsRequest, ListGroupsResponse};
use mk_adapter_kafka::messages::offset_commit::{
    OffsetCommitRequest, OffsetCommitRequestPartition, OffsetCommitRequestTopic,
    OffsetCommitResponse,
};
use mk_adapter_kafka::messages::share_acknowledge::{
    AcknowledgePartition, AcknowledgeTopic, AcknowledgementBatch as AckBatch,
    ShareAcknowledgeRequest, ShareAcknowledgeResponse,
};
use mk_adapter_kafka::messages::share_fetch::{
    FetchPartition, FetchTopic, ShareFetchRequest, ShareFetchResponse,
};
use mk_adapter_kafka::messages::share_group_heartbeat::{
    ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse,
};
use mk_adapter_kafka::mk_cluster::{AckMode, RecordBatch};

fn topic_id(h: &Harness, name: &str) -> Uuid {
    Uuid(h.cluster.topics().id(name).unwrap().0)
}

async fn produce(h: &Harness, topic: &str, values: &[&str]) {
    let batch = RecordBatch::new(value_records(values)).unwrap();
    let tp = mk_adapter_kafka::mk_cluster::TopicPartition::new(topic, 0);
    h.cluster
        .data()
        .submit_append(&tp, batch, AckMode::All, None)
        .unwrap()
        .wait()
        .await
        .unwrap();
}

fn join(member: &str) -> ConsumerGroupHeartbeatRequest {
    ConsumerGroupHeartbeatRequest {
        group_id: "cg".into(),
        member_id: member.into(),
        member_epoch: 0,
        rebalance_timeout_ms: 30_000,
        subscribed_topic_names: Some(vec!["orders".into()]),
        topic_partitions: Some(vec![]),
        ..ConsumerGroupHeartbeatRequest::default()
    }
}

fn commit(member: &str, epoch: i32) -> OffsetCommitRequest {
    OffsetCommitRequest {
        group_id: "cg".into(),
        generation_id_or_member_epoch: epoch,
        member_id: member.into(),
        topics: vec![OffsetCommitRequestTopic {
            name: "orders".into(),
            partitions: vec![OffsetCommitRequestPartition {
                partition_index: 0,
                committed_offset: 3,
                committed_leader_epoch: -1,
                committed_metadata: None,
            }],
        }],
        ..OffsetCommitRequest::default()
    }
}

#[tokio::test]
async fn a_consumer_group_member_joins_commits_with_its_epoch_and_is_described() {
    let (h, mut c) = Harness::one_with_topic("orders", 2).await;
    let a: ConsumerGroupHeartbeatResponse =
        c.call(key::CONSUMER_GROUP_HEARTBEAT, 1, &join("m-a")).await;
    assert_eq!((a.error_code, a.member_epoch), (KafkaCode::NONE, 1));
    let assigned = a
        .assignment
        .expect("the join is answered with its assignment");
    assert_eq!(
        assigned.topic_partitions,
        vec![TopicPartitions {
            topic_id: topic_id(&h, "orders"),
            partitions: vec![0, 1]
        }]
    );
    let ok: OffsetCommitResponse = c.call(key::OFFSET_COMMIT, 9, &commit("m-a", 1)).await;
    assert_eq!(ok.topics[0].partitions[0].error_code, KafkaCode::NONE);
    let stale: OffsetCommitResponse = c.call(key::OFFSET_COMMIT, 9, &commit("m-a", 0)).await;
    assert_eq!(
        stale.topics[0].partitions[0].error_code,
        KafkaCode::STALE_MEMBER_EPOCH
    );
    let old: OffsetCommitResponse = c.call(key::OFFSET_COMMIT, 8, &commit("m-a", 1)).await;
    assert_eq!(
        old.topics[0].partitions[0].error_code,
        KafkaCode::UNSUPPORTED_VERSION
    );
    let req = ConsumerGroupDescribeRequest {
        group_ids: vec!["cg".into(), "nope".into()],
        include_authorized_operations: false,
    };
    let d: ConsumerGroupDescribeResponse = c.call(key::CONSUMER_GROUP_DESCRIBE, 1, &req).await;
    assert_eq!(
        (
            d.groups[0].group_state.as_str(),
            d.groups[0].group_epoch,
            d.groups[0].assignor_name.as_str()
        ),
        ("Stable", 1, "uniform")
    );
    let m = &d.groups[0].members[0];
    assert_eq!(m.assignment.topic_partitions[0].topic_name, "orders");
    assert_eq!(
        m.target_assignment.topic_partitions[0].partitions,
        vec![0, 1]
    );
    assert_eq!(
        (d.groups[1].error_code, d.groups[1].error_message.as_deref()),
        (KafkaCode::GROUP_ID_NOT_FOUND, Some("Group nope not found."))
    );
    // The classic describe of a KIP-848 group: Dead, with the reason from v6.
    let classic = DescribeGroupsRequest {
        groups: vec!["cg".into()],
        include_authorized_operations: false,
    };
    let v6: DescribeGroupsResponse = c.call(key::DESCRIBE_GROUPS, 6, &classic).await;
    assert_eq!(
        (v6.groups[0].group_state.as_str(), v6.groups[0].error_code),
        ("Dead", KafkaCode::GROUP_ID_NOT_FOUND)
    );
    assert_eq!(
        v6.groups[0].error_message.as_deref(),
        Some("Group cg is not a classic group.")
    );
    let v5: DescribeGroupsResponse = c.call(key::DESCRIBE_GROUPS, 5, &classic).await;
    assert_eq!(
        (v5.groups[0].group_state.as_str(), v5.groups[0].error_code),
        ("Dead", KafkaCode::NONE)
    );
    h.stop().await;
}

#[tokio::test]
async fn a_share_consumer_fetches_acknowledges_and_sees_its_start_offset() {
    let (h, mut c) = Harness::one_with_topic("jobs", 1).await;
    let hb = ShareGroupHeartbeatRequest {
        group_id: "sg".into(),
        member_id: "s-1".into(),
        member_epoch: 0,
        subscribed_topic_names: Some(vec!["jobs".into()]),
        ..ShareGroupHeartbeatRequest::default()
    };
    let joined: ShareGroupHeartbeatResponse = c.call(key::SHARE_GROUP_HEARTBEAT, 1, &hb).await;
    assert_eq!(
        (joined.error_code, joined.member_epoch),
        (KafkaCode::NONE, 1)
    );
    let id = topic_id(&h, "jobs");
    let fetch = |epoch: i32| ShareFetchRequest {
        group_id: Some("sg".into()),
        member_id: Some("s-1".into()),
        share_session_epoch: epoch,
        max_wait_ms: 0,
        max_bytes: 1 << 20,
        max_records: 10,
        topics: vec![FetchTopic {
            topic_id: id,
            partitions: vec![FetchPartition {
                partition_index: 0,
                acknowledgement_batches: vec![],
            }],
        }],
        ..ShareFetchRequest::default()
    };
    // latest: the first fetch starts the share partition at the end.
    let first: ShareFetchResponse = c.call(key::SHARE_FETCH, 1, &fetch(0)).await;
    assert_eq!(first.error_code, KafkaCode::NONE);
    assert_eq!(first.acquisition_lock_timeout_ms, 30_000);
    produce(&h, "jobs", &["j1", "j2"]).await;
    let got: ShareFetchResponse = c.call(key::SHARE_FETCH, 1, &fetch(1)).await;
    let p = &got.responses[0].partitions[0];
    assert_eq!(p.acquired_records.len(), 1);
    assert_eq!(
        (
            p.acquired_records[0].first_offset,
            p.acquired_records[0].last_offset,
            p.acquired_records[0].delivery_count
        ),
        (0, 1, 1)
    );
    assert!(p.records.as_ref().is_some_and(|r| !r.is_empty()));
    acknowledge_and_describe(&mut c, id).await;
    h.stop().await;
}

#[tokio::test]
async fn list_groups_v5_reports_and_filters_types() {
    let h = Harness::one().await;
    let mut c = h.conn(1).await;
    one_group_of_each_type(&h, &mut c).await;
    let all: ListGroupsResponse = c
        .call(key::LIST_GROUPS, 5, &ListGroupsRequest::default())
        .await;
    let rows: Vec<(String, String, String)> = all
        .groups
        .iter()
        .map(|g| {
            (
                g.group_id.clone(),
                g.group_type.clone(),
                g.protocol_type.clone(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        vec![
            ("cg".into(), "consumer".into(), "consumer".into()),
            ("classic".into(), "classic".into(), String::new()),
            ("sg".into(), "share".into(), "share".into()),
        ]
    );
    // A type filter (case-insensitive) keeps the groups of that type.
    for (filter, expected) in [("SHARE", vec!["sg"]), ("streams", vec![])] {
        let listed: ListGroupsResponse = c
            .call(
                key::LIST_GROUPS,
                5,
                &ListGroupsRequest {
                    types_filter: vec![filter.into()],
                    ..ListGroupsRequest::default()
                },
            )
            .await;
        let ids: Vec<&str> = listed.groups.iter().map(|g| g.group_id.as_str()).collect();
        assert_eq!(ids, expected, "{filter}");
    }
    h.stop().await;
}

#[tokio::test]
async fn api_versions_reports_the_group_and_share_features() {
    let h = Harness::one().await;
    let mut c = h.conn(1).await;
    let versions = c.api_versions().await;
    let features: Vec<(String, i16)> = versions
        .finalized_features
        .iter()
        .map(|f| (f.name.clone(), f.max_version_level))
        .collect();
    assert_eq!(
        features,
        vec![
            ("group.version".into(), 1),
            ("share.version".into(), 1),
            ("transaction.version".into(), 2)
        ]
    );
    h.stop().await;
}

/// The acknowledgement half of the share consumer's test: records 0 and 1
/// are held by s-1 in session epoch 2.
async fn acknowledge_and_describe(c: &mut common::Conn, id: Uuid) {
    let ack = ShareAcknowledgeRequest {
        group_id: Some("sg".into()),
        member_id: Some("s-1".into()),
        share_session_epoch: 2,
        topics: vec![AcknowledgeTopic {
            topic_id: id,
            partitions: vec![AcknowledgePartition {
                partition_index: 0,
                acknowledgement_batches: vec![AckBatch {
                    first_offset: 0,
                    last_offset: 1,
                    acknowledge_types: vec![1],
                }],
            }],
        }],
    };
    let acked: ShareAcknowledgeResponse = c.call(key::SHARE_ACKNOWLEDGE, 1, &ack).await;
    assert_eq!(acked.responses[0].partitions[0].error_code, KafkaCode::NONE);
    // The same acknowledgement in the next session epoch, then in one that
    // is not the next.
    let at_epoch = |share_session_epoch| ShareAcknowledgeRequest {
        share_session_epoch,
        ..ack.clone()
    };
    let again: ShareAcknowledgeResponse = c.call(key::SHARE_ACKNOWLEDGE, 1, &at_epoch(3)).await;
    assert_eq!(
        again.responses[0].partitions[0].error_code,
        KafkaCode::INVALID_RECORD_STATE
    );
    let bad_epoch: ShareAcknowledgeResponse = c.call(key::SHARE_ACKNOWLEDGE, 1, &at_epoch(9)).await;
    assert_eq!(bad_epoch.error_code, KafkaCode::INVALID_SHARE_SESSION_EPOCH);
    let req = DescribeShareGroupOffsetsRequest {
        groups: vec![DescribeShareGroupOffsetsRequestGroup {
            group_id: "sg".into(),
            topics: None,
        }],
    };
    let offsets: DescribeShareGroupOffsetsResponse =
        c.call(key::DESCRIBE_SHARE_GROUP_OFFSETS, 0, &req).await;
    assert_eq!(offsets.groups[0].topics[0].partitions[0].start_offset, 2);
}

/// A KIP-848 group "cg", a share group "sg" and a classic group "classic"
/// that only stores offsets.
async fn one_group_of_each_type(h: &Harness, c: &mut common::Conn) {
    h.cluster.topics().create("orders", 2, 1).unwrap();
    let _: ConsumerGroupHeartbeatResponse =
        c.call(key::CONSUMER_GROUP_HEARTBEAT, 1, &join("m-a")).await;
    let hb = ShareGroupHeartbeatRequest {
        group_id: "sg".into(),
        member_id: "s-1".into(),
        subscribed_topic_names: Some(vec!["orders".into()]),
        ..ShareGroupHeartbeatRequest::default()
    };
    let _: ShareGroupHeartbeatResponse = c.call(key::SHARE_GROUP_HEARTBEAT, 1, &hb).await;
    h.cluster
        .groups()
        .alter_offsets(
            "classic",
            &std::collections::BTreeMap::from([(
                mk_adapter_kafka::mk_cluster::TopicPartition::new("orders", 0),
                1,
            )]),
        )
        .unwrap();
}

#[tokio::test]
async fn group_configs_are_described_and_altered_as_group_resources() {
    use mk_adapter_kafka::messages::describe_configs::{
        DescribeConfigsRequest, DescribeConfigsResource, DescribeConfigsResponse,
    };
    use mk_adapter_kafka::messages::incremental_alter_configs::{
        AlterConfigsResource, AlterableConfig, IncrementalAlterConfigsRequest,
        IncrementalAlterConfigsResponse,
    };
    let h = Harness::one().await;
    let mut c = h.conn(1).await;
    let alter = |name: &str, value: &str| IncrementalAlterConfigsRequest {
        resources: vec![AlterConfigsResource {
            resource_type: 32,
            resource_name: "sg".into(),
            configs: vec![AlterableConfig {
                name: name.into(),
                config_operation: 0,
                value: Some(value.into()),
            }],
        }],
        validate_only: false,
    };
    for (name, value, expected) in [
        ("share.auto.offset.reset", "earliest", KafkaCode::NONE),
        (
            "share.record.lock.duration.ms",
            "10",
            KafkaCode::INVALID_CONFIG,
        ),
    ] {
        let r: IncrementalAlterConfigsResponse = c
            .call(key::INCREMENTAL_ALTER_CONFIGS, 1, &alter(name, value))
            .await;
        assert_eq!(r.responses[0].error_code, expected, "{name}={value}");
    }
    let req = DescribeConfigsRequest {
        resources: vec![DescribeConfigsResource {
            resource_type: 32,
            resource_name: "sg".into(),
            configuration_keys: None,
        }],
        ..DescribeConfigsRequest::default()
    };
    let d: DescribeConfigsResponse = c.call(key::DESCRIBE_CONFIGS, 4, &req).await;
    let entries: Vec<(String, Option<String>, i8)> = d.results[0]
        .configs
        .iter()
        .map(|e| (e.name.clone(), e.value.clone(), e.config_source))
        .collect();
    assert!(
        entries.contains(&("share.auto.offset.reset".into(), Some("earliest".into()), 8)),
        "{entries:?}"
    );
    assert!(
        entries.contains(&(
            "share.record.lock.duration.ms".into(),
            Some("30000".into()),
            5
        )),
        "{entries:?}"
    );
    assert_eq!(entries.len(), 7);
    h.stop().await;
}

#[tokio::test]
async fn metadata_by_topic_id_with_an_empty_name_finds_the_topic() {
    use mk_adapter_kafka::messages::metadata::{
        MetadataRequest, MetadataRequestTopic, MetadataResponse,
    };
    // The Java client asks so for a topic id a KIP-848 assignment named.
    let (h, mut c) = Harness::one_with_topic("orders", 2).await;
    let req = MetadataRequest {
        topics: Some(vec![MetadataRequestTopic {
            topic_id: topic_id(&h, "orders"),
            name: Some(String::new()),
        }]),
        ..MetadataRequest::default()
    };
    let r: MetadataResponse = c.call(key::METADATA, 12, &req).await;
    assert_eq!(r.topics[0].error_code, KafkaCode::NONE);
    assert_eq!(r.topics[0].name.as_deref(), Some("orders"));
    assert_eq!(r.topics[0].partitions.len(), 2);
    h.stop().await;
}
