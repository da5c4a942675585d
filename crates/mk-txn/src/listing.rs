//! ListTransactions' filters as Kafka 4.1 applies them
//! (`TransactionStateManager.listTransactionStates` and KIP-1152's
//! transactional id pattern): states by name (a name Kafka does not know is
//! reported back, not an error), producer ids, a minimum running time and
//! a regular expression the whole id must match.

use crate::coordinator::{TransactionCoordinator, TxnDescription};
use crate::error::{Result, TxnError};
use crate::state::TxnState;

/// Kafka's transaction states this coordinator never shows (a
/// transactional id being expired, an epoch fence in progress): valid
/// filters that match nothing here.
pub const STATES_NEVER_SHOWN: [&str; 2] = ["Dead", "PrepareEpochFence"];

/// What ListTransactions asks for; empty lists and `None` filter nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TxnFilter {
    /// State names as Kafka spells them (`Ongoing`, `PrepareCommit`, ...).
    pub states: Vec<String>,
    pub producer_ids: Vec<i64>,
    /// Only transactions started more than this many milliseconds ago.
    pub min_duration_ms: Option<i64>,
    /// A regular expression the whole transactional id must match; an
    /// empty one filters nothing.
    pub id_pattern: Option<String>,
}

/// ListTransactions' answer: the transactions that pass, by id, and the
/// state names Kafka does not know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnListing {
    pub transactions: Vec<TxnDescription>,
    pub unknown_states: Vec<String>,
}

impl TxnDescription {
    /// The partitions Kafka's DescribeTransactions shows: those of the
    /// current transaction while it is open or being completed; none once
    /// it is complete or before it starts (Kafka's coordinator forgets
    /// them on completion, while this description keeps the last ones for
    /// operators).
    pub fn partitions_in_flight(&self) -> &[mk_core::TopicPartition] {
        match self.state {
            TxnState::Ongoing | TxnState::PrepareCommit | TxnState::PrepareAbort => {
                &self.partitions
            }
            TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort => &[],
        }
    }
}

impl TransactionCoordinator {
    /// The transactions `filter` selects at `now_ms`. A pattern that is
    /// not a regular expression is INVALID_REGULAR_EXPRESSION.
    pub fn list_filtered(&self, filter: &TxnFilter, now_ms: i64) -> Result<TxnListing> {
        let pattern = match filter.id_pattern.as_deref().filter(|p| !p.is_empty()) {
            None => None,
            Some(p) => Some(regex::Regex::new(&format!("^(?:{p})$")).map_err(|e| {
                TxnError::InvalidRegularExpression(format!(
                    "{p:?} is not a regular expression: {e}"
                ))
            })?),
        };
        let mut unknown_states = Vec::new();
        let mut states = Vec::new();
        for name in &filter.states {
            match TxnState::parse(name) {
                Some(s) => states.push(Some(s)),
                None if STATES_NEVER_SHOWN.contains(&name.as_str()) => states.push(None),
                None => unknown_states.push(name.clone()),
            }
        }
        let passes = |d: &TxnDescription| {
            (filter.states.is_empty() || states.contains(&Some(d.state)))
                && (filter.producer_ids.is_empty() || filter.producer_ids.contains(&d.producer_id))
                && filter
                    .min_duration_ms
                    .is_none_or(|ms| now_ms.saturating_sub(d.start_ms) > ms)
                && pattern
                    .as_ref()
                    .is_none_or(|p| p.is_match(&d.transactional_id))
        };
        Ok(TxnListing {
            transactions: self.list().into_iter().filter(passes).collect(),
            unknown_states,
        })
    }
}
