//! The transaction journal `transactions.journal`: its line format, the
//! recovery scan that stops at the first bad line, fsynced appends,
//! atomic snapshot rewrites, and the fault seam that lets tests fail or tear
//! a write.
//!
//! One line per state change:
//! `<crc32c of payload as 8 lowercase hex> <space> <compact JSON payload>\n`.
//! Every payload is the complete metadata of one transactional id, so
//! recovery keeps the last valid line per id.

use crate::error::{Result, TxnError};
use crate::state::{NO_EPOCH, StagedCommit, TxnMetadata, TxnState};
use mk_core::TopicPartition;
use mk_storage::StorageError;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

/// The journal's JSON payload. Field order is the serialization order;
/// every field is required.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Payload {
    id: String,
    state: String,
    producer_id: i64,
    producer_epoch: i32,
    last_producer_epoch: i32,
    timeout_ms: i64,
    start_ms: i64,
    partitions: Vec<PartitionEntry>,
    groups: Vec<String>,
    offsets: Vec<OffsetEntry>,
    /// The producer id a transactions-v2 end moves the id to once its
    /// markers are written (its epochs were exhausted); written only while
    /// such an end is Prepare*, absent in lines of earlier builds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    next_producer_id: Option<i64>,
    /// The producer id such an end moved the id away from, kept (with
    /// `last_producer_epoch`) so a retry of that end gets the same answer;
    /// written only until the next transaction begins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    previous_producer_id: Option<i64>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PartitionEntry {
    topic: String,
    partition: u32,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct OffsetEntry {
    group: String,
    topic: String,
    partition: u32,
    offset: i64,
    /// Written only when the committer named an epoch; absent in lines of
    /// earlier builds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    leader_epoch: Option<i32>,
    /// Written only when not empty; absent in lines of earlier builds.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    metadata: String,
}

/// A line of the first journal format (the teaching model's coordinator,
/// which chose sequence numbers itself). Still read, so a data directory
/// written before Kafka's transaction flow keeps its transactions; it is
/// never written. Every field of that format is required.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LegacyPayload {
    id: String,
    state: String,
    producer_id: i64,
    producer_epoch: i32,
    start_ms: i64,
    partitions: Vec<LegacyPartitionEntry>,
    offsets: Vec<OffsetEntry>,
    #[allow(dead_code)]
    sequences: Vec<LegacySequenceEntry>,
    #[allow(dead_code)]
    clean: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LegacyPartitionEntry {
    topic: String,
    partition: u32,
    #[allow(dead_code)]
    first_offset: Option<i64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LegacySequenceEntry {
    #[allow(dead_code)]
    topic: String,
    #[allow(dead_code)]
    partition: u32,
    #[allow(dead_code)]
    next: i32,
}

impl LegacyPayload {
    /// The legacy line in today's shape: the groups are those of its staged
    /// offsets, the timeout the coordinator's default, no retry epoch.
    fn upgrade(self, default_timeout_ms: i64) -> Payload {
        let mut groups: Vec<String> = self.offsets.iter().map(|o| o.group.clone()).collect();
        groups.sort();
        groups.dedup();
        Payload {
            id: self.id,
            state: self.state,
            producer_id: self.producer_id,
            producer_epoch: self.producer_epoch,
            last_producer_epoch: NO_EPOCH,
            timeout_ms: default_timeout_ms,
            start_ms: self.start_ms,
            partitions: self
                .partitions
                .into_iter()
                .map(|p| PartitionEntry {
                    topic: p.topic,
                    partition: p.partition,
                })
                .collect(),
            groups,
            offsets: self.offsets,
            next_producer_id: None,
            previous_producer_id: None,
        }
    }
}

/// Encodes one journal line, newline included.
pub(crate) fn encode_line(meta: &TxnMetadata) -> String {
    let payload = Payload {
        id: meta.id.clone(),
        state: meta.state.as_str().to_string(),
        producer_id: meta.producer_id,
        producer_epoch: meta.producer_epoch,
        last_producer_epoch: meta.last_producer_epoch,
        timeout_ms: meta.timeout_ms,
        start_ms: meta.start_ms,
        partitions: meta
            .partitions
            .iter()
            .map(|tp| PartitionEntry {
                topic: tp.topic.clone(),
                partition: tp.partition,
            })
            .collect(),
        groups: meta.groups.iter().cloned().collect(),
        offsets: meta
            .offsets
            .iter()
            .map(|((group, tp), staged)| OffsetEntry {
                group: group.clone(),
                topic: tp.topic.clone(),
                partition: tp.partition,
                offset: staged.offset,
                leader_epoch: staged.leader_epoch,
                metadata: staged.metadata.clone(),
            })
            .collect(),
        next_producer_id: meta.next_producer_id,
        previous_producer_id: meta.previous_producer_id,
    };
    // Serializing plain structs of strings and integers cannot fail.
    let json = serde_json::to_string(&payload).unwrap_or_default();
    format!("{:08x} {json}\n", crc32c::crc32c(json.as_bytes()))
}

/// Decodes one line without its newline; `None` for any defect: bad CRC
/// text, CRC mismatch, unparsable JSON, a missing or unknown field, or a
/// value that breaks an invariant (empty id, negative epoch, timeout or
/// offset, duplicates). A line of the legacy format gets
/// `default_timeout_ms`.
pub(crate) fn decode_line(line: &[u8], default_timeout_ms: i64) -> Option<TxnMetadata> {
    let (crc_text, rest) = line.split_at_checked(8)?;
    let json = rest.strip_prefix(b" ")?;
    if !crc_text
        .iter()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
    {
        return None;
    }
    let crc = u32::from_str_radix(std::str::from_utf8(crc_text).ok()?, 16).ok()?;
    if crc32c::crc32c(json) != crc {
        return None;
    }
    let p: Payload = match serde_json::from_slice(json) {
        Ok(p) => p,
        Err(_) => serde_json::from_slice::<LegacyPayload>(json)
            .ok()?
            .upgrade(default_timeout_ms),
    };
    into_metadata(p)
}

fn into_metadata(p: Payload) -> Option<TxnMetadata> {
    if p.id.is_empty()
        || p.producer_id < 0
        || p.producer_epoch < 0
        || p.last_producer_epoch < NO_EPOCH
        || p.timeout_ms <= 0
        || p.next_producer_id
            .is_some_and(|n| n < 0 || n == p.producer_id)
        || p.previous_producer_id
            .is_some_and(|n| n < 0 || n == p.producer_id)
    {
        return None;
    }
    let mut partitions = BTreeSet::new();
    for e in p.partitions {
        if !partitions.insert(TopicPartition::new(e.topic, e.partition)) {
            return None;
        }
    }
    let mut groups = BTreeSet::new();
    for g in p.groups {
        if g.is_empty() || !groups.insert(g) {
            return None;
        }
    }
    let mut offsets = BTreeMap::new();
    for e in p.offsets {
        if e.offset < 0 || e.leader_epoch.is_some_and(|x| x < 0) || !groups.contains(&e.group) {
            return None;
        }
        let key = (e.group, TopicPartition::new(e.topic, e.partition));
        let staged = StagedCommit {
            offset: e.offset,
            leader_epoch: e.leader_epoch,
            metadata: e.metadata,
        };
        if offsets.insert(key, staged).is_some() {
            return None;
        }
    }
    Some(TxnMetadata {
        id: p.id,
        state: TxnState::parse(&p.state)?,
        producer_id: p.producer_id,
        producer_epoch: p.producer_epoch,
        last_producer_epoch: p.last_producer_epoch,
        timeout_ms: p.timeout_ms,
        start_ms: p.start_ms,
        partitions,
        groups,
        offsets,
        next_producer_id: p.next_producer_id,
        previous_producer_id: p.previous_producer_id,
    })
}

/// The valid prefix of a journal's bytes.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Scan {
    /// Every valid line, in file order.
    pub entries: Vec<TxnMetadata>,
    /// Bytes of the valid prefix; everything after it is cut off.
    pub valid_len: usize,
}

/// Reads lines until the first bad one (including a last line without its
/// newline, i.e. a torn append).
pub(crate) fn scan(bytes: &[u8], default_timeout_ms: i64) -> Scan {
    let mut out = Scan::default();
    let mut rest = bytes;
    while let Some(end) = rest.iter().position(|b| *b == b'\n') {
        let Some(meta) = decode_line(&rest[..end], default_timeout_ms) else {
            break;
        };
        out.entries.push(meta);
        out.valid_len += end + 1;
        rest = &rest[end + 1..];
    }
    out
}

/// A torn append is the last thing in the file (every append is fsynced
/// and a failed one stops the journal), so a bad line followed by a valid
/// one was damaged at rest. Cutting there would silently drop the later
/// states, e.g. re-resolve a committed transaction as aborted; the journal
/// is refused instead, with the line to look at.
fn refuse_damage_before_valid_lines(
    path: &Path,
    bytes: &[u8],
    scan: &Scan,
    default_timeout_ms: i64,
) -> Result<()> {
    let rest = &bytes[scan.valid_len..];
    let Some(bad_end) = rest.iter().position(|b| *b == b'\n') else {
        return Ok(());
    };
    let valid_after = rest[bad_end + 1..]
        .split(|b| *b == b'\n')
        .filter(|line| decode_line(line, default_timeout_ms).is_some())
        .count();
    if valid_after == 0 {
        return Ok(());
    }
    let line = scan.entries.len() + 1;
    Err(StorageError::unusable(
        path,
        format!(
            "line {line} (byte {}) is damaged and {valid_after} valid line(s) follow it: this is \
             not a torn append, so nothing is cut. Restore the journal from a backup, or delete \
             line {line} to start (transactions whose latest state was on it resume from their \
             previous state)",
            scan.valid_len
        ),
    )
    .into())
}

/// Keeps the last state per id.
pub(crate) fn last_per_id(entries: Vec<TxnMetadata>) -> BTreeMap<String, TxnMetadata> {
    let mut map = BTreeMap::new();
    for e in entries {
        map.insert(e.id.clone(), e);
    }
    map
}

/// Fault-injection switches for the journal's writes (appends and snapshot
/// rewrites). Production code carries one that never fires.
#[derive(Debug)]
pub struct JournalFaults {
    writes_before_failure: AtomicI64,
    tear: AtomicBool,
    /// The broker's storage seam, which every journal write and fsync
    /// passes too when set.
    storage: Option<std::sync::Arc<mk_storage::FaultInjector>>,
}

impl Default for JournalFaults {
    fn default() -> Self {
        Self {
            writes_before_failure: AtomicI64::new(-1),
            tear: AtomicBool::new(false),
            storage: None,
        }
    }
}

impl JournalFaults {
    pub fn new() -> Self {
        Self::default()
    }

    /// Switches that also pass every journal write and fsync through the
    /// broker's storage fault seam.
    pub fn with_storage(storage: std::sync::Arc<mk_storage::FaultInjector>) -> Self {
        Self {
            storage: Some(storage),
            ..Self::default()
        }
    }

    fn before_sync(&self, path: &Path) -> Result<()> {
        match &self.storage {
            Some(s) => Ok(s.site_sync(path)?),
            None => Ok(()),
        }
    }

    fn write_atomic(&self, path: &Path, bytes: &[u8]) -> Result<()> {
        match &self.storage {
            Some(s) => Ok(mk_storage::fsutil::write_atomic_with(s, path, bytes)?),
            None => Ok(mk_storage::fsutil::write_atomic(path, bytes)?),
        }
    }

    /// Lets `n` more writes succeed, then fails every later one without
    /// writing anything.
    pub fn fail_writes_after(&self, n: u64) {
        self.tear.store(false, Ordering::SeqCst);
        self.writes_before_failure
            .store(i64::try_from(n).unwrap_or(i64::MAX), Ordering::SeqCst);
    }

    /// Lets `n` more writes succeed; the next one writes only the first half
    /// of its line (as a crash in the middle of `write` would) and fails, and
    /// every later one fails.
    pub fn tear_write_after(&self, n: u64) {
        self.fail_writes_after(n);
        self.tear.store(true, Ordering::SeqCst);
    }

    /// Turns every fault off.
    pub fn clear(&self) {
        self.writes_before_failure.store(-1, Ordering::SeqCst);
        self.tear.store(false, Ordering::SeqCst);
    }

    /// `Ok(None)` to write normally, `Ok(Some(n))` to write only `n` bytes
    /// and fail, `Err` to fail before writing.
    fn before_write(&self, path: &Path, len: usize) -> Result<Option<usize>> {
        if let Some(s) = &self.storage
            && let mk_storage::WriteGate::Torn(n) = s.site_write_of(path, len)?
        {
            return Ok(Some(n));
        }
        let left = self.writes_before_failure.load(Ordering::SeqCst);
        if left < 0 {
            return Ok(None);
        }
        if left == 0 {
            if self.tear.swap(false, Ordering::SeqCst) {
                return Ok(Some(len / 2));
            }
            return Err(injected(path, "write"));
        }
        self.writes_before_failure.fetch_sub(1, Ordering::SeqCst);
        Ok(None)
    }
}

fn injected(path: &Path, what: &str) -> TxnError {
    StorageError::io(
        path,
        std::io::Error::other(format!("injected {what} failure")),
    )
    .into()
}

/// The open journal file.
#[derive(Debug)]
pub(crate) struct Journal {
    path: PathBuf,
    file: File,
    faults: std::sync::Arc<JournalFaults>,
    /// Lines in the file; drives automatic compaction.
    lines: usize,
}

/// What opening the journal found.
#[derive(Debug)]
pub(crate) struct Opened {
    pub journal: Journal,
    pub states: BTreeMap<String, TxnMetadata>,
    pub truncated_bytes: u64,
}

impl Journal {
    /// Opens (or creates) the journal at `path`, cutting it after its last
    /// valid line.
    pub fn open(
        path: &Path,
        faults: std::sync::Arc<JournalFaults>,
        default_timeout_ms: i64,
    ) -> Result<Opened> {
        let existed = path.exists();
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(path)
            .map_err(|e| StorageError::io(path, e))?;
        if !existed {
            let dir = parent(path)?;
            mk_storage::fsutil::sync_dir(dir)?;
        }
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)
            .map_err(|e| StorageError::io(path, e))?;
        let scan = scan(&bytes, default_timeout_ms);
        refuse_damage_before_valid_lines(path, &bytes, &scan, default_timeout_ms)?;
        let truncated_bytes = (bytes.len() - scan.valid_len) as u64;
        if truncated_bytes > 0 {
            // Appends go to the end of the file, so the torn tail must go
            // before anything new is written after it.
            file.set_len(scan.valid_len as u64)
                .and_then(|()| file.sync_all())
                .map_err(|e| StorageError::io(path, e))?;
        }
        let lines = scan.entries.len();
        Ok(Opened {
            journal: Journal {
                path: path.to_path_buf(),
                file,
                faults,
                lines,
            },
            states: last_per_id(scan.entries),
            truncated_bytes,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn lines(&self) -> usize {
        self.lines
    }

    /// Appends one line and fsyncs it. After an error the file may end in a
    /// torn line, so the caller must stop writing (recovery cuts it off).
    pub fn append(&mut self, meta: &TxnMetadata) -> Result<()> {
        let line = encode_line(meta);
        let bytes = line.as_bytes();
        if let Some(partial) = self.faults.before_write(&self.path, bytes.len())? {
            self.file
                .write_all(&bytes[..partial])
                .map_err(|e| StorageError::io(&self.path, e))?;
            return Err(injected(&self.path, "torn write"));
        }
        self.file
            .write_all(bytes)
            .map_err(|e| StorageError::io(&self.path, e))?;
        self.faults.before_sync(&self.path)?;
        self.file
            .sync_data()
            .map_err(|e| StorageError::io(&self.path, e))?;
        self.lines += 1;
        Ok(())
    }

    /// Replaces the whole journal atomically with one line per id.
    pub fn rewrite<'a>(&mut self, metas: impl IntoIterator<Item = &'a TxnMetadata>) -> Result<()> {
        let mut text = String::new();
        let mut lines = 0;
        for meta in metas {
            text.push_str(&encode_line(meta));
            lines += 1;
        }
        if self.faults.before_write(&self.path, text.len())?.is_some() {
            // A torn atomic rewrite leaves the old file in place.
            return Err(injected(&self.path, "torn rewrite"));
        }
        self.faults.write_atomic(&self.path, text.as_bytes())?;
        self.file = OpenOptions::new()
            .read(true)
            .append(true)
            .open(&self.path)
            .map_err(|e| StorageError::io(&self.path, e))?;
        self.lines = lines;
        Ok(())
    }
}

fn parent(path: &Path) -> Result<&Path> {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => Ok(p),
        Some(_) => Ok(Path::new(".")),
        None => Err(StorageError::unusable(path, "journal path has no parent directory").into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const DEFAULT_TIMEOUT_MS: i64 = 60_000;

    fn meta(id: &str, state: TxnState, epoch: i32) -> TxnMetadata {
        TxnMetadata {
            id: id.to_string(),
            state,
            producer_id: 7,
            producer_epoch: epoch,
            last_producer_epoch: NO_EPOCH,
            timeout_ms: 30_000,
            start_ms: 1_000,
            partitions: BTreeSet::from([TopicPartition::new("out", 1)]),
            groups: BTreeSet::from(["g".to_string()]),
            offsets: BTreeMap::from([(("g".to_string(), TopicPartition::new("in", 0)), 5.into())]),
            next_producer_id: None,
            previous_producer_id: None,
        }
    }

    fn decode(line: &str) -> Option<TxnMetadata> {
        decode_line(line.as_bytes(), DEFAULT_TIMEOUT_MS)
    }

    #[test]
    fn journal_line_format_is_crc_hex_space_compact_json() {
        let line = encode_line(&meta("tx-1", TxnState::PrepareCommit, 2));
        insta::assert_snapshot!(line, @r#"
        0a5dd65e {"id":"tx-1","state":"PrepareCommit","producer_id":7,"producer_epoch":2,"last_producer_epoch":-1,"timeout_ms":30000,"start_ms":1000,"partitions":[{"topic":"out","partition":1}],"groups":["g"],"offsets":[{"group":"g","topic":"in","partition":0,"offset":5}]}
        "#);
        let json = &line[9..line.len() - 1];
        assert_eq!(
            &line[..8],
            format!("{:08x}", crc32c::crc32c(json.as_bytes()))
        );
        assert!(line.ends_with('\n'));
    }

    #[test]
    fn staged_leader_epochs_and_metadata_are_journaled_only_when_present() {
        let mut m = meta("tx-1", TxnState::Ongoing, 2);
        let key = ("g".to_string(), TopicPartition::new("in", 0));
        m.offsets.insert(
            key.clone(),
            StagedCommit {
                offset: 5,
                leader_epoch: Some(3),
                metadata: "app".into(),
            },
        );
        let line = encode_line(&m);
        assert!(
            line.contains(r#""offset":5,"leader_epoch":3,"metadata":"app"}"#),
            "{line}"
        );
        assert_eq!(decode(line.trim_end()), Some(m.clone()));
        // A line of an earlier build has neither field: no epoch, "".
        let plain = encode_line(&meta("tx-1", TxnState::Ongoing, 2));
        assert!(!plain.contains("leader_epoch") && !plain.contains("metadata"));
        assert_eq!(decode(plain.trim_end()).unwrap().offsets[&key], 5.into());
        // A negative epoch is a defect like any other invalid value.
        let json = r#"{"id":"a","state":"Ongoing","producer_id":7,"producer_epoch":0,"last_producer_epoch":-1,"timeout_ms":1,"start_ms":0,"partitions":[],"groups":["g"],"offsets":[{"group":"g","topic":"in","partition":0,"offset":5,"leader_epoch":-1}]}"#;
        let line = format!("{:08x} {json}", crc32c::crc32c(json.as_bytes()));
        assert_eq!(decode(&line), None);
    }

    #[test]
    fn lines_of_the_teaching_model_format_are_still_read() {
        // A line exactly as the coordinator wrote it before Kafka's flow.
        let json = r#"{"id":"tx-1","state":"PrepareCommit","producer_id":7,"producer_epoch":2,"start_ms":1000,"partitions":[{"topic":"out","partition":1,"first_offset":42}],"offsets":[{"group":"g","topic":"in","partition":0,"offset":5}],"sequences":[{"topic":"out","partition":1,"next":3}],"clean":false}"#;
        let line = format!("{:08x} {json}", crc32c::crc32c(json.as_bytes()));
        let mut expected = meta("tx-1", TxnState::PrepareCommit, 2);
        expected.timeout_ms = DEFAULT_TIMEOUT_MS;
        assert_eq!(decode(&line), Some(expected));
        // The legacy format is as strict as today's: a missing field fails.
        let json = json.replace(",\"clean\":false", "");
        let line = format!("{:08x} {json}", crc32c::crc32c(json.as_bytes()));
        assert_eq!(decode(&line), None);
    }

    #[test]
    fn every_kind_of_bad_line_is_refused() {
        let good = encode_line(&meta("a", TxnState::Ongoing, 0));
        let body = good.trim_end_matches('\n');
        assert!(decode(body).is_some());
        let json = &body[9..];
        let with_crc = |j: &str| format!("{:08x} {j}", crc32c::crc32c(j.as_bytes()));
        let cases = [
            // The CRC does not match the payload.
            format!("00000000 {json}"),
            // Upper-case hex is not the format.
            format!("{} {json}", body[..8].to_uppercase()),
            // No separator.
            body.replacen(' ', "", 1),
            // Valid CRC over unparsable JSON.
            with_crc("{\"id\":"),
            // Valid CRC over JSON with a missing field.
            with_crc(&json.replace(",\"groups\":[\"g\"]", "")),
            // Valid CRC over JSON with an unknown field.
            with_crc(&json.replace("\"start_ms\"", "\"extra\":1,\"start_ms\"")),
            // Valid CRC over an unknown state.
            with_crc(&json.replace("Ongoing", "Dead")),
            // Valid CRC over a negative epoch.
            with_crc(&json.replace("\"producer_epoch\":0", "\"producer_epoch\":-1")),
            // Valid CRC over a zero timeout.
            with_crc(&json.replace("\"timeout_ms\":30000", "\"timeout_ms\":0")),
            // Valid CRC over an empty id.
            with_crc(&json.replace("\"id\":\"a\"", "\"id\":\"\"")),
            // Valid CRC over offsets of a group that was never added.
            with_crc(&json.replace("\"groups\":[\"g\"]", "\"groups\":[\"h\"]")),
            String::new(),
        ];
        for case in cases {
            assert!(decode(&case).is_none(), "accepted {case:?}");
        }
    }

    #[test]
    fn scan_stops_at_a_line_without_newline() {
        let a = encode_line(&meta("a", TxnState::Ongoing, 0));
        let b = encode_line(&meta("b", TxnState::Ongoing, 0));
        let text = format!("{a}{}", &b[..b.len() - 1]);
        let s = scan(text.as_bytes(), DEFAULT_TIMEOUT_MS);
        assert_eq!(s.entries.len(), 1);
        assert_eq!(s.valid_len, a.len());
    }

    fn arb_state() -> impl Strategy<Value = TxnState> {
        prop::sample::select(TxnState::ALL.to_vec())
    }

    fn arb_tp() -> impl Strategy<Value = TopicPartition> {
        ("[a-z]{1,3}", 0u32..3).prop_map(|(t, p)| TopicPartition::new(t, p))
    }

    fn arb_staged() -> impl Strategy<Value = StagedCommit> {
        (0i64..1_000, prop::option::of(0i32..9), "[a-zé\"]{0,3}").prop_map(
            |(offset, leader_epoch, metadata)| StagedCommit {
                offset,
                leader_epoch,
                metadata,
            },
        )
    }

    fn arb_meta() -> impl Strategy<Value = TxnMetadata> {
        (
            (
                prop::sample::select(vec!["a", "b", "tx-é", "c\"q"]),
                arb_state(),
                0i64..5,
                0i32..5,
                -1i32..5,
                1i64..1_000_000,
                any::<i64>(),
            ),
            prop::collection::btree_set(arb_tp(), 0..3),
            prop::collection::btree_map(("[a-z]{1,2}", arb_tp()), arb_staged(), 0..3),
        )
            .prop_map(
                |((id, state, pid, epoch, last, timeout_ms, start_ms), partitions, offsets)| {
                    let groups = offsets.keys().map(|(g, _)| g.clone()).collect();
                    TxnMetadata {
                        id: id.to_string(),
                        state,
                        producer_id: pid,
                        producer_epoch: epoch,
                        last_producer_epoch: last,
                        timeout_ms,
                        start_ms,
                        partitions,
                        groups,
                        offsets,
                        // Both shapes: with and without a pending rollover.
                        next_producer_id: (pid % 2 == 0).then_some(pid + 100),
                        // And with and without a remembered previous id.
                        previous_producer_id: (epoch % 2 == 0).then_some(pid + 200),
                    }
                },
            )
    }

    proptest! {
        #[test]
        fn journal_round_trips_every_line(entries in prop::collection::vec(arb_meta(), 0..8)) {
            let text: String = entries.iter().map(encode_line).collect();
            let s = scan(text.as_bytes(), DEFAULT_TIMEOUT_MS);
            prop_assert_eq!(s.valid_len, text.len());
            prop_assert_eq!(&s.entries, &entries);
        }

        #[test]
        fn any_truncation_recovers_a_prefix_of_the_states(
            entries in prop::collection::vec(arb_meta(), 1..8),
            cut in any::<prop::sample::Index>(),
        ) {
            let lines: Vec<String> = entries.iter().map(encode_line).collect();
            let text: String = lines.concat();
            let cut = cut.index(text.len() + 1);
            let s = scan(&text.as_bytes()[..cut], DEFAULT_TIMEOUT_MS);
            // Exactly the lines that end (newline included) within the cut.
            let mut whole = 0;
            let mut len = 0;
            for l in &lines {
                if len + l.len() > cut {
                    break;
                }
                len += l.len();
                whole += 1;
            }
            prop_assert_eq!(s.valid_len, len);
            prop_assert_eq!(&s.entries[..], &entries[..whole]);
            prop_assert_eq!(last_per_id(s.entries), last_per_id(entries[..whole].to_vec()));
        }

        #[test]
        fn any_corrupted_byte_recovers_the_lines_before_it(
            entries in prop::collection::vec(arb_meta(), 1..8),
            at in any::<prop::sample::Index>(),
            flip in 1u8..=255,
        ) {
            let lines: Vec<String> = entries.iter().map(encode_line).collect();
            let mut bytes = lines.concat().into_bytes();
            let at = at.index(bytes.len());
            bytes[at] ^= flip;
            let mut damaged_line = 0;
            let mut end = 0;
            for l in &lines {
                end += l.len();
                if at < end {
                    break;
                }
                damaged_line += 1;
            }
            let s = scan(&bytes, DEFAULT_TIMEOUT_MS);
            prop_assert_eq!(&s.entries[..], &entries[..damaged_line]);
        }
    }

    #[test]
    fn open_truncates_a_torn_tail_and_appends_after_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("transactions.journal");
        let faults = std::sync::Arc::new(JournalFaults::new());
        let open = |faults: &std::sync::Arc<JournalFaults>| {
            Journal::open(&path, faults.clone(), DEFAULT_TIMEOUT_MS).unwrap()
        };
        let mut o = open(&faults);
        assert!(o.states.is_empty());
        o.journal.append(&meta("a", TxnState::Ongoing, 0)).unwrap();
        faults.tear_write_after(0);
        assert!(
            o.journal
                .append(&meta("a", TxnState::PrepareCommit, 0))
                .is_err()
        );
        faults.clear();
        drop(o);
        let len_before = std::fs::metadata(&path).unwrap().len();
        let mut o = open(&faults);
        assert!(o.truncated_bytes > 0);
        assert_eq!(
            std::fs::metadata(&path).unwrap().len(),
            len_before - o.truncated_bytes
        );
        assert_eq!(o.states["a"].state, TxnState::Ongoing);
        o.journal
            .append(&meta("a", TxnState::PrepareAbort, 0))
            .unwrap();
        drop(o);
        let o = open(&faults);
        assert_eq!(o.truncated_bytes, 0);
        assert_eq!(o.states["a"].state, TxnState::PrepareAbort);
        assert_eq!(o.journal.lines(), 2);
    }
}
