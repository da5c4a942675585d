//! The client surface of issue 21 through live Kafka listeners: commit
//! metadata and leader epochs answered back by OffsetFetch (and through
//! TxnOffsetCommit), each request encoded as a Kafka client encodes it.

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
