//! The `group` commands, like kafka-consumer-groups: `list` (with each
//! group's type: classic, consumer or share), `describe` (state, members,
//! committed offsets and lag; a KIP-848 group's epochs and each member's
//! current, revoking and target partitions; a share group's partitions in
//! flight), `delete` and `reset-offsets` (to the earliest or latest
//! offset, an offset or a time). A reset is Kafka's commit from outside
//! the group, so the group must have no members; it works on a group whose
//! committed offsets fell below the log start, which is how such a group
//! is repaired by hand.

use crate::commands::{CmdError, CmdResult, answer, say, usage};
use mk_adapter_jsontcp::JsonTcpClient;
use mk_cluster::{
    AnyGroupDescription, ConsumerGroupDescription, GroupDescription, GroupState, OffsetSpec,
    ShareGroupDescription, TopicPartition,
};
use serde_json::json;
use std::collections::BTreeMap;

/// Where `reset-offsets` moves a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResetTo {
    Earliest,
    Latest,
    /// An offset, clamped into the partition's `[log start, end]` as
    /// kafka-consumer-groups does.
    Offset(i64),
    /// The first record at or after a timestamp (ms); the end if none.
    Time(i64),
}

pub async fn group_list(c: &mut JsonTcpClient, as_json: bool) -> CmdResult {
    let groups = c.list_groups().await?;
    if as_json {
        let groups: Vec<_> = groups
            .iter()
            .map(|g| json!({"group_id": g.group_id, "state": g.state.as_str(), "protocol_type": g.protocol_type, "group_type": g.group_type.as_str()}))
            .collect();
        say!("{}", json!({ "groups": groups }));
    } else if groups.is_empty() {
        say!("(no groups)");
    } else {
        for g in groups {
            let kind = if g.protocol_type.is_empty() {
                "offsets only"
            } else {
                g.protocol_type.as_str()
            };
            // The group type last: classic, consumer (KIP-848) or share.
            say!(
                "{}  {}  {kind}  {}",
                g.group_id,
                g.state.as_str(),
                g.group_type.as_str()
            );
        }
    }
    Ok(())
}

pub async fn group_delete(c: &mut JsonTcpClient, group: &str, as_json: bool) -> CmdResult {
    c.delete_group(group).await?;
    answer(
        as_json,
        &json!({"group_id": group, "deleted": true}),
        format_args!("deleted group {group} and its committed offsets"),
    )
}

/// The assignor a classic group's current generation uses: the protocol
/// its members agreed on. For a Kafka consumer group that is the
/// client-side assignor the coordinator chose among the members' (a
/// confluent-kafka group says `range`); for JSON-TCP members, the
/// coordinator's own. As in Kafka, only a Stable group has one.
fn assignor_in_use(d: &GroupDescription) -> Option<&str> {
    (!d.protocol_name.is_empty()).then_some(d.protocol_name.as_str())
}

/// `describe`: the group as its protocol describes it, then (for classic
/// and KIP-848 groups, which commit offsets) each committed offset with its
/// lag, or (for a share group) each share partition's window.
pub async fn group_describe(c: &mut JsonTcpClient, group: &str, as_json: bool) -> CmdResult {
    let d = c.describe_group(group).await?;
    let offsets = c.fetch_offsets(group, None).await?;
    let mut lags = Vec::new();
    for (tp, committed) in &offsets {
        let end = c.list_offsets(tp, OffsetSpec::Latest).await?.unwrap_or(0);
        let committed = committed.as_ref().map_or(0, |o| o.offset);
        lags.push((tp.clone(), committed, end));
    }
    if as_json {
        say!("{}", describe_json(group, d.as_ref(), &lags));
        return Ok(());
    }
    match &d {
        None => say!("group {group}: no members (state Dead)"),
        Some(AnyGroupDescription::Classic(d)) => print_classic(d)?,
        Some(AnyGroupDescription::Consumer(d)) => print_consumer(d)?,
        Some(AnyGroupDescription::Share(d)) => print_share(d)?,
    }
    // Share groups keep share-partition state, not committed offsets.
    let commits = !matches!(d, Some(AnyGroupDescription::Share(_)));
    if lags.is_empty() && commits {
        say!("  no committed offsets");
    }
    for (tp, committed, end) in lags {
        say!(
            "  {tp}: committed {committed}, high watermark {end}, lag {}",
            (end - committed).max(0)
        );
    }
    Ok(())
}

fn names(partitions: &[TopicPartition]) -> Vec<String> {
    partitions.iter().map(ToString::to_string).collect()
}

/// The `--json` form: `group_id`, `group_type` (null when Dead), `state`,
/// the type's fields, `members` and `offsets`.
fn describe_json(
    group: &str,
    d: Option<&AnyGroupDescription>,
    lags: &[(TopicPartition, i64, i64)],
) -> serde_json::Value {
    let offsets: Vec<_> = lags
        .iter()
        .map(|(tp, c, end)| json!({"topic": tp.topic, "partition": tp.partition, "committed": c, "high_watermark": end, "lag": (end - c).max(0)}))
        .collect();
    let mut out = match d {
        None => json!({"state": "Dead", "generation": 0, "assignor": null, "members": []}),
        Some(AnyGroupDescription::Classic(d)) => json!({
            "state": d.state.as_str(),
            "generation": d.generation,
            "assignor": assignor_in_use(d),
            "protocol_type": d.protocol_type,
            "members": d.members.iter().map(|m| json!({
                "member_id": m.member_id, "topics": m.topics, "assignment": names(&m.assignment),
            })).collect::<Vec<_>>(),
        }),
        Some(AnyGroupDescription::Consumer(d)) => json!({
            "state": d.state.as_str(),
            "epoch": d.epoch,
            "assignment_epoch": d.assignment_epoch,
            "assignor": d.assignor.name(),
            "members": d.members.iter().map(|m| json!({
                "member_id": m.member_id, "instance_id": m.instance_id,
                "member_epoch": m.member_epoch, "member_state": m.state.as_str(),
                "topics": m.topics, "regex": m.regex, "assignment": names(&m.assignment),
                "revoking": names(&m.revoking), "target": names(&m.target),
            })).collect::<Vec<_>>(),
        }),
        Some(AnyGroupDescription::Share(d)) => json!({
            "state": d.state.as_str(),
            "epoch": d.epoch,
            "members": d.members.iter().map(|m| json!({
                "member_id": m.member_id, "member_epoch": m.member_epoch,
                "topics": m.topics, "assignment": names(&m.assignment),
            })).collect::<Vec<_>>(),
            "partitions": d.partitions.iter().map(|(tp, start, end)| json!({
                "topic": tp.topic, "partition": tp.partition, "start_offset": start, "end_offset": end,
            })).collect::<Vec<_>>(),
        }),
    };
    out["group_id"] = json!(group);
    out["group_type"] = json!(d.map(|d| d.group_type().as_str()));
    out["offsets"] = json!(offsets);
    out
}

fn print_classic(d: &GroupDescription) -> CmdResult {
    let assignor = match (assignor_in_use(d), d.state) {
        (Some(name), _) => name,
        (None, GroupState::Empty) => "none (no members)",
        (None, _) => "not chosen yet (rebalancing)",
    };
    say!(
        "group {}: state {}, generation {}, assignor {assignor}",
        d.group_id,
        d.state.as_str(),
        d.generation,
    );
    for m in &d.members {
        say!(
            "  member {} topics [{}] assigned [{}]",
            m.member_id,
            m.topics.join(", "),
            names(&m.assignment).join(", ")
        );
    }
    Ok(())
}

/// A KIP-848 group: each member's epoch and reconciliation state, what it
/// consumes now, what it must give up and its target.
fn print_consumer(d: &ConsumerGroupDescription) -> CmdResult {
    say!(
        "group {}: consumer group (KIP-848), state {}, epoch {}, assignment epoch {}, assignor {}",
        d.group_id,
        d.state.as_str(),
        d.epoch,
        d.assignment_epoch,
        d.assignor.name()
    );
    for m in &d.members {
        let instance = m
            .instance_id
            .as_ref()
            .map_or(String::new(), |i| format!(" instance {i}"));
        let regex = m
            .regex
            .as_ref()
            .map_or(String::new(), |r| format!(" regex /{r}/"));
        say!(
            "  member {}{instance} epoch {} {} topics [{}]{regex} assigned [{}] revoking [{}] target [{}]",
            m.member_id,
            m.member_epoch,
            m.state.as_str(),
            m.topics.join(", "),
            names(&m.assignment).join(", "),
            names(&m.revoking).join(", "),
            names(&m.target).join(", ")
        );
    }
    Ok(())
}

/// A share group: members (several may share a partition) and each share
/// partition's in-flight window.
fn print_share(d: &ShareGroupDescription) -> CmdResult {
    say!(
        "group {}: share group (KIP-932), state {}, epoch {}",
        d.group_id,
        d.state.as_str(),
        d.epoch
    );
    for m in &d.members {
        say!(
            "  member {} epoch {} topics [{}] assigned [{}]",
            m.member_id,
            m.member_epoch,
            m.topics.join(", "),
            names(&m.assignment).join(", ")
        );
    }
    for (tp, start, end) in &d.partitions {
        say!("  {tp}: share start offset {start}, in flight up to {end}");
    }
    Ok(())
}

/// Where each partition moves: `to` within the partition's log.
async fn reset_plan(
    c: &mut JsonTcpClient,
    partitions: &[TopicPartition],
    to: ResetTo,
) -> Result<BTreeMap<TopicPartition, i64>, CmdError> {
    let mut plan = BTreeMap::new();
    for tp in partitions {
        let earliest = c.list_offsets(tp, OffsetSpec::Earliest).await?.unwrap_or(0);
        let latest = c.list_offsets(tp, OffsetSpec::Latest).await?.unwrap_or(0);
        let target = match to {
            ResetTo::Earliest => earliest,
            ResetTo::Latest => latest,
            ResetTo::Offset(n) => n.clamp(earliest, latest.max(earliest)),
            ResetTo::Time(ts) => c
                .list_offsets(tp, OffsetSpec::Timestamp(ts))
                .await?
                .unwrap_or(latest),
        };
        plan.insert(tp.clone(), target);
    }
    Ok(plan)
}

/// `reset-offsets`: every partition of `topics`, or without topics every
/// partition the group has an offset for, moves to `to`; `dry_run` only
/// shows the plan.
pub async fn group_reset_offsets(
    c: &mut JsonTcpClient,
    group: &str,
    to: ResetTo,
    topics: &[String],
    dry_run: bool,
    as_json: bool,
) -> CmdResult {
    let committed: BTreeMap<TopicPartition, Option<i64>> = c
        .fetch_offsets(group, None)
        .await?
        .into_iter()
        .map(|(tp, o)| (tp, o.map(|o| o.offset)))
        .collect();
    let partitions: Vec<TopicPartition> = if topics.is_empty() {
        committed.keys().cloned().collect()
    } else {
        let mut all = Vec::new();
        for t in topics {
            let d = c.metadata(t).await?;
            all.extend(
                d.partitions
                    .iter()
                    .map(|p| TopicPartition::new(t, p.partition)),
            );
        }
        all
    };
    if partitions.is_empty() {
        return usage(format!(
            "group {group:?} has no committed offsets; name the partitions to set with --topic"
        ));
    }
    let plan = reset_plan(c, &partitions, to).await?;
    if !dry_run {
        c.alter_group_offsets(group, &plan).await?;
    }
    if as_json {
        let rows: Vec<_> = plan
            .iter()
            .map(|(tp, o)| {
                json!({"topic": tp.topic, "partition": tp.partition,
                       "previous": committed.get(tp).copied().flatten(), "offset": o})
            })
            .collect();
        say!(
            "{}",
            json!({"group_id": group, "dry_run": dry_run, "offsets": rows})
        );
        return Ok(());
    }
    for (tp, o) in &plan {
        let before = committed
            .get(tp)
            .copied()
            .flatten()
            .map_or("none".to_string(), |b| b.to_string());
        say!("  {tp}: {before} -> {o}");
    }
    if dry_run {
        say!("group {group}: dry run, nothing changed (add --execute to apply)");
    } else {
        say!("group {group}: offsets reset");
    }
    Ok(())
}

impl ResetTo {
    /// Exactly one of the `--to-*` flags.
    pub fn from_flags(
        earliest: bool,
        latest: bool,
        offset: Option<i64>,
        time: Option<i64>,
    ) -> Result<ResetTo, CmdError> {
        let chosen: Vec<ResetTo> = [
            earliest.then_some(ResetTo::Earliest),
            latest.then_some(ResetTo::Latest),
            offset.map(ResetTo::Offset),
            time.map(ResetTo::Time),
        ]
        .into_iter()
        .flatten()
        .collect();
        match chosen.as_slice() {
            [one] => Ok(*one),
            _ => usage(
                "reset-offsets needs exactly one of --to-earliest, --to-latest, --to-offset N, --to-datetime T",
            ),
        }
    }
}
