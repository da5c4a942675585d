//! The client surface of issue 21 through live Kafka listeners: commit
//! metadata and leader epochs answered back by OffsetFetch, keyless records
//! refused by compacted topics with per-record errors, each request
//! encoded as a Kafka client encodes it.

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
use mk_adapter_kafka::messages::produce::{
    PartitionProduceData, ProduceRequest, ProduceResponse, TopicProduceData,
};
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
    let h = Harness::one().await;
    h.cluster.topics().create("t", 3, 1).unwrap();
    let mut c = h.conn(1).await;
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
    ProduceRequest {
        transactional_id: None,
        acks: -1,
        timeout_ms: 5_000,
        topic_data: vec![TopicProduceData {
            name: topic.into(),
            partition_data: vec![PartitionProduceData {
                index: 0,
                records: Some(records),
            }],
            ..TopicProduceData::default()
        }],
    }
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
    let r: ProduceResponse = c
        .call(key::PRODUCE, 7, &produce("kv", records(&[None])))
        .await;
    assert_eq!(
        r.responses[0].partition_responses[0].error_code,
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
