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
use crate::state::{TxnMetadata, TxnState};
use mk_core::TopicPartition;
use mk_log::StorageError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

/// The journal's JSON payload. Field order is the serialization order.
#[derive(Debug, Serialize, Deserialize)]
struct Payload {
    id: String,
    state: String,
    producer_id: i64,
    producer_epoch: i32,
    start_ms: i64,
    partitions: Vec<PartitionEntry>,
    offsets: Vec<OffsetEntry>,
    sequences: Vec<SequenceEntry>,
    clean: bool,
}

#[derive(Debug, Serialize, Deserialize)]
struct PartitionEntry {
    topic: String,
    partition: u32,
    first_offset: Option<i64>,
}

#[derive(Debug, Serialize, Deserialize)]
struct OffsetEntry {
    group: String,
    topic: String,
    partition: u32,
    offset: i64,
}

#[derive(Debug, Serialize, Deserialize)]
struct SequenceEntry {
    topic: String,
    partition: u32,
    next: i32,
}

/// Encodes one journal line, newline included.
pub(crate) fn encode_line(meta: &TxnMetadata) -> String {
    let payload = Payload {
        id: meta.id.clone(),
        state: meta.state.as_str().to_string(),
        producer_id: meta.producer_id,
        producer_epoch: meta.producer_epoch,
        start_ms: meta.start_ms,
        partitions: meta
            .partitions
            .iter()
            .map(|(tp, first)| PartitionEntry {
                topic: tp.topic.clone(),
                partition: tp.partition,
                first_offset: *first,
            })
            .collect(),
        offsets: meta
            .offsets
            .iter()
            .map(|((group, tp), offset)| OffsetEntry {
                group: group.clone(),
                topic: tp.topic.clone(),
                partition: tp.partition,
                offset: *offset,
            })
            .collect(),
        sequences: meta
            .sequences
            .iter()
            .map(|(tp, next)| SequenceEntry {
                topic: tp.topic.clone(),
                partition: tp.partition,
                next: *next,
            })
            .collect(),
        clean: meta.clean,
    };
    // Serializing plain structs of strings and integers cannot fail.
    let json = serde_json::to_string(&payload).unwrap_or_default();
    format!("{:08x} {json}\n", crc32c::crc32c(json.as_bytes()))
}

/// Decodes one line without its newline; `None` for any defect: bad CRC
/// text, CRC mismatch, unparsable JSON, a missing field, or a value that
/// breaks an invariant (empty id, negative epoch or offset, duplicates).
pub(crate) fn decode_line(line: &[u8]) -> Option<TxnMetadata> {
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
    let p: Payload = serde_json::from_slice(json).ok()?;
    into_metadata(p)
}

fn into_metadata(p: Payload) -> Option<TxnMetadata> {
    if p.id.is_empty() || p.producer_id < 0 || p.producer_epoch < 0 {
        return None;
    }
    let mut partitions = BTreeMap::new();
    for e in p.partitions {
        if e.first_offset.is_some_and(|o| o < 0) {
            return None;
        }
        let tp = TopicPartition::new(e.topic, e.partition);
        if partitions.insert(tp, e.first_offset).is_some() {
            return None;
        }
    }
    let mut offsets = BTreeMap::new();
    for e in p.offsets {
        if e.offset < 0 || e.group.is_empty() {
            return None;
        }
        let key = (e.group, TopicPartition::new(e.topic, e.partition));
        if offsets.insert(key, e.offset).is_some() {
            return None;
        }
    }
    let mut sequences = BTreeMap::new();
    for e in p.sequences {
        if e.next < 0 {
            return None;
        }
        let tp = TopicPartition::new(e.topic, e.partition);
        if sequences.insert(tp, e.next).is_some() {
            return None;
        }
    }
    Some(TxnMetadata {
        id: p.id,
        state: TxnState::parse(&p.state)?,
        producer_id: p.producer_id,
        producer_epoch: p.producer_epoch,
        start_ms: p.start_ms,
        partitions,
        offsets,
        sequences,
        clean: p.clean,
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
pub(crate) fn scan(bytes: &[u8]) -> Scan {
    let mut out = Scan::default();
    let mut rest = bytes;
    while let Some(end) = rest.iter().position(|b| *b == b'\n') {
        let Some(meta) = decode_line(&rest[..end]) else {
            break;
        };
        out.entries.push(meta);
        out.valid_len += end + 1;
        rest = &rest[end + 1..];
    }
    out
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
}

impl Default for JournalFaults {
    fn default() -> Self {
        Self {
            writes_before_failure: AtomicI64::new(-1),
            tear: AtomicBool::new(false),
        }
    }
}

impl JournalFaults {
    pub fn new() -> Self {
        Self::default()
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
    pub fn open(path: &Path, faults: std::sync::Arc<JournalFaults>) -> Result<Opened> {
        let existed = path.exists();
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(path)
            .map_err(|e| StorageError::io(path, e))?;
        if !existed {
            let dir = parent(path)?;
            mk_log::fsutil::sync_dir(dir)?;
        }
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)
            .map_err(|e| StorageError::io(path, e))?;
        let scan = scan(&bytes);
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
            .and_then(|()| self.file.sync_data())
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
        mk_log::fsutil::write_atomic(&self.path, text.as_bytes())?;
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

    fn meta(id: &str, state: TxnState, epoch: i32) -> TxnMetadata {
        let tp = TopicPartition::new("out", 1);
        TxnMetadata {
            id: id.to_string(),
            state,
            producer_id: 7,
            producer_epoch: epoch,
            start_ms: 1_000,
            partitions: BTreeMap::from([(tp.clone(), Some(42))]),
            offsets: BTreeMap::from([(("g".to_string(), TopicPartition::new("in", 0)), 5)]),
            sequences: BTreeMap::from([(tp, 3)]),
            clean: false,
        }
    }

    #[test]
    fn journal_line_format_is_crc_hex_space_compact_json() {
        let line = encode_line(&meta("tx-1", TxnState::PrepareCommit, 2));
        insta::assert_snapshot!(line, @r#"
        41a93631 {"id":"tx-1","state":"PrepareCommit","producer_id":7,"producer_epoch":2,"start_ms":1000,"partitions":[{"topic":"out","partition":1,"first_offset":42}],"offsets":[{"group":"g","topic":"in","partition":0,"offset":5}],"sequences":[{"topic":"out","partition":1,"next":3}],"clean":false}
        "#);
        let json = &line[9..line.len() - 1];
        assert_eq!(
            &line[..8],
            format!("{:08x}", crc32c::crc32c(json.as_bytes()))
        );
        assert!(line.ends_with('\n'));
    }

    #[test]
    fn every_kind_of_bad_line_is_refused() {
        let good = encode_line(&meta("a", TxnState::Ongoing, 0));
        let body = good.trim_end_matches('\n');
        assert!(decode_line(body.as_bytes()).is_some());
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
            with_crc(&json.replace(",\"clean\":false", "")),
            // Valid CRC over an unknown state.
            with_crc(&json.replace("Ongoing", "Empty")),
            // Valid CRC over a negative epoch.
            with_crc(&json.replace("\"producer_epoch\":0", "\"producer_epoch\":-1")),
            // Valid CRC over an empty id.
            with_crc(&json.replace("\"id\":\"a\"", "\"id\":\"\"")),
            String::new(),
        ];
        for case in cases {
            assert!(decode_line(case.as_bytes()).is_none(), "accepted {case:?}");
        }
    }

    #[test]
    fn scan_stops_at_a_line_without_newline() {
        let a = encode_line(&meta("a", TxnState::Ongoing, 0));
        let b = encode_line(&meta("b", TxnState::Ongoing, 0));
        let text = format!("{a}{}", &b[..b.len() - 1]);
        let s = scan(text.as_bytes());
        assert_eq!(s.entries.len(), 1);
        assert_eq!(s.valid_len, a.len());
    }

    fn arb_state() -> impl Strategy<Value = TxnState> {
        prop::sample::select(TxnState::ALL.to_vec())
    }

    fn arb_meta() -> impl Strategy<Value = TxnMetadata> {
        (
            prop::sample::select(vec!["a", "b", "tx-é", "c\"q"]),
            arb_state(),
            0i64..5,
            0i32..5,
            any::<i64>(),
            prop::collection::btree_map(
                ("[a-z]{1,3}", 0u32..3).prop_map(|(t, p)| TopicPartition::new(t, p)),
                prop::option::of(0i64..1_000),
                0..3,
            ),
            prop::collection::btree_map(
                ("[a-z]{1,2}", "[a-z]{1,3}", 0u32..3)
                    .prop_map(|(g, t, p)| (g, TopicPartition::new(t, p))),
                0i64..1_000,
                0..3,
            ),
            prop::collection::btree_map(
                ("[a-z]{1,3}", 0u32..3).prop_map(|(t, p)| TopicPartition::new(t, p)),
                0i32..i32::MAX,
                0..3,
            ),
            any::<bool>(),
        )
            .prop_map(
                |(id, state, pid, epoch, start_ms, partitions, offsets, sequences, clean)| {
                    TxnMetadata {
                        id: id.to_string(),
                        state,
                        producer_id: pid,
                        producer_epoch: epoch,
                        start_ms,
                        partitions,
                        offsets,
                        sequences,
                        clean,
                    }
                },
            )
    }

    proptest! {
        #[test]
        fn journal_round_trips_every_line(entries in prop::collection::vec(arb_meta(), 0..8)) {
            let text: String = entries.iter().map(encode_line).collect();
            let s = scan(text.as_bytes());
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
            let s = scan(&text.as_bytes()[..cut]);
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
            let s = scan(&bytes);
            prop_assert_eq!(&s.entries[..], &entries[..damaged_line]);
        }
    }

    #[test]
    fn open_truncates_a_torn_tail_and_appends_after_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("transactions.journal");
        let faults = std::sync::Arc::new(JournalFaults::new());
        let mut o = Journal::open(&path, faults.clone()).unwrap();
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
        let mut o = Journal::open(&path, faults.clone()).unwrap();
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
        let o = Journal::open(&path, faults).unwrap();
        assert_eq!(o.truncated_bytes, 0);
        assert_eq!(o.states["a"].state, TxnState::PrepareAbort);
        assert_eq!(o.journal.lines(), 2);
    }
}
