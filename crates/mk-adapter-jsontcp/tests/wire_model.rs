//! The wire model without a socket: for every operation, a request and a
//! response with representative values go through all four directions
//! (request encode and decode, response encode and decode). Each must come
//! back unchanged, and the exact bytes of every line are frozen in one insta
//! snapshot, so a refactoring of the protocol modules that changes a single
//! byte of any direction fails here.
#![allow(
    clippy::too_many_lines,
    reason = "a test scenario reads top to bottom as one story; split, its steps would scatter"
)]

use mk_adapter_jsontcp::mk_cluster::{
    AckMode, AnyGroupDescription, AssignorKind, Bytes, CleanupPolicy, ClusterDescription,
    ClusterStats, CompactionSummary, ConfigChange, ConsumerGroupDescription,
    ConsumerMemberDescription, ConsumerRecord, FetchRequest, FetchResult, GroupDescription,
    GroupListing, GroupState, GroupType, Header, Isolation, LeaderAndEpoch, MemberAssignment,
    MemberDescription, MemberState, OffsetAndMetadata, OffsetSpec, OngoingReassignment,
    PartitionInfo, ProduceEntry, ProduceResponse, ProducerIdentity, ProducerInfo, Protocol,
    ProtocolStats, RetentionPolicy, ScramMechanism, ServerAssignor, ShareGroupDescription,
    ShareMemberDescription, TopicConfig, TopicConfigEntry, TopicDescription, TopicPartition,
};
use mk_adapter_jsontcp::{
    Operation, Password, ProduceRecords, ProduceSpec, Request, Response, ServerStats,
    TopicConfigOverrides, TxnRef, decode_request_line,
};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

fn b(s: &str) -> Option<Bytes> {
    Some(Bytes::copy_from_slice(s.as_bytes()))
}

/// A KIP-848 group mid-reconciliation: one member giving up a partition
/// its target no longer holds, a static one waiting for it.
fn consumer_group() -> ConsumerGroupDescription {
    ConsumerGroupDescription {
        group_id: "c".into(),
        state: GroupState::Reconciling,
        epoch: 3,
        assignment_epoch: 3,
        assignor: ServerAssignor::Range,
        members: vec![
            ConsumerMemberDescription {
                member_id: "m1".into(),
                instance_id: None,
                rack_id: None,
                member_epoch: 2,
                state: MemberState::UnrevokedPartitions,
                client_id: "app".into(),
                client_host: "/127.0.0.1".into(),
                topics: vec!["a".into()],
                regex: Some("a.*".into()),
                assignment: vec![tp("a", 0), tp("a", 1)],
                revoking: vec![tp("a", 1)],
                target: vec![tp("a", 0)],
                session_deadline_ms: 45_000,
            },
            ConsumerMemberDescription {
                member_id: "m2".into(),
                instance_id: Some("i2".into()),
                rack_id: None,
                member_epoch: 3,
                state: MemberState::UnreleasedPartitions,
                client_id: "app".into(),
                client_host: "/127.0.0.1".into(),
                topics: vec!["a".into()],
                regex: None,
                assignment: Vec::new(),
                revoking: Vec::new(),
                target: vec![tp("a", 1)],
                session_deadline_ms: 45_001,
            },
        ],
    }
}

fn share_group() -> ShareGroupDescription {
    ShareGroupDescription {
        group_id: "s".into(),
        state: GroupState::Stable,
        epoch: 1,
        assignment_epoch: 1,
        members: vec![ShareMemberDescription {
            member_id: "q1".into(),
            rack_id: None,
            member_epoch: 1,
            client_id: "worker".into(),
            client_host: "/127.0.0.1".into(),
            topics: vec!["a".into()],
            assignment: vec![tp("a", 0)],
            session_deadline_ms: 45_000,
        }],
        partitions: vec![(tp("a", 0), 5, 9)],
    }
}

fn tp(topic: &str, partition: u32) -> TopicPartition {
    TopicPartition::new(topic, partition)
}

fn txn() -> TxnRef {
    TxnRef {
        transactional_id: "tx-\"1\"".into(),
        producer_epoch: 3,
    }
}

fn partition_info(topic: &str, partition: u32) -> PartitionInfo {
    PartitionInfo {
        topic: topic.into(),
        partition,
        leader_id: 2,
        leader_epoch: 4,
        replicas: vec![2, 3, 1],
        adding_replicas: vec![1],
        isr: vec![2, 3],
        high_watermark: 10,
        last_stable_offset: 9,
        log_start_offset: 1,
        log_end_offset: 12,
        log_end_offsets: BTreeMap::from([(1, 8), (2, 12), (3, 10)]),
        damaged: None,
    }
}

fn offsets() -> BTreeMap<TopicPartition, i64> {
    BTreeMap::from([(tp("a", 0), 5), (tp("b", 2), 0)])
}

/// Commits with and without a leader epoch and metadata.
fn commits() -> BTreeMap<TopicPartition, OffsetAndMetadata> {
    BTreeMap::from([
        (
            tp("a", 0),
            OffsetAndMetadata {
                offset: 5,
                leader_epoch: Some(2),
                metadata: "state \"x\" é".into(),
            },
        ),
        (tp("b", 2), OffsetAndMetadata::new(0)),
    ])
}

/// Every operation with a request and a success response, some of them
/// more than once to cover optional fields present and absent.
fn exchanges() -> Vec<(Request, Response)> {
    let produce = |records, producer| {
        Request::Produce(ProduceSpec {
            topic: "events".into(),
            partition: Some(1),
            acks: AckMode::All,
            producer,
            records,
        })
    };
    let produced = |count, batch, duplicate| Response::Produce {
        response: ProduceResponse {
            partition: 1,
            base_offset: Some(40),
            count,
            duplicate,
        },
        batch,
    };
    vec![
        (
            Request::CreateTopic {
                topic: "events".into(),
                partitions: 3,
                replication_factor: 2,
                config: None,
            },
            Response::CreateTopic {
                topic: "events".into(),
            },
        ),
        (
            Request::CreateTopic {
                topic: "orders".into(),
                partitions: 1,
                replication_factor: 1,
                config: Some(TopicConfigOverrides {
                    cleanup_policy: Some(CleanupPolicy::Compact),
                    retention_ms: Some(None),
                    retention_bytes: Some(Some(4096)),
                    segment_bytes: Some(None),
                    delete_retention_ms: Some(7),
                    others: [("compression.type".to_string(), "zstd".to_string())].into(),
                }),
            },
            Response::CreateTopic {
                topic: "orders".into(),
            },
        ),
        (
            Request::Metadata {
                topic: "events".into(),
                allow_auto_create: true,
            },
            Response::Metadata(TopicDescription {
                name: "events".into(),
                config: TopicConfig {
                    cleanup_policy: CleanupPolicy::Delete,
                    retention_ms: Some(1_000),
                    retention_bytes: None,
                    segment_bytes: Some(1 << 20),
                    delete_retention_ms: 5,
                    others: Default::default(),
                },
                partitions: vec![partition_info("events", 0), {
                    // A damaged partition carries its cause.
                    let mut p = partition_info("events", 1);
                    p.damaged = Some("storage error in /d/events-1: corrupt".into());
                    p
                }],
            }),
        ),
        (
            produce(
                ProduceRecords::Single {
                    key: None,
                    value: b("v"),
                },
                None,
            ),
            produced(1, false, false),
        ),
        (
            produce(
                ProduceRecords::Batch(vec![
                    ProduceEntry {
                        key: b("k"),
                        value: b(""),
                        headers: vec![Header::new("h", b("x")), Header::new("é", None)],
                        timestamp_ms: Some(1_700_000_000_000),
                    },
                    ProduceEntry::default(),
                ]),
                Some(ProducerInfo {
                    producer_id: 7,
                    producer_epoch: 1,
                    base_sequence: 20,
                }),
            ),
            produced(2, true, true),
        ),
        (
            Request::Fetch {
                request: FetchRequest::new(tp("events", 0), 3, 100),
                max_wait_ms: None,
            },
            Response::Fetch(FetchResult {
                records: vec![
                    ConsumerRecord {
                        offset: 3,
                        key: None,
                        value: b("hello"),
                        timestamp_ms: 11,
                        headers: vec![Header::new("h", None)],
                    },
                    ConsumerRecord {
                        offset: 5,
                        key: b("k"),
                        value: None,
                        timestamp_ms: 12,
                        headers: Vec::new(),
                    },
                ],
                high_watermark: 9,
                last_stable_offset: 8,
                log_start_offset: 0,
                next_offset: 6,
            }),
        ),
        (
            Request::Fetch {
                request: FetchRequest {
                    max_bytes: Some(512),
                    ..FetchRequest::new(tp("events", 2), 0, 5)
                        .with_isolation(Isolation::ReadCommitted)
                },
                max_wait_ms: Some(250),
            },
            Response::Fetch(FetchResult {
                records: Vec::new(),
                high_watermark: 0,
                last_stable_offset: 0,
                log_start_offset: 0,
                next_offset: 0,
            }),
        ),
        (
            Request::ListOffsets {
                tp: tp("events", 0),
                at: OffsetSpec::Earliest,
            },
            Response::ListOffsets(Some(0)),
        ),
        (
            Request::ListOffsets {
                tp: tp("events", 0),
                at: OffsetSpec::Latest,
            },
            Response::ListOffsets(Some(12)),
        ),
        (
            Request::ListOffsets {
                tp: tp("events", 0),
                at: OffsetSpec::Timestamp(1_000),
            },
            Response::ListOffsets(None),
        ),
        (
            Request::ListTopics,
            Response::ListTopics(vec!["a".into(), "b".into()]),
        ),
        (
            Request::JoinGroup {
                group_id: "g".into(),
                member_id: "m1".into(),
                topics: vec!["a".into(), "b".into()],
                assignor: None,
            },
            Response::JoinGroup(MemberAssignment {
                generation: 2,
                partitions: vec![tp("a", 0), tp("b", 1)],
            }),
        ),
        (
            Request::JoinGroup {
                group_id: "g".into(),
                member_id: "m2".into(),
                topics: vec![],
                assignor: Some(AssignorKind::Sticky),
            },
            Response::JoinGroup(MemberAssignment {
                generation: 3,
                partitions: vec![],
            }),
        ),
        (
            Request::Heartbeat {
                group_id: "g".into(),
                member_id: "m1".into(),
                generation: 2,
            },
            Response::Heartbeat,
        ),
        (
            Request::CommitOffsets {
                group_id: "g".into(),
                member_id: "m1".into(),
                generation: 2,
                offsets: commits(),
            },
            Response::CommitOffsets,
        ),
        (
            Request::LeaveGroup {
                group_id: "g".into(),
                member_id: "m1".into(),
            },
            Response::LeaveGroup { left: true },
        ),
        (
            Request::FetchOffsets {
                group_id: "g".into(),
                partitions: None,
            },
            Response::FetchOffsets(vec![(tp("a", 0), Some(OffsetAndMetadata::new(5)))]),
        ),
        (
            Request::FetchOffsets {
                group_id: "g".into(),
                partitions: Some(vec![tp("a", 0), tp("c", 1)]),
            },
            Response::FetchOffsets(vec![
                (tp("a", 0), commits().remove(&tp("a", 0))),
                (tp("c", 1), None),
            ]),
        ),
        (
            Request::DescribeGroup {
                group_id: "g".into(),
            },
            Response::DescribeGroup {
                group_id: "g".into(),
                description: Some(AnyGroupDescription::Classic(GroupDescription {
                    group_id: "g".into(),
                    state: GroupState::Stable,
                    generation: 2,
                    assignor: AssignorKind::RoundRobin,
                    protocol_type: "consumer".into(),
                    protocol_name: "range".into(),
                    members: vec![MemberDescription {
                        member_id: "m1".into(),
                        topics: vec!["a".into()],
                        assignment: vec![tp("a", 0)],
                        deadline_ms: 99,
                        client_id: String::new(),
                        client_host: String::new(),
                        group_instance_id: None,
                        metadata: Bytes::new(),
                        assignment_bytes: Bytes::new(),
                    }],
                })),
            },
        ),
        (
            Request::DescribeGroup {
                group_id: "c".into(),
            },
            Response::DescribeGroup {
                group_id: "c".into(),
                description: Some(AnyGroupDescription::Consumer(consumer_group())),
            },
        ),
        (
            Request::DescribeGroup {
                group_id: "s".into(),
            },
            Response::DescribeGroup {
                group_id: "s".into(),
                description: Some(AnyGroupDescription::Share(share_group())),
            },
        ),
        (
            Request::DescribeGroup {
                group_id: "gone".into(),
            },
            Response::DescribeGroup {
                group_id: "gone".into(),
                description: None,
            },
        ),
        (
            Request::InitProducer { name: None },
            Response::InitProducer(ProducerIdentity {
                producer_id: 4,
                epoch: 0,
            }),
        ),
        (
            Request::InitProducer {
                name: Some("p".into()),
            },
            Response::InitProducer(ProducerIdentity {
                producer_id: 4,
                epoch: 1,
            }),
        ),
        (
            Request::BeginTxn {
                transactional_id: "tx".into(),
            },
            Response::BeginTxn(ProducerIdentity {
                producer_id: 5,
                epoch: 2,
            }),
        ),
        (
            Request::TxnProduce {
                txn: txn(),
                topic: "events".into(),
                partition: None,
                key: b("k"),
                value: None,
            },
            Response::TxnProduce {
                partition: 2,
                offset: 17,
            },
        ),
        (
            Request::TxnProduce {
                txn: txn(),
                topic: "events".into(),
                partition: Some(0),
                key: None,
                value: b("v"),
            },
            Response::TxnProduce {
                partition: 0,
                offset: 18,
            },
        ),
        (
            Request::TxnSendOffsets {
                txn: txn(),
                group_id: "g".into(),
                offsets: offsets(),
            },
            Response::TxnSendOffsets,
        ),
        (Request::CommitTxn { txn: txn() }, Response::CommitTxn),
        (Request::AbortTxn { txn: txn() }, Response::AbortTxn),
        (
            Request::DescribeCluster,
            Response::DescribeCluster(ClusterDescription {
                brokers: vec![1, 2, 3],
                offline_brokers: vec![2],
                partitions: vec![partition_info("a", 0), partition_info("b", 0)],
            }),
        ),
        (
            Request::Stats,
            Response::Stats(ServerStats {
                cluster: ClusterStats {
                    uptime_ms: 1,
                    topics: 2,
                    partitions: 3,
                    groups: 4,
                    transactions: 5,
                    records: 6,
                    log_bytes: 7,
                    owned_tasks: 8,
                    damaged_partitions: 12,
                    disk_full: true,
                    protocols: vec![
                        ProtocolStats {
                            protocol: Protocol::Kafka,
                            listeners: 3,
                            connections: 9,
                            connections_accepted: 13,
                            requests: 10,
                        },
                        ProtocolStats {
                            protocol: Protocol::JsonTcp,
                            listeners: 1,
                            connections: 1,
                            connections_accepted: 2,
                            requests: 14,
                        },
                    ],
                },
                in_flight: 11,
            }),
        ),
        (
            Request::BrokerOffline { broker_id: 1 },
            Response::BrokerOffline(vec![(
                tp("a", 0),
                LeaderAndEpoch {
                    leader_id: 2,
                    leader_epoch: 1,
                },
            )]),
        ),
        (
            Request::BrokerOnline { broker_id: 1 },
            Response::BrokerOnline { was_offline: true },
        ),
        (
            Request::Promote {
                tp: tp("a", 0),
                broker_id: 2,
            },
            Response::Promote(LeaderAndEpoch {
                leader_id: 2,
                leader_epoch: 5,
            }),
        ),
        (
            Request::Rejoin {
                tp: tp("a", 0),
                broker_id: 1,
            },
            Response::Rejoin,
        ),
        (
            Request::RemoveFromIsr {
                tp: tp("a", 0),
                broker_id: 3,
            },
            Response::RemoveFromIsr,
        ),
        (Request::ReplicateOnce, Response::ReplicateOnce),
        (
            Request::ExpireGroupMembers,
            Response::ExpireGroupMembers(vec![("g".into(), "m1".into())]),
        ),
        (Request::Roll { tp: tp("a", 1) }, Response::Roll),
        (
            Request::ApplyRetention {
                topic: "a".into(),
                overrides: None,
            },
            Response::ApplyRetention(BTreeMap::from([(0, vec![0, 100]), (1, vec![])])),
        ),
        (
            Request::ApplyRetention {
                topic: "a".into(),
                overrides: Some(RetentionPolicy {
                    retention_ms: Some(10),
                    retention_bytes: None,
                }),
            },
            Response::ApplyRetention(BTreeMap::new()),
        ),
        (
            Request::Compact {
                topic: "a".into(),
                delete_retention_ms: None,
            },
            Response::Compact(CompactionSummary {
                records_before: 10,
                records_after: 4,
            }),
        ),
        (
            Request::Compact {
                topic: "a".into(),
                delete_retention_ms: Some(0),
            },
            Response::Compact(CompactionSummary {
                records_before: 0,
                records_after: 0,
            }),
        ),
        (
            Request::ExpireTransactions,
            Response::ExpireTransactions(vec!["tx".into()]),
        ),
        (Request::FlushCycle, Response::FlushCycle),
        // Added by issue 14, after the older samples so their ids (and
        // snapshot lines) stay as they were.
        (
            // Without a partition the core routes the record by its key.
            Request::Produce(ProduceSpec {
                topic: "events".into(),
                partition: None,
                acks: AckMode::One,
                producer: None,
                records: ProduceRecords::Single {
                    key: b("user-1"),
                    value: b("v"),
                },
            }),
            Response::Produce {
                response: ProduceResponse {
                    partition: 2,
                    base_offset: Some(9),
                    count: 1,
                    duplicate: false,
                },
                batch: false,
            },
        ),
        (
            Request::DeleteTopic {
                topic: "old".into(),
            },
            Response::DeleteTopic,
        ),
        (
            Request::CreatePartitions {
                topic: "events".into(),
                partitions: 6,
            },
            Response::CreatePartitions,
        ),
        (
            Request::AlterTopicConfig {
                topic: "events".into(),
                changes: vec![
                    ConfigChange::Set {
                        key: "retention.ms".into(),
                        value: "-1".into(),
                    },
                    ConfigChange::Set {
                        key: "segment.bytes".into(),
                        value: "4096".into(),
                    },
                    ConfigChange::Delete {
                        key: "cleanup.policy".into(),
                    },
                ],
                validate_only: true,
            },
            Response::AlterTopicConfig(TopicConfig {
                cleanup_policy: CleanupPolicy::Delete,
                retention_ms: None,
                retention_bytes: None,
                segment_bytes: Some(4096),
                delete_retention_ms: 86_400_000,
                others: Default::default(),
            }),
        ),
        (
            Request::AlterTopicConfig {
                topic: "events".into(),
                changes: vec![],
                validate_only: false,
            },
            Response::AlterTopicConfig(TopicConfig::default()),
        ),
        (
            Request::DescribeTopicConfig {
                topic: "events".into(),
            },
            Response::DescribeTopicConfig(vec![
                TopicConfigEntry {
                    name: "cleanup.policy".into(),
                    value: "delete".into(),
                    is_default: true,
                },
                TopicConfigEntry {
                    name: "retention.ms".into(),
                    value: "-1".into(),
                    is_default: false,
                },
            ]),
        ),
        (
            Request::ListGroups,
            Response::ListGroups(vec![
                GroupListing {
                    group_id: "g".into(),
                    protocol_type: "consumer".into(),
                    state: GroupState::Stable,
                    group_type: GroupType::Classic,
                },
                GroupListing {
                    group_id: "offsets-only".into(),
                    protocol_type: String::new(),
                    state: GroupState::Empty,
                    group_type: GroupType::Classic,
                },
                GroupListing {
                    group_id: "kip-848".into(),
                    protocol_type: "consumer".into(),
                    state: GroupState::Reconciling,
                    group_type: GroupType::Consumer,
                },
                GroupListing {
                    group_id: "queue".into(),
                    protocol_type: "share".into(),
                    state: GroupState::Empty,
                    group_type: GroupType::Share,
                },
            ]),
        ),
        (
            Request::DeleteGroup {
                group_id: "g".into(),
            },
            Response::DeleteGroup,
        ),
        (
            Request::AlterGroupOffsets {
                group_id: "g".into(),
                offsets: offsets(),
            },
            Response::AlterGroupOffsets,
        ),
        // Added by issue 25 (`mk-server user`).
        (
            Request::UpsertScramCredential {
                user: "alice".into(),
                mechanism: ScramMechanism::Sha512,
                password: Password::new("pa\"ss,=word"),
                iterations: Some(8192),
            },
            Response::UpsertScramCredential {
                user: "alice".into(),
                mechanism: ScramMechanism::Sha512,
                iterations: 8192,
            },
        ),
        (
            Request::UpsertScramCredential {
                user: "bob".into(),
                mechanism: ScramMechanism::Sha256,
                password: Password::new("p"),
                iterations: None,
            },
            Response::UpsertScramCredential {
                user: "bob".into(),
                mechanism: ScramMechanism::Sha256,
                iterations: 4096,
            },
        ),
        (
            Request::DeleteScramCredential {
                user: "alice".into(),
                mechanism: Some(ScramMechanism::Sha256),
            },
            Response::DeleteScramCredential {
                user: "alice".into(),
                deleted: vec![ScramMechanism::Sha256],
            },
        ),
        (
            Request::DeleteScramCredential {
                user: "alice".into(),
                mechanism: None,
            },
            Response::DeleteScramCredential {
                user: "alice".into(),
                deleted: vec![ScramMechanism::Sha256, ScramMechanism::Sha512],
            },
        ),
        (
            Request::DescribeScramCredentials { user: None },
            Response::DescribeScramCredentials(vec![
                (
                    "alice".into(),
                    vec![
                        (ScramMechanism::Sha256, 4096),
                        (ScramMechanism::Sha512, 8192),
                    ],
                ),
                ("bob".into(), vec![(ScramMechanism::Sha512, 16384)]),
            ]),
        ),
        (
            Request::DescribeScramCredentials {
                user: Some("bob".into()),
            },
            Response::DescribeScramCredentials(vec![(
                "bob".into(),
                vec![(ScramMechanism::Sha512, 16384)],
            )]),
        ),
        (
            Request::AlterPartitionReassignment {
                tp: tp("a", 0),
                replicas: Some(vec![3, 2]),
                allow_replication_factor_change: false,
            },
            Response::AlterPartitionReassignment(vec![OngoingReassignment {
                partition: tp("a", 0),
                replicas: vec![3, 2, 1],
                adding: vec![3],
                removing: vec![1],
            }]),
        ),
        (
            Request::AlterPartitionReassignment {
                tp: tp("a", 0),
                replicas: None,
                allow_replication_factor_change: true,
            },
            Response::AlterPartitionReassignment(vec![]),
        ),
        (
            Request::ListPartitionReassignments { topic: None },
            Response::ListPartitionReassignments(vec![
                OngoingReassignment {
                    partition: tp("a", 0),
                    replicas: vec![3, 1],
                    adding: vec![3],
                    removing: vec![],
                },
                OngoingReassignment {
                    partition: tp("b", 2),
                    replicas: vec![2, 1],
                    adding: vec![],
                    removing: vec![1],
                },
            ]),
        ),
        (
            Request::ListPartitionReassignments {
                topic: Some("b".into()),
            },
            Response::ListPartitionReassignments(vec![]),
        ),
    ]
}

/// A password never shows in a request's `Debug` (what a log line or a
/// failed assertion would print).
#[test]
fn a_password_is_not_in_the_debug_form_of_a_request() {
    let r = Request::UpsertScramCredential {
        user: "alice".into(),
        mechanism: ScramMechanism::Sha512,
        password: Password::new("hunter2-secret"),
        iterations: None,
    };
    let debug = format!("{r:?}");
    assert!(debug.contains("alice"), "{debug}");
    assert!(!debug.contains("hunter2-secret"), "{debug}");
}

#[test]
fn snapshot_every_operation_in_all_four_directions() {
    let mut transcript = String::new();
    let mut covered = BTreeSet::new();
    for (i, (request, response)) in exchanges().into_iter().enumerate() {
        covered.insert(request.operation());
        let id = Value::from(i);
        let line = request.encode(Some(&id));
        let decoded = decode_request_line(line.strip_suffix(b"\n").unwrap());
        assert_eq!(decoded.id, Some(id.clone()));
        assert_eq!(decoded.request.as_ref(), Ok(&request), "request {i}");

        let answer = response.encode(Some(&id));
        let map = match serde_json::from_slice::<Value>(&answer).unwrap() {
            Value::Object(map) => map,
            other => panic!("response {i} is not an object: {other}"),
        };
        assert_eq!(map.get("id"), Some(&id));
        assert_eq!(
            Response::decode(&request, &map).as_ref(),
            Ok(&response),
            "response {i}"
        );
        for bytes in [line, answer] {
            transcript.push_str(std::str::from_utf8(&bytes).unwrap());
        }
    }
    let missing: Vec<Operation> = Operation::ALL
        .into_iter()
        .filter(|o| !covered.contains(o))
        .collect();
    assert!(
        missing.is_empty(),
        "operations without a sample: {missing:?}"
    );
    insta::assert_snapshot!(transcript);
}
