//! The error type of mk-txn. Every variant maps to one stable `ErrorCode`.

use mk_core::ErrorCode;
use mk_storage::StorageError;

/// Errors of the transaction layer.
#[derive(Debug, thiserror::Error)]
pub enum TxnError {
    /// A transaction operation arrived in a state that does not allow it.
    #[error("invalid transaction state for {txn_id:?}: expected {expected}, found {found}")]
    InvalidTxnState {
        txn_id: String,
        expected: String,
        found: String,
    },
    /// The request's transaction cannot go on as asked, but the producer
    /// may abort it and continue with the same transactional id (Kafka's
    /// TRANSACTION_ABORTABLE, KIP-890 / KIP-1050): a transactional batch for
    /// a partition, or offsets for a group, that the open transaction does
    /// not have. Adapters answer INVALID_TXN_STATE to request versions
    /// older than the code.
    #[error("transaction abortable for {txn_id:?}: {reason}")]
    TransactionAbortable { txn_id: String, reason: String },
    /// The caller speaks for another epoch of the transactional id than
    /// the current one (Kafka's PRODUCER_FENCED at the coordinator).
    #[error("producer fenced for {txn_id:?}: {reason}")]
    ProducerFenced { txn_id: String, reason: String },
    /// A transactional batch carries another epoch than the id's current
    /// one (Kafka's INVALID_PRODUCER_EPOCH, what a partition answers a
    /// zombie's Produce).
    #[error("invalid producer epoch for {txn_id:?}: {reason}")]
    InvalidProducerEpoch { txn_id: String, reason: String },
    /// The transactional id is unknown, or belongs to another producer id.
    #[error("invalid producer id mapping for {txn_id:?}: {reason}")]
    InvalidProducerIdMapping { txn_id: String, reason: String },
    /// The id's previous transaction is still being completed; retry.
    #[error("concurrent transactions for {txn_id:?}: {reason}")]
    ConcurrentTransactions { txn_id: String, reason: String },
    /// A transaction timeout outside `1..=max_transaction_timeout_ms`.
    #[error("invalid transaction timeout: {0}")]
    InvalidTransactionTimeout(String),
    /// A malformed request: empty ids, negative offsets or epochs, a plan
    /// that does not belong to this coordinator.
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// ListTransactions' transactional id pattern does not parse.
    #[error("invalid regular expression: {0}")]
    InvalidRegularExpression(String),
    /// The journal cannot be written, read or trusted.
    #[error(transparent)]
    Storage(#[from] StorageError),
}

impl TxnError {
    /// The stable code of this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            TxnError::InvalidTxnState { .. } => ErrorCode::InvalidTxnState,
            TxnError::TransactionAbortable { .. } => ErrorCode::TransactionAbortable,
            TxnError::ProducerFenced { .. } => ErrorCode::ProducerFenced,
            TxnError::InvalidProducerEpoch { .. } => ErrorCode::InvalidProducerEpoch,
            TxnError::InvalidProducerIdMapping { .. } => ErrorCode::InvalidProducerIdMapping,
            TxnError::ConcurrentTransactions { .. } => ErrorCode::ConcurrentTransactions,
            TxnError::InvalidTransactionTimeout(_) => ErrorCode::InvalidTransactionTimeout,
            TxnError::InvalidRequest(_) => ErrorCode::InvalidRequest,
            TxnError::InvalidRegularExpression(_) => ErrorCode::InvalidRegularExpression,
            TxnError::Storage(_) => ErrorCode::StorageError,
        }
    }

    /// True for failures of the disk (as opposed to bad input): the caller
    /// must treat these as fatal for the broker, never as a client error.
    pub fn is_storage_failure(&self) -> bool {
        matches!(self, TxnError::Storage(_))
    }

    pub(crate) fn state(
        txn_id: &str,
        expected: impl Into<String>,
        found: impl Into<String>,
    ) -> Self {
        TxnError::InvalidTxnState {
            txn_id: txn_id.to_string(),
            expected: expected.into(),
            found: found.into(),
        }
    }

    pub(crate) fn abortable(txn_id: &str, reason: impl Into<String>) -> Self {
        TxnError::TransactionAbortable {
            txn_id: txn_id.to_string(),
            reason: reason.into(),
        }
    }

    pub(crate) fn fenced(txn_id: &str, reason: impl Into<String>) -> Self {
        TxnError::ProducerFenced {
            txn_id: txn_id.to_string(),
            reason: reason.into(),
        }
    }

    pub(crate) fn bad_epoch(txn_id: &str, reason: impl Into<String>) -> Self {
        TxnError::InvalidProducerEpoch {
            txn_id: txn_id.to_string(),
            reason: reason.into(),
        }
    }

    pub(crate) fn mapping(txn_id: &str, reason: impl Into<String>) -> Self {
        TxnError::InvalidProducerIdMapping {
            txn_id: txn_id.to_string(),
            reason: reason.into(),
        }
    }

    pub(crate) fn concurrent(txn_id: &str, reason: impl Into<String>) -> Self {
        TxnError::ConcurrentTransactions {
            txn_id: txn_id.to_string(),
            reason: reason.into(),
        }
    }
}

/// Result alias of the transaction layer.
pub type Result<T, E = TxnError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variant_maps_to_its_stable_code() {
        let cases = [
            (
                TxnError::state("t", "Ongoing", "CompleteCommit"),
                ErrorCode::InvalidTxnState,
                false,
            ),
            (
                TxnError::abortable("t", "out-0 is not in the transaction"),
                ErrorCode::TransactionAbortable,
                false,
            ),
            (
                TxnError::fenced("t", "epoch 1 < 2"),
                ErrorCode::ProducerFenced,
                false,
            ),
            (
                TxnError::bad_epoch("t", "epoch 1 < 2"),
                ErrorCode::InvalidProducerEpoch,
                false,
            ),
            (
                TxnError::mapping("t", "unknown"),
                ErrorCode::InvalidProducerIdMapping,
                false,
            ),
            (
                TxnError::concurrent("t", "completing"),
                ErrorCode::ConcurrentTransactions,
                false,
            ),
            (
                TxnError::InvalidTransactionTimeout("0".into()),
                ErrorCode::InvalidTransactionTimeout,
                false,
            ),
            (
                TxnError::InvalidRequest("x".into()),
                ErrorCode::InvalidRequest,
                false,
            ),
            (
                TxnError::from(StorageError::unusable("/j", "bad")),
                ErrorCode::StorageError,
                true,
            ),
            (
                TxnError::from(StorageError::io("/j", std::io::Error::other("disk"))),
                ErrorCode::StorageError,
                true,
            ),
        ];
        for (err, code, storage) in cases {
            assert_eq!(err.code(), code, "{err}");
            assert_eq!(err.is_storage_failure(), storage, "{err}");
        }
    }

    #[test]
    fn state_message_names_expected_and_found() {
        let msg = TxnError::state("tx", "Ongoing", "PrepareCommit").to_string();
        assert_eq!(
            msg,
            "invalid transaction state for \"tx\": expected Ongoing, found PrepareCommit"
        );
    }
}
