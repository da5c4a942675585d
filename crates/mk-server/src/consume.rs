//! `consume`: prints the records of every partition of one or more topics
//! (or one `--partition`), from a start position, optionally following and
//! optionally as a member of a consumer group that commits as it goes.
//!
//! Start positions follow kcat: `--from N` is an offset (one past the end
//! starts at the end, one below the log start at the log start), `--from
//! -N` the last N records of each partition.
//!
//! Two rules make it safe in a pipeline. A position outside the log (a
//! committed offset that retention deleted, or one past the end) is reset
//! by the reset policy, as Kafka's `auto.offset.reset` does: `--from
//! latest` resets to the end, anything else to the log start. And stdout is
//! written record by record: when a write fails the consumer stops and, in
//! a group, commits the position after the last record actually written;
//! when the failure is that the reader went away (`| head`), it then exits
//! 0 without a word.

use crate::commands::{CmdError, CmdResult, stdout_failed, usage};
use crate::format::Output;
use mk_adapter_jsontcp::{ClientError, JsonTcpClient};
use mk_cluster::{ConsumerRecord, ErrorCode, FetchRequest, Isolation, OffsetSpec, TopicPartition};
use std::collections::BTreeMap;
use std::io::Write;

/// Where a consumer without a committed offset starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    Earliest,
    Latest,
    /// An offset, clamped into the partition's `[log start, end]`.
    Offset(i64),
    /// The last this many records of each partition (kcat's `-o -N`).
    Last(i64),
    /// The first record at or after this timestamp (ms), else the end.
    Time(i64),
}

impl std::str::FromStr for Start {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "earliest" => Ok(Start::Earliest),
            "latest" => Ok(Start::Latest),
            n => match n.parse::<i64>() {
                Ok(o) if o < 0 => Ok(Start::Last(o.saturating_neg())),
                Ok(o) => Ok(Start::Offset(o)),
                Err(_) => Err(format!(
                    "expected earliest, latest, an offset or -N (the last N records), got {s:?}"
                )),
            },
        }
    }
}

impl Start {
    /// The reset policy for a position outside the log: `latest` for
    /// `--from latest`, `earliest` for everything else (an explicit offset
    /// or time says "from here on", so the oldest record still there is
    /// the closest answer).
    fn reset_spec(self) -> OffsetSpec {
        match self {
            Start::Latest => OffsetSpec::Latest,
            _ => OffsetSpec::Earliest,
        }
    }
}

pub struct ConsumeOptions {
    pub topics: Vec<String>,
    pub partition: Option<u32>,
    pub start: Start,
    pub group: Option<String>,
    pub follow: bool,
    pub max_records: Option<u64>,
    pub isolation: Isolation,
    pub output: Output,
}

/// Consumes every partition of the topics (or `--partition`), or the
/// group's assignment with `--group`. Without `--follow` it stops once it
/// has caught up with what was visible; with it, it long-polls until
/// Ctrl-C.
///
/// In a group, every round of fetches is committed before it is printed, so
/// a record is printed by exactly one member of the group: a member whose
/// generation was fenced (another consumer joined or left) cannot commit,
/// drops the round unprinted and rejoins by itself, and the new owner of a
/// partition starts at the committed offset. (A crash between the commit
/// and the print loses that round's output: at most once, by design of a
/// terminal tool; a failed write re-commits what was written.)
pub async fn consume(c: &mut JsonTcpClient, o: ConsumeOptions) -> CmdResult {
    if o.partition.is_some() && o.topics.len() > 1 {
        return usage("--partition reads one topic; name only one");
    }
    // Every topic must exist (UNKNOWN_TOPIC, not a group error later).
    let mut partitions = Vec::new();
    for topic in &o.topics {
        let d = c.metadata(topic).await?;
        match o.partition {
            Some(p) => partitions.push(TopicPartition::new(topic, p)),
            None => partitions.extend(
                d.partitions
                    .iter()
                    .map(|p| TopicPartition::new(topic, p.partition)),
            ),
        }
    }
    if o.max_records == Some(0) {
        return Ok(());
    }
    match &o.group {
        None => {
            let mut positions = BTreeMap::new();
            for tp in partitions {
                let start = start_offset(c, &tp, o.start).await?;
                positions.insert(tp, start);
            }
            consume_loop(c, &o, None, &mut positions, &mut 0)
                .await
                .map(|_| ())
        }
        Some(group) => {
            let member = format!("mk-server-consume-{}", std::process::id());
            let result = consume_in_group(c, &o, group, &member).await;
            let _ = c.leave_group(group, &member).await;
            result
        }
    }
}

async fn start_offset(
    c: &mut JsonTcpClient,
    tp: &TopicPartition,
    start: Start,
) -> Result<i64, CmdError> {
    let spec = match start {
        Start::Offset(o) => {
            let (earliest, latest) = bounds(c, tp).await?;
            return Ok(o.clamp(earliest, latest));
        }
        Start::Last(n) => {
            let (earliest, latest) = bounds(c, tp).await?;
            return Ok(latest.saturating_sub(n).max(earliest));
        }
        Start::Earliest => OffsetSpec::Earliest,
        Start::Latest => OffsetSpec::Latest,
        Start::Time(ts) => OffsetSpec::Timestamp(ts),
    };
    Ok(match c.list_offsets(tp, spec).await? {
        Some(o) => o,
        // No record at or after the time: start at the end.
        None => c.list_offsets(tp, OffsetSpec::Latest).await?.unwrap_or(0),
    })
}

/// A partition's log start and end (the end never below the start).
async fn bounds(c: &mut JsonTcpClient, tp: &TopicPartition) -> Result<(i64, i64), CmdError> {
    let earliest = c.list_offsets(tp, OffsetSpec::Earliest).await?.unwrap_or(0);
    let latest = c.list_offsets(tp, OffsetSpec::Latest).await?.unwrap_or(0);
    Ok((earliest, latest.max(earliest)))
}

/// This consumer's membership in the current generation.
struct Membership<'a> {
    group: &'a str,
    member: &'a str,
    generation: i32,
}

/// Why a consume loop ended.
enum LoopEnd {
    /// Caught up (without `--follow`), `--max-records` reached, or Ctrl-C.
    Done,
    /// The group rebalanced: the member must rejoin.
    Rebalanced(ClientError),
}

/// Joins the group and consumes its assignment; rejoins after every
/// rebalance (the next assignment starts at the committed offsets).
async fn consume_in_group(
    c: &mut JsonTcpClient,
    o: &ConsumeOptions,
    group: &str,
    member: &str,
) -> CmdResult {
    let mut printed = 0u64;
    let mut rejoin = false;
    let quiet = o.output.json;
    loop {
        let a = c.join_group(group, member, &o.topics, None).await?;
        let committed: BTreeMap<_, _> = c
            .fetch_offsets(group, Some(a.partitions.clone()))
            .await?
            .into_iter()
            .map(|(tp, o)| (tp, o.map(|o| o.offset)))
            .collect();
        let mut positions = BTreeMap::new();
        for tp in a.partitions {
            let start = match committed.get(&tp).copied().flatten() {
                Some(o) => o,
                None => start_offset(c, &tp, o.start).await?,
            };
            positions.insert(tp, start);
        }
        if !quiet {
            eprintln!(
                "{} group {group} as {member} (generation {}), assigned {}",
                if rejoin { "rejoined" } else { "joined" },
                a.generation,
                positions
                    .keys()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        let membership = Membership {
            group,
            member,
            generation: a.generation,
        };
        match consume_loop(c, o, Some(&membership), &mut positions, &mut printed).await? {
            LoopEnd::Done => return Ok(()),
            LoopEnd::Rebalanced(e) => {
                if !quiet {
                    eprintln!("the group rebalanced ({e}); rejoining");
                }
                rejoin = true;
            }
        }
    }
}

/// Fetches every assigned partition in turn; in a group, commits each
/// round before printing it.
async fn consume_loop(
    c: &mut JsonTcpClient,
    o: &ConsumeOptions,
    membership: Option<&Membership<'_>>,
    positions: &mut BTreeMap<TopicPartition, i64>,
    printed: &mut u64,
) -> Result<LoopEnd, CmdError> {
    let wait_ms = if o.follow && positions.len() == 1 {
        Some(1_000)
    } else {
        None
    };
    loop {
        let mut caught_up = true;
        let mut round = Vec::new();
        let mut next = positions.clone();
        let mut budget = o.max_records.map(|m| m.saturating_sub(*printed));
        for (tp, pos) in next.iter_mut() {
            if budget == Some(0) {
                break;
            }
            match fetch_partition(c, o, tp, pos, wait_ms, &mut budget).await? {
                Fetched::Interrupted => return Ok(LoopEnd::Done),
                Fetched::Reset => caught_up = false,
                Fetched::Records { records, at_end } => {
                    caught_up &= at_end;
                    round.extend(records.into_iter().map(|r| (tp.clone(), r)));
                }
            }
        }
        if let Some(m) = membership
            && let Err(e) = commit(c, m, &next).await?
        {
            return Ok(LoopEnd::Rebalanced(e));
        }
        let before = std::mem::replace(positions, next);
        if let Err((e, written)) = print_records(&o.output, &round) {
            *printed += written as u64;
            return Err(stopped_writing(c, membership, before, &round[..written], e).await);
        }
        *printed += round.len() as u64;
        if budget == Some(0) || (caught_up && !o.follow) {
            return Ok(LoopEnd::Done);
        }
        if caught_up && wait_ms.is_none() {
            // Several partitions are polled in turn without a long poll;
            // pause briefly between rounds instead of spinning.
            tokio::select! {
                _ = tokio::time::sleep(std::time::Duration::from_millis(200)) => {}
                _ = tokio::signal::ctrl_c() => return Ok(LoopEnd::Done),
            }
        }
    }
}

/// What one partition's fetch gave.
enum Fetched {
    /// Ctrl-C during the fetch.
    Interrupted,
    /// The position was outside the log and the reset policy moved it.
    Reset,
    /// The records within the budget, and whether the position reached
    /// the end a consumer may read to.
    Records {
        records: Vec<ConsumerRecord>,
        at_end: bool,
    },
}

/// Fetches one partition from `pos` and moves `pos` past what it returns
/// (at most what is left of `budget`).
async fn fetch_partition(
    c: &mut JsonTcpClient,
    o: &ConsumeOptions,
    tp: &TopicPartition,
    pos: &mut i64,
    wait_ms: Option<u32>,
    budget: &mut Option<u64>,
) -> Result<Fetched, CmdError> {
    let mut request = FetchRequest::new(tp.clone(), *pos, 500);
    request.isolation = o.isolation;
    let fetched = tokio::select! {
        r = c.fetch(&request, wait_ms) => r,
        _ = tokio::signal::ctrl_c() => return Ok(Fetched::Interrupted),
    };
    let f = match fetched {
        Ok(f) => f,
        Err(e) if e.code() == Some(ErrorCode::OffsetOutOfRange) => {
            let to = c.list_offsets(tp, o.start.reset_spec()).await?.unwrap_or(0);
            if !o.output.json {
                eprintln!(
                    "{tp}: position {pos} is outside the log ({}); reset to {to} by the reset policy",
                    short(&e)
                );
            }
            *pos = to;
            return Ok(Fetched::Reset);
        }
        Err(e) => return Err(e.into()),
    };
    let mut records = f.records;
    if let Some(left) = budget.as_mut() {
        records.truncate(usize::try_from(*left).unwrap_or(usize::MAX));
        *left -= records.len() as u64;
    }
    match (records.last(), *budget) {
        // The budget ended inside this fetch: resume after the last
        // record taken.
        (Some(last), Some(0)) => *pos = last.offset + 1,
        _ => {
            if f.next_offset > *pos {
                *pos = f.next_offset;
            }
        }
    }
    let end = match o.isolation {
        Isolation::ReadCommitted => f.last_stable_offset,
        Isolation::ReadUncommitted => f.high_watermark,
    };
    Ok(Fetched::Records {
        records,
        at_end: *pos >= end,
    })
}

/// The message of a server error without its code.
fn short(e: &ClientError) -> String {
    match e {
        ClientError::Server(s) => s.message.clone(),
        other => other.to_string(),
    }
}

/// Writes the round record by record, flushing each, so a failure says
/// exactly how many records reached stdout. `Err` carries the error and
/// that count.
fn print_records(
    output: &Output,
    round: &[(TopicPartition, ConsumerRecord)],
) -> Result<(), (std::io::Error, usize)> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut line = Vec::with_capacity(256);
    for (i, (tp, r)) in round.iter().enumerate() {
        line.clear();
        output.render(tp, r, &mut line);
        out.write_all(&line)
            .and_then(|()| out.flush())
            .map_err(|e| (e, i))?;
    }
    Ok(())
}

/// stdout failed after `written` records of the round: in a group, commit
/// the position after the last record written (the round was committed
/// whole before printing), then stop — quietly when the reader went away.
async fn stopped_writing(
    c: &mut JsonTcpClient,
    membership: Option<&Membership<'_>>,
    mut positions: BTreeMap<TopicPartition, i64>,
    written: &[(TopicPartition, ConsumerRecord)],
    e: std::io::Error,
) -> CmdError {
    for (tp, r) in written {
        positions.insert(tp.clone(), r.offset + 1);
    }
    let committed = match membership {
        None => Ok(String::new()),
        Some(m) => c
            .commit_offsets(m.group, m.member, m.generation, &positions)
            .await
            .map(|()| "; committed the position after the last record written".to_string()),
    };
    match (stdout_failed(e), committed) {
        (CmdError::Closed, Ok(_)) => CmdError::Closed,
        (CmdError::Closed, Err(err)) => CmdError::Failed(format!(
            "stdout was closed; could not commit what was written: {err}"
        )),
        (failed, committed) => CmdError::Failed(format!(
            "stopped: {} after {} more record(s){}",
            match failed {
                CmdError::Failed(m) => m,
                _ => "cannot write to stdout".to_string(),
            },
            written.len(),
            committed.unwrap_or_else(|err| format!("; could not commit what was written: {err}"))
        )),
    }
}

/// Heartbeats (keeping the session alive while following) and commits the
/// positions after a round. `Ok(Err(_))` means the group rebalanced: the
/// member is fenced and must rejoin.
async fn commit(
    c: &mut JsonTcpClient,
    m: &Membership<'_>,
    positions: &BTreeMap<TopicPartition, i64>,
) -> Result<Result<(), ClientError>, CmdError> {
    let committed = match c.heartbeat(m.group, m.member, m.generation).await {
        Ok(()) => {
            c.commit_offsets(m.group, m.member, m.generation, positions)
                .await
        }
        Err(e) => Err(e),
    };
    match committed {
        Ok(()) => Ok(Ok(())),
        Err(e)
            if matches!(
                e.code(),
                Some(
                    ErrorCode::IllegalGeneration
                        | ErrorCode::RebalanceInProgress
                        | ErrorCode::UnknownMember
                )
            ) =>
        {
            Ok(Err(e))
        }
        Err(e) => Err(e.into()),
    }
}
