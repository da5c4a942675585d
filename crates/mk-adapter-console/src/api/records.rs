//! Records: browse a partition as stored (markers, aborted and unstable
//! data marked by the core) and produce one record with headers.

use super::partition_of;
use crate::http::{ApiError, Query, bytes_json, decode_bytes, opt_int};
use mk_cluster::{
    AckMode, BrokerCluster, BrowseFrom, BrowsedRecord, ControlType, Header, ProduceEntry,
    ProduceRequest, TopicPartition,
};
use serde_json::{Value, json};

/// Records per page when the request names no limit.
const DEFAULT_LIMIT: i64 = 50;
/// How long a produce waits for acks=all.
const ACK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(15);
/// The most headers one produced record may carry.
const MAX_HEADERS: usize = 64;

/// `GET /api/topics/{t}/partitions/{p}/records?offset=N|timestamp=MS&limit=N`.
pub(super) fn browse(
    c: &BrokerCluster,
    topic: &str,
    p: &str,
    q: &Query,
) -> Result<Value, ApiError> {
    let tp = TopicPartition::new(topic, partition_of(p)?);
    let from = match (q.int("offset")?, q.int("timestamp")?) {
        (Some(_), Some(_)) => {
            return Err(ApiError::bad_request("give offset or timestamp, not both"));
        }
        (_, Some(ts)) => BrowseFrom::Timestamp(ts),
        (o, None) => BrowseFrom::Offset(o.unwrap_or(0)),
    };
    let limit = q.int("limit")?.unwrap_or(DEFAULT_LIMIT);
    let limit = usize::try_from(limit)
        .map_err(|_| ApiError::bad_request(format!("limit must be >= 0, got {limit}")))?;
    let page = c.views().browse(&tp, from, limit)?;
    Ok(json!({
        "topic": tp.topic,
        "partition": tp.partition,
        "start_offset": page.start_offset,
        "next_offset": page.next_offset,
        "log_start_offset": page.log_start_offset,
        "high_watermark": page.high_watermark,
        "last_stable_offset": page.last_stable_offset,
        "log_end_offset": page.log_end_offset,
        "records": page.records.iter().map(record_json).collect::<Vec<_>>(),
    }))
}

fn record_json(r: &BrowsedRecord) -> Value {
    json!({
        "offset": r.offset,
        "timestamp_ms": r.timestamp_ms,
        "key": bytes_json(r.key.as_ref()),
        "value": bytes_json(r.value.as_ref()),
        "headers": r.headers.iter()
            .map(|h| json!({"key": h.key, "value": bytes_json(h.value.as_ref())}))
            .collect::<Vec<_>>(),
        "control": r.control.map(|c| match c {
            ControlType::Commit => "COMMIT",
            ControlType::Abort => "ABORT",
        }),
        "producer_id": r.producer_id,
        "producer_epoch": r.producer_epoch,
        "transactional": r.transactional,
        "aborted": r.aborted,
        "beyond_lso": r.beyond_lso,
        "leader_epoch": r.leader_epoch,
    })
}

/// `POST /api/topics/{t}/records` `{partition?, key, value, headers:
/// [{key, value}], encoding: "text"|"base64"}`: one record, acks=all; the
/// core's partitioner picks the partition when none is given.
pub(super) async fn produce(
    c: &BrokerCluster,
    topic: &str,
    body: &Value,
) -> Result<Value, ApiError> {
    let base64 = match body.get("encoding").and_then(Value::as_str) {
        None | Some("text") => false,
        Some("base64") => true,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "encoding must be \"text\" or \"base64\", got {other:?}"
            )));
        }
    };
    let null = Value::Null;
    let entry = ProduceEntry {
        key: decode_bytes(body.get("key").unwrap_or(&null), base64, "key")?,
        value: decode_bytes(body.get("value").unwrap_or(&null), base64, "value")?,
        headers: headers(body.get("headers"), base64)?,
        ..ProduceEntry::default()
    };
    let partition = opt_int(body, "partition")?
        .map(|p| {
            u32::try_from(p)
                .map_err(|_| ApiError::bad_request(format!("partition must be >= 0, got {p}")))
        })
        .transpose()?;
    let tp = c
        .data()
        .route_produce(topic, partition, std::slice::from_ref(&entry))?;
    let produced = c.data().produce(ProduceRequest {
        tp,
        records: vec![entry],
        acks: AckMode::All,
        producer: None,
    });
    let answer = tokio::time::timeout(ACK_TIMEOUT, produced)
        .await
        .map_err(|_| ApiError {
            status: hyper::StatusCode::SERVICE_UNAVAILABLE,
            code: mk_cluster::ErrorCode::RequestTimedOut.as_str(),
            message: format!(
                "the record was appended but not acknowledged by the in-sync replicas within {} s (in lab mode, step replication); it may still commit",
                ACK_TIMEOUT.as_secs()
            ),
        })??;
    Ok(json!({
        "topic": topic,
        "partition": answer.partition,
        "offset": answer.base_offset,
    }))
}

fn headers(v: Option<&Value>, base64: bool) -> Result<Vec<Header>, ApiError> {
    let Some(v) = v.filter(|v| !v.is_null()) else {
        return Ok(Vec::new());
    };
    let list = v
        .as_array()
        .ok_or_else(|| ApiError::bad_request("headers must be a list of {key, value}"))?;
    if list.len() > MAX_HEADERS {
        return Err(ApiError::bad_request(format!(
            "at most {MAX_HEADERS} headers, got {}",
            list.len()
        )));
    }
    list.iter()
        .map(|h| {
            let key = h
                .get("key")
                .and_then(Value::as_str)
                .ok_or_else(|| ApiError::bad_request("a header's key must be a string"))?;
            let value = decode_bytes(
                h.get("value").unwrap_or(&Value::Null),
                base64,
                "a header's value",
            )?;
            Ok(Header::new(key, value))
        })
        .collect()
}
