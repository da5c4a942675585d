//! `GET /api/overview`: the cluster at a glance (`views().overview()`).

use crate::http::ApiError;
use mk_cluster::{BrokerCluster, ClusterOverview};
use serde_json::{Value, json};

pub(super) fn get(c: &BrokerCluster) -> Result<Value, ApiError> {
    Ok(encode(&c.views().overview()?, c.clock().now_ms()))
}

fn encode(o: &ClusterOverview, now_ms: i64) -> Value {
    let s = &o.stats;
    json!({
        "cluster_id": o.cluster_id,
        "now_ms": now_ms,
        "uptime_ms": s.uptime_ms,
        "brokers": o.brokers.iter().map(|(id, online)| json!({"id": id, "online": online})).collect::<Vec<_>>(),
        "partitions": {
            "total": o.partitions.total,
            "online": o.partitions.online,
            "offline": o.partitions.offline,
            "damaged": o.partitions.damaged,
            "under_replicated": o.partitions.under_replicated,
        },
        "topics": s.topics,
        "groups": s.groups,
        "transactions": s.transactions,
        "records": s.records,
        "log_bytes": s.log_bytes,
        "disk": o.disk.map(|d| json!({"total_bytes": d.total_bytes, "available_bytes": d.available_bytes})),
        "disk_full": o.disk_full.as_ref().map(|f| json!({
            "since_ms": f.since_ms,
            "path": f.path.display().to_string(),
            "error": f.error,
        })),
        "damaged": o.damaged.iter().map(|(tp, cause)| json!({
            "topic": tp.topic, "partition": tp.partition, "cause": cause,
        })).collect::<Vec<_>>(),
        "traffic": {
            "produced_records": o.traffic.produced_records,
            "fetched_records": o.traffic.fetched_records,
            "fetched_bytes": o.traffic.fetched_bytes,
        },
    })
}
