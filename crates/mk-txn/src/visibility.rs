//! Read visibility of transactional data: the last stable offset and the
//! read_committed / read_uncommitted filters. Everything here is decided
//! from the partition log itself (its open transactions and its aborted
//! index), never from the coordinator's latest state of a transactional id,
//! so reusing an id cannot hide what an earlier transaction committed.

use mk_log::{AbortedTxn, LogRecord, PartitionLog};

/// The last stable offset: `min(high_watermark, first_unstable_offset)`.
/// Offsets at or above it may still belong to a transaction without a
/// marker, so read_committed readers stop there. Always `<= high_watermark`.
pub fn last_stable_offset(high_watermark: i64, first_unstable_offset: Option<i64>) -> i64 {
    first_unstable_offset.map_or(high_watermark, |f| f.min(high_watermark))
}

/// True if the record belongs to a transaction that ended with an ABORT
/// marker (same producer id, offset inside the aborted range).
pub fn is_aborted(record: &LogRecord, aborted: &[AbortedTxn]) -> bool {
    record.batch.transactional
        && aborted.iter().any(|a| {
            a.producer_id == record.batch.producer.producer_id
                && a.first_offset <= record.offset
                && record.offset <= a.last_offset
        })
}

/// True if a whole stored batch belongs to an aborted transaction (the
/// batch-level form of [`is_aborted`], for readers that return batches).
/// Control batches are never aborted data: they are the markers readers
/// skip past.
pub fn is_batch_aborted(header: &mk_log::BatchHeader, aborted: &[AbortedTxn]) -> bool {
    header.transactional
        && header.control.is_none()
        && aborted.iter().any(|a| {
            a.producer_id == header.producer.producer_id
                && a.first_offset <= header.base_offset
                && header.base_offset <= a.last_offset
        })
}

/// The read_committed filter over records already bounded by the LSO:
/// control batches never appear, records of aborted transactions are
/// dropped, committed transactional and non-transactional records pass.
/// `aborted` must cover the offsets of `records` (ask the log for
/// `aborted_transactions(first, lso)`).
pub fn read_committed(records: Vec<LogRecord>, aborted: &[AbortedTxn]) -> Vec<LogRecord> {
    records
        .into_iter()
        .filter(|r| r.batch.control.is_none() && !is_aborted(r, aborted))
        .collect()
}

/// The read_uncommitted filter over records already bounded by the high
/// watermark: everything except control batches (which hold no records in
/// this format, so this is a guard rather than a transformation).
pub fn read_uncommitted(records: Vec<LogRecord>) -> Vec<LogRecord> {
    records
        .into_iter()
        .filter(|r| r.batch.control.is_none())
        .collect()
}

/// A read_committed fetch from one partition log: up to `max_records`
/// committed records from `offset`, bounded by the LSO derived from
/// `high_watermark` and the log's open transactions. Aborted records do not
/// count against `max_records`; reading continues past them until enough
/// records are found or the LSO is reached. Errors are the log's own
/// (OFFSET_OUT_OF_RANGE for an offset outside `[log_start, LEO]`).
pub fn fetch_committed(
    log: &PartitionLog,
    offset: i64,
    max_records: usize,
    high_watermark: i64,
) -> mk_log::Result<Vec<LogRecord>> {
    let lso = last_stable_offset(high_watermark, log.first_unstable_offset());
    let mut out = Vec::new();
    let mut next = offset;
    // Validate the start offset even when nothing is visible.
    let mut batch = log.fetch(next, max_records, Some(lso))?;
    // Each round either returns nothing (done) or moves `next` past at least
    // one record, so the loop is bounded by the records below the LSO.
    while !batch.is_empty() && out.len() < max_records {
        let last = batch.last().map_or(next, |r| r.offset);
        let aborted = log.aborted_transactions(next, last + 1);
        out.extend(read_committed(batch, &aborted));
        next = last + 1;
        if out.len() >= max_records || next >= lso {
            break;
        }
        batch = log.fetch(next, max_records - out.len(), Some(lso))?;
    }
    // What the LSO is for: nothing at or above it reaches a read_committed
    // reader, and offsets come back in log order.
    assert!(
        out.last().is_none_or(|r| r.offset < lso)
            && out.windows(2).all(|w| w[0].offset < w[1].offset),
        "read_committed records must be ascending and below the LSO {lso}"
    );
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lso_is_the_minimum_and_never_above_the_high_watermark() {
        assert_eq!(last_stable_offset(10, None), 10);
        assert_eq!(last_stable_offset(10, Some(4)), 4);
        assert_eq!(last_stable_offset(10, Some(12)), 10);
        assert_eq!(last_stable_offset(0, Some(0)), 0);
    }
}
