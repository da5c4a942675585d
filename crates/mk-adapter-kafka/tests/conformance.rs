//! Protocol conformance against an independent implementation: every
//! advertised (API, version) pair — for its request and its response — is
//! encoded by our codec, decoded by the `kafka-protocol` crate (generated
//! from Apache Kafka's own message schemas), re-encoded by it and compared
//! byte for byte with ours; our decoder must give back the value we
//! started from; and the header version (flexible or not) must agree.
//!
//! The oracle only ever decodes bytes we produced here (the crate's
//! decoders size allocations from wire counts, which is why the broker
//! does not use them).

use bytes::{Bytes, BytesMut};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion};
use mk_adapter_kafka::api::{
    self, APIS, Message, admin, fetch, metadata, offsets, produce, versions,
};
use mk_adapter_kafka::codec::{Reader, Uuid, Writer};
use mk_adapter_kafka::errors::KafkaCode;
use std::fmt::Debug;

fn encode_ours<M: Message>(m: &M, flexible: bool, v: i16) -> Bytes {
    let mut w = Writer::new(flexible);
    m.write(&mut w, v);
    w.into_bytes()
}

/// The whole check for one message at one version.
fn check<Ours, Oracle>(what: &str, ours: Ours, v: i16, flexible: bool)
where
    Ours: Message + PartialEq + Debug,
    Oracle: Encodable + Decodable + Debug,
{
    let bytes = encode_ours(&ours, flexible, v);
    let mut buf = bytes.clone();
    let decoded = Oracle::decode(&mut buf, v)
        .unwrap_or_else(|e| panic!("{what} v{v}: the oracle cannot decode our bytes: {e}"));
    assert!(
        buf.is_empty(),
        "{what} v{v}: the oracle left {} byte(s) unread",
        buf.len()
    );
    let mut again = BytesMut::new();
    decoded
        .encode(&mut again, v)
        .unwrap_or_else(|e| panic!("{what} v{v}: the oracle cannot re-encode: {e}"));
    assert_eq!(
        &again[..],
        &bytes[..],
        "{what} v{v}: the oracle's bytes differ from ours\noracle value: {decoded:?}"
    );
    let mut r = Reader::new(&bytes, flexible);
    let back = Ours::read(&mut r, v).unwrap_or_else(|e| panic!("{what} v{v}: {e}"));
    r.finish(what).unwrap();
    assert_eq!(
        back, ours,
        "{what} v{v}: our decoder disagrees with our encoder"
    );
}

fn check_headers<Req: HeaderVersion, Resp: HeaderVersion>(key: i16, v: i16) {
    let spec = api::spec(key).unwrap();
    let flexible = spec.is_flexible(v);
    assert_eq!(
        Req::header_version(v),
        if flexible { 2 } else { 1 },
        "{} v{v}: request header version",
        spec.name
    );
    let want = if key == api::key::API_VERSIONS {
        0
    } else if flexible {
        1
    } else {
        0
    };
    assert_eq!(
        Resp::header_version(v),
        want,
        "{} v{v}: response header version",
        spec.name
    );
}

fn s(x: &str) -> String {
    x.to_string()
}

const ID: Uuid = Uuid([7; 16]);

fn pair<Req, Resp, OReq, OResp>(key: i16, v: i16, req: Req, resp: Resp)
where
    Req: Message + PartialEq + Debug,
    Resp: Message + PartialEq + Debug,
    OReq: Encodable + Decodable + Debug + HeaderVersion,
    OResp: Encodable + Decodable + Debug + HeaderVersion,
{
    let spec = api::spec(key).unwrap();
    let flexible = spec.is_flexible(v);
    check_headers::<OReq, OResp>(key, v);
    check::<Req, OReq>(&format!("{} request", spec.name), req, v, flexible);
    check::<Resp, OResp>(&format!("{} response", spec.name), resp, v, flexible);
}

fn api_versions(v: i16) {
    use kafka_protocol::messages as k;
    let req = versions::ApiVersionsRequest {
        client_software_name: if v >= 3 { s("conformance") } else { s("") },
        client_software_version: if v >= 3 { s("1.0") } else { s("") },
    };
    let resp = versions::ApiVersionsResponse {
        error_code: KafkaCode::NONE,
        api_keys: versions::table(),
        throttle_time_ms: if v >= 1 { 5 } else { 0 },
    };
    pair::<_, _, k::ApiVersionsRequest, k::ApiVersionsResponse>(
        api::key::API_VERSIONS,
        v,
        req,
        resp,
    );
}

fn metadata(v: i16) {
    use kafka_protocol::messages as k;
    let topic = |name: &str| metadata::MetadataRequestTopic {
        topic_id: if v >= 10 { ID } else { Uuid::ZERO },
        name: Some(s(name)),
    };
    let req = metadata::MetadataRequest {
        topics: Some(vec![topic("a"), topic("b")]),
        allow_auto_topic_creation: v < 4 || v % 2 == 0,
        include_cluster_authorized_operations: (8..=10).contains(&v),
        include_topic_authorized_operations: v >= 8,
    };
    let resp = metadata::MetadataResponse {
        throttle_time_ms: if v >= 3 { 3 } else { 0 },
        brokers: vec![metadata::MetadataBroker {
            node_id: 2,
            host: s("127.0.0.1"),
            port: 9093,
            rack: None,
        }],
        cluster_id: if v >= 2 { Some(s("cluster")) } else { None },
        controller_id: if v >= 1 { 2 } else { -1 },
        topics: vec![metadata::MetadataTopic {
            error_code: KafkaCode::NONE,
            name: Some(s("a")),
            topic_id: if v >= 10 { ID } else { Uuid::ZERO },
            is_internal: false,
            partitions: vec![metadata::MetadataPartition {
                error_code: KafkaCode::LEADER_NOT_AVAILABLE,
                partition_index: 1,
                leader_id: 2,
                leader_epoch: if v >= 7 { 4 } else { -1 },
                replica_nodes: vec![2, 3],
                isr_nodes: vec![2],
                offline_replicas: if v >= 5 { vec![3] } else { vec![] },
            }],
            topic_authorized_operations: if v >= 8 {
                248
            } else {
                metadata::AUTHORIZED_OPERATIONS_OMITTED
            },
        }],
        cluster_authorized_operations: if (8..=10).contains(&v) {
            16
        } else {
            metadata::AUTHORIZED_OPERATIONS_OMITTED
        },
    };
    pair::<_, _, k::MetadataRequest, k::MetadataResponse>(api::key::METADATA, v, req, resp);
    if v >= 1 {
        // A null topic list (every topic) survives too.
        let all = metadata::MetadataRequest {
            topics: None,
            allow_auto_topic_creation: true,
            include_cluster_authorized_operations: false,
            include_topic_authorized_operations: false,
        };
        let flexible = api::spec(api::key::METADATA).unwrap().is_flexible(v);
        check::<_, k::MetadataRequest>("Metadata request (all topics)", all, v, flexible);
    }
}

fn describe_cluster(v: i16) {
    use kafka_protocol::messages as k;
    let req = metadata::DescribeClusterRequest {
        include_cluster_authorized_operations: true,
        endpoint_type: 1,
    };
    let resp = metadata::DescribeClusterResponse {
        throttle_time_ms: 0,
        error_code: KafkaCode::NONE,
        error_message: None,
        endpoint_type: 1,
        cluster_id: s("abc"),
        controller_id: 1,
        brokers: vec![metadata::MetadataBroker {
            node_id: 1,
            host: s("h"),
            port: 1,
            rack: Some(s("r")),
        }],
        cluster_authorized_operations: 12,
    };
    pair::<_, _, k::DescribeClusterRequest, k::DescribeClusterResponse>(
        api::key::DESCRIBE_CLUSTER,
        v,
        req,
        resp,
    );
}

fn produce_(v: i16) {
    use kafka_protocol::messages as k;
    let req = produce::ProduceRequest {
        transactional_id: if v % 2 == 0 { Some(s("txn")) } else { None },
        acks: -1,
        timeout_ms: 1500,
        topics: vec![produce::ProduceTopic {
            name: s("t"),
            partitions: vec![
                produce::ProducePartition {
                    index: 0,
                    records: Some(Bytes::from_static(b"opaque batch bytes")),
                },
                produce::ProducePartition {
                    index: 2,
                    records: None,
                },
            ],
        }],
    };
    let resp = produce::ProduceResponse {
        responses: vec![produce::ProduceTopicResponse {
            name: s("t"),
            partitions: vec![produce::ProducePartitionResponse {
                index: 0,
                error_code: KafkaCode::CORRUPT_MESSAGE,
                base_offset: 42,
                log_append_time_ms: -1,
                log_start_offset: if v >= 5 { 3 } else { -1 },
                record_errors: if v >= 8 {
                    vec![produce::RecordErrorEntry {
                        batch_index: 0,
                        message: Some(s("bad")),
                    }]
                } else {
                    vec![]
                },
                error_message: if v >= 8 { Some(s("bad batch")) } else { None },
            }],
        }],
        throttle_time_ms: 0,
    };
    pair::<_, _, k::ProduceRequest, k::ProduceResponse>(api::key::PRODUCE, v, req, resp);
}

fn init_producer_id(v: i16) {
    use kafka_protocol::messages as k;
    let req = produce::InitProducerIdRequest {
        transactional_id: Some(s("tx")),
        transaction_timeout_ms: 60_000,
        producer_id: if v >= 3 { 9 } else { -1 },
        producer_epoch: if v >= 3 { 2 } else { -1 },
    };
    let resp = produce::InitProducerIdResponse {
        throttle_time_ms: 0,
        error_code: KafkaCode::NONE,
        producer_id: 9,
        producer_epoch: 3,
    };
    pair::<_, _, k::InitProducerIdRequest, k::InitProducerIdResponse>(
        api::key::INIT_PRODUCER_ID,
        v,
        req,
        resp,
    );
}

fn fetch_(v: i16) {
    use kafka_protocol::messages as k;
    let req = fetch::FetchRequest {
        replica_id: -1,
        max_wait_ms: 500,
        min_bytes: 1,
        max_bytes: 52_428_800,
        isolation_level: 1,
        session_id: 0,
        session_epoch: -1,
        topics: vec![fetch::FetchTopicRequest {
            topic: s("t"),
            partitions: vec![fetch::FetchPartitionRequest {
                partition: 1,
                current_leader_epoch: if v >= 9 { 4 } else { -1 },
                fetch_offset: 77,
                last_fetched_epoch: if v >= 12 { 3 } else { -1 },
                log_start_offset: if v >= 5 { 0 } else { -1 },
                partition_max_bytes: 1_048_576,
            }],
        }],
        forgotten_topics_data: if v >= 7 {
            vec![fetch::ForgottenTopic {
                topic: s("old"),
                partitions: vec![0, 1],
            }]
        } else {
            vec![]
        },
        rack_id: if v >= 11 { s("rack-a") } else { s("") },
    };
    let resp = fetch::FetchResponse {
        throttle_time_ms: 0,
        error_code: KafkaCode::NONE,
        session_id: 0,
        responses: vec![fetch::FetchTopicResponse {
            topic: s("t"),
            partitions: vec![
                fetch::FetchPartitionResponse {
                    partition_index: 1,
                    error_code: KafkaCode::NONE,
                    high_watermark: 100,
                    last_stable_offset: 90,
                    log_start_offset: if v >= 5 { 5 } else { -1 },
                    aborted_transactions: Some(vec![fetch::AbortedTransaction {
                        producer_id: 3,
                        first_offset: 10,
                    }]),
                    preferred_read_replica: -1,
                    records: Some(Bytes::from_static(b"batches")),
                },
                fetch::FetchPartitionResponse {
                    partition_index: 2,
                    error_code: KafkaCode::OFFSET_OUT_OF_RANGE,
                    high_watermark: -1,
                    last_stable_offset: -1,
                    log_start_offset: -1,
                    aborted_transactions: None,
                    preferred_read_replica: -1,
                    records: None,
                },
            ],
        }],
    };
    pair::<_, _, k::FetchRequest, k::FetchResponse>(api::key::FETCH, v, req, resp);
}

fn list_offsets(v: i16) {
    use kafka_protocol::messages as k;
    let req = offsets::ListOffsetsRequest {
        replica_id: -1,
        isolation_level: if v >= 2 { 1 } else { 0 },
        topics: vec![offsets::ListOffsetsTopic {
            name: s("t"),
            partitions: vec![offsets::ListOffsetsPartition {
                partition_index: 0,
                current_leader_epoch: if v >= 4 { 2 } else { -1 },
                timestamp: offsets::EARLIEST_TIMESTAMP,
            }],
        }],
    };
    let resp = offsets::ListOffsetsResponse {
        throttle_time_ms: if v >= 2 { 1 } else { 0 },
        topics: vec![offsets::ListOffsetsTopicResponse {
            name: s("t"),
            partitions: vec![offsets::ListOffsetsPartitionResponse {
                partition_index: 0,
                error_code: KafkaCode::NONE,
                timestamp: 1_700_000_000_000,
                offset: 12,
                leader_epoch: if v >= 4 { 2 } else { -1 },
            }],
        }],
    };
    pair::<_, _, k::ListOffsetsRequest, k::ListOffsetsResponse>(
        api::key::LIST_OFFSETS,
        v,
        req,
        resp,
    );
}

fn offset_for_leader_epoch(v: i16) {
    use kafka_protocol::messages as k;
    let req = offsets::OffsetForLeaderEpochRequest {
        replica_id: if v >= 3 { -1 } else { -2 },
        topics: vec![offsets::OffsetForLeaderTopic {
            topic: s("t"),
            partitions: vec![offsets::OffsetForLeaderPartition {
                partition: 0,
                current_leader_epoch: 3,
                leader_epoch: 1,
            }],
        }],
    };
    let resp = offsets::OffsetForLeaderEpochResponse {
        throttle_time_ms: 0,
        topics: vec![offsets::OffsetForLeaderTopicResult {
            topic: s("t"),
            partitions: vec![offsets::EpochEndOffset {
                error_code: KafkaCode::NONE,
                partition: 0,
                leader_epoch: 1,
                end_offset: 40,
            }],
        }],
    };
    pair::<_, _, k::OffsetForLeaderEpochRequest, k::OffsetForLeaderEpochResponse>(
        api::key::OFFSET_FOR_LEADER_EPOCH,
        v,
        req,
        resp,
    );
}

fn entry(name: &str) -> admin::ConfigEntry {
    admin::ConfigEntry {
        name: s(name),
        value: Some(s("1000")),
        read_only: false,
        config_source: 1,
        is_sensitive: false,
    }
}

fn create_topics(v: i16) {
    use kafka_protocol::messages as k;
    let req = admin::CreateTopicsRequest {
        topics: vec![admin::CreatableTopic {
            name: s("t"),
            num_partitions: 3,
            replication_factor: -1,
            assignments: vec![(0, vec![1, 2])],
            configs: vec![(s("retention.ms"), Some(s("1000"))), (s("x"), None)],
        }],
        timeout_ms: 30_000,
        validate_only: true,
    };
    let resp = admin::CreateTopicsResponse {
        throttle_time_ms: 0,
        topics: vec![admin::CreatableTopicResult {
            name: s("t"),
            topic_id: if v >= 7 { ID } else { Uuid::ZERO },
            error_code: KafkaCode::NONE,
            error_message: None,
            num_partitions: if v >= 5 { 3 } else { -1 },
            replication_factor: if v >= 5 { 1 } else { -1 },
            configs: if v >= 5 {
                Some(vec![entry("retention.ms")])
            } else {
                None
            },
        }],
    };
    pair::<_, _, k::CreateTopicsRequest, k::CreateTopicsResponse>(
        api::key::CREATE_TOPICS,
        v,
        req,
        resp,
    );
}

fn delete_topics(v: i16) {
    use kafka_protocol::messages as k;
    let req = admin::DeleteTopicsRequest {
        topics: vec![admin::DeleteTopicState {
            name: Some(s("t")),
            topic_id: Uuid::ZERO,
        }],
        timeout_ms: 30_000,
    };
    let resp = admin::DeleteTopicsResponse {
        throttle_time_ms: 0,
        responses: vec![admin::DeletableTopicResult {
            name: Some(s("t")),
            topic_id: if v >= 6 { ID } else { Uuid::ZERO },
            error_code: KafkaCode::UNKNOWN_TOPIC_OR_PARTITION,
            error_message: if v >= 5 {
                Some(s("no such topic"))
            } else {
                None
            },
        }],
    };
    pair::<_, _, k::DeleteTopicsRequest, k::DeleteTopicsResponse>(
        api::key::DELETE_TOPICS,
        v,
        req,
        resp,
    );
}

fn create_partitions(v: i16) {
    use kafka_protocol::messages as k;
    let req = admin::CreatePartitionsRequest {
        topics: vec![admin::CreatePartitionsTopic {
            name: s("t"),
            count: 6,
            assignments: None,
        }],
        timeout_ms: 1000,
        validate_only: false,
    };
    let resp = admin::CreatePartitionsResponse {
        throttle_time_ms: 0,
        results: vec![admin::TopicResult {
            name: s("t"),
            error_code: KafkaCode::INVALID_PARTITIONS,
            error_message: Some(s("can only grow")),
        }],
    };
    pair::<_, _, k::CreatePartitionsRequest, k::CreatePartitionsResponse>(
        api::key::CREATE_PARTITIONS,
        v,
        req,
        resp,
    );
}

fn describe_configs(v: i16) {
    use kafka_protocol::messages as k;
    let req = admin::DescribeConfigsRequest {
        resources: vec![admin::DescribeConfigsResource {
            resource_type: admin::RESOURCE_TOPIC,
            resource_name: s("t"),
            configuration_keys: Some(vec![s("retention.ms")]),
        }],
        include_synonyms: false,
        include_documentation: v >= 3,
    };
    let resp = admin::DescribeConfigsResponse {
        throttle_time_ms: 0,
        results: vec![admin::DescribeConfigsResult {
            error_code: KafkaCode::NONE,
            error_message: None,
            resource_type: admin::RESOURCE_TOPIC,
            resource_name: s("t"),
            configs: vec![admin::DescribedConfig {
                entry: entry("retention.ms"),
                config_type: if v >= 3 { 5 } else { 0 },
                documentation: None,
            }],
        }],
    };
    pair::<_, _, k::DescribeConfigsRequest, k::DescribeConfigsResponse>(
        api::key::DESCRIBE_CONFIGS,
        v,
        req,
        resp,
    );
}

fn incremental_alter_configs(v: i16) {
    use kafka_protocol::messages as k;
    let req = admin::IncrementalAlterConfigsRequest {
        resources: vec![admin::AlterConfigsResource {
            resource_type: admin::RESOURCE_TOPIC,
            resource_name: s("t"),
            configs: vec![admin::AlterableConfig {
                name: s("retention.ms"),
                config_operation: 0,
                value: Some(s("5")),
            }],
        }],
        validate_only: false,
    };
    let resp = admin::IncrementalAlterConfigsResponse {
        throttle_time_ms: 0,
        responses: vec![admin::AlterConfigsResourceResponse {
            error_code: KafkaCode::INVALID_CONFIG,
            error_message: Some(s("nope")),
            resource_type: admin::RESOURCE_TOPIC,
            resource_name: s("t"),
        }],
    };
    pair::<_, _, k::IncrementalAlterConfigsRequest, k::IncrementalAlterConfigsResponse>(
        api::key::INCREMENTAL_ALTER_CONFIGS,
        v,
        req,
        resp,
    );
}

fn alter_configs(v: i16) {
    use kafka_protocol::messages as k;
    let req = admin::AlterConfigsRequest {
        resources: vec![admin::AlterConfigsReplace {
            resource_type: admin::RESOURCE_TOPIC,
            resource_name: s("t"),
            configs: vec![
                (s("retention.ms"), Some(s("5"))),
                (s("segment.bytes"), None),
            ],
        }],
        validate_only: true,
    };
    let resp = admin::AlterConfigsResponse {
        throttle_time_ms: 0,
        responses: vec![admin::AlterConfigsResourceResponse {
            error_code: KafkaCode::NONE,
            error_message: None,
            resource_type: admin::RESOURCE_TOPIC,
            resource_name: s("t"),
        }],
    };
    pair::<_, _, k::AlterConfigsRequest, k::AlterConfigsResponse>(
        api::key::ALTER_CONFIGS,
        v,
        req,
        resp,
    );
}

#[test]
fn every_advertised_api_and_version_round_trips_against_the_oracle() {
    let mut checked = 0;
    for spec in APIS {
        for v in spec.min_version..=spec.max_version {
            match spec.key {
                api::key::API_VERSIONS => api_versions(v),
                api::key::METADATA => metadata(v),
                api::key::DESCRIBE_CLUSTER => describe_cluster(v),
                api::key::PRODUCE => produce_(v),
                api::key::INIT_PRODUCER_ID => init_producer_id(v),
                api::key::FETCH => fetch_(v),
                api::key::LIST_OFFSETS => list_offsets(v),
                api::key::OFFSET_FOR_LEADER_EPOCH => offset_for_leader_epoch(v),
                api::key::CREATE_TOPICS => create_topics(v),
                api::key::DELETE_TOPICS => delete_topics(v),
                api::key::CREATE_PARTITIONS => create_partitions(v),
                api::key::DESCRIBE_CONFIGS => describe_configs(v),
                api::key::INCREMENTAL_ALTER_CONFIGS => incremental_alter_configs(v),
                api::key::ALTER_CONFIGS => alter_configs(v),
                k @ (8..=16 | 24..=26 | 28 | 42 | 47) => {
                    group_messages(k, spec.name, v, spec.is_flexible(v));
                }
                other => panic!(
                    "API {} ({other}) is advertised but has no conformance check",
                    spec.name
                ),
            }
            checked += 1;
        }
    }
    assert!(checked >= 60, "only {checked} pairs checked");
}

#[test]
fn request_headers_agree_with_the_oracle() {
    use mk_adapter_kafka::frame::RequestHeader;
    for flexible in [false, true] {
        let ours = RequestHeader {
            api_key: 3,
            api_version: if flexible { 12 } else { 8 },
            correlation_id: 99,
            client_id: Some(s("rdkafka")),
        };
        let mut w = Writer::new(false);
        ours.write(&mut w, flexible);
        let bytes = w.into_bytes();
        let version = if flexible { 2 } else { 1 };
        let mut buf = bytes.clone();
        let theirs = kafka_protocol::messages::RequestHeader::decode(&mut buf, version).unwrap();
        assert!(buf.is_empty());
        assert_eq!(theirs.correlation_id, 99);
        assert_eq!(theirs.request_api_version, ours.api_version);
        assert_eq!(theirs.client_id.as_deref(), Some("rdkafka"));
        let mut r = Reader::new(&bytes, false);
        assert_eq!(RequestHeader::read(&mut r, flexible).unwrap(), ours);
        assert!(r.is_empty());
    }
}

// ----- consumer groups -------------------------------------------------------
//
// The group and transaction APIs' examples (run by the main test above).

use mk_adapter_kafka::api::{groups, txn};

fn producer() -> txn::TxnProducer {
    txn::TxnProducer {
        transactional_id: s("tx"),
        producer_id: 4,
        producer_epoch: 1,
    }
}

fn gpair<Req, Resp, OReq, OResp>(name: &str, v: i16, flexible: bool, req: Req, resp: Resp)
where
    Req: Message + PartialEq + Debug,
    Resp: Message + PartialEq + Debug,
    OReq: Encodable + Decodable + Debug + HeaderVersion,
    OResp: Encodable + Decodable + Debug + HeaderVersion,
{
    assert_eq!(
        OReq::header_version(v),
        if flexible { 2 } else { 1 },
        "{name} v{v}"
    );
    assert_eq!(OResp::header_version(v), i16::from(flexible), "{name} v{v}");
    check::<Req, OReq>(&format!("{name} request"), req, v, flexible);
    check::<Resp, OResp>(&format!("{name} response"), resp, v, flexible);
}

fn group_messages(key: i16, name: &str, v: i16, flexible: bool) {
    use kafka_protocol::messages as k;
    let b = |x: &'static [u8]| Bytes::from_static(x);
    match key {
        10 => gpair::<_, _, k::FindCoordinatorRequest, k::FindCoordinatorResponse>(
            name,
            v,
            flexible,
            groups::FindCoordinatorRequest {
                key: if v <= 3 { s("g") } else { s("") },
                key_type: if v >= 1 {
                    groups::KEY_TYPE_TRANSACTION
                } else {
                    0
                },
                coordinator_keys: if v >= 4 { vec![s("a"), s("b")] } else { vec![] },
            },
            groups::FindCoordinatorResponse {
                throttle_time_ms: 0,
                coordinator: groups::Coordinator {
                    key: s(""),
                    node_id: if v <= 3 { 1 } else { -1 },
                    host: if v <= 3 { s("127.0.0.1") } else { s("") },
                    port: if v <= 3 { 9092 } else { -1 },
                    error_code: KafkaCode::NONE,
                    error_message: None,
                },
                coordinators: if v >= 4 {
                    vec![groups::Coordinator {
                        key: s("a"),
                        node_id: 2,
                        host: s("h"),
                        port: 9093,
                        error_code: KafkaCode::NONE,
                        error_message: None,
                    }]
                } else {
                    vec![]
                },
            },
        ),
        11 => gpair::<_, _, k::JoinGroupRequest, k::JoinGroupResponse>(
            name,
            v,
            flexible,
            groups::JoinGroupRequest {
                group_id: s("g"),
                session_timeout_ms: 10_000,
                rebalance_timeout_ms: if v >= 1 { 30_000 } else { 10_000 },
                member_id: s("m-1"),
                group_instance_id: if v >= 5 { Some(s("i-1")) } else { None },
                protocol_type: s("consumer"),
                protocols: vec![groups::JoinGroupProtocol {
                    name: s("range"),
                    metadata: b(b"\x00\x01meta"),
                }],
                reason: if v >= 8 { Some(s("because")) } else { None },
            },
            groups::JoinGroupResponse {
                throttle_time_ms: 0,
                error_code: KafkaCode::NONE,
                generation_id: 3,
                protocol_type: if v >= 7 { Some(s("consumer")) } else { None },
                protocol_name: Some(s("range")),
                leader: s("m-1"),
                skip_assignment: false,
                member_id: s("m-1"),
                members: vec![groups::JoinGroupMember {
                    member_id: s("m-1"),
                    group_instance_id: if v >= 5 { Some(s("i-1")) } else { None },
                    metadata: b(b"meta"),
                }],
            },
        ),
        12 => gpair::<_, _, k::HeartbeatRequest, k::HeartbeatResponse>(
            name,
            v,
            flexible,
            groups::HeartbeatRequest {
                group_id: s("g"),
                generation_id: 4,
                member_id: s("m"),
                group_instance_id: if v >= 3 { Some(s("i")) } else { None },
            },
            groups::HeartbeatResponse {
                throttle_time_ms: 0,
                error_code: KafkaCode::REBALANCE_IN_PROGRESS,
            },
        ),
        13 => gpair::<_, _, k::LeaveGroupRequest, k::LeaveGroupResponse>(
            name,
            v,
            flexible,
            groups::LeaveGroupRequest {
                group_id: s("g"),
                members: vec![groups::LeavingMember {
                    member_id: s("m"),
                    group_instance_id: if v >= 3 { Some(s("i")) } else { None },
                    reason: if v >= 5 { Some(s("bye")) } else { None },
                }],
            },
            groups::LeaveGroupResponse {
                throttle_time_ms: 0,
                error_code: KafkaCode::NONE,
                members: if v >= 3 {
                    vec![groups::LeftMember {
                        member_id: s("m"),
                        group_instance_id: None,
                        error_code: KafkaCode::UNKNOWN_MEMBER_ID,
                    }]
                } else {
                    vec![]
                },
            },
        ),
        14 => gpair::<_, _, k::SyncGroupRequest, k::SyncGroupResponse>(
            name,
            v,
            flexible,
            groups::SyncGroupRequest {
                group_id: s("g"),
                generation_id: 2,
                member_id: s("m"),
                group_instance_id: if v >= 3 { Some(s("i")) } else { None },
                protocol_type: if v >= 5 { Some(s("consumer")) } else { None },
                protocol_name: if v >= 5 { Some(s("range")) } else { None },
                assignments: vec![groups::SyncGroupAssignment {
                    member_id: s("m"),
                    assignment: b(b"\x00\x00assign"),
                }],
            },
            groups::SyncGroupResponse {
                throttle_time_ms: 0,
                error_code: KafkaCode::NONE,
                protocol_type: if v >= 5 { Some(s("consumer")) } else { None },
                protocol_name: if v >= 5 { Some(s("range")) } else { None },
                assignment: b(b"assign"),
            },
        ),
        15 => gpair::<_, _, k::DescribeGroupsRequest, k::DescribeGroupsResponse>(
            name,
            v,
            flexible,
            groups::DescribeGroupsRequest {
                groups: vec![s("g")],
                include_authorized_operations: v >= 3,
            },
            groups::DescribeGroupsResponse {
                throttle_time_ms: 0,
                groups: vec![groups::DescribedGroup {
                    error_code: KafkaCode::NONE,
                    group_id: s("g"),
                    group_state: s("Stable"),
                    protocol_type: s("consumer"),
                    protocol_data: s("range"),
                    members: vec![groups::DescribedMember {
                        member_id: s("m"),
                        group_instance_id: if v >= 4 { Some(s("i")) } else { None },
                        client_id: s("c"),
                        client_host: s("/127.0.0.1"),
                        member_metadata: b(b"md"),
                        member_assignment: b(b"as"),
                    }],
                    authorized_operations: if v >= 3 { 3 } else { i32::MIN },
                }],
            },
        ),
        16 => gpair::<_, _, k::ListGroupsRequest, k::ListGroupsResponse>(
            name,
            v,
            flexible,
            groups::ListGroupsRequest {
                states_filter: if v >= 4 { vec![s("Stable")] } else { vec![] },
            },
            groups::ListGroupsResponse {
                throttle_time_ms: 0,
                error_code: KafkaCode::NONE,
                groups: vec![groups::ListedGroup {
                    group_id: s("g"),
                    protocol_type: s("consumer"),
                    group_state: if v >= 4 { s("Stable") } else { s("") },
                }],
            },
        ),
        8 => gpair::<_, _, k::OffsetCommitRequest, k::OffsetCommitResponse>(
            name,
            v,
            flexible,
            groups::OffsetCommitRequest {
                group_id: s("g"),
                generation_id: -1,
                member_id: s(""),
                group_instance_id: if v >= 7 { Some(s("i")) } else { None },
                retention_time_ms: -1,
                topics: vec![groups::OffsetCommitTopic {
                    name: s("t"),
                    partitions: vec![groups::OffsetCommitPartition {
                        partition_index: 1,
                        committed_offset: 77,
                        committed_leader_epoch: if v >= 6 { 2 } else { -1 },
                        committed_metadata: Some(s("")),
                    }],
                }],
            },
            groups::OffsetCommitResponse {
                throttle_time_ms: 0,
                topics: vec![groups::TopicPartitionErrors {
                    name: s("t"),
                    partitions: vec![(1, KafkaCode::NONE)],
                }],
            },
        ),
        9 => gpair::<_, _, k::OffsetFetchRequest, k::OffsetFetchResponse>(
            name,
            v,
            flexible,
            groups::OffsetFetchRequest {
                groups: vec![groups::OffsetFetchGroup {
                    group_id: s("g"),
                    topics: if v >= 2 {
                        None
                    } else {
                        Some(vec![groups::OffsetFetchTopic {
                            name: s("t"),
                            partition_indexes: vec![0, 1],
                        }])
                    },
                }],
                require_stable: v >= 7,
            },
            groups::OffsetFetchResponse {
                throttle_time_ms: 0,
                groups: vec![groups::FetchedGroup {
                    group_id: if v >= 8 { s("g") } else { s("") },
                    topics: vec![groups::FetchedTopic {
                        name: s("t"),
                        partitions: vec![groups::FetchedOffset {
                            partition_index: 0,
                            committed_offset: 5,
                            committed_leader_epoch: -1,
                            metadata: Some(s("")),
                            error_code: KafkaCode::NONE,
                        }],
                    }],
                    error_code: KafkaCode::NONE,
                }],
            },
        ),
        42 => gpair::<_, _, k::DeleteGroupsRequest, k::DeleteGroupsResponse>(
            name,
            v,
            flexible,
            groups::DeleteGroupsRequest {
                groups_names: vec![s("g"), s("h")],
            },
            groups::DeleteGroupsResponse {
                throttle_time_ms: 0,
                results: vec![(s("g"), KafkaCode(68)), (s("h"), KafkaCode::NONE)],
            },
        ),
        47 => gpair::<_, _, k::OffsetDeleteRequest, k::OffsetDeleteResponse>(
            name,
            v,
            flexible,
            groups::OffsetDeleteRequest {
                group_id: s("g"),
                topics: vec![(s("t"), vec![0, 2])],
            },
            groups::OffsetDeleteResponse {
                error_code: KafkaCode::NONE,
                throttle_time_ms: 0,
                topics: vec![groups::TopicPartitionErrors {
                    name: s("t"),
                    partitions: vec![(0, KafkaCode(86))],
                }],
            },
        ),
        24 => gpair::<_, _, k::AddPartitionsToTxnRequest, k::AddPartitionsToTxnResponse>(
            name,
            v,
            flexible,
            txn::AddPartitionsToTxnRequest {
                producer: producer(),
                topics: vec![(s("t"), vec![0, 2])],
            },
            txn::AddPartitionsToTxnResponse {
                throttle_time_ms: 0,
                results: vec![groups::TopicPartitionErrors {
                    name: s("t"),
                    partitions: vec![(0, KafkaCode::NONE), (2, KafkaCode(51))],
                }],
            },
        ),
        25 => gpair::<_, _, k::AddOffsetsToTxnRequest, k::AddOffsetsToTxnResponse>(
            name,
            v,
            flexible,
            txn::AddOffsetsToTxnRequest {
                producer: producer(),
                group_id: s("g"),
            },
            txn::TxnErrorResponse {
                throttle_time_ms: 0,
                error_code: KafkaCode::NONE,
            },
        ),
        26 => gpair::<_, _, k::EndTxnRequest, k::EndTxnResponse>(
            name,
            v,
            flexible,
            txn::EndTxnRequest {
                producer: producer(),
                committed: true,
            },
            txn::TxnErrorResponse {
                throttle_time_ms: 0,
                error_code: KafkaCode::PRODUCER_FENCED,
            },
        ),
        28 => gpair::<_, _, k::TxnOffsetCommitRequest, k::TxnOffsetCommitResponse>(
            name,
            v,
            flexible,
            txn::TxnOffsetCommitRequest {
                transactional_id: s("tx"),
                group_id: s("g"),
                producer_id: 4,
                producer_epoch: 1,
                generation_id: if v >= 3 { 7 } else { -1 },
                member_id: if v >= 3 { s("m") } else { s("") },
                group_instance_id: None,
                topics: vec![(
                    s("t"),
                    vec![txn::TxnOffsetCommitPartition {
                        partition_index: 0,
                        committed_offset: 9,
                        committed_leader_epoch: if v >= 2 { 1 } else { -1 },
                        committed_metadata: None,
                    }],
                )],
            },
            txn::TxnOffsetCommitResponse {
                throttle_time_ms: 0,
                results: vec![groups::TopicPartitionErrors {
                    name: s("t"),
                    partitions: vec![(0, KafkaCode::NONE)],
                }],
            },
        ),
        other => panic!("no group example for key {other}"),
    }
}
