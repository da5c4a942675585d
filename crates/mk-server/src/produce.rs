//! `produce`: every line of stdin becomes one record. Lines are read on a
//! thread and taken in rounds: whatever has arrived (up to a bound) is
//! grouped into one batch per partition and the batches are pipelined, so
//! a typed line is acknowledged at once while a piped file travels in
//! large batches with several requests in flight. A record without
//! `--partition` goes where a Kafka producer puts it
//! (`partitioner::StickyPartitioner`): a key by murmur2, keyless records
//! in sticky batches of Kafka's `batch.size` that move from partition to
//! partition. A missing topic is created first when the broker
//! auto-creates topics, as for a Kafka producer. A bad line is reported
//! with its number; it stops the run (after everything before it was sent)
//! unless `--skip-bad-lines`. Offsets print as records are acknowledged;
//! once nobody reads them (`| head`) the rest of the input is still
//! produced, without printing.

use crate::commands::{CmdError, CmdResult, stdout_failed};
use crate::format::Input;
use mk_adapter_jsontcp::{JsonTcpClient, ProduceRecords, ProduceSpec, Request, Response};
use mk_cluster::partitioner::StickyPartitioner;
use mk_cluster::{AckMode, Bytes, ProduceEntry};
use serde_json::json;
use std::io::{BufRead, IsTerminal, Write};
use std::time::{Duration, Instant};

/// Lines taken into one round at most.
const ROUND_LINES: usize = 4_000;
/// Records and bytes of one produce request at most (well below the
/// server's default 1 MiB frame, base64 included).
const BATCH_RECORDS: usize = 500;
const BATCH_BYTES: usize = 256 * 1024;

pub struct ProduceOptions {
    pub topic: String,
    pub partition: Option<u32>,
    pub acks: AckMode,
    pub input: Input,
    pub skip_bad_lines: bool,
    /// Print a progress line on stderr (also when stderr is a terminal).
    pub progress: bool,
    pub as_json: bool,
}

/// What the reader thread hands over.
enum Line {
    Data { number: u64, bytes: Vec<u8> },
    ReadError(String),
}

/// One record waiting to be sent, with the partition it goes to.
struct Pending {
    partition: u32,
    entry: ProduceEntry,
}

pub async fn produce(c: &mut JsonTcpClient, o: ProduceOptions) -> CmdResult {
    // Routing needs the partition count; asking first also creates a
    // missing topic (when the broker auto-creates topics) or reports it
    // before any input is read.
    let d = c.metadata_with(&o.topic, true).await?;
    let partitions = u32::try_from(d.partitions.len())
        .map_err(|_| CmdError::Failed("more partitions than a u32 counts".into()))?;
    let mut router = Router {
        sticky: StickyPartitioner::new(StickyPartitioner::DEFAULT_BATCH_BYTES, random_start()),
        partitions,
        skipped: 0,
    };
    let mut printing = true;
    let mut rx = spawn_reader();
    let mut progress = Progress::new(o.progress || std::io::stderr().is_terminal());
    let mut produced = 0u64;
    while let Some(first) = rx.recv().await {
        let mut lines = vec![first];
        while lines.len() < ROUND_LINES {
            match rx.try_recv() {
                Ok(l) => lines.push(l),
                Err(_) => break,
            }
        }
        let (round, stop) = router.parse_round(&o, lines);
        let sent = send_round(c, &o, round, &mut printing).await;
        produced += sent.as_ref().map_or(0, |n| *n);
        progress.tick(produced);
        if let Err(e) = sent {
            progress.end();
            return Err(e);
        }
        if let Some(e) = stop {
            progress.end();
            eprintln!("mk-server: produced {produced} record(s) before the error");
            return Err(e);
        }
    }
    progress.end();
    if !o.as_json {
        if router.skipped > 0 {
            let skipped = router.skipped;
            eprintln!("produced {produced} record(s), skipped {skipped} bad line(s)");
        } else {
            eprintln!("produced {produced} record(s)");
        }
    }
    Ok(())
}

/// Turns input lines into records with their partitions.
struct Router {
    sticky: StickyPartitioner,
    partitions: u32,
    /// Bad lines skipped so far (with --skip-bad-lines).
    skipped: u64,
}

impl Router {
    /// The records of one round of lines, and the error that ends the run
    /// after them (an unreadable stdin, or a bad line without
    /// --skip-bad-lines).
    fn parse_round(
        &mut self,
        o: &ProduceOptions,
        lines: Vec<Line>,
    ) -> (Vec<Pending>, Option<CmdError>) {
        let mut round = Vec::with_capacity(lines.len());
        for line in lines {
            let (number, bytes) = match line {
                Line::Data { number, bytes } => (number, bytes),
                Line::ReadError(e) => {
                    return (
                        round,
                        Some(CmdError::Failed(format!("cannot read stdin: {e}"))),
                    );
                }
            };
            match o.input.parse(&bytes) {
                Ok((key, value)) => round.push(Pending {
                    partition: self.sticky.partition(
                        o.partition,
                        key.as_deref(),
                        key.as_ref().map_or(0, Bytes::len) + value.as_ref().map_or(0, Bytes::len),
                        self.partitions,
                    ),
                    entry: ProduceEntry {
                        key,
                        value,
                        ..ProduceEntry::default()
                    },
                }),
                Err(why) if o.skip_bad_lines => {
                    self.skipped += 1;
                    eprintln!("mk-server: line {number}: {why} (skipped)");
                }
                Err(why) => {
                    let stop = CmdError::Failed(format!(
                        "line {number}: {why}; stopped there (--skip-bad-lines goes on)"
                    ));
                    return (round, Some(stop));
                }
            }
        }
        (round, None)
    }
}

/// Reads stdin as bytes (no UTF-8 requirement) on a thread, one message
/// per line without its `\n` (and a `\r` before it).
fn spawn_reader() -> tokio::sync::mpsc::Receiver<Line> {
    let (tx, rx) = tokio::sync::mpsc::channel(ROUND_LINES);
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        let mut input = stdin.lock();
        let mut number = 0u64;
        loop {
            let mut bytes = Vec::new();
            match input.read_until(b'\n', &mut bytes) {
                Ok(0) => return,
                Ok(_) => {
                    number += 1;
                    if bytes.last() == Some(&b'\n') {
                        bytes.pop();
                        if bytes.last() == Some(&b'\r') {
                            bytes.pop();
                        }
                    }
                    if tx.blocking_send(Line::Data { number, bytes }).is_err() {
                        return;
                    }
                }
                Err(e) => {
                    let _ = tx.blocking_send(Line::ReadError(e.to_string()));
                    return;
                }
            }
        }
    });
    rx
}

/// Where the sticky partition starts: anywhere, as Kafka's producer picks
/// it at random, so that many short runs do not all fill partition 0.
fn random_start() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    #[allow(
        clippy::cast_possible_truncation,
        reason = "keeping the low 32 bits of a random hash is the point"
    )]
    let start = h.finish() as u32;
    start
}

/// Sends one round: one batch per partition (split at the batch bounds),
/// all pipelined, then prints each record's offset while `printing` (it
/// turns false for good once nobody reads stdout). Returns how many
/// records were acknowledged; the first failed request ends the run.
async fn send_round(
    c: &mut JsonTcpClient,
    o: &ProduceOptions,
    round: Vec<Pending>,
    printing: &mut bool,
) -> Result<u64, CmdError> {
    let (batches, places) = into_batches(round);
    let requests: Vec<Request> = batches
        .into_iter()
        .map(|(partition, entries, _)| {
            Request::Produce(ProduceSpec {
                topic: o.topic.clone(),
                partition: Some(partition),
                acks: o.acks,
                producer: None,
                records: ProduceRecords::Batch(entries),
            })
        })
        .collect();
    let mut answers = Vec::with_capacity(requests.len());
    for answer in c.call_many(&requests).await? {
        match answer {
            Ok(Response::Produce { response, .. }) => answers.push(Ok(response)),
            Ok(other) => {
                return Err(CmdError::Failed(format!(
                    "unexpected answer to a produce: {other:?}"
                )));
            }
            Err(e) => answers.push(Err(e)),
        }
    }
    let mut acknowledged = 0u64;
    for (batch, index) in places {
        let r = match &answers[batch] {
            Ok(r) => r,
            // Everything before the first failed record was printed.
            Err(_) => return Err(answers.swap_remove(batch).unwrap_err().into()),
        };
        acknowledged += 1;
        if *printing {
            let offset = r.base_offset.map(|b| b + index as i64);
            *printing = print_offset(o, r.partition, offset)?;
        }
    }
    Ok(acknowledged)
}

/// A produce batch: its partition, its records and their bytes.
type Batch = (u32, Vec<ProduceEntry>, usize);

/// One batch per partition (split at the batch bounds), and each record's
/// place (which batch, which position in it), so the offsets print in
/// input order whatever the batching.
fn into_batches(round: Vec<Pending>) -> (Vec<Batch>, Vec<(usize, usize)>) {
    let mut batches: Vec<Batch> = Vec::new();
    let mut places = Vec::with_capacity(round.len());
    for p in round {
        let size = p.entry.key.as_ref().map_or(0, Bytes::len)
            + p.entry.value.as_ref().map_or(0, Bytes::len);
        let open = batches
            .iter()
            .rposition(|(partition, _, _)| *partition == p.partition)
            .filter(|i| {
                let (_, entries, bytes) = &batches[*i];
                entries.len() < BATCH_RECORDS && *bytes + size <= BATCH_BYTES
            });
        let batch = match open {
            Some(i) => i,
            None => {
                batches.push((p.partition, Vec::new(), 0));
                batches.len() - 1
            }
        };
        let (_, entries, bytes) = &mut batches[batch];
        places.push((batch, entries.len()));
        entries.push(p.entry);
        *bytes += size;
    }
    (batches, places)
}

/// Prints where one record went. Returns whether to go on printing: a
/// reader that went away stops the printing, not the producing (the input
/// is what the user asked to send).
fn print_offset(o: &ProduceOptions, partition: u32, offset: Option<i64>) -> Result<bool, CmdError> {
    let line = match (o.as_json, offset) {
        (true, _) => {
            json!({"topic": o.topic, "partition": partition, "offset": offset}).to_string()
        }
        (false, Some(off)) => format!("{}-{partition} offset {off}", o.topic),
        (false, None) => format!("{}-{partition} (acks=0, no offset)", o.topic),
    };
    match writeln!(std::io::stdout(), "{line}").map_err(stdout_failed) {
        Ok(()) => Ok(true),
        Err(CmdError::Closed) => Ok(false),
        Err(CmdError::Failed(why)) => Err(CmdError::Failed(format!(
            "{why}; the record at {}-{partition} offset {} was produced",
            o.topic,
            offset.map_or("-".to_string(), |o| o.to_string())
        ))),
        Err(other) => Err(other),
    }
}

/// The progress line of a long run: at most once a second, overwritten in
/// place, only when asked for or when stderr is a terminal.
struct Progress {
    enabled: bool,
    start: Instant,
    last: Instant,
    shown: bool,
}

impl Progress {
    fn new(enabled: bool) -> Self {
        let now = Instant::now();
        Self {
            enabled,
            start: now,
            last: now,
            shown: false,
        }
    }

    fn tick(&mut self, produced: u64) {
        if !self.enabled || self.last.elapsed() < Duration::from_secs(1) {
            return;
        }
        self.last = Instant::now();
        let secs = self.start.elapsed().as_secs_f64().max(0.001);
        eprint!(
            "\rproduced {produced} record(s), {:.0} records/s",
            produced as f64 / secs
        );
        self.shown = true;
    }

    fn end(&mut self) {
        if self.shown {
            eprintln!();
            self.shown = false;
        }
    }
}
