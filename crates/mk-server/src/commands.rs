//! The client subcommands: topic administration, produce from stdin,
//! consume (optionally following and in a group), group description and the
//! in-process labs. They talk to a running broker through `JsonTcpClient`;
//! output is human-readable unless `--json` asks for one JSON object per
//! line.

use mk_adapter_jsontcp::{
    ClientError, JsonTcpClient, ProduceRecords, ProduceSpec, TopicConfigOverrides,
};
use mk_cluster::{AckMode, Bytes, ErrorCode, FetchRequest, Isolation, OffsetSpec, TopicPartition};
use serde_json::json;
use std::collections::BTreeMap;
use std::io::{BufRead, Write};

pub type CmdResult = Result<(), String>;

fn client_err(e: ClientError) -> String {
    e.to_string()
}

pub async fn connect(server: &str) -> Result<JsonTcpClient, String> {
    JsonTcpClient::connect(server)
        .await
        .map_err(|e| format!("cannot connect to {server}: {e} (is `mk-server` running?)"))
}

fn text(b: Option<&Bytes>) -> String {
    match b {
        None => "null".to_string(),
        Some(b) => String::from_utf8_lossy(b).into_owned(),
    }
}

fn parse_config(pairs: &[String]) -> Result<Option<TopicConfigOverrides>, String> {
    if pairs.is_empty() {
        return Ok(None);
    }
    let mut object = serde_json::Map::new();
    for pair in pairs {
        let (k, v) = pair
            .split_once('=')
            .ok_or_else(|| format!("--config expects key=value, got {pair:?}"))?;
        let value = match v.parse::<i64>() {
            Ok(n) => json!(n),
            Err(_) if v == "null" => serde_json::Value::Null,
            Err(_) => json!(v),
        };
        object.insert(k.to_string(), value);
    }
    // The wire decoder is the one place that knows the setting names.
    let request = json!({
        "operation": "create_topic", "topic": "x", "partitions": 1,
        "replication_factor": 1, "config": object,
    });
    match mk_adapter_jsontcp::decode_request_line(request.to_string().as_bytes()).request {
        Ok(mk_adapter_jsontcp::Request::CreateTopic { config, .. }) => Ok(config),
        Ok(_) => Err("internal error decoding --config".into()),
        Err(e) => Err(e.to_string()),
    }
}

pub async fn topic_create(
    c: &mut JsonTcpClient,
    name: &str,
    partitions: u32,
    replication_factor: usize,
    config: &[String],
    as_json: bool,
) -> CmdResult {
    let config = parse_config(config)?;
    c.create_topic_with_config(name, partitions, replication_factor, config)
        .await
        .map_err(client_err)?;
    if as_json {
        println!(
            "{}",
            json!({"topic": name, "partitions": partitions, "replication_factor": replication_factor})
        );
    } else {
        println!(
            "created topic {name} ({partitions} partition(s), replication factor {replication_factor})"
        );
    }
    Ok(())
}

pub async fn broker_offline(c: &mut JsonTcpClient, broker_id: i32, as_json: bool) -> CmdResult {
    let moved = c.broker_offline(broker_id).await.map_err(client_err)?;
    if as_json {
        let moved: Vec<_> = moved
            .iter()
            .map(|(tp, le)| {
                json!({"topic": tp.topic, "partition": tp.partition,
                       "leader_id": le.leader_id, "leader_epoch": le.leader_epoch})
            })
            .collect();
        println!("{}", json!({ "broker_id": broker_id, "moved": moved }));
    } else {
        println!("broker {broker_id} is offline");
        for (tp, le) in moved {
            println!(
                "  {tp}: leader now broker {} (epoch {})",
                le.leader_id, le.leader_epoch
            );
        }
    }
    Ok(())
}

pub async fn broker_online(c: &mut JsonTcpClient, broker_id: i32, as_json: bool) -> CmdResult {
    c.broker_online(broker_id).await.map_err(client_err)?;
    if as_json {
        println!("{}", json!({ "broker_id": broker_id, "online": true }));
    } else {
        println!("broker {broker_id} is online; its replicas catch up as followers");
    }
    Ok(())
}

pub async fn topic_list(c: &mut JsonTcpClient, as_json: bool) -> CmdResult {
    let topics = c.list_topics().await.map_err(client_err)?;
    if as_json {
        println!("{}", json!({ "topics": topics }));
    } else if topics.is_empty() {
        println!("(no topics)");
    } else {
        for t in topics {
            println!("{t}");
        }
    }
    Ok(())
}

pub async fn topic_describe(c: &mut JsonTcpClient, name: &str, as_json: bool) -> CmdResult {
    let d = c.metadata(name).await.map_err(client_err)?;
    if as_json {
        let partitions: Vec<_> = d
            .partitions
            .iter()
            .map(|p| {
                json!({
                    "partition": p.partition, "leader_id": p.leader_id,
                    "leader_epoch": p.leader_epoch, "replicas": p.replicas, "isr": p.isr,
                    "high_watermark": p.high_watermark,
                    "last_stable_offset": p.last_stable_offset,
                    "log_start_offset": p.log_start_offset,
                    "log_end_offset": p.log_end_offset,
                })
            })
            .collect();
        println!("{}", json!({"topic": d.name, "partitions": partitions}));
        return Ok(());
    }
    let cfg = &d.config;
    println!(
        "topic {}: cleanup.policy={} retention.ms={} retention.bytes={} segment.bytes={}",
        d.name,
        cfg.cleanup_policy.as_str(),
        cfg.retention_ms.map_or("forever".into(), |v| v.to_string()),
        cfg.retention_bytes
            .map_or("unlimited".into(), |v| v.to_string()),
        cfg.segment_bytes
            .map_or("default".into(), |v| v.to_string()),
    );
    println!("partition  leader  epoch  replicas  isr  log-start  high-watermark  log-end");
    for p in &d.partitions {
        println!(
            "{:>9}  {:>6}  {:>5}  {:<8}  {:<3}  {:>9}  {:>14}  {:>7}",
            p.partition,
            p.leader_id,
            p.leader_epoch,
            ids(&p.replicas),
            ids(&p.isr),
            p.log_start_offset,
            p.high_watermark,
            p.log_end_offset
        );
    }
    Ok(())
}

fn ids(v: &[i32]) -> String {
    v.iter().map(i32::to_string).collect::<Vec<_>>().join(",")
}

/// Produces every line of stdin as one record (`key<TAB>value` when
/// `keyed`), one request per line so each is acknowledged as it is typed.
pub async fn produce(
    c: &mut JsonTcpClient,
    topic: &str,
    partition: u32,
    keyed: bool,
    acks: AckMode,
    as_json: bool,
) -> CmdResult {
    let tp = TopicPartition::new(topic, partition);
    let stdin = std::io::stdin();
    let mut count = 0u64;
    for line in stdin.lock().lines() {
        let line = line.map_err(|e| format!("cannot read stdin: {e}"))?;
        let (key, value) = match (keyed, line.split_once('\t')) {
            (true, Some((k, v))) => (Some(Bytes::from(k.to_string())), v.to_string()),
            (true, None) => {
                return Err(format!(
                    "--keyed expects key<TAB>value lines, got {line:?} (no TAB)"
                ));
            }
            (false, _) => (None, line),
        };
        let r = c
            .produce(ProduceSpec {
                tp: tp.clone(),
                acks,
                producer: None,
                records: ProduceRecords::Single {
                    key,
                    value: Some(Bytes::from(value)),
                },
            })
            .await
            .map_err(client_err)?;
        count += 1;
        if as_json {
            println!(
                "{}",
                json!({"topic": topic, "partition": r.partition, "offset": r.base_offset})
            );
        } else {
            match r.base_offset {
                Some(o) => println!("{topic}-{} offset {o}", r.partition),
                None => println!("{topic}-{} (acks=0, no offset)", r.partition),
            }
        }
    }
    if !as_json {
        eprintln!("produced {count} record(s)");
    }
    Ok(())
}

/// Where a consumer without a committed offset starts.
#[derive(Debug, Clone, Copy)]
pub enum From {
    Earliest,
    Latest,
    Offset(i64),
}

impl std::str::FromStr for From {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "earliest" => Ok(From::Earliest),
            "latest" => Ok(From::Latest),
            n => n
                .parse::<i64>()
                .map(From::Offset)
                .map_err(|_| format!("--from expects earliest, latest or an offset, got {s:?}")),
        }
    }
}

pub struct ConsumeOptions {
    pub topic: String,
    pub partition: Option<u32>,
    pub from: From,
    pub group: Option<String>,
    pub follow: bool,
    pub max_records: Option<u64>,
    pub isolation: Isolation,
    pub as_json: bool,
}

async fn start_offset(
    c: &mut JsonTcpClient,
    tp: &TopicPartition,
    from: From,
) -> Result<i64, String> {
    Ok(match from {
        From::Offset(o) => o,
        From::Earliest => c
            .list_offsets(tp, OffsetSpec::Earliest)
            .await
            .map_err(client_err)?
            .unwrap_or(0),
        From::Latest => c
            .list_offsets(tp, OffsetSpec::Latest)
            .await
            .map_err(client_err)?
            .unwrap_or(0),
    })
}

/// Consumes one partition, or the group's assignment with `--group`.
/// Without `--follow` it stops once it has caught up with what was visible;
/// with it, it long-polls until Ctrl-C.
///
/// In a group, every round of fetches is committed before it is printed, so
/// a record is printed by exactly one member of the group: a member whose
/// generation was fenced (another consumer joined or left) cannot commit,
/// drops the round unprinted and rejoins by itself, and the new owner of a
/// partition starts at the committed offset. (A crash between the commit
/// and the print loses that round's output: at most once, by design of a
/// terminal tool.)
pub async fn consume(c: &mut JsonTcpClient, o: ConsumeOptions) -> CmdResult {
    match &o.group {
        None => {
            let tp = TopicPartition::new(&o.topic, o.partition.unwrap_or(0));
            let start = start_offset(c, &tp, o.from).await?;
            let mut positions = BTreeMap::from([(tp, start)]);
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
    loop {
        let a = c
            .join_group(group, member, std::slice::from_ref(&o.topic), None)
            .await
            .map_err(client_err)?;
        let committed: BTreeMap<_, _> = c
            .fetch_offsets(group, Some(a.partitions.clone()))
            .await
            .map_err(client_err)?
            .into_iter()
            .collect();
        let mut positions = BTreeMap::new();
        for tp in a.partitions {
            let start = match committed.get(&tp).copied().flatten() {
                Some(o) => o,
                None => start_offset(c, &tp, o.from).await?,
            };
            positions.insert(tp, start);
        }
        if !o.as_json {
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
                if !o.as_json {
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
) -> Result<LoopEnd, String> {
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
            let mut request = FetchRequest::new(tp.clone(), *pos, 500);
            request.isolation = o.isolation;
            let f = tokio::select! {
                r = c.fetch(&request, wait_ms) => r.map_err(client_err)?,
                _ = tokio::signal::ctrl_c() => return Ok(LoopEnd::Done),
            };
            let mut records = f.records;
            if let Some(left) = budget.as_mut() {
                records.truncate(usize::try_from(*left).unwrap_or(usize::MAX));
                *left -= records.len() as u64;
            }
            match (records.last(), budget) {
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
            if *pos < end {
                caught_up = false;
            }
            round.extend(records.into_iter().map(|r| (tp.clone(), r)));
        }
        if let Some(m) = membership
            && let Err(e) = commit(c, m, &next).await?
        {
            return Ok(LoopEnd::Rebalanced(e));
        }
        *positions = next;
        print_records(o, &round);
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

fn print_records(o: &ConsumeOptions, records: &[(TopicPartition, mk_cluster::ConsumerRecord)]) {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for (tp, r) in records {
        if o.as_json {
            let line = json!({
                "topic": tp.topic, "partition": tp.partition, "offset": r.offset,
                "key": r.key.as_ref().map(|k| String::from_utf8_lossy(k).into_owned()),
                "value": r.value.as_ref().map(|v| String::from_utf8_lossy(v).into_owned()),
                "timestamp_ms": r.timestamp_ms,
            });
            let _ = writeln!(out, "{line}");
        } else if r.key.is_some() {
            let _ = writeln!(
                out,
                "{tp}@{} key={} value={}",
                r.offset,
                text(r.key.as_ref()),
                text(r.value.as_ref())
            );
        } else {
            let _ = writeln!(out, "{tp}@{} value={}", r.offset, text(r.value.as_ref()));
        }
    }
    let _ = out.flush();
}

/// Heartbeats (keeping the session alive while following) and commits the
/// positions after a round. `Ok(Err(_))` means the group rebalanced: the
/// member is fenced and must rejoin.
async fn commit(
    c: &mut JsonTcpClient,
    m: &Membership<'_>,
    positions: &BTreeMap<TopicPartition, i64>,
) -> Result<Result<(), ClientError>, String> {
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
        Err(e) => Err(client_err(e)),
    }
}

pub async fn group_describe(c: &mut JsonTcpClient, group: &str, as_json: bool) -> CmdResult {
    let d = c.describe_group(group).await.map_err(client_err)?;
    let offsets = c.fetch_offsets(group, None).await.map_err(client_err)?;
    let mut lags = Vec::new();
    for (tp, committed) in &offsets {
        let end = c
            .list_offsets(tp, OffsetSpec::Latest)
            .await
            .map_err(client_err)?
            .unwrap_or(0);
        lags.push((tp.clone(), committed.unwrap_or(0), end));
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

pub async fn lab(name: &str, as_json: bool) -> CmdResult {
    if !mk_cluster::labs::LAB_NAMES.contains(&name) {
        return Err(format!(
            "unknown lab {name:?}; available: {}",
            mk_cluster::labs::LAB_NAMES.join(", ")
        ));
    }
    let dir = tempfile::tempdir().map_err(|e| format!("cannot create a temp dir: {e}"))?;
    let report = mk_cluster::labs::run_lab(name, dir.path())
        .await
        .map_err(|e| format!("lab {name} failed: {e}"))?;
    if as_json {
        println!(
            "{}",
            json!({"name": report.name, "steps": report.steps, "facts": report.facts})
        );
    } else {
        println!(
            "lab {} (in-process, on a temporary data directory)",
            report.name
        );
        for step in &report.steps {
            println!("{step}");
        }
    }
    Ok(())
}
