//! The `partition` commands: moving a partition's replicas between the
//! hosted brokers, like `kafka-reassign-partitions` (one partition at a
//! time, no JSON plan file). `reassign` starts (or replaces) a move, or
//! with `--cancel` goes back to the original replicas; `reassignments`
//! lists the moves in progress. Both go over the JSON-TCP listener
//! (`alter_partition_reassignment`, `list_partition_reassignments`); the
//! broker decides everything.

use crate::commands::{CmdResult, say};
use mk_adapter_jsontcp::JsonTcpClient;
use mk_cluster::{OngoingReassignment, TopicPartition};
use serde_json::json;

/// A `--replicas` value: broker ids separated by commas, e.g. `1,2,3`.
#[derive(Debug, Clone)]
pub struct ReplicaList(pub Vec<i32>);

pub fn parse_replicas(list: &str) -> Result<ReplicaList, String> {
    list.split(',')
        .map(|id| {
            id.trim()
                .parse::<i32>()
                .map_err(|_| format!("broker ids separated by commas, e.g. 1,2,3; got {list:?}"))
        })
        .collect::<Result<Vec<i32>, String>>()
        .map(ReplicaList)
}

fn ongoing_json(ongoing: &[OngoingReassignment]) -> serde_json::Value {
    ongoing
        .iter()
        .map(|r| {
            json!({"topic": r.partition.topic, "partition": r.partition.partition,
                   "replicas": r.replicas, "adding_replicas": r.adding,
                   "removing_replicas": r.removing})
        })
        .collect()
}

fn ids(list: &[i32]) -> String {
    let ids: Vec<String> = list.iter().map(ToString::to_string).collect();
    ids.join(",")
}

/// What one move in progress looks like in text.
fn describe(r: &OngoingReassignment) -> String {
    format!(
        "{}: replicas {} (adding {}, removing {})",
        r.partition,
        ids(&r.replicas),
        if r.adding.is_empty() {
            "none".to_string()
        } else {
            ids(&r.adding)
        },
        if r.removing.is_empty() {
            "none".to_string()
        } else {
            ids(&r.removing)
        }
    )
}

/// `partition reassign`: `replicas` is the target, `None` cancels.
pub async fn reassign(
    c: &mut JsonTcpClient,
    tp: &TopicPartition,
    replicas: Option<&[i32]>,
    allow_replication_factor_change: bool,
    as_json: bool,
) -> CmdResult {
    let ongoing = c
        .alter_partition_reassignment(tp, replicas, allow_replication_factor_change)
        .await?;
    if as_json {
        let state = match (replicas, ongoing.is_empty()) {
            (None, _) => "cancelled",
            (Some(_), true) => "completed",
            (Some(_), false) => "in_progress",
        };
        say!(
            "{}",
            json!({"topic": tp.topic, "partition": tp.partition, "state": state,
                   "reassignments": ongoing_json(&ongoing)})
        );
        return Ok(());
    }
    match (replicas, ongoing.first()) {
        (None, _) => say!("{tp}: reassignment cancelled; back on the original replicas"),
        (Some(target), None) => say!(
            "{tp}: now on replicas {} (nothing to copy: done at once)",
            ids(target)
        ),
        (Some(_), Some(r)) => {
            say!("{tp}: reassignment started");
            say!("  {}", describe(r));
            say!("  it completes by itself once the adding replicas are in sync");
        }
    }
    Ok(())
}

/// `partition reassignments`: the moves in progress.
pub async fn list(c: &mut JsonTcpClient, topic: Option<&str>, as_json: bool) -> CmdResult {
    let ongoing = c.list_partition_reassignments(topic).await?;
    if as_json {
        say!("{}", json!({ "reassignments": ongoing_json(&ongoing) }));
        return Ok(());
    }
    if ongoing.is_empty() {
        say!("no reassignment in progress");
    }
    for r in &ongoing {
        say!("{}", describe(r));
    }
    Ok(())
}
