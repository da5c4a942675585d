//! Groups of the three types (classic, KIP-848 consumer, KIP-932 share):
//! the list with total lag, one group's members, assignments and lag per
//! partition, and offset resets (a dry run that shows the core's plan,
//! then its execution).

use crate::http::{ApiError, opt_int, str_field};
use mk_cluster::{
    AnyGroupDescription, BrokerCluster, ConsumerGroupDescription, GroupDescription, PartitionLag,
    PlannedReset, ResetTarget, ShareGroupDescription, TopicPartition,
};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// `GET /api/groups`: every group with its type, state, protocol, members
/// and total lag.
pub(super) fn list(c: &BrokerCluster) -> Result<Value, ApiError> {
    let mut lag: BTreeMap<String, i64> = BTreeMap::new();
    for (group, _, l) in c.groups().lags()? {
        *lag.entry(group).or_default() += l;
    }
    let mut groups = Vec::new();
    for listing in c.groups().listings()? {
        let members = c
            .groups()
            .describe_any(&listing.group_id)?
            .map_or(0, |d| member_count(&d));
        groups.push(json!({
            "group_id": listing.group_id,
            "group_type": listing.group_type.as_str(),
            "protocol_type": listing.protocol_type,
            "state": listing.state.as_str(),
            "members": members,
            "lag": lag.get(&listing.group_id).copied().unwrap_or(0),
        }));
    }
    Ok(json!({ "groups": groups }))
}

fn member_count(d: &AnyGroupDescription) -> usize {
    match d {
        AnyGroupDescription::Classic(d) => d.members.len(),
        AnyGroupDescription::Consumer(d) => d.members.len(),
        AnyGroupDescription::Share(d) => d.members.len(),
    }
}

/// `GET /api/groups/{g}`: type, state, protocol, members with assignments,
/// and each partition's committed offset and lag (share groups: each share
/// partition's start offset and in-flight end instead of a commit).
pub(super) fn describe(c: &BrokerCluster, group: &str) -> Result<Value, ApiError> {
    let d = c.groups().describe_any(group)?;
    let lag = c.groups().lag_of(group)?;
    if d.is_none() && lag.is_empty() {
        return Err(ApiError::not_found(format!(
            "group {group:?} does not exist"
        )));
    }
    let mut v = d.as_ref().map_or_else(
        || json!({"group_id": group, "group_type": "classic", "state": "Dead", "members": []}),
        |d| match d {
            AnyGroupDescription::Classic(d) => classic_json(d),
            AnyGroupDescription::Consumer(d) => consumer_json(d),
            AnyGroupDescription::Share(d) => share_json(d),
        },
    );
    v["partitions"] = lag.iter().map(lag_json).collect();
    v["total_lag"] = json!(lag.iter().filter_map(|l| l.lag).sum::<i64>());
    Ok(v)
}

fn tps_json(tps: &[TopicPartition]) -> Value {
    tps.iter()
        .map(|tp| json!({"topic": tp.topic, "partition": tp.partition}))
        .collect()
}

fn classic_json(d: &GroupDescription) -> Value {
    json!({
        "group_id": d.group_id,
        "group_type": "classic",
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
            "assignment": tps_json(&m.assignment),
        })).collect::<Vec<_>>(),
    })
}

/// A KIP-848 group: the group epoch stands where a classic group has its
/// generation; each member shows its current assignment, what it still
/// has to revoke, and its target.
fn consumer_json(d: &ConsumerGroupDescription) -> Value {
    json!({
        "group_id": d.group_id,
        "group_type": "consumer",
        "state": d.state.as_str(),
        "generation": d.epoch,
        "assignment_epoch": d.assignment_epoch,
        "protocol_type": "consumer",
        "protocol_name": "",
        "coordinator_assignor": d.assignor.name(),
        "members": d.members.iter().map(|m| json!({
            "member_id": m.member_id,
            "client_id": m.client_id,
            "client_host": m.client_host,
            "group_instance_id": m.instance_id,
            "member_epoch": m.member_epoch,
            "member_state": m.state.as_str(),
            "topics": m.topics,
            "regex": m.regex,
            "assignment": tps_json(&m.assignment),
            "revoking": tps_json(&m.revoking),
            "target": tps_json(&m.target),
        })).collect::<Vec<_>>(),
    })
}

/// A KIP-932 group: members may share partitions; each share partition
/// shows its start offset and the end of its in-flight window.
fn share_json(d: &ShareGroupDescription) -> Value {
    json!({
        "group_id": d.group_id,
        "group_type": "share",
        "state": d.state.as_str(),
        "generation": d.epoch,
        "assignment_epoch": d.assignment_epoch,
        "protocol_type": "share",
        "protocol_name": "",
        "members": d.members.iter().map(|m| json!({
            "member_id": m.member_id,
            "client_id": m.client_id,
            "client_host": m.client_host,
            "group_instance_id": null,
            "member_epoch": m.member_epoch,
            "topics": m.topics,
            "assignment": tps_json(&m.assignment),
        })).collect::<Vec<_>>(),
        "share_partitions": d.partitions.iter().map(|(tp, start, end)| json!({
            "topic": tp.topic,
            "partition": tp.partition,
            "start_offset": start,
            "in_flight_end": end,
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
