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
            txn_json!(t, {
                "timeout_ms": t.timeout_ms,
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
        .map(|t| txn_json!(t, { "completed_ms": t.completed_ms }))
        .collect();
    Ok(json!({ "transactions": current, "recent": recent }))
}

/// A transaction, current or completed: the fields both have, then
/// `$extra`'s.
macro_rules! txn_json {
    ($t:expr, $extra:tt) => {{
        let mut v = json!({
            "transactional_id": $t.transactional_id,
            "state": $t.state.as_str(),
            "producer_id": $t.producer_id,
            "producer_epoch": $t.producer_epoch,
            "partitions": partitions_json(&$t.partitions),
            "groups": $t.groups,
            "start_ms": $t.start_ms,
        });
        if let (Some(fields), Value::Object(extra)) = (v.as_object_mut(), json!($extra)) {
            fields.extend(extra);
        }
        v
    }};
}
use txn_json;

fn partitions_json(tps: &[TopicPartition]) -> Value {
    tps.iter()
        .map(|tp| json!({"topic": tp.topic, "partition": tp.partition}))
        .collect()
}
