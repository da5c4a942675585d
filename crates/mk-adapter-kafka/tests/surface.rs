//! The client surface of issue 21 through live Kafka listeners: commit
//! metadata and leader epochs answered back by OffsetFetch, keyless records
//! refused by compacted topics with per-record errors, each request
//! encoded as a Kafka client encodes it.
#![allow(
    clippy::too_many_lines,
    reason = "a test scenario reads top to bottom as one story; split, its steps would scatter"
)]

mod common;

use common::Harness;
use mk_adapter_kafka::api::key;
use mk_adapter_kafka::errors::KafkaCode;
use mk_adapter_kafka::messages::offset_commit::{
    OffsetCommitRequest, OffsetCommitRequestPartition, OffsetCommitRequestTopic,
    OffsetCommitResponse,
};
use mk_adapter_kafka::messages::offset_fetch::{
    OffsetFetchRequest, OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics,
    OffsetFetchResponse,
};
use mk_adapter_kafka::messages::produce::{ProduceRequest, ProduceResponse};
use mk_adapter_kafka::mk_cluster::{
    Bytes, CleanupPolicy, ProducerInfo, Record, TopicConfigOverrides,
};

fn commit(group: &str, partitions: Vec<(i32, i64, i32, Option<&str>)>) -> OffsetCommitRequest {
    OffsetCommitRequest {
        group_id: group.into(),
        generation_id_or_member_epoch: -1,
        member_id: String::new(),
        group_instance_id: None,
        retention_time_ms: -1,
        topics: vec![OffsetCommitRequestTopic {
            name: "t".into(),
            partitions: partitions
                .into_iter()
                .map(|(p, o, e, m)| OffsetCommitRequestPartition {
                    partition_index: p,
                    committed_offset: o,
                    committed_leader_epoch: e,
                    committed_metadata: m.map(str::to_string),
                })
                .collect(),
        }],
    }
}

/// An OffsetFetch of group `group` as version `v` carries it (one group
/// before v8, a list of groups from v8).
fn fetch(v: i16, group: &str, partitions: Option<Vec<i32>>) -> OffsetFetchRequest {
    if v >= 8 {
        return OffsetFetchRequest {
            groups: vec![OffsetFetchRequestGroup {
                group_id: group.into(),
                topics: partitions.map(|ps| {
                    vec![OffsetFetchRequestTopics {
                        name: "t".into(),
                        partition_indexes: ps,
                    }]
                }),
                ..Default::default()
            }],
            ..Default::default()
        };
    }
    OffsetFetchRequest {
        group_id: group.into(),
        topics: partitions.map(|ps| {
            vec![OffsetFetchRequestTopic {
                name: "t".into(),
                partition_indexes: ps,
            }]
        }),
        ..Default::default()
    }
}

type Answer = (i32, i64, i32, Option<String>, KafkaCode);

/// (partition, offset, leader epoch, metadata, error) of the one group
/// fetched, whatever the version.
fn answers(r: &OffsetFetchResponse) -> Vec<Answer> {
    if let Some(g) = r.groups.first() {
        return g
            .topics
            .iter()
            .flat_map(|t| t.partitions.iter())
            .map(|p| {
                let metadata = p.metadata.clone();
                (
                    p.partition_index,
                    p.committed_offset,
                    p.committed_leader_epoch,
                    metadata,
                    p.error_code,
                )
            })
            .collect();
    }
    r.topics
        .iter()
        .flat_map(|t| t.partitions.iter())
        .map(|p| {
            let metadata = p.metadata.clone();
            (
                p.partition_index,
                p.committed_offset,
                p.committed_leader_epoch,
                metadata,
                p.error_code,
            )
        })
        .collect()
}

#[tokio::test]
async fn offset_commit_metadata_and_leader_epochs_are_answered_by_offset_fetch() {
    let (h, mut c) = Harness::one_with_topic("t", 3).await;
    let r: OffsetCommitResponse = c
        .call(
            key::OFFSET_COMMIT,
            8,
            &commit(
                "g",
                vec![
                    (0, 10, 4, Some("app state")),
                    (1, 11, -1, None),
                    (2, 12, 0, Some(&"x".repeat(4097))),
                ],
            ),
        )
        .await;
    let codes: Vec<(i32, KafkaCode)> = r.topics[0]
        .partitions
        .iter()
        .map(|p| (p.partition_index, p.error_code))
        .collect();
    assert_eq!(
        codes,
        vec![
            (0, KafkaCode::NONE),
            (1, KafkaCode::NONE),
            (2, KafkaCode::OFFSET_METADATA_TOO_LARGE)
        ]
    );
    // v8 (flexible, several groups) and v5 (the first with epochs).
    for v in [8, 5] {
        let r: OffsetFetchResponse = c
            .call(key::OFFSET_FETCH, v, &fetch(v, "g", Some(vec![0, 1, 2])))
            .await;
        assert_eq!(
            answers(&r),
            vec![
                (0, 10, 4, Some("app state".into()), KafkaCode::NONE),
                (1, 11, -1, Some(String::new()), KafkaCode::NONE),
                (2, -1, -1, Some(String::new()), KafkaCode::NONE),
            ],
            "OffsetFetch v{v}"
        );
    }
    // All partitions of the group (topics null), v7.
    let r: OffsetFetchResponse = c.call(key::OFFSET_FETCH, 7, &fetch(7, "g", None)).await;
    assert_eq!(
        answers(&r),
        vec![
            (0, 10, 4, Some("app state".into()), KafkaCode::NONE),
            (1, 11, -1, Some(String::new()), KafkaCode::NONE),
        ]
    );
    // OffsetCommit v2 has no epoch field: the stored epoch is none.
    let _: OffsetCommitResponse = c
        .call(
            key::OFFSET_COMMIT,
            2,
            &commit("g", vec![(0, 20, 9, Some("v2"))]),
        )
        .await;
    let r: OffsetFetchResponse = c
        .call(key::OFFSET_FETCH, 6, &fetch(6, "g", Some(vec![0])))
        .await;
    assert_eq!(
        answers(&r),
        vec![(0, 20, -1, Some("v2".into()), KafkaCode::NONE)]
    );
    // The answers survive a restart of the cluster.
    drop(c);
    let Harness {
        dir,
        server,
        cluster,
        ..
    } = h;
    common::within(server.shutdown()).await;
    cluster.lifecycle().close().await.unwrap();
    let h = Harness::open(dir, vec![1], Default::default(), |c| c).await;
    let mut c = h.conn(1).await;
    let r: OffsetFetchResponse = c
        .call(key::OFFSET_FETCH, 8, &fetch(8, "g", Some(vec![0, 1])))
        .await;
    assert_eq!(
        answers(&r),
        vec![
            (0, 20, -1, Some("v2".into()), KafkaCode::NONE),
            (1, 11, -1, Some(String::new()), KafkaCode::NONE),
        ]
    );
    h.stop().await;
}

fn produce(topic: &str, records: Bytes) -> ProduceRequest {
    common::produce_request(topic, 0, -1, records)
}

fn records(keys: &[Option<&'static str>]) -> Bytes {
    let records = keys
        .iter()
        .map(|k| {
            Record::new(
                k.map(|k| Bytes::from_static(k.as_bytes())),
                Some(Bytes::from_static(b"v")),
                1_700_000_000_000,
            )
        })
        .collect();
    common::batch_bytes(records, ProducerInfo::NONE)
}

#[tokio::test]
async fn keyless_records_to_a_compacted_topic_are_refused_per_record() {
    let h = Harness::one().await;
    let compact = TopicConfigOverrides {
        cleanup_policy: Some(CleanupPolicy::Compact),
        ..TopicConfigOverrides::default()
    };
    h.cluster
        .topics()
        .create_with_overrides("kv", 1, 1, &compact)
        .unwrap();
    let mut c = h.conn(1).await;
    let why = "Compacted topic cannot accept message without key in topic partition kv-0.";
    // v9 (flexible) carries the per-record errors and the message.
    let r: ProduceResponse = c
        .call(
            key::PRODUCE,
            9,
            &produce("kv", records(&[Some("a"), None, None])),
        )
        .await;
    let p = &r.responses[0].partition_responses[0];
    assert_eq!(p.error_code, KafkaCode::INVALID_RECORD);
    assert_eq!(p.base_offset, -1);
    let named: Vec<(i32, Option<&str>)> = p
        .record_errors
        .iter()
        .map(|e| (e.batch_index, e.batch_index_error_message.as_deref()))
        .collect();
    assert_eq!(named, vec![(1, Some(why)), (2, Some(why))]);
    assert!(
        p.error_message.as_deref().is_some_and(
            |m| m.starts_with("One or more records have been rejected due to 2 record errors")
        ),
        "{:?}",
        p.error_message
    );
    // v7 has neither field: the code alone.
    assert_eq!(
        c.produce_code(7, &produce("kv", records(&[None]))).await,
        KafkaCode::INVALID_RECORD
    );
    // Nothing was appended; keyed records are.
    let r: ProduceResponse = c
        .call(
            key::PRODUCE,
            9,
            &produce("kv", records(&[Some("a"), Some("b")])),
        )
        .await;
    let p = &r.responses[0].partition_responses[0];
    assert_eq!((p.error_code, p.base_offset), (KafkaCode::NONE, 0));
    assert!(p.record_errors.is_empty());
    h.stop().await;
}

mod coordinators {
    use super::*;
    use mk_adapter_kafka::messages::add_offsets_to_txn::{
        AddOffsetsToTxnRequest, AddOffsetsToTxnResponse,
    };
    use mk_adapter_kafka::messages::add_partitions_to_txn::{
        AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, AddPartitionsToTxnTopic,
    };
    use mk_adapter_kafka::messages::delete_groups::{DeleteGroupsRequest, DeleteGroupsResponse};
    use mk_adapter_kafka::messages::describe_groups::{
        DescribeGroupsRequest, DescribeGroupsResponse,
    };
    use mk_adapter_kafka::messages::end_txn::{EndTxnRequest, EndTxnResponse};
    use mk_adapter_kafka::messages::find_coordinator::{
        FindCoordinatorRequest, FindCoordinatorResponse,
    };
    use mk_adapter_kafka::messages::heartbeat::{HeartbeatRequest, HeartbeatResponse};
    use mk_adapter_kafka::messages::init_producer_id::{
        InitProducerIdRequest, InitProducerIdResponse,
    };
    use mk_adapter_kafka::messages::join_group::{
        JoinGroupRequest, JoinGroupRequestProtocol, JoinGroupResponse,
    };
    use mk_adapter_kafka::messages::leave_group::{LeaveGroupRequest, LeaveGroupResponse};
    use mk_adapter_kafka::messages::list_groups::{ListGroupsRequest, ListGroupsResponse};
    use mk_adapter_kafka::messages::offset_delete::{
        OffsetDeleteRequest, OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
        OffsetDeleteResponse,
    };
    use mk_adapter_kafka::messages::sync_group::{SyncGroupRequest, SyncGroupResponse};
    use mk_adapter_kafka::messages::txn_offset_commit::{
        TxnOffsetCommitRequest, TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
        TxnOffsetCommitResponse,
    };
    use mk_adapter_kafka::mk_cluster::CoordinatorKey;

    /// Group "a" is partition 47 of the virtual `__consumer_offsets`
    /// (replicas 3, 1, 2); transactional id "abc" partition 4 of
    /// `__transaction_state` (replicas 2, 3, 1).
    const GROUP: &str = "a";
    const TXN: &str = "abc";

    async fn find(c: &mut common::Conn, v: i16, key: &str, key_type: i8) -> Vec<(i32, KafkaCode)> {
        let req = FindCoordinatorRequest {
            key: key.into(),
            key_type,
            coordinator_keys: vec![key.into()],
        };
        let r: FindCoordinatorResponse = c.call(key::FIND_COORDINATOR, v, &req).await;
        if v >= 4 {
            r.coordinators
                .iter()
                .map(|c| (c.node_id, c.error_code))
                .collect()
        } else {
            vec![(r.node_id, r.error_code)]
        }
    }

    #[tokio::test]
    async fn every_broker_names_the_same_coordinator_and_it_moves_when_its_broker_goes() {
        let h = Harness::start(vec![1, 2, 3], Default::default()).await;
        for b in [1, 2, 3] {
            let mut c = h.conn(b).await;
            for v in [4, 3, 1] {
                assert_eq!(find(&mut c, v, GROUP, 0).await, vec![(3, KafkaCode::NONE)]);
                assert_eq!(find(&mut c, v, TXN, 1).await, vec![(2, KafkaCode::NONE)]);
            }
        }
        h.cluster.brokers().take_offline(3).unwrap();
        let mut c = h.conn(2).await;
        assert_eq!(find(&mut c, 4, GROUP, 0).await, vec![(1, KafkaCode::NONE)]);
        h.cluster.brokers().bring_online(3).unwrap();
        assert_eq!(find(&mut c, 4, GROUP, 0).await, vec![(3, KafkaCode::NONE)]);
        assert_eq!(
            h.cluster
                .brokers()
                .coordinator(CoordinatorKey::Group(GROUP))
                .unwrap(),
            3
        );
        h.stop().await;
    }

    fn join() -> JoinGroupRequest {
        JoinGroupRequest {
            group_id: GROUP.into(),
            session_timeout_ms: 10_000,
            rebalance_timeout_ms: 10_000,
            member_id: String::new(),
            protocol_type: "consumer".into(),
            protocols: vec![JoinGroupRequestProtocol {
                name: "range".into(),
                metadata: Bytes::from_static(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
            }],
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn group_requests_at_another_broker_are_not_coordinator() {
        let h = Harness::three_with_topic("t", 1).await;
        let nc = KafkaCode::NOT_COORDINATOR;
        let mut c = h.conn(1).await;
        let r: JoinGroupResponse = c.call(key::JOIN_GROUP, 5, &join()).await;
        assert_eq!(r.error_code, nc);
        let sync = SyncGroupRequest {
            group_id: GROUP.into(),
            member_id: "m".into(),
            ..Default::default()
        };
        let r: SyncGroupResponse = c.call(key::SYNC_GROUP, 3, &sync).await;
        assert_eq!(r.error_code, nc);
        let hb = HeartbeatRequest {
            group_id: GROUP.into(),
            member_id: "m".into(),
            ..Default::default()
        };
        let r: HeartbeatResponse = c.call(key::HEARTBEAT, 3, &hb).await;
        assert_eq!(r.error_code, nc);
        let leave = LeaveGroupRequest {
            group_id: GROUP.into(),
            member_id: "m".into(),
            ..Default::default()
        };
        let r: LeaveGroupResponse = c.call(key::LEAVE_GROUP, 2, &leave).await;
        assert_eq!(r.error_code, nc);
        let r: OffsetCommitResponse = c
            .call(
                key::OFFSET_COMMIT,
                8,
                &commit(GROUP, vec![(0, 1, -1, None), (7, 1, -1, None)]),
            )
            .await;
        let codes: Vec<KafkaCode> = r.topics[0]
            .partitions
            .iter()
            .map(|p| p.error_code)
            .collect();
        assert_eq!(codes, vec![nc, nc], "every partition, known or not");
        for v in [8, 5, 1] {
            let r: OffsetFetchResponse = c
                .call(key::OFFSET_FETCH, v, &fetch(v, GROUP, Some(vec![0])))
                .await;
            // v2+ answers the group's error alone; v1 has no group-level
            // error and answers it on every partition asked.
            let group_code = r.groups.first().map_or(r.error_code, |g| g.error_code);
            if v >= 2 {
                assert_eq!(group_code, nc, "OffsetFetch v{v}");
                assert_eq!(answers(&r), vec![], "v{v}");
            } else {
                assert_eq!(answers(&r), vec![(0, -1, -1, Some(String::new()), nc)]);
            }
        }
        let describe = DescribeGroupsRequest {
            groups: vec![GROUP.into(), "my-group".into()],
            ..Default::default()
        };
        // "my-group" (partition 12) is coordinated by broker 1.
        let r: DescribeGroupsResponse = c.call(key::DESCRIBE_GROUPS, 5, &describe).await;
        let codes: Vec<KafkaCode> = r.groups.iter().map(|g| g.error_code).collect();
        assert_eq!(codes, vec![nc, KafkaCode::NONE]);
        let delete = DeleteGroupsRequest {
            groups_names: vec![GROUP.into(), "my-group".into()],
        };
        let r: DeleteGroupsResponse = c.call(key::DELETE_GROUPS, 2, &delete).await;
        let codes: Vec<KafkaCode> = r.results.iter().map(|g| g.error_code).collect();
        assert_eq!(codes, vec![nc, KafkaCode::GROUP_ID_NOT_FOUND]);
        let offset_delete = OffsetDeleteRequest {
            group_id: GROUP.into(),
            topics: vec![OffsetDeleteRequestTopic {
                name: "t".into(),
                partitions: vec![OffsetDeleteRequestPartition { partition_index: 0 }],
            }],
        };
        let r: OffsetDeleteResponse = c.call(key::OFFSET_DELETE, 0, &offset_delete).await;
        assert_eq!(r.error_code, nc);
        // At the coordinator the same requests are served.
        let mut c3 = h.conn(3).await;
        let r: OffsetCommitResponse = c3
            .call(
                key::OFFSET_COMMIT,
                8,
                &commit(GROUP, vec![(0, 1, -1, None)]),
            )
            .await;
        assert_eq!(r.topics[0].partitions[0].error_code, KafkaCode::NONE);
        let r: DescribeGroupsResponse = c3.call(key::DESCRIBE_GROUPS, 5, &describe).await;
        let codes: Vec<KafkaCode> = r.groups.iter().map(|g| g.error_code).collect();
        assert_eq!(codes, vec![KafkaCode::NONE, nc]);
        // ListGroups: each broker lists the groups it coordinates.
        for (b, listed) in [(1, vec![]), (2, vec![]), (3, vec![GROUP.to_string()])] {
            let mut c = h.conn(b).await;
            let r: ListGroupsResponse = c
                .call(key::LIST_GROUPS, 4, &ListGroupsRequest::default())
                .await;
            let ids: Vec<String> = r.groups.into_iter().map(|g| g.group_id).collect();
            assert_eq!(ids, listed, "broker {b}");
        }
        h.stop().await;
    }

    #[tokio::test]
    async fn transactional_requests_at_another_broker_are_not_coordinator() {
        let h = Harness::three_with_topic("t", 1).await;
        let nc = KafkaCode::NOT_COORDINATOR;
        let mut c = h.conn(1).await;
        let init = InitProducerIdRequest {
            transactional_id: Some(TXN.into()),
            transaction_timeout_ms: 60_000,
            producer_id: -1,
            producer_epoch: -1,
        };
        let r: InitProducerIdResponse = c.call(key::INIT_PRODUCER_ID, 4, &init).await;
        assert_eq!((r.error_code, r.producer_id), (nc, -1));
        // An idempotent producer's InitProducerId goes to any broker.
        let idempotent = InitProducerIdRequest {
            transactional_id: None,
            ..init.clone()
        };
        let r: InitProducerIdResponse = c.call(key::INIT_PRODUCER_ID, 4, &idempotent).await;
        assert_eq!(r.error_code, KafkaCode::NONE);
        let add = AddPartitionsToTxnRequest {
            v3_and_below_transactional_id: TXN.into(),
            v3_and_below_producer_id: 1,
            v3_and_below_producer_epoch: 0,
            v3_and_below_topics: vec![AddPartitionsToTxnTopic {
                name: "t".into(),
                partitions: vec![0],
            }],
            ..Default::default()
        };
        let r: AddPartitionsToTxnResponse = c.call(key::ADD_PARTITIONS_TO_TXN, 3, &add).await;
        assert_eq!(
            r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code,
            nc
        );
        let offsets = AddOffsetsToTxnRequest {
            transactional_id: TXN.into(),
            producer_id: 1,
            producer_epoch: 0,
            group_id: GROUP.into(),
        };
        let r: AddOffsetsToTxnResponse = c.call(key::ADD_OFFSETS_TO_TXN, 3, &offsets).await;
        assert_eq!(r.error_code, nc);
        let end = EndTxnRequest {
            transactional_id: TXN.into(),
            producer_id: 1,
            producer_epoch: 0,
            committed: true,
        };
        let r: EndTxnResponse = c.call(key::END_TXN, 3, &end).await;
        assert_eq!(r.error_code, nc);
        // TxnOffsetCommit goes to the group's coordinator (broker 3), not
        // the transaction's (broker 2).
        let txn_commit = TxnOffsetCommitRequest {
            transactional_id: TXN.into(),
            group_id: GROUP.into(),
            producer_id: 1,
            producer_epoch: 0,
            generation_id: -1,
            topics: vec![TxnOffsetCommitRequestTopic {
                name: "t".into(),
                partitions: vec![TxnOffsetCommitRequestPartition {
                    partition_index: 0,
                    committed_offset: 1,
                    committed_leader_epoch: -1,
                    committed_metadata: None,
                }],
            }],
            ..Default::default()
        };
        let mut c2 = h.conn(2).await;
        let r: TxnOffsetCommitResponse = c2.call(key::TXN_OFFSET_COMMIT, 3, &txn_commit).await;
        assert_eq!(r.topics[0].partitions[0].error_code, nc);
        // The transaction's coordinator serves it.
        let r: InitProducerIdResponse = c2.call(key::INIT_PRODUCER_ID, 4, &init).await;
        assert_eq!(r.error_code, KafkaCode::NONE);
        h.stop().await;
    }

    /// KIP-848 and KIP-932 group requests go to the group's coordinator too:
    /// elsewhere they are NOT_COORDINATOR with the core's message, and the
    /// coordinator serves them.
    #[tokio::test]
    async fn consumer_and_share_group_requests_at_another_broker_are_not_coordinator() {
        use mk_adapter_kafka::messages::alter_share_group_offsets::{
            AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse,
        };
        use mk_adapter_kafka::messages::consumer_group_describe::{
            ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse,
        };
        use mk_adapter_kafka::messages::consumer_group_heartbeat::{
            ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse,
        };
        use mk_adapter_kafka::messages::delete_share_group_offsets::{
            DeleteShareGroupOffsetsRequest, DeleteShareGroupOffsetsResponse,
        };
        use mk_adapter_kafka::messages::describe_share_group_offsets::{
            DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsRequestGroup,
            DescribeShareGroupOffsetsResponse,
        };
        use mk_adapter_kafka::messages::share_group_describe::{
            ShareGroupDescribeRequest, ShareGroupDescribeResponse,
        };
        use mk_adapter_kafka::messages::share_group_heartbeat::{
            ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse,
        };
        let h = Harness::three_with_topic("t", 1).await;
        let nc = KafkaCode::NOT_COORDINATOR;
        let message =
            "not the coordinator: broker 1 does not coordinate group \"a\"; broker 3 does";
        let consumer = ConsumerGroupHeartbeatRequest {
            group_id: GROUP.into(),
            member_id: "m".into(),
            member_epoch: 0,
            rebalance_timeout_ms: 30_000,
            subscribed_topic_names: Some(vec!["t".into()]),
            topic_partitions: Some(vec![]),
            ..Default::default()
        };
        let share = ShareGroupHeartbeatRequest {
            group_id: GROUP.into(),
            member_id: "s".into(),
            member_epoch: 0,
            subscribed_topic_names: Some(vec!["t".into()]),
            ..Default::default()
        };
        let describe_consumer = ConsumerGroupDescribeRequest {
            group_ids: vec![GROUP.into()],
            include_authorized_operations: false,
        };
        let describe_share = ShareGroupDescribeRequest {
            group_ids: vec![GROUP.into()],
            include_authorized_operations: false,
        };
        let share_offsets = DescribeShareGroupOffsetsRequest {
            groups: vec![DescribeShareGroupOffsetsRequestGroup {
                group_id: GROUP.into(),
                topics: None,
            }],
        };
        let alter = AlterShareGroupOffsetsRequest {
            group_id: GROUP.into(),
            topics: vec![],
        };
        let delete = DeleteShareGroupOffsetsRequest {
            group_id: GROUP.into(),
            topics: vec![],
        };
        let mut c = h.conn(1).await;
        let r: ConsumerGroupHeartbeatResponse =
            c.call(key::CONSUMER_GROUP_HEARTBEAT, 1, &consumer).await;
        assert_eq!(
            (r.error_code, r.error_message.as_deref()),
            (nc, Some(message))
        );
        let r: ConsumerGroupDescribeResponse = c
            .call(key::CONSUMER_GROUP_DESCRIBE, 1, &describe_consumer)
            .await;
        assert_eq!(r.groups[0].error_code, nc);
        let r: ShareGroupHeartbeatResponse = c.call(key::SHARE_GROUP_HEARTBEAT, 1, &share).await;
        assert_eq!(
            (r.error_code, r.error_message.as_deref()),
            (nc, Some(message))
        );
        let r: ShareGroupDescribeResponse =
            c.call(key::SHARE_GROUP_DESCRIBE, 1, &describe_share).await;
        assert_eq!(r.groups[0].error_code, nc);
        let r: DescribeShareGroupOffsetsResponse = c
            .call(key::DESCRIBE_SHARE_GROUP_OFFSETS, 0, &share_offsets)
            .await;
        assert_eq!(r.groups[0].error_code, nc);
        let r: AlterShareGroupOffsetsResponse =
            c.call(key::ALTER_SHARE_GROUP_OFFSETS, 0, &alter).await;
        assert_eq!(r.error_code, nc);
        let r: DeleteShareGroupOffsetsResponse =
            c.call(key::DELETE_SHARE_GROUP_OFFSETS, 0, &delete).await;
        assert_eq!(r.error_code, nc);
        // The coordinator serves them: the consumer member joins, and the
        // group is then described there.
        let mut c3 = h.conn(3).await;
        let r: ConsumerGroupHeartbeatResponse =
            c3.call(key::CONSUMER_GROUP_HEARTBEAT, 1, &consumer).await;
        assert_eq!((r.error_code, r.member_epoch), (KafkaCode::NONE, 1));
        let r: ConsumerGroupDescribeResponse = c3
            .call(key::CONSUMER_GROUP_DESCRIBE, 1, &describe_consumer)
            .await;
        assert_eq!(
            (r.groups[0].error_code, r.groups[0].members.len()),
            (KafkaCode::NONE, 1)
        );
        let shared = ShareGroupHeartbeatRequest {
            group_id: "my-share".into(),
            ..share.clone()
        };
        let at = h
            .cluster
            .brokers()
            .coordinator(CoordinatorKey::Group("my-share"))
            .unwrap();
        let mut ca = h.conn(at).await;
        let r: ShareGroupHeartbeatResponse = ca.call(key::SHARE_GROUP_HEARTBEAT, 1, &shared).await;
        assert_eq!((r.error_code, r.member_epoch), (KafkaCode::NONE, 1));
        h.stop().await;
    }
}

mod log_admin {
    use super::*;
    use common::value_records;
    use mk_adapter_kafka::messages::delete_records::{
        DeleteRecordsPartition, DeleteRecordsRequest, DeleteRecordsResponse, DeleteRecordsTopic,
    };
    use mk_adapter_kafka::mk_cluster::{AckMode, RecordBatch, TopicPartition};

    /// Three brokers, topic "t" with two partitions on all three (leaders 1
    /// and 2), five records in partition 0 and two in partition 1, all
    /// replicated (HW = LEO).
    pub(super) async fn three_brokers_with_data() -> Harness {
        let h = Harness::three_with_topic("t", 2).await;
        for (p, batches) in [
            (0, vec![vec!["a", "b", "c"], vec!["d", "e"]]),
            (1, vec![vec!["x", "y"]]),
        ] {
            for values in batches {
                let batch = RecordBatch::new(value_records(&values)).unwrap();
                let tp = TopicPartition::new("t", p);
                h.cluster
                    .data()
                    .append_batch(&tp, batch, AckMode::One)
                    .await
                    .unwrap();
            }
        }
        h.cluster.steps().replicate_all_once().unwrap();
        h.cluster.steps().replicate_all_once().unwrap();
        h
    }

    fn delete(topic: &str, partitions: &[(i32, i64)]) -> DeleteRecordsRequest {
        DeleteRecordsRequest {
            topics: vec![DeleteRecordsTopic {
                name: topic.into(),
                partitions: partitions
                    .iter()
                    .map(|&(partition_index, offset)| DeleteRecordsPartition {
                        partition_index,
                        offset,
                    })
                    .collect(),
            }],
            timeout_ms: 30_000,
        }
    }

    fn answers(r: &DeleteRecordsResponse) -> Vec<(i32, i64, KafkaCode)> {
        r.topics
            .iter()
            .flat_map(|t| &t.partitions)
            .map(|p| (p.partition_index, p.low_watermark, p.error_code))
            .collect()
    }

    #[tokio::test]
    async fn delete_records_moves_the_low_watermark_at_the_leader_only() {
        let h = three_brokers_with_data().await;
        let mut c1 = h.conn(1).await;
        for v in [0, 2] {
            let r: DeleteRecordsResponse = c1
                .call(
                    key::DELETE_RECORDS,
                    v,
                    &delete("t", &[(0, 2 + i64::from(v)), (1, 1), (7, 0), (-1, 0)]),
                )
                .await;
            assert_eq!(
                answers(&r),
                vec![
                    (0, 2 + i64::from(v), KafkaCode::NONE),
                    (1, -1, KafkaCode::NOT_LEADER_OR_FOLLOWER),
                    (7, -1, KafkaCode::UNKNOWN_TOPIC_OR_PARTITION),
                    (-1, -1, KafkaCode::UNKNOWN_TOPIC_OR_PARTITION),
                ],
                "v{v}"
            );
        }
        let p0 = TopicPartition::new("t", 0);
        assert_eq!(h.cluster.data().log_start_offset(&p0).unwrap(), 4);
        // Beyond the high watermark, backwards, and -1 (the high watermark).
        let r: DeleteRecordsResponse = c1
            .call(key::DELETE_RECORDS, 2, &delete("t", &[(0, 6)]))
            .await;
        assert_eq!(answers(&r), vec![(0, -1, KafkaCode::OFFSET_OUT_OF_RANGE)]);
        let r: DeleteRecordsResponse = c1
            .call(key::DELETE_RECORDS, 2, &delete("t", &[(0, 1)]))
            .await;
        assert_eq!(answers(&r), vec![(0, 4, KafkaCode::NONE)]);
        let r: DeleteRecordsResponse = c1
            .call(key::DELETE_RECORDS, 2, &delete("t", &[(0, -1)]))
            .await;
        assert_eq!(answers(&r), vec![(0, 5, KafkaCode::NONE)]);
        // Partition 1 at its leader; the missing topic is answered too.
        let mut c2 = h.conn(2).await;
        let r: DeleteRecordsResponse = c2
            .call(key::DELETE_RECORDS, 1, &delete("t", &[(1, 1)]))
            .await;
        assert_eq!(answers(&r), vec![(1, 1, KafkaCode::NONE)]);
        let r: DeleteRecordsResponse = c2
            .call(key::DELETE_RECORDS, 1, &delete("nope", &[(0, 0)]))
            .await;
        assert_eq!(
            answers(&r),
            vec![(0, -1, KafkaCode::UNKNOWN_TOPIC_OR_PARTITION)]
        );
        let p1 = TopicPartition::new("t", 1);
        assert_eq!(h.cluster.data().log_start_offset(&p1).unwrap(), 1);
        h.stop().await;
    }
}

mod log_dirs {
    use super::log_admin::three_brokers_with_data;
    use super::*;
    use mk_adapter_kafka::messages::describe_log_dirs::{
        DescribableLogDirTopic, DescribeLogDirsRequest, DescribeLogDirsResponse,
    };

    fn sizes(r: &DescribeLogDirsResponse) -> Vec<(String, i32, bool, i64)> {
        r.results
            .iter()
            .flat_map(|d| &d.topics)
            .flat_map(|t| {
                t.partitions.iter().map(|p| {
                    (
                        t.name.clone(),
                        p.partition_index,
                        p.partition_size > 0,
                        p.offset_lag,
                    )
                })
            })
            .collect()
    }

    #[tokio::test]
    async fn each_broker_describes_its_own_log_dir() {
        let h = three_brokers_with_data().await;
        for b in [1, 2, 3] {
            let mut c = h.conn(b).await;
            for v in [1, 4] {
                let r: DescribeLogDirsResponse = c
                    .call(
                        key::DESCRIBE_LOG_DIRS,
                        v,
                        &DescribeLogDirsRequest { topics: None },
                    )
                    .await;
                assert_eq!(r.error_code, KafkaCode::NONE);
                assert_eq!(r.results.len(), 1);
                let d = &r.results[0];
                assert_eq!(d.error_code, KafkaCode::NONE);
                assert_eq!(
                    d.log_dir,
                    h.dir
                        .path()
                        .join(format!("broker-{b}"))
                        .display()
                        .to_string()
                );
                assert_eq!(
                    sizes(&r),
                    vec![("t".to_string(), 0, true, 0), ("t".to_string(), 1, true, 0)],
                    "broker {b} v{v}"
                );
                if v == 4 {
                    assert!(d.total_bytes > 0 && d.usable_bytes >= 0, "{d:?}");
                }
            }
        }
        // Only the partitions asked for; a missing one is left out.
        let mut c = h.conn(2).await;
        let only = DescribeLogDirsRequest {
            topics: Some(vec![DescribableLogDirTopic {
                topic: "t".into(),
                partitions: vec![1, 9],
            }]),
        };
        let r: DescribeLogDirsResponse = c.call(key::DESCRIBE_LOG_DIRS, 3, &only).await;
        assert_eq!(sizes(&r), vec![("t".to_string(), 1, true, 0)]);
        h.stop().await;
    }
}

mod producers {
    use super::log_admin::three_brokers_with_data;
    use super::*;
    use mk_adapter_kafka::messages::describe_producers::{
        DescribeProducersRequest, DescribeProducersResponse, TopicRequest,
    };
    use mk_adapter_kafka::mk_cluster::{AckMode, RecordBatch, TopicPartition};

    #[tokio::test]
    async fn describe_producers_answers_the_leaders_producer_state() {
        let h = three_brokers_with_data().await;
        let p0 = TopicPartition::new("t", 0);
        let idem = RecordBatch::new(common::value_records(&["i", "j"]))
            .unwrap()
            .with_producer(ProducerInfo {
                producer_id: 42,
                producer_epoch: 3,
                base_sequence: 0,
            });
        h.cluster
            .data()
            .append_batch(&p0, idem, AckMode::One)
            .await
            .unwrap();
        let ask = DescribeProducersRequest {
            topics: vec![TopicRequest {
                name: "t".into(),
                partition_indexes: vec![0, 1, 5],
            }],
        };
        let mut c = h.conn(1).await;
        let r: DescribeProducersResponse = c.call(key::DESCRIBE_PRODUCERS, 0, &ask).await;
        let parts = &r.topics[0].partitions;
        let codes: Vec<(i32, KafkaCode)> = parts
            .iter()
            .map(|p| (p.partition_index, p.error_code))
            .collect();
        assert_eq!(
            codes,
            vec![
                (0, KafkaCode::NONE),
                (1, KafkaCode::NOT_LEADER_OR_FOLLOWER),
                (5, KafkaCode::UNKNOWN_TOPIC_OR_PARTITION),
            ]
        );
        let p = &parts[0].active_producers;
        assert_eq!(p.len(), 1, "{p:?}");
        assert_eq!(
            (
                p[0].producer_id,
                p[0].producer_epoch,
                p[0].last_sequence,
                p[0].last_timestamp,
                p[0].current_txn_start_offset
            ),
            (42, 3, 1, 1_700_000_000_000, -1)
        );
        assert!(parts[1].error_message.is_some());
        // Partition 1 at its leader: no producer wrote with an id there.
        let mut c2 = h.conn(2).await;
        let r: DescribeProducersResponse = c2.call(key::DESCRIBE_PRODUCERS, 0, &ask).await;
        let p1 = &r.topics[0].partitions[1];
        assert_eq!(p1.error_code, KafkaCode::NONE);
        assert!(p1.active_producers.is_empty());
        h.stop().await;
    }
}

mod txn_admin {
    use super::*;
    use mk_adapter_kafka::messages::describe_transactions::{
        DescribeTransactionsRequest, DescribeTransactionsResponse,
    };
    use mk_adapter_kafka::messages::list_transactions::{
        ListTransactionsRequest, ListTransactionsResponse,
    };
    use mk_adapter_kafka::mk_cluster::{CoordinatorKey, TopicPartition};

    fn list(states: &[&str], pattern: Option<&str>) -> ListTransactionsRequest {
        ListTransactionsRequest {
            state_filters: states.iter().map(|s| s.to_string()).collect(),
            producer_id_filters: Vec::new(),
            duration_filter: -1,
            transactional_id_pattern: pattern.map(str::to_string),
        }
    }

    fn ids(r: &ListTransactionsResponse) -> Vec<(&str, &str)> {
        r.transaction_states
            .iter()
            .map(|t| (t.transactional_id.as_str(), t.transaction_state.as_str()))
            .collect()
    }

    /// "abc" is coordinated by broker 2 and "a" by broker 3 (see
    /// `coordinators`); "abc" has an open transaction on t-0.
    #[tokio::test]
    async fn list_and_describe_transactions_at_each_coordinator() {
        let h = Harness::three_with_topic("t", 1).await;
        let txns = h.cluster.transactions();
        let abc = txns
            .init_transactional_producer("abc", 60_000, None)
            .await
            .unwrap();
        txns.init_transactional_producer("a", 60_000, None)
            .await
            .unwrap();
        let t0 = TopicPartition::new("t", 0);
        txns.add_partitions("abc", abc.producer_id, abc.epoch, &[t0])
            .await
            .unwrap();
        let mut c2 = h.conn(2).await;
        let r: ListTransactionsResponse =
            c2.call(key::LIST_TRANSACTIONS, 0, &list(&[], None)).await;
        assert_eq!(
            (r.error_code, ids(&r)),
            (KafkaCode::NONE, vec![("abc", "Ongoing")])
        );
        let mut c3 = h.conn(3).await;
        let r: ListTransactionsResponse =
            c3.call(key::LIST_TRANSACTIONS, 1, &list(&[], None)).await;
        assert_eq!(ids(&r), vec![("a", "Empty")]);
        let mut c1 = h.conn(1).await;
        let r: ListTransactionsResponse =
            c1.call(key::LIST_TRANSACTIONS, 2, &list(&[], None)).await;
        assert!(r.transaction_states.is_empty());
        let r: ListTransactionsResponse = c2
            .call(key::LIST_TRANSACTIONS, 1, &list(&["Empty", "Nope"], None))
            .await;
        assert_eq!(
            (ids(&r), r.unknown_state_filters.clone()),
            (vec![], vec!["Nope".to_string()])
        );
        let r: ListTransactionsResponse = c2
            .call(key::LIST_TRANSACTIONS, 2, &list(&[], Some("ab.")))
            .await;
        assert_eq!(ids(&r), vec![("abc", "Ongoing")]);
        let r: ListTransactionsResponse = c2
            .call(key::LIST_TRANSACTIONS, 2, &list(&[], Some("(")))
            .await;
        assert_eq!(r.error_code, KafkaCode::INVALID_REGULAR_EXPRESSION);
        // Describe: found at its coordinator, NOT_COORDINATOR elsewhere,
        // TRANSACTIONAL_ID_NOT_FOUND for an id never initialized.
        let missing = (0..)
            .map(|i| format!("missing-{i}"))
            .find(|id| {
                h.cluster
                    .brokers()
                    .coordinator(CoordinatorKey::Transaction(id))
                    .unwrap()
                    == 2
            })
            .unwrap();
        let ask = DescribeTransactionsRequest {
            transactional_ids: vec!["abc".into(), "a".into(), missing.clone()],
        };
        let r: DescribeTransactionsResponse = c2.call(key::DESCRIBE_TRANSACTIONS, 0, &ask).await;
        let s = &r.transaction_states;
        assert_eq!(
            (
                s[0].error_code,
                s[0].transaction_state.as_str(),
                s[0].producer_id
            ),
            (KafkaCode::NONE, "Ongoing", abc.producer_id)
        );
        assert_eq!(
            (s[0].transaction_timeout_ms, s[0].producer_epoch),
            (60_000, 0)
        );
        assert_eq!(s[0].topics.len(), 1);
        assert_eq!(
            (
                s[0].topics[0].topic.as_str(),
                s[0].topics[0].partitions.clone()
            ),
            ("t", vec![0])
        );
        assert!(s[0].transaction_start_time_ms > 0);
        assert_eq!(s[1].error_code, KafkaCode::NOT_COORDINATOR);
        assert_eq!(
            (s[2].transactional_id.as_str(), s[2].error_code),
            (missing.as_str(), KafkaCode::TRANSACTIONAL_ID_NOT_FOUND)
        );
        h.stop().await;
    }
}

mod telemetry {
    use super::*;
    use mk_adapter_kafka::codec::Uuid;
    use mk_adapter_kafka::messages::get_telemetry_subscriptions::{
        GetTelemetrySubscriptionsRequest, GetTelemetrySubscriptionsResponse,
    };
    use mk_adapter_kafka::messages::push_telemetry::{PushTelemetryRequest, PushTelemetryResponse};

    fn push(
        id: Uuid,
        subscription_id: i32,
        compression_type: i8,
        len: usize,
    ) -> PushTelemetryRequest {
        PushTelemetryRequest {
            client_instance_id: id,
            subscription_id,
            terminating: false,
            compression_type,
            metrics: Bytes::from(vec![1u8; len]),
        }
    }

    #[tokio::test]
    async fn clients_get_an_instance_id_and_no_metrics_to_push() {
        let h = Harness::one().await;
        let mut c = h.conn(1).await;
        let fresh: GetTelemetrySubscriptionsResponse = c
            .call(
                key::GET_TELEMETRY_SUBSCRIPTIONS,
                0,
                &GetTelemetrySubscriptionsRequest {
                    client_instance_id: Uuid::ZERO,
                },
            )
            .await;
        assert_eq!(fresh.error_code, KafkaCode::NONE);
        assert_ne!(fresh.client_instance_id, Uuid::ZERO);
        assert!(fresh.requested_metrics.is_empty());
        assert!(fresh.push_interval_ms > 0 && fresh.telemetry_max_bytes > 0);
        let id = fresh.client_instance_id;
        let again: GetTelemetrySubscriptionsResponse = c
            .call(
                key::GET_TELEMETRY_SUBSCRIPTIONS,
                0,
                &GetTelemetrySubscriptionsRequest {
                    client_instance_id: id,
                },
            )
            .await;
        assert_eq!(again.client_instance_id, id);
        let sub = again.subscription_id;
        for (req, code) in [
            (push(id, sub, 0, 100), KafkaCode::NONE),
            (push(Uuid::ZERO, sub, 0, 100), KafkaCode::INVALID_REQUEST),
            (push(id, sub.wrapping_add(1), 0, 100), KafkaCode(117)),
            (
                push(id, sub, 3, 100),
                KafkaCode::UNSUPPORTED_COMPRESSION_TYPE,
            ),
            (push(id, sub, 0, 1024 * 1024 + 1), KafkaCode(118)),
        ] {
            let r: PushTelemetryResponse = c.call(key::PUSH_TELEMETRY, 0, &req).await;
            assert_eq!(r.error_code, code, "{:?}", req.subscription_id);
        }
        h.stop().await;
    }
}

mod topic_pages {
    use super::*;
    use mk_adapter_kafka::codec::Uuid;
    use mk_adapter_kafka::messages::describe_topic_partitions::{
        Cursor, DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse, TopicRequest,
    };

    fn ask(
        names: &[&str],
        limit: i32,
        cursor: Option<(&str, i32)>,
    ) -> DescribeTopicPartitionsRequest {
        DescribeTopicPartitionsRequest {
            topics: names
                .iter()
                .map(|n| TopicRequest {
                    name: n.to_string(),
                })
                .collect(),
            response_partition_limit: limit,
            cursor: cursor.map(|(t, p)| Cursor {
                topic_name: t.into(),
                partition_index: p,
            }),
        }
    }

    /// (topic, error, partitions) and the next cursor.
    type Shape = (Vec<(String, KafkaCode, Vec<i32>)>, Option<(String, i32)>);

    fn shape(r: &DescribeTopicPartitionsResponse) -> Shape {
        (
            r.topics
                .iter()
                .map(|t| {
                    (
                        t.name.clone().unwrap_or_default(),
                        t.error_code,
                        t.partitions.iter().map(|p| p.partition_index).collect(),
                    )
                })
                .collect(),
            r.next_cursor
                .as_ref()
                .map(|c| (c.topic_name.clone(), c.partition_index)),
        )
    }

    fn row(t: &str, code: KafkaCode, ps: &[i32]) -> (String, KafkaCode, Vec<i32>) {
        (t.to_string(), code, ps.to_vec())
    }

    #[tokio::test]
    async fn topics_come_a_page_at_a_time_with_leaders_and_ids() {
        let h = Harness::start(vec![1, 2, 3], Default::default()).await;
        h.cluster.topics().create("a", 3, 2).unwrap();
        h.cluster.topics().create("b", 2, 3).unwrap();
        let mut c = h.conn(2).await;
        let mut call = async |req| -> DescribeTopicPartitionsResponse {
            c.call(key::DESCRIBE_TOPIC_PARTITIONS, 0, &req).await
        };
        let none = KafkaCode::NONE;
        let first = call(ask(&[], 2, None)).await;
        assert_eq!(
            shape(&first),
            (vec![row("a", none, &[0, 1])], Some(("a".into(), 2)))
        );
        let t = &first.topics[0];
        assert_eq!(t.topic_id, Uuid(h.cluster.topics().id("a").unwrap().0));
        let p1 = &t.partitions[1];
        assert_eq!((p1.leader_id, p1.leader_epoch), (2, 0));
        assert_eq!(
            (p1.replica_nodes.clone(), p1.isr_nodes.clone()),
            (vec![2, 3], vec![2, 3])
        );
        assert_eq!(p1.eligible_leader_replicas, Some(vec![]));
        let next = call(ask(&[], 2, Some(("a", 2)))).await;
        assert_eq!(
            shape(&next),
            (
                vec![row("a", none, &[2]), row("b", none, &[0])],
                Some(("b".into(), 1))
            )
        );
        let last = call(ask(&[], 2, Some(("b", 1)))).await;
        assert_eq!(shape(&last), (vec![row("b", none, &[1])], None));
        // By name: an unknown and an invalid name answered with their codes.
        let named = call(ask(&["nope", "b", "bad/name"], 2000, None)).await;
        assert_eq!(
            shape(&named),
            (
                vec![
                    row("b", none, &[0, 1]),
                    row("bad/name", KafkaCode::INVALID_TOPIC_EXCEPTION, &[]),
                    row("nope", KafkaCode::UNKNOWN_TOPIC_OR_PARTITION, &[]),
                ],
                None
            )
        );
        // A cursor outside the names, or with a negative partition: every
        // topic asked for answers INVALID_REQUEST.
        for cursor in [("a", 0), ("b", -1)] {
            let refused = call(ask(&["b"], 10, Some(cursor))).await;
            assert_eq!(
                shape(&refused),
                (vec![row("b", KafkaCode::INVALID_REQUEST, &[])], None),
                "{cursor:?}"
            );
        }
        // A broker offline: its partitions have no leader, it is offline.
        h.cluster.brokers().take_offline(1).unwrap();
        let r = call(ask(&["b"], 10, None)).await;
        let p0 = &r.topics[0].partitions[0];
        assert_eq!(p0.offline_replicas, vec![1]);
        assert_ne!(p0.leader_id, 1);
        h.stop().await;
    }
}

mod quotas {
    use super::*;
    use mk_adapter_kafka::messages::alter_client_quotas::{
        AlterClientQuotasRequest, AlterClientQuotasResponse, EntityData, EntryData, OpData,
    };
    use mk_adapter_kafka::messages::describe_client_quotas::{
        ComponentData, DescribeClientQuotasRequest, DescribeClientQuotasResponse,
    };

    fn entity(parts: &[(&str, Option<&str>)]) -> Vec<EntityData> {
        parts
            .iter()
            .map(|(t, n)| EntityData {
                entity_type: t.to_string(),
                entity_name: n.map(str::to_string),
            })
            .collect()
    }

    fn op(key: &str, value: f64, remove: bool) -> OpData {
        OpData {
            key: key.into(),
            value,
            remove,
        }
    }

    fn component(t: &str, match_type: i8, name: Option<&str>) -> ComponentData {
        ComponentData {
            entity_type: t.into(),
            match_type,
            r#match: name.map(str::to_string),
        }
    }

    /// Every described entity as "type=name,..." with its values.
    fn listed(r: &DescribeClientQuotasResponse) -> Vec<(String, Vec<(String, f64)>)> {
        let mut out: Vec<_> = r
            .entries
            .iter()
            .flatten()
            .map(|e| {
                let name = e
                    .entity
                    .iter()
                    .map(|d| {
                        format!(
                            "{}={}",
                            d.entity_type,
                            d.entity_name.as_deref().unwrap_or("<default>")
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(",");
                (
                    name,
                    e.values.iter().map(|v| (v.key.clone(), v.value)).collect(),
                )
            })
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    #[tokio::test]
    async fn quotas_are_altered_per_entry_and_described_by_filter() {
        let h = Harness::one().await;
        let mut c = h.conn(1).await;
        let alter = AlterClientQuotasRequest {
            entries: vec![
                EntryData {
                    entity: entity(&[("user", Some("alice"))]),
                    ops: vec![op("producer_byte_rate", 1024.0, false)],
                },
                EntryData {
                    entity: entity(&[("user", None), ("client-id", Some("app"))]),
                    ops: vec![op("request_percentage", 50.5, false)],
                },
                EntryData {
                    entity: entity(&[("user", Some("bob"))]),
                    ops: vec![op("producer_byte_rate", 1.5, false)],
                },
                EntryData {
                    entity: entity(&[("ip", Some("nope"))]),
                    ops: vec![op("connection_creation_rate", 3.0, false)],
                },
            ],
            validate_only: false,
        };
        for v in [0, 1] {
            let r: AlterClientQuotasResponse = c.call(key::ALTER_CLIENT_QUOTAS, v, &alter).await;
            let codes: Vec<KafkaCode> = r.entries.iter().map(|e| e.error_code).collect();
            assert_eq!(
                codes,
                vec![
                    KafkaCode::NONE,
                    KafkaCode::NONE,
                    KafkaCode::INVALID_REQUEST,
                    KafkaCode::INVALID_REQUEST
                ],
                "v{v}"
            );
            assert_eq!(r.entries[1].entity, alter.entries[1].entity);
            assert!(r.entries[2].error_message.is_some());
        }
        let describe = |components, strict| DescribeClientQuotasRequest { components, strict };
        let all: DescribeClientQuotasResponse = c
            .call(key::DESCRIBE_CLIENT_QUOTAS, 1, &describe(vec![], false))
            .await;
        assert_eq!(all.error_code, KafkaCode::NONE);
        assert_eq!(
            listed(&all),
            vec![
                (
                    "client-id=app,user=<default>".to_string(),
                    vec![("request_percentage".to_string(), 50.5)]
                ),
                (
                    "user=alice".to_string(),
                    vec![("producer_byte_rate".to_string(), 1024.0)]
                ),
            ]
        );
        let default_users: DescribeClientQuotasResponse = c
            .call(
                key::DESCRIBE_CLIENT_QUOTAS,
                0,
                &describe(vec![component("user", 1, None)], false),
            )
            .await;
        assert_eq!(listed(&default_users).len(), 1);
        assert_eq!(listed(&default_users)[0].0, "client-id=app,user=<default>");
        let strict: DescribeClientQuotasResponse = c
            .call(
                key::DESCRIBE_CLIENT_QUOTAS,
                1,
                &describe(vec![component("user", 2, None)], true),
            )
            .await;
        assert_eq!(listed(&strict).len(), 1);
        assert_eq!(listed(&strict)[0].0, "user=alice");
        for (components, code) in [
            (vec![component("user", 0, None)], KafkaCode::INVALID_REQUEST),
            (
                vec![component("user", 1, Some("x"))],
                KafkaCode::INVALID_REQUEST,
            ),
            (
                vec![component("user", 7, None)],
                KafkaCode::UNSUPPORTED_VERSION,
            ),
            (
                vec![component("ip", 2, None), component("user", 2, None)],
                KafkaCode::INVALID_REQUEST,
            ),
        ] {
            let r: DescribeClientQuotasResponse = c
                .call(key::DESCRIBE_CLIENT_QUOTAS, 1, &describe(components, false))
                .await;
            assert_eq!((r.error_code, r.entries.is_none()), (code, true));
        }
        // Removing the last key removes the entity.
        let remove = AlterClientQuotasRequest {
            entries: vec![EntryData {
                entity: entity(&[("user", Some("alice"))]),
                ops: vec![op("producer_byte_rate", 0.0, true)],
            }],
            validate_only: false,
        };
        let r: AlterClientQuotasResponse = c.call(key::ALTER_CLIENT_QUOTAS, 1, &remove).await;
        assert_eq!(r.entries[0].error_code, KafkaCode::NONE);
        let all: DescribeClientQuotasResponse = c
            .call(key::DESCRIBE_CLIENT_QUOTAS, 1, &describe(vec![], false))
            .await;
        assert_eq!(listed(&all).len(), 1);
        h.stop().await;
    }
}

mod elections {
    use super::*;
    use mk_adapter_kafka::messages::elect_leaders::{
        ElectLeadersRequest, ElectLeadersResponse, TopicPartitions,
    };
    use mk_adapter_kafka::mk_cluster::{AckMode, RecordBatch, TopicPartition};

    fn elect(kind: i8, partitions: Option<&[(&str, i32)]>) -> ElectLeadersRequest {
        ElectLeadersRequest {
            election_type: kind,
            topic_partitions: partitions.map(|ps| {
                ps.iter()
                    .map(|(t, p)| TopicPartitions {
                        topic: t.to_string(),
                        partitions: vec![*p],
                    })
                    .collect()
            }),
            timeout_ms: 30_000,
        }
    }

    fn results(r: &ElectLeadersResponse) -> Vec<(String, i32, KafkaCode)> {
        r.replica_election_results
            .iter()
            .flat_map(|t| {
                t.partition_result
                    .iter()
                    .map(|p| (t.topic.clone(), p.partition_id, p.error_code))
            })
            .collect()
    }

    fn leader(h: &Harness, p: u32) -> (i32, Vec<i32>) {
        let d = h.cluster.topics().describe("t").unwrap();
        let p = &d.partitions[p as usize];
        (p.leader_id, p.isr.clone())
    }

    #[tokio::test]
    async fn preferred_leaders_come_back_once_in_sync() {
        let h = Harness::three_with_topic("t", 2).await;
        let p0 = TopicPartition::new("t", 0);
        let batch = RecordBatch::new(common::value_records(&["a", "b"])).unwrap();
        h.cluster
            .data()
            .append_batch(&p0, batch, AckMode::One)
            .await
            .unwrap();
        h.cluster.steps().replicate_all_once().unwrap();
        let mut c = h.conn(3).await;
        let not_needed = KafkaCode(84);
        for v in [0, 1, 2] {
            let r: ElectLeadersResponse = c
                .call(
                    key::ELECT_LEADERS,
                    v,
                    &elect(0, Some(&[("t", 0), ("t", 7), ("t", -1)])),
                )
                .await;
            assert_eq!(
                results(&r),
                vec![
                    ("t".into(), 0, not_needed),
                    ("t".into(), 7, KafkaCode::UNKNOWN_TOPIC_OR_PARTITION),
                    ("t".into(), -1, KafkaCode::UNKNOWN_TOPIC_OR_PARTITION),
                ],
                "v{v}"
            );
        }
        h.cluster.brokers().take_offline(1).unwrap();
        assert_eq!(leader(&h, 0).0, 2);
        let r: ElectLeadersResponse = c.call(key::ELECT_LEADERS, 2, &elect(0, None)).await;
        assert_eq!(results(&r), vec![("t".into(), 0, KafkaCode(80))]);
        h.cluster.brokers().bring_online(1).unwrap();
        for _ in 0..3 {
            h.cluster.steps().replicate_all_once().unwrap();
        }
        // Unclean: both partitions have an online leader.
        let r: ElectLeadersResponse = c.call(key::ELECT_LEADERS, 2, &elect(1, None)).await;
        assert_eq!(results(&r), vec![]);
        // All partitions: only the one that moved is answered.
        let r: ElectLeadersResponse = c.call(key::ELECT_LEADERS, 2, &elect(0, None)).await;
        assert_eq!(
            (r.error_code, results(&r)),
            (KafkaCode::NONE, vec![("t".into(), 0, KafkaCode::NONE)])
        );
        assert_eq!(leader(&h, 0).0, 1);
        for _ in 0..3 {
            h.cluster.steps().replicate_all_once().unwrap();
        }
        assert_eq!(leader(&h, 0).1, vec![1, 2, 3]);
        let r: ElectLeadersResponse = c.call(key::ELECT_LEADERS, 2, &elect(5, None)).await;
        assert_eq!(r.error_code, KafkaCode::INVALID_REQUEST);
        h.stop().await;
    }

    #[tokio::test]
    async fn unclean_election_elects_an_out_of_sync_replica_when_no_in_sync_one_is_online() {
        let h = Harness::start(vec![1, 2], Default::default()).await;
        h.cluster.topics().create("t", 1, 2).unwrap();
        let p0 = TopicPartition::new("t", 0);
        h.cluster.steps().remove_from_isr(&p0, 2).unwrap();
        let batch = RecordBatch::new(common::value_records(&["a"])).unwrap();
        h.cluster
            .data()
            .append_batch(&p0, batch, AckMode::One)
            .await
            .unwrap();
        // unclean.leader.election.enable stays false: nobody took over.
        assert!(h.cluster.brokers().take_offline(1).unwrap().is_empty());
        let mut c = h.conn(2).await;
        let r: ElectLeadersResponse = c
            .call(key::ELECT_LEADERS, 2, &elect(1, Some(&[("t", 0)])))
            .await;
        assert_eq!(results(&r), vec![("t".into(), 0, KafkaCode::NONE)]);
        assert_eq!(leader(&h, 0), (2, vec![2]));
        assert_eq!(
            h.cluster.data().log_end_offset(&p0).unwrap(),
            0,
            "\"a\" is lost"
        );
        h.stop().await;
    }
}

mod reassignments {
    use super::*;
    use mk_adapter_kafka::messages::alter_partition_reassignments::{
        AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse,
        ReassignablePartition, ReassignableTopic,
    };
    use mk_adapter_kafka::messages::list_partition_reassignments::{
        ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse,
        ListPartitionReassignmentsTopics,
    };
    use mk_adapter_kafka::mk_cluster::{AckMode, RecordBatch, TopicPartition};

    type Target<'a> = (&'a str, i32, Option<&'a [i32]>);

    fn alter(allow: bool, targets: &[Target<'_>]) -> AlterPartitionReassignmentsRequest {
        AlterPartitionReassignmentsRequest {
            timeout_ms: 30_000,
            allow_replication_factor_change: allow,
            topics: targets
                .iter()
                .map(|(t, p, r)| ReassignableTopic {
                    name: t.to_string(),
                    partitions: vec![ReassignablePartition {
                        partition_index: *p,
                        replicas: r.map(<[i32]>::to_vec),
                    }],
                })
                .collect(),
        }
    }

    fn codes(r: &AlterPartitionReassignmentsResponse) -> Vec<(String, i32, KafkaCode)> {
        r.responses
            .iter()
            .flat_map(|t| {
                t.partitions
                    .iter()
                    .map(|p| (t.name.clone(), p.partition_index, p.error_code))
            })
            .collect()
    }

    fn list(topics: Option<&[(&str, &[i32])]>) -> ListPartitionReassignmentsRequest {
        ListPartitionReassignmentsRequest {
            timeout_ms: 30_000,
            topics: topics.map(|ts| {
                ts.iter()
                    .map(|(name, ps)| ListPartitionReassignmentsTopics {
                        name: name.to_string(),
                        partition_indexes: ps.to_vec(),
                    })
                    .collect()
            }),
        }
    }

    type Ongoing = (String, i32, Vec<i32>, Vec<i32>, Vec<i32>);

    fn ongoing(r: &ListPartitionReassignmentsResponse) -> Vec<Ongoing> {
        r.topics
            .iter()
            .flat_map(|t| {
                t.partitions.iter().map(|p| {
                    (
                        t.name.clone(),
                        p.partition_index,
                        p.replicas.clone(),
                        p.adding_replicas.clone(),
                        p.removing_replicas.clone(),
                    )
                })
            })
            .collect()
    }

    #[tokio::test]
    async fn a_move_is_listed_until_the_new_replica_caught_up_and_refusals_are_kafkas() {
        let h = Harness::start(vec![1, 2, 3], Default::default()).await;
        h.cluster.topics().create("t", 2, 2).unwrap();
        let p0 = TopicPartition::new("t", 0);
        let batch = RecordBatch::new(common::value_records(&["a", "b"])).unwrap();
        h.cluster
            .data()
            .append_batch(&p0, batch, AckMode::One)
            .await
            .unwrap();
        h.cluster.steps().replicate_all_once().unwrap();
        // Broker 3 offline: its new replica waits, so the move stays listed.
        h.cluster.brokers().take_offline(3).unwrap();
        let mut c = h.conn(1).await;
        let r: AlterPartitionReassignmentsResponse = c
            .call(
                key::ALTER_PARTITION_REASSIGNMENTS,
                0,
                &alter(
                    true,
                    &[
                        ("t", 0, Some(&[3, 2])),
                        ("t", 1, Some(&[2, 9])),
                        ("t", 1, Some(&[2, 2])),
                        ("t", 1, Some(&[])),
                        ("t", 1, None),
                        ("t", 7, Some(&[1])),
                        ("nope", 0, Some(&[1])),
                    ],
                ),
            )
            .await;
        assert_eq!(r.error_code, KafkaCode::NONE);
        let invalid = KafkaCode(39);
        assert_eq!(
            codes(&r),
            vec![
                ("t".into(), 0, KafkaCode::NONE),
                ("t".into(), 1, invalid),
                ("t".into(), 1, invalid),
                ("t".into(), 1, invalid),
                ("t".into(), 1, KafkaCode(85)),
                ("t".into(), 7, KafkaCode::UNKNOWN_TOPIC_OR_PARTITION),
                ("nope".into(), 0, KafkaCode::UNKNOWN_TOPIC_OR_PARTITION),
            ]
        );
        let moving: Ongoing = ("t".into(), 0, vec![3, 2, 1], vec![3], vec![1]);
        for asked in [None, Some(&[("t", &[1, 0][..]), ("nope", &[0][..])][..])] {
            let r: ListPartitionReassignmentsResponse = c
                .call(key::LIST_PARTITION_REASSIGNMENTS, 0, &list(asked))
                .await;
            assert_eq!(r.error_code, KafkaCode::NONE);
            assert_eq!(ongoing(&r), vec![moving.clone()], "{asked:?}");
        }
        let d = h.cluster.topics().describe_partition(&p0).unwrap();
        assert_eq!(
            d.replicas,
            vec![3, 2, 1],
            "Metadata shows the set during the move"
        );

        // v1: a replication factor change can be forbidden.
        let r: AlterPartitionReassignmentsResponse = c
            .call(
                key::ALTER_PARTITION_REASSIGNMENTS,
                1,
                &alter(false, &[("t", 1, Some(&[1, 2, 3]))]),
            )
            .await;
        assert!(!r.allow_replication_factor_change);
        assert_eq!(
            codes(&r),
            vec![("t".into(), 1, KafkaCode::INVALID_REPLICATION_FACTOR)]
        );

        // Back online, broker 3 catches up and the move completes.
        h.cluster.brokers().bring_online(3).unwrap();
        for _ in 0..3 {
            h.cluster.steps().replicate_all_once().unwrap();
        }
        let r: ListPartitionReassignmentsResponse = c
            .call(key::LIST_PARTITION_REASSIGNMENTS, 0, &list(None))
            .await;
        assert!(ongoing(&r).is_empty(), "{r:?}");
        let d = h.cluster.topics().describe_partition(&p0).unwrap();
        assert_eq!((d.replicas, d.leader_id), (vec![3, 2], 3));
        h.stop().await;
    }
}
