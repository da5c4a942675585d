//! A partition that failed (a failed invariant under its lock, or a
//! poisoned lock) is offline on the Kafka wire as a damaged one is, while
//! the rest of the topic serves (issue 22, item 2).

mod common;

use common::{Harness, within};
use mk_adapter_kafka::api::key;
use mk_adapter_kafka::errors::KafkaCode;
use mk_adapter_kafka::messages::metadata::{
    MetadataRequest, MetadataRequestTopic, MetadataResponse,
};
use mk_adapter_kafka::mk_cluster::{AckMode, Record, RecordBatch, TopicPartition};

#[tokio::test]
async fn metadata_reports_a_failed_partition_offline_and_the_others_led() {
    let h = Harness::one().await;
    h.cluster.topics().create("orders", 2, 1).unwrap();
    h.cluster
        .poison_partition_lock(&TopicPartition::new("orders", 1))
        .unwrap();
    let mut c = h.conn(1).await;
    let req = MetadataRequest {
        topics: Some(vec![MetadataRequestTopic {
            name: Some("orders".into()),
            ..MetadataRequestTopic::default()
        }]),
        ..MetadataRequest::default()
    };
    let r: MetadataResponse = within(c.call(key::METADATA, 12, &req)).await;
    let parts = &r.topics[0].partitions;
    assert_eq!(r.topics[0].error_code, KafkaCode::NONE);
    assert_eq!(parts.len(), 2);
    let p0 = parts.iter().find(|p| p.partition_index == 0).unwrap();
    let p1 = parts.iter().find(|p| p.partition_index == 1).unwrap();
    assert_eq!((p0.error_code, p0.leader_id), (KafkaCode::NONE, 1));
    assert_eq!(
        (p1.error_code, p1.leader_id, p1.offline_replicas.clone()),
        (KafkaCode::KAFKA_STORAGE_ERROR, -1, vec![1])
    );
    // The healthy partition takes writes; the connection stays usable.
    h.cluster
        .data()
        .append_batch(
            &TopicPartition::new("orders", 0),
            RecordBatch::new(vec![Record::new(None, Some("v".into()), 1)]).unwrap(),
            AckMode::One,
        )
        .await
        .unwrap();
    let again: MetadataResponse = within(c.call(key::METADATA, 12, &req)).await;
    assert_eq!(again.topics[0].partitions.len(), 2);
    h.stop().await;
}
