//! One segment of a partition log: its files, its in-memory summary and its
//! sparse indexes, plus the frame reader that every read path shares.

use crate::codec::{self, BatchHeader};
use crate::config::LogConfig;
use crate::error::{LogError, Result};
use crate::index::{ENTRY_BYTES, OffsetIndex, TimeIndex};
use bytes::Bytes;
use mk_storage::{FaultInjector, WriteGate, torn_error};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

pub(crate) const LOG_EXT: &str = "log";
pub(crate) const INDEX_EXT: &str = "index";
pub(crate) const TIME_INDEX_EXT: &str = "timeindex";

/// `<dir>/<base, 20 digits>.<ext>`.
pub(crate) fn segment_path(dir: &Path, base_offset: i64, ext: &str) -> PathBuf {
    dir.join(format!("{base_offset:020}.{ext}"))
}

/// The two sparse indexes of a segment.
#[derive(Debug, Clone, Default)]
pub(crate) struct Indexes {
    pub offsets: OffsetIndex,
    pub times: TimeIndex,
    /// Rebuilt from the log because the files were missing or malformed;
    /// the files must be rewritten on close.
    pub rebuilt: bool,
}

impl Indexes {
    pub fn byte_len(&self) -> u64 {
        ((self.offsets.len() + self.times.len()) * ENTRY_BYTES) as u64
    }
}

/// Which bytes of a segment a consumer's fetch may send without checking
/// their frame CRCs: those this process wrote (from `written_from` on: it
/// computed their CRCs as it appended them) and those a fetch already
/// checked (below `checked`). Bytes read from disk that nobody checked yet
/// (a closed segment vouched for by a clean shutdown) are checked once, by
/// the first fetch that meets them.
#[derive(Debug)]
pub(crate) struct Trusted {
    written_from: AtomicU64,
    checked: AtomicU64,
}

impl Trusted {
    /// Every byte from `written_from` on was written by this process.
    pub(crate) fn new(written_from: u64) -> Arc<Trusted> {
        Arc::new(Trusted {
            written_from: AtomicU64::new(written_from),
            checked: AtomicU64::new(0),
        })
    }

    /// Whether the frame of `len` bytes at `position` needs no check.
    pub fn covers(&self, position: u64, len: u64) -> bool {
        position >= self.written_from.load(Ordering::Acquire)
            || position.saturating_add(len) <= self.checked.load(Ordering::Acquire)
    }

    /// The frame of `len` bytes at `position` was checked: what is trusted
    /// grows when it adjoins what already was.
    pub fn checked(&self, position: u64, len: u64) {
        let end = position.saturating_add(len);
        let _ = self
            .checked
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |at| {
                (at >= position && at < end).then_some(end)
            });
    }

    /// The segment was cut to `size`: what is appended from there on is
    /// this process's.
    pub(crate) fn cut(&self, size: u64) {
        self.written_from.fetch_min(size, Ordering::AcqRel);
    }
}

#[derive(Debug)]
pub(crate) struct Segment {
    pub base_offset: i64,
    /// The offset after the last batch (== base for an empty segment). After
    /// compaction it may lie beyond the last surviving batch: gaps stay gaps.
    pub next_offset: i64,
    /// Bytes in the `.log` file.
    pub size: u64,
    /// Greatest record timestamp in the segment, -1 when none.
    pub max_timestamp_ms: i64,
    /// Index bytes (both files), known without loading the indexes.
    pub index_bytes: u64,
    /// Loaded lazily for closed segments after a clean open.
    pub indexes: OnceLock<Indexes>,
    /// The index files on disk lag the in-memory indexes.
    pub index_dirty: bool,
    /// Files changed since the last fsync.
    pub unsynced: bool,
    /// The bytes a fetch need not check (shared with the fetches that
    /// check frames after the partition lock).
    pub trusted: Arc<Trusted>,
}

impl Segment {
    /// A new, empty segment whose (empty) indexes are loaded.
    pub fn empty(base_offset: i64) -> Self {
        Self {
            base_offset,
            next_offset: base_offset,
            size: 0,
            max_timestamp_ms: -1,
            index_bytes: 0,
            indexes: OnceLock::from(Indexes::default()),
            index_dirty: true,
            unsynced: true,
            // Written here from its first byte, or (recovery) every frame
            // is checked as it is read.
            trusted: Trusted::new(0),
        }
    }

    pub fn path(&self, dir: &Path, ext: &str) -> PathBuf {
        segment_path(dir, self.base_offset, ext)
    }

    /// Records a batch just written at `position` in the indexes and the
    /// summary. `indexes` are this segment's (loaded) indexes.
    pub fn note_batch(
        &mut self,
        position: u64,
        header: &BatchHeader,
        size: u64,
        batch_max_timestamp_ms: i64,
        index_interval_bytes: u64,
    ) {
        let rel = u32::try_from(header.base_offset - self.base_offset)
            .expect("the log rolls before a relative offset leaves u32");
        let max_before = self.max_timestamp_ms;
        let idx = self
            .indexes
            .get_mut()
            .expect("indexes are loaded before a segment is written");
        let due = match idx.offsets.last_position() {
            None => true,
            Some(last) => position - last >= index_interval_bytes,
        };
        if due {
            idx.offsets.push(rel, position);
            idx.times.maybe_push(max_before, rel);
            self.index_bytes = idx.byte_len();
            self.index_dirty = true;
        }
        self.size = position + size;
        self.next_offset = header.next_offset();
        self.max_timestamp_ms = self.max_timestamp_ms.max(batch_max_timestamp_ms);
    }

    /// The loaded indexes, reading the files (or rebuilding them from the
    /// log when they are missing or malformed) on first use.
    pub fn indexes(&self, dir: &Path, cfg: &LogConfig) -> Result<&Indexes> {
        if let Some(i) = self.indexes.get() {
            return Ok(i);
        }
        let loaded = match self.load_index_files(dir) {
            Some(i) => i,
            None => self.rebuild_indexes(dir, cfg)?,
        };
        // Another reader may have won the race; both values are equal.
        let _ = self.indexes.set(loaded);
        Ok(self.indexes.get().expect("just set"))
    }

    /// Makes sure the indexes are loaded so they can be mutated.
    pub fn load_indexes(&mut self, dir: &Path, cfg: &LogConfig) -> Result<()> {
        self.indexes(dir, cfg).map(|_| ())
    }

    fn load_index_files(&self, dir: &Path) -> Option<Indexes> {
        let offsets = std::fs::read(self.path(dir, INDEX_EXT)).ok()?;
        let times = std::fs::read(self.path(dir, TIME_INDEX_EXT)).ok()?;
        let offsets = OffsetIndex::from_bytes(&offsets).ok()?;
        let times = TimeIndex::from_bytes(&times).ok()?;
        offsets
            .check_fits(self.size, self.next_offset - self.base_offset)
            .ok()?;
        if self.size > 0 && offsets.entries().first() != Some(&(0, 0)) {
            return None;
        }
        Some(Indexes {
            offsets,
            times,
            rebuilt: false,
        })
    }

    fn rebuild_indexes(&self, dir: &Path, cfg: &LogConfig) -> Result<Indexes> {
        let max_batch_bytes = cfg.max_batch_bytes;
        let path = self.path(dir, LOG_EXT);
        let file = File::open(&path).map_err(|e| LogError::io(&path, e))?;
        let mut shadow = Segment::empty(self.base_offset);
        let mut frames = FrameReader::new(&file, &path, 0, self.size, max_batch_bytes);
        while let Some((pos, frame)) = frames.next_frame().map_err(|e| e.into_storage(&path))? {
            let header = codec::decode_header(&frame, max_batch_bytes)
                .map_err(|e| stored_corruption(&path, pos, &e))?;
            let batch = codec::decode_verified(&frame, &header)
                .map_err(|e| stored_corruption(&path, pos, &e))?;
            shadow.note_batch(
                pos,
                &header,
                frame.len() as u64,
                batch.max_timestamp_ms(),
                cfg.index_interval_bytes,
            );
        }
        let mut idx = shadow.indexes.into_inner().unwrap_or_default();
        idx.rebuilt = true;
        Ok(idx)
    }

    /// The byte position from which to scan for `offset`.
    pub fn scan_start(&self, dir: &Path, offset: i64, cfg: &LogConfig) -> Result<u64> {
        let rel = offset.saturating_sub(self.base_offset);
        let rel = u32::try_from(rel.max(0)).unwrap_or(u32::MAX);
        Ok(self
            .indexes(dir, cfg)?
            .offsets
            .floor(rel)
            .map_or(0, |(_, pos)| pos))
    }

    /// Writes both index files; fsyncs them when `sync` is set.
    pub fn write_index_files(
        &mut self,
        dir: &Path,
        sync: bool,
        faults: &FaultInjector,
    ) -> Result<()> {
        let Some(idx) = self.indexes.get() else {
            return Ok(()); // never loaded: the files on disk are current.
        };
        for (ext, bytes) in [
            (INDEX_EXT, idx.offsets.to_bytes()),
            (TIME_INDEX_EXT, idx.times.to_bytes()),
        ] {
            write_file(faults, &self.path(dir, ext), &bytes, sync)?;
        }
        if let Some(i) = self.indexes.get_mut() {
            i.rebuilt = false;
        }
        self.index_dirty = false;
        Ok(())
    }
}

/// How many closed segments of one log keep a read handle open between
/// reads: a consumer reads one segment after the other, a second reader
/// (another consumer, a follower) may be at another one.
const READ_HANDLES: usize = 2;

/// Read handles of closed segments kept open between reads, so a fetch
/// does not open its segment file every time. At most [`READ_HANDLES`],
/// the most recently used; a handle serves only reads of the same
/// generation of the log's files (truncation, retention and compaction
/// start a new one and drop the handles), so a replaced file is never read
/// through its old handle.
#[derive(Debug, Default)]
pub(crate) struct ReadHandles {
    // Most recently used last. Every update is one push, one removal or
    // one clear: a panic elsewhere cannot leave it half done.
    open: Mutex<Vec<ReadHandle>>,
}

#[derive(Debug)]
struct ReadHandle {
    base_offset: i64,
    generation: u64,
    file: Arc<File>,
}

impl ReadHandles {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<ReadHandle>> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The open handle of segment `base_offset` at `generation`, opening
    /// `path` (and keeping it, dropping the least recently used) when there
    /// is none.
    pub fn get(&self, base_offset: i64, generation: u64, path: &Path) -> Result<Arc<File>> {
        let mut open = self.lock();
        open.retain(|h| h.generation == generation);
        if let Some(i) = open.iter().position(|h| h.base_offset == base_offset) {
            let h = open.remove(i);
            let file = Arc::clone(&h.file);
            open.push(h);
            return Ok(file);
        }
        drop(open);
        let file = Arc::new(File::open(path).map_err(|e| LogError::io(path, e))?);
        self.keep(base_offset, generation, Arc::clone(&file));
        Ok(file)
    }

    /// Keeps `file` as the read handle of segment `base_offset` (the
    /// active segment's file when it is rolled).
    pub fn keep(&self, base_offset: i64, generation: u64, file: Arc<File>) {
        let mut open = self.lock();
        open.retain(|h| h.generation == generation && h.base_offset != base_offset);
        if open.len() >= READ_HANDLES {
            open.remove(0);
        }
        open.push(ReadHandle {
            base_offset,
            generation,
            file,
        });
    }

    /// Closes every handle (segments were deleted or rewritten).
    pub fn clear(&mut self) {
        self.open
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    /// How many handles are open.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.lock().len()
    }
}

/// Creates (or replaces) `path` with `bytes`, fsynced when `sync` is set;
/// the write and the fsync pass `faults`.
pub(crate) fn write_file(
    faults: &FaultInjector,
    path: &Path,
    bytes: &[u8],
    sync: bool,
) -> Result<()> {
    use std::io::Write;
    let gate = faults.site_write_of(path, bytes.len())?;
    let mut f = File::create(path).map_err(|e| LogError::io(path, e))?;
    match gate {
        WriteGate::Whole => f.write_all(bytes).map_err(|e| LogError::io(path, e))?,
        WriteGate::Torn(n) => {
            f.write_all(&bytes[..n])
                .map_err(|e| LogError::io(path, e))?;
            return Err(torn_error(path).into());
        }
    }
    if sync {
        faults.site_sync(path)?;
        f.sync_all().map_err(|e| LogError::io(path, e))?;
    }
    Ok(())
}

/// A stored batch that fails to decode: the disk holds bad data.
pub(crate) fn stored_corruption(path: &Path, position: u64, e: &LogError) -> LogError {
    LogError::storage(path, format!("corrupt batch at position {position}: {e}"))
}

/// Why the frame reader stopped.
#[derive(Debug)]
pub(crate) enum FrameError {
    /// The operating system failed a read.
    Io(LogError),
    /// The bytes at `position` are not a complete, well-formed frame
    /// envelope (torn write or corruption).
    Bad { position: u64, reason: String },
}

impl FrameError {
    pub fn into_storage(self, path: &Path) -> LogError {
        match self {
            FrameError::Io(e) => e,
            FrameError::Bad { position, reason } => {
                LogError::storage(path, format!("bad frame at position {position}: {reason}"))
            }
        }
    }
}

const MIN_CHUNK: usize = 64 * 1024;
const MAX_CHUNK: usize = 1024 * 1024;
/// The smallest first read of a reader sized to what its caller wants.
const SMALL_CHUNK: usize = 4 * 1024;

/// Reads whole frames from `[pos, limit)` of a segment file in fixed-size
/// chunks; frames are zero-copy slices of the chunk they were read with.
pub(crate) struct FrameReader<'a> {
    file: &'a File,
    path: &'a Path,
    pos: u64,
    limit: u64,
    max_batch_bytes: u32,
    buf: Bytes,
    buf_start: u64,
    chunk: usize,
    /// Where the bytes this reader reads from the file are counted.
    counter: Option<&'a AtomicU64>,
}

/// What [`FrameReader::next_frame_within`] found.
pub(crate) enum NextFrame {
    /// A whole frame and its position.
    Frame(u64, Bytes),
    /// The next frame is longer than the caller has room for; its body was
    /// not read.
    TooLong,
    /// The limit is reached.
    End,
}

impl<'a> FrameReader<'a> {
    pub fn new(file: &'a File, path: &'a Path, pos: u64, limit: u64, max_batch_bytes: u32) -> Self {
        Self {
            file,
            path,
            pos,
            limit,
            max_batch_bytes,
            buf: Bytes::new(),
            buf_start: pos,
            chunk: MIN_CHUNK,
            counter: None,
        }
    }

    /// Adds the bytes read from the file to `counter`.
    pub fn counting_into(mut self, counter: &'a AtomicU64) -> Self {
        self.counter = Some(counter);
        self
    }

    /// Starts with chunks of at least `bytes` (callers that expect to read a
    /// lot avoid many small reads).
    pub fn with_chunk_hint(mut self, bytes: usize) -> Self {
        self.chunk = bytes.clamp(MIN_CHUNK, MAX_CHUNK);
        self
    }

    /// Sizes the first read to about `bytes` (at least a few KiB, at most
    /// a chunk): a fetch of one small batch reads a few KiB instead of a
    /// whole chunk, a fetch of 1 MiB reads it at once. Refills grow back to
    /// the usual chunks.
    pub fn with_first_read(mut self, bytes: usize) -> Self {
        self.chunk = bytes
            .saturating_add(codec::FRAME_HEADER_BYTES)
            .clamp(SMALL_CHUNK, MAX_CHUNK);
        self
    }

    /// Where `pos` falls in `buf`: at most the buffer's length, so it fits a
    /// usize.
    fn buffered_offset(&self) -> usize {
        usize::try_from(self.pos - self.buf_start).expect("the read position lies in the buffer")
    }

    fn available(&self) -> &[u8] {
        let off = self.buffered_offset();
        self.buf.get(off..).unwrap_or(&[])
    }

    /// Reads at least `min_len` bytes from the read position (fewer only at
    /// the limit), a whole chunk when `room` allows: bytes past `room` are
    /// bytes the caller will not take.
    fn fill(&mut self, min_len: usize, room: usize) -> Result<(), FrameError> {
        let left = self.limit - self.pos;
        // Never more than the chunk or `min_len`, both usize, so it fits.
        let want = usize::try_from((min_len.max(self.chunk.min(room)) as u64).min(left))
            .unwrap_or(usize::MAX);
        // Read into the vector's spare capacity: the bytes are never zeroed
        // first (which cost as much as the copy out of the page cache).
        let mut v: Vec<u8> = Vec::with_capacity(want);
        while v.len() < want {
            let at = self.pos + v.len() as u64;
            match rustix::io::pread(self.file, rustix::buffer::spare_capacity(&mut v), at) {
                Ok(0) => break,
                Ok(_) => {}
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(FrameError::Io(LogError::io(self.path, e.into()))),
            }
        }
        // A capacity above `want` may have read past it: bytes beyond the
        // limit are not this reader's.
        v.truncate(want);
        if let Some(counter) = self.counter {
            counter.fetch_add(v.len() as u64, Ordering::Relaxed);
        }
        self.buf = Bytes::from(v);
        self.buf_start = self.pos;
        // Refills after the first use one fixed size: equal-sized chunks let
        // the allocator recycle them instead of mapping fresh pages each time,
        // which measured 2.4x faster on sequential reads. A small first read
        // (a small fetch) that was not enough grows to a usual chunk first.
        self.chunk = if self.chunk < MIN_CHUNK {
            MIN_CHUNK
        } else {
            MAX_CHUNK
        };
        Ok(())
    }

    /// The next frame and its position, `None` at the limit.
    pub fn next_frame(&mut self) -> Result<Option<(u64, Bytes)>, FrameError> {
        Ok(match self.next_frame_within(usize::MAX)? {
            NextFrame::Frame(position, frame) => Some((position, frame)),
            NextFrame::TooLong | NextFrame::End => None,
        })
    }

    /// The next frame if it is at most `room` bytes long. Reads stay within
    /// `room` where a frame header allows: a fetch that has taken all but
    /// 50 KB of its limit reads the next frame's header, not the 1 MB frame
    /// it will not send.
    pub fn next_frame_within(&mut self, room: usize) -> Result<NextFrame, FrameError> {
        if self.pos >= self.limit {
            return Ok(NextFrame::End);
        }
        if self.available().len() < codec::FRAME_HEADER_BYTES {
            self.fill(codec::FRAME_HEADER_BYTES, room)?;
        }
        let position = self.pos;
        let len = match codec::peek_frame_len(self.available(), self.max_batch_bytes) {
            Ok(Some(len)) => len,
            Ok(None) => {
                return Err(FrameError::Bad {
                    position,
                    reason: format!(
                        "partial frame header: {} bytes left",
                        self.available().len()
                    ),
                });
            }
            Err(e) => {
                return Err(FrameError::Bad {
                    position,
                    reason: e.to_string(),
                });
            }
        };
        if len > room {
            return Ok(NextFrame::TooLong);
        }
        if self.available().len() < len {
            self.fill(len, room)?;
            if self.available().len() < len {
                return Err(FrameError::Bad {
                    position,
                    reason: format!(
                        "partial frame: {} of {len} bytes present",
                        self.available().len()
                    ),
                });
            }
        }
        let off = self.buffered_offset();
        let frame = self.buf.slice(off..off + len);
        self.pos += len as u64;
        Ok(NextFrame::Frame(position, frame))
    }
}
