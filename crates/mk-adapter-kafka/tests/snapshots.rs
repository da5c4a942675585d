//! Insta snapshots of the exact response bytes of the main APIs, served by
//! a live broker with fixed ids and a manual clock: any change to what
//! clients receive shows up as a diff to review (`cargo xtask
//! test-snapshots`; accept with `cargo insta review`).
#![allow(
    clippy::too_many_lines,
    reason = "a test scenario reads top to bottom as one story; split, its steps would scatter"
)]

mod common;

use bytes::Bytes;
use common::*;
use mk_adapter_kafka::KafkaOptions;
use mk_adapter_kafka::api::{admin, key, offsets};
use mk_adapter_kafka::frame::split_response;
use mk_adapter_kafka::messages::api_versions::ApiVersionsRequest;
use mk_adapter_kafka::messages::create_topics::{CreatableTopic, CreateTopicsRequest};
use mk_adapter_kafka::messages::describe_configs::{
    DescribeConfigsRequest, DescribeConfigsResource,
};
use mk_adapter_kafka::messages::fetch::{FetchPartition, FetchRequest, FetchTopic};
use mk_adapter_kafka::messages::list_offsets::{
    ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic,
};
use mk_adapter_kafka::messages::metadata::MetadataRequest;
use mk_adapter_kafka::messages::produce::{PartitionProduceData, ProduceRequest, TopicProduceData};
use mk_adapter_kafka::mk_cluster::{Header, ProducerInfo, Record};
use std::fmt::Write as _;

/// A one-broker harness whose cluster id and topic id are fixed, with a
/// topic `snap` holding two records at fixed timestamps.
async fn harness() -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::open(dir, vec![1], KafkaOptions::default(), |c| c).await;
    h.cluster.topics().create("snap", 1, 1).unwrap();
    let Harness {
        dir,
        cluster,
        server,
        ..
    } = h;
    server.shutdown().await;
    cluster.lifecycle().close().await.unwrap();
    let path = dir.path().join("metadata.json");
    let mut meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    meta["cluster_id"] = "MkSnapshotCluster00000A".into();
    meta["topics"]["snap"]["topic_id"] = "00000000-0000-4000-8000-000000000001".into();
    std::fs::write(&path, serde_json::to_vec(&meta).unwrap()).unwrap();
    Harness::open(dir, vec![1], KafkaOptions::default(), |c| c).await
}

/// The body as hex, 32 bytes a line; the listener's port (picked by the
/// OS, so different on every run) is shown as `pp pp pp pp`.
fn hex(label: &str, body: &Bytes, port: u16, out: &mut String) {
    writeln!(out, "{label} ({} bytes)", body.len()).unwrap();
    let port = i32::from(port).to_be_bytes();
    let mut tokens: Vec<String> = Vec::with_capacity(body.len());
    let mut i = 0;
    while i < body.len() {
        if body[i..].starts_with(&port) {
            tokens.extend(std::iter::repeat_n("pp".to_string(), 4));
            i += 4;
        } else {
            tokens.push(format!("{:02x}", body[i]));
            i += 1;
        }
    }
    for line in tokens.chunks(32) {
        writeln!(out, "  {}", line.join(" ")).unwrap();
    }
}

/// A connection whose responses are written down as hex, one after the
/// other, with the listener's port masked.
struct Recorder {
    c: Conn,
    port: u16,
    out: String,
}

impl Recorder {
    /// Sends a request and records the response body's bytes.
    async fn record<M: mk_adapter_kafka::api::Message>(
        &mut self,
        label: &str,
        api_key: i16,
        version: i16,
        body: &M,
    ) {
        let id = self.c.send(api_key, version, body).await;
        let flexible = mk_adapter_kafka::api::spec(api_key)
            .unwrap()
            .is_flexible(version);
        let frame = self.c.read_frame().await.unwrap();
        let (got, body) = split_response(&frame, flexible && api_key != key::API_VERSIONS).unwrap();
        assert_eq!(got, id);
        hex(
            &format!("{label} v{version}"),
            &body,
            self.port,
            &mut self.out,
        );
    }
}

#[tokio::test]
async fn snapshot_main_api_responses() {
    let h = harness().await;
    let mut r = Recorder {
        c: h.conn(1).await,
        port: h.addr(1).port(),
        out: String::new(),
    };
    let records = vec![
        Record::new(
            Some(Bytes::from_static(b"k")),
            Some(Bytes::from_static(b"v1")),
            1_700_000_000_000,
        )
        .with_headers(vec![Header::new("h", None)]),
        Record::new(None, Some(Bytes::new()), 1_700_000_000_005),
    ];
    let produce = ProduceRequest {
        transactional_id: None,
        acks: -1,
        timeout_ms: 1_000,
        topic_data: vec![TopicProduceData {
            name: "snap".into(),
            partition_data: vec![PartitionProduceData {
                index: 0,
                records: Some(batch_bytes(records, ProducerInfo::NONE)),
            }],
            ..TopicProduceData::default()
        }],
    };
    r.record(
        "ApiVersions",
        key::API_VERSIONS,
        3,
        &ApiVersionsRequest::default(),
    )
    .await;
    let all = MetadataRequest {
        topics: None,
        allow_auto_topic_creation: false,
        include_cluster_authorized_operations: false,
        include_topic_authorized_operations: false,
    };
    r.record("Metadata", key::METADATA, 12, &all).await;
    r.record("Metadata", key::METADATA, 1, &all).await;
    r.record("Produce", key::PRODUCE, 9, &produce).await;
    r.record("Produce", key::PRODUCE, 3, &produce).await;
    let fetch = FetchRequest {
        max_wait_ms: 0,
        min_bytes: 0,
        max_bytes: 1 << 20,
        isolation_level: 1,
        topics: vec![FetchTopic {
            topic: "snap".into(),
            partitions: vec![FetchPartition {
                partition: 0,
                current_leader_epoch: 0,
                fetch_offset: 0,
                partition_max_bytes: 1 << 20,
                ..FetchPartition::default()
            }],
            ..FetchTopic::default()
        }],
        ..FetchRequest::default()
    };
    r.record("Fetch", key::FETCH, 12, &fetch).await;
    r.record("Fetch", key::FETCH, 4, &fetch).await;
    let list = |timestamp| ListOffsetsRequest {
        replica_id: -1,
        topics: vec![ListOffsetsTopic {
            name: "snap".into(),
            partitions: vec![ListOffsetsPartition {
                partition_index: 0,
                current_leader_epoch: -1,
                timestamp,
            }],
        }],
        ..ListOffsetsRequest::default()
    };
    r.record(
        "ListOffsets latest",
        key::LIST_OFFSETS,
        7,
        &list(offsets::LATEST_TIMESTAMP),
    )
    .await;
    r.record(
        "ListOffsets max timestamp",
        key::LIST_OFFSETS,
        7,
        &list(offsets::MAX_TIMESTAMP),
    )
    .await;
    let create = CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: "snap".into(),
            num_partitions: 1,
            replication_factor: 1,
            assignments: vec![],
            configs: vec![],
        }],
        timeout_ms: 1_000,
        validate_only: false,
    };
    r.record("CreateTopics existing", key::CREATE_TOPICS, 7, &create)
        .await;
    let describe = DescribeConfigsRequest {
        resources: vec![DescribeConfigsResource {
            resource_type: admin::RESOURCE_TOPIC,
            resource_name: "snap".into(),
            configuration_keys: None,
        }],
        include_synonyms: false,
        include_documentation: false,
    };
    r.record("DescribeConfigs", key::DESCRIBE_CONFIGS, 4, &describe)
        .await;
    // A too-new ApiVersions is answered with a v0 body.
    r.record(
        "ApiVersions (too new, answered as v0)",
        key::API_VERSIONS,
        9,
        &ApiVersionsRequest::default(),
    )
    .await;
    insta::assert_snapshot!(r.out);
    h.stop().await;
}
