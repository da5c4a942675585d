//! The partition log (book chapters 2-3): the record model, the MKB1 batch
//! encoding (version 1 in `codec`; version 2, a producer's record block kept
//! as produced, in `block`; byte layout in docs/mkb1.md), segments with
//! sparse offset and time indexes, crash recovery, retention and key
//! compaction.
//!
//! Batches are kept as the producer built them where it can: a Kafka
//! producer's compressed record block is stored behind an MKB1 version 2
//! header and served back unchanged, so the broker never touches records on
//! the hot path (Kafka's own design; chapter 2 in docs/chapters.md). A
//! produced batch reaches the log as its block alone
//! ([`RecordBatch::from_block`], validated once by the caller), the log
//! writes its offsets and epoch into the header (Kafka's CRC does not cover
//! them), a fetch takes the header fields and the block of a stored frame
//! without decoding a record ([`StoredBatch::block`]), and a follower copies
//! frames byte for byte. Records are decoded only where an answer needs
//! them: compaction, the key check of compacted topics, replay, JSON-TCP.
//! A block is rewritten only as Kafka rewrites one: recompressed for a
//! topic whose `compression.type` is another codec
//! ([`block::BlockBatch::recompressed`], before the partition lock), and
//! rebuilt from the records compaction keeps, in its own codec.
//!
//! Version 1 frames, which encode every record in fixed-width fields, stay
//! readable and are still written where the broker builds the records
//! itself (JSON-TCP produce to a topic without a codec, transaction
//! markers, and the survivors of a compacted version 1 batch).
//! What version 1 offered and version 2 gives up: a segment whose every
//! byte the broker wrote, readable record by record in a hex dump, so that
//! checking a frame's CRC checked its records. A version 2 block is the
//! producer's varint encoding, usually compressed; the broker vouches for
//! it because it walked it once on the way in.
//!
//! It owns the bytes of one replica of one partition on disk. It knows batch
//! headers (producer ids, sequences, transaction markers) because they are
//! part of the format, but it must never know replicas, ISR, high watermarks,
//! consumer groups, the transaction coordinator, networks, JSON, threads,
//! async runtimes or the wall clock (time arrives as `now_ms` arguments).

pub mod block;
pub mod block_records;
mod checkpoint;
mod cleaner_checkpoint;
pub mod codec;
mod compaction;
mod config;
mod crc;
mod error;
mod flush;
pub mod index;
mod log;
mod log_start;
mod offset_file;
pub mod record;
mod recovery;
mod retention;
mod segment;
mod swap;
mod txn_index;
pub mod validator;

pub use cleaner_checkpoint::CLEANER_CHECKPOINT_FILE;
pub use codec::BatchHeader;
pub use compaction::{CleanerState, CompactionResult};
pub use config::{CleanerConfig, LogConfig};
pub use error::{LogError, RecordError, Result};
pub use flush::{FlushPlan, SyncedFlush};
pub use log::{
    AppendInfo, CheckedFrame, Fetched, FrameOrigin, LogRecord, PartitionLog, SegmentInfo,
    StoredBatch,
};
pub use log_start::LOG_START_FILE;
/// The storage seam the log writes through, re-exported because its types
/// are part of the log's API (`LogError::Storage`, `LogConfig::faults`).
pub use mk_storage::{Fault, FaultInjector, StorageError};
pub use record::{ControlType, Header, ProducerInfo, Record, RecordBatch};
pub use retention::RetentionPolicy;
pub use txn_index::AbortedTxn;
