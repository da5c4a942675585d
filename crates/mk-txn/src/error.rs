//! The error type of mk-txn. Every variant maps to one stable `ErrorCode`.

use mk_core::ErrorCode;
use mk_log::StorageError;

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
    /// The caller speaks for an older instance of the transactional id (or
    /// for an instance whose sequence numbers were lost by an unclean
    /// restart).
    #[error("producer fenced for {txn_id:?}: {reason}")]
    ProducerFenced { txn_id: String, reason: String },
    /// A malformed request: empty ids, negative offsets or epochs, a plan
    /// that does not belong to this coordinator.
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// The journal cannot be written, read or trusted.
    #[error(transparent)]
    Storage(#[from] StorageError),
}

impl TxnError {
    /// The stable code of this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            TxnError::InvalidTxnState { .. } => ErrorCode::InvalidTxnState,
            TxnError::ProducerFenced { .. } => ErrorCode::ProducerFenced,
            TxnError::InvalidRequest(_) => ErrorCode::InvalidRequest,
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

    pub(crate) fn fenced(txn_id: &str, reason: impl Into<String>) -> Self {
        TxnError::ProducerFenced {
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
                TxnError::fenced("t", "epoch 1 < 2"),
                ErrorCode::ProducerFenced,
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
