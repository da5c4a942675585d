//! What a Produce answer says about the topic's settings: the broker time
//! a LogAppendTime topic stamped (`log_append_time_ms`, -1 for CreateTime
//! topics), and the topic's own `min.insync.replicas` refusing acks=all
//! with NOT_ENOUGH_REPLICAS while acks=1 goes through.

mod common;

use common::*;
use mk_adapter_kafka::api::key;
use mk_adapter_kafka::errors::KafkaCode;
use mk_adapter_kafka::messages::produce::{
    PartitionProduceResponse, ProduceRequest, ProduceResponse,
};
use mk_adapter_kafka::mk_cluster::ConfigChange;

fn produce(topic: &str, acks: i16) -> ProduceRequest {
    values_request(topic, 0, acks, &["x"])
}

fn answer(r: &ProduceResponse) -> &PartitionProduceResponse {
    &r.responses[0].partition_responses[0]
}

fn set(key: &str, value: &str) -> ConfigChange {
    ConfigChange::Set {
        key: key.into(),
        value: value.into(),
    }
}

#[tokio::test]
async fn log_append_time_is_answered_for_log_append_time_topics_only() {
    let h = Harness::one().await;
    h.cluster.topics().create("stamped", 1, 1).unwrap();
    h.cluster.topics().create("created", 1, 1).unwrap();
    h.cluster
        .topics()
        .alter_config(
            "stamped",
            &[set("message.timestamp.type", "LogAppendTime")],
            false,
        )
        .unwrap();
    h.clock.advance(1_234);
    let now = h.cluster.clock().now_ms();
    let mut c = h.conn(1).await;
    for v in [3, 8, 12] {
        let r: ProduceResponse = c.call(key::PRODUCE, v, &produce("stamped", 1)).await;
        assert_eq!(answer(&r).error_code, KafkaCode::NONE, "v{v}");
        assert_eq!(answer(&r).log_append_time_ms, now, "v{v}");
        let r: ProduceResponse = c.call(key::PRODUCE, v, &produce("created", 1)).await;
        assert_eq!(answer(&r).error_code, KafkaCode::NONE, "v{v}");
        assert_eq!(answer(&r).log_append_time_ms, -1, "v{v}");
    }
}

#[tokio::test]
async fn a_topics_min_insync_replicas_refuses_acks_all_beyond_its_isr() {
    let h = Harness::one().await;
    h.cluster.topics().create("strict", 1, 1).unwrap();
    h.cluster
        .topics()
        .alter_config("strict", &[set("min.insync.replicas", "2")], false)
        .unwrap();
    let mut c = h.conn(1).await;
    let r: ProduceResponse = c.call(key::PRODUCE, 11, &produce("strict", -1)).await;
    assert_eq!(answer(&r).error_code, KafkaCode::NOT_ENOUGH_REPLICAS);
    let r: ProduceResponse = c.call(key::PRODUCE, 11, &produce("strict", 1)).await;
    assert_eq!(answer(&r).error_code, KafkaCode::NONE);
    assert_eq!(
        answer(&r).base_offset,
        0,
        "the refused batch was not written"
    );
}
