//! Consumer groups: the list with total lag, one group's members,
//! assignments and lag per partition, and offset resets (a dry run that
//! shows the core's plan, then its execution).

use crate::http::{ApiError, opt_int, str_field};
use mk_cluster::{BrokerCluster, GroupDescription, PartitionLag, PlannedReset, ResetTarget};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// `GET /api/groups`: every group with its state, protocol, members and
/// total lag.
pub(super) fn list(c: &BrokerCluster) -> Result<Value, ApiError> {
    let mut lag: BTreeMap<String, i64> = BTreeMap::new();
    for (group, _, l) in c.groups().lags()? {
        *lag.entry(group).or_default() += l;
    }
    let mut groups = Vec::new();
    for listing in c.groups().listings()? {
        let members = c
            .groups()
            .describe(&listing.group_id)?
            .map_or(0, |d| d.members.len());
        groups.push(json!({
            "group_id": listing.group_id,
            "protocol_type": listing.protocol_type,
            "state": listing.state.as_str(),
            "members": members,
            "lag": lag.get(&listing.group_id).copied().unwrap_or(0),
        }));
    }
    Ok(json!({ "groups": groups }))
}

/// `GET /api/groups/{g}`: state, protocol, members with assignments, and
/// each partition's committed offset and lag.
pub(super) fn describe(c: &BrokerCluster, group: &str) -> Result<Value, ApiError> {
    let d = c.groups().describe(group)?;
    let lag = c.groups().lag_of(group)?;
    if d.is_none() && lag.is_empty() {
        return Err(ApiError::not_found(format!(
            "group {group:?} does not exist"
        )));
    }
    let mut v = d.as_ref().map_or_else(
        || json!({"group_id": group, "state": "Dead", "members": []}),
        description_json,
    );
    v["partitions"] = lag.iter().map(lag_json).collect();
    v["total_lag"] = json!(lag.iter().filter_map(|l| l.lag).sum::<i64>());
    Ok(v)
}

fn description_json(d: &GroupDescription) -> Value {
    json!({
        "group_id": d.group_id,
        "state": d.state.as_str(),
        "generation": d.generation,
        "protocol_type": d.protocol_type,
        "protocol_name": d.protocol_name,
        "coordinator_assignor": d.assignor.name(),
        "members": d.members.iter().map(|m| json!({
            "member_id": m.member_id,
            "client_id": m.client_id,
            "client_host": m.client_host,
            "group_instance_id": m.group_instance_id,
            "topics": m.topics,
            "assignment": m.assignment.iter()
                .map(|tp| json!({"topic": tp.topic, "partition": tp.partition}))
                .collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

fn lag_json(l: &PartitionLag) -> Value {
    json!({
        "topic": l.tp.topic,
        "partition": l.tp.partition,
        "committed": l.committed,
        "log_start_offset": l.log_start_offset,
        "high_watermark": l.high_watermark,
        "lag": l.lag,
        "member_id": l.member_id,
    })
}

/// `POST /api/groups/{g}/reset-offsets` `{topics: [..], to: "earliest" |
/// "latest" | "offset" | "timestamp" | "shift", value, execute}`: the plan,
/// applied only with `execute: true`.
pub(super) fn reset_offsets(
    c: &BrokerCluster,
    group: &str,
    body: &Value,
) -> Result<Value, ApiError> {
    let topics: Vec<String> = match body.get("topics") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(ts)) => ts
            .iter()
            .map(|t| {
                t.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| ApiError::bad_request("topics must be a list of names"))
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(ApiError::bad_request("topics must be a list of names")),
    };
    let target = target_of(body)?;
    let execute = body
        .get("execute")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let plan = c.groups().plan_offset_reset(group, &topics, target)?;
    if execute {
        c.groups().execute_offset_reset(group, &plan)?;
    }
    Ok(json!({
        "group_id": group,
        "executed": execute,
        "plan": plan.iter().map(plan_json).collect::<Vec<_>>(),
    }))
}

fn target_of(body: &Value) -> Result<ResetTarget, ApiError> {
    let value = || {
        opt_int(body, "value")?
            .ok_or_else(|| ApiError::bad_request("this target needs an integer value"))
    };
    Ok(match str_field(body, "to")? {
        "earliest" => ResetTarget::Earliest,
        "latest" => ResetTarget::Latest,
        "offset" => ResetTarget::Offset(value()?),
        "timestamp" => ResetTarget::Timestamp(value()?),
        "shift" => ResetTarget::ShiftBy(value()?),
        other => {
            return Err(ApiError::bad_request(format!(
                "to must be earliest, latest, offset, timestamp or shift, got {other:?}"
            )));
        }
    })
}

fn plan_json(r: &PlannedReset) -> Value {
    json!({
        "topic": r.tp.topic,
        "partition": r.tp.partition,
        "current": r.current,
        "target": r.target,
    })
}
