//! Transactions: every transactional id's current state, and the
//! transactions completed since the broker started.

use crate::http::ApiError;
use mk_cluster::{BrokerCluster, TopicPartition};
use serde_json::{Value, json};

/// `GET /api/transactions`.
pub(super) fn list(c: &BrokerCluster) -> Result<Value, ApiError> {
    let current: Vec<Value> = c
        .transactions()
        .list()?
        .iter()
        .map(|t| {
            json!({
                "transactional_id": t.transactional_id,
                "state": t.state.as_str(),
                "producer_id": t.producer_id,
                "producer_epoch": t.producer_epoch,
                "timeout_ms": t.timeout_ms,
                "start_ms": t.start_ms,
                "partitions": partitions_json(&t.partitions),
                "groups": t.groups,
                "completing": t.completing,
                "abort_only": t.abort_only,
            })
        })
        .collect();
    let recent: Vec<Value> = c
        .transactions()
        .recent()?
        .iter()
        .rev()
        .map(|t| {
            json!({
                "transactional_id": t.transactional_id,
                "state": t.state.as_str(),
                "producer_id": t.producer_id,
                "producer_epoch": t.producer_epoch,
                "partitions": partitions_json(&t.partitions),
                "groups": t.groups,
                "start_ms": t.start_ms,
                "completed_ms": t.completed_ms,
            })
        })
        .collect();
    Ok(json!({ "transactions": current, "recent": recent }))
}

fn partitions_json(tps: &[TopicPartition]) -> Value {
    tps.iter()
        .map(|tp| json!({"topic": tp.topic, "partition": tp.partition}))
        .collect()
}
