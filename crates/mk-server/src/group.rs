//! The `group` commands, like kafka-consumer-groups: `list`, `describe`
//! (state, members, committed offsets and lag), `delete` and
//! `reset-offsets` (to the earliest or latest offset, an offset or a
//! time). A reset is Kafka's commit from outside the group, so the group
//! must have no members; it works on a group whose committed offsets fell
//! below the log start, which is how such a group is repaired by hand.

use crate::commands::{CmdError, CmdResult, usage};
use mk_adapter_jsontcp::JsonTcpClient;
use mk_cluster::{OffsetSpec, TopicPartition};
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
            .map(|g| json!({"group_id": g.group_id, "state": g.state.as_str(), "protocol_type": g.protocol_type}))
            .collect();
        println!("{}", json!({ "groups": groups }));
    } else if groups.is_empty() {
        println!("(no groups)");
    } else {
        for g in groups {
            let kind = if g.protocol_type.is_empty() {
                "offsets only"
            } else {
                g.protocol_type.as_str()
            };
            println!("{}  {}  {kind}", g.group_id, g.state.as_str());
        }
    }
    Ok(())
}

pub async fn group_delete(c: &mut JsonTcpClient, group: &str, as_json: bool) -> CmdResult {
    c.delete_group(group).await?;
    if as_json {
        println!("{}", json!({"group_id": group, "deleted": true}));
    } else {
        println!("deleted group {group} and its committed offsets");
    }
    Ok(())
}

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
        let members: Vec<_> = d
            .iter()
            .flat_map(|d| d.members.iter())
            .map(|m| {
                json!({"member_id": m.member_id, "topics": m.topics,
                       "assignment": m.assignment.iter().map(ToString::to_string).collect::<Vec<_>>()})
            })
            .collect();
        let offsets: Vec<_> = lags
            .iter()
            .map(|(tp, c, end)| json!({"topic": tp.topic, "partition": tp.partition, "committed": c, "high_watermark": end, "lag": (end - c).max(0)}))
            .collect();
        println!(
            "{}",
            json!({
                "group_id": group,
                "state": d.as_ref().map_or("Dead", |d| d.state.as_str()),
                "generation": d.as_ref().map_or(0, |d| d.generation),
                "members": members,
                "offsets": offsets,
            })
        );
        return Ok(());
    }
    match &d {
        None => println!("group {group}: no members (state Dead)"),
        Some(d) => {
            println!(
                "group {group}: state {}, generation {}, assignor {}",
                d.state.as_str(),
                d.generation,
                d.assignor.name()
            );
            for m in &d.members {
                println!(
                    "  member {} topics [{}] assigned [{}]",
                    m.member_id,
                    m.topics.join(", "),
                    m.assignment
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
        }
    }
    if lags.is_empty() {
        println!("  no committed offsets");
    }
    for (tp, committed, end) in lags {
        println!(
            "  {tp}: committed {committed}, high watermark {end}, lag {}",
            (end - committed).max(0)
        );
    }
    Ok(())
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
    let mut plan = BTreeMap::new();
    for tp in &partitions {
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
        println!(
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
        println!("  {tp}: {before} -> {o}");
    }
    if dry_run {
        println!("group {group}: dry run, nothing changed");
    } else {
        println!("group {group}: offsets reset");
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
