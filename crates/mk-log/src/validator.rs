//! What a leader checks of a produced batch against its topic's settings
//! before appending it (the part of Kafka's `LogValidator` that depends on
//! the topic, not on the format): a compacted topic refuses records
//! without a key, because compaction keeps the latest record per key and a
//! record without one could never be cleaned or replaced.

use crate::error::{LogError, RecordError, Result};
use crate::record::RecordBatch;
use mk_core::TopicPartition;

/// How many refused records the error message names (Kafka's: "only
/// showing the first three errors at most").
const NAMED_IN_MESSAGE: usize = 3;

/// Refuses a data batch for a compacted topic if any of its records has no
/// key: INVALID_RECORD with one `RecordError` per keyless record (its
/// index in the batch and Kafka's message) and Kafka's summary message.
/// Control batches (transaction markers) are the coordinator's and pass.
pub fn check_keys_for_compaction(batch: &RecordBatch, partition: &TopicPartition) -> Result<()> {
    if batch.is_control() {
        return Ok(());
    }
    // A producer's batch kept as produced is decoded (decompressed within
    // the read bound) for this check only, as Kafka's validator does for
    // compacted topics.
    let batch = batch.decoded(crate::codec::MAX_UNCOMPRESSED_READ_BYTES)?;
    let records: Vec<RecordError> = batch
        .records()
        .iter()
        .enumerate()
        .filter(|(_, r)| r.key.is_none())
        .map(|(i, _)| RecordError {
            batch_index: u32::try_from(i).unwrap_or(u32::MAX),
            message: format!(
                "Compacted topic cannot accept message without key in topic partition {partition}."
            ),
        })
        .collect();
    if records.is_empty() {
        return Ok(());
    }
    Err(LogError::InvalidRecords {
        message: summary(&records),
        records,
    })
}

/// Kafka's message for a batch refused for its records, naming the first
/// three the way Kafka's `RecordError::toString` does.
fn summary(records: &[RecordError]) -> String {
    let named: Vec<String> = records
        .iter()
        .take(NAMED_IN_MESSAGE)
        .map(|e| {
            format!(
                "RecordError(batchIndex={}, message='{}')",
                e.batch_index, e.message
            )
        })
        .collect();
    format!(
        "One or more records have been rejected due to {} record errors in total, and only \
         showing the first three errors at most: [{}]",
        records.len(),
        named.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{ControlType, ProducerInfo, Record};
    use bytes::Bytes;

    fn record(key: Option<&'static [u8]>) -> Record {
        Record::new(
            key.map(Bytes::from_static),
            Some(Bytes::from_static(b"v")),
            0,
        )
    }

    #[test]
    fn keyed_batches_and_markers_pass() {
        let tp = TopicPartition::new("t", 0);
        let keyed = RecordBatch::new(vec![record(Some(b"a")), record(Some(b"b"))]).unwrap();
        assert!(check_keys_for_compaction(&keyed, &tp).is_ok());
        let marker = RecordBatch::marker(ControlType::Commit, "tx", ProducerInfo::NONE);
        assert!(check_keys_for_compaction(&marker, &tp).is_ok());
    }

    #[test]
    fn every_keyless_record_is_named_and_the_message_is_kafkas() {
        let tp = TopicPartition::new("t", 2);
        let batch = RecordBatch::new(vec![
            record(None),
            record(Some(b"k")),
            record(None),
            record(None),
            record(None),
        ])
        .unwrap();
        let e = check_keys_for_compaction(&batch, &tp).unwrap_err();
        assert_eq!(e.code(), mk_core::ErrorCode::InvalidRecord);
        let indexes: Vec<u32> = e.record_errors().iter().map(|r| r.batch_index).collect();
        assert_eq!(indexes, vec![0, 2, 3, 4]);
        let each = "Compacted topic cannot accept message without key in topic partition t-2.";
        assert!(e.record_errors().iter().all(|r| r.message == each));
        assert_eq!(
            e.to_string(),
            format!(
                "One or more records have been rejected due to 4 record errors in \
                 total, and only showing the first three errors at most: \
                 [RecordError(batchIndex=0, message='{each}'), \
                 RecordError(batchIndex=2, message='{each}'), \
                 RecordError(batchIndex=3, message='{each}')]"
            )
        );
        assert!(
            LogError::InvalidRecord("x".into())
                .record_errors()
                .is_empty()
        );
    }
}
