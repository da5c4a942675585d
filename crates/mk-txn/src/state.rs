//! The transaction state machine's vocabulary: `TxnState`, `Outcome`,
//! `StagedOffset`, and the durable per-id metadata that every journal line
//! carries in full.

use mk_core::TopicPartition;
use mk_log::ControlType;
use std::collections::BTreeMap;
use std::fmt;

/// The state of the latest transaction of one transactional id.
///
/// `Ongoing -> PrepareCommit -> CompleteCommit` and
/// `Ongoing -> PrepareAbort -> CompleteAbort`; a `Complete*` id may begin a
/// new transaction (back to `Ongoing`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TxnState {
    Ongoing,
    PrepareCommit,
    CompleteCommit,
    PrepareAbort,
    CompleteAbort,
}

impl TxnState {
    /// Every state, in lifecycle order.
    pub const ALL: [TxnState; 5] = [
        TxnState::Ongoing,
        TxnState::PrepareCommit,
        TxnState::CompleteCommit,
        TxnState::PrepareAbort,
        TxnState::CompleteAbort,
    ];

    /// The spelling used in the journal and in messages.
    pub const fn as_str(self) -> &'static str {
        match self {
            TxnState::Ongoing => "Ongoing",
            TxnState::PrepareCommit => "PrepareCommit",
            TxnState::CompleteCommit => "CompleteCommit",
            TxnState::PrepareAbort => "PrepareAbort",
            TxnState::CompleteAbort => "CompleteAbort",
        }
    }

    /// Parses the journal spelling.
    pub fn parse(s: &str) -> Option<TxnState> {
        TxnState::ALL.into_iter().find(|t| t.as_str() == s)
    }

    /// The decision of a `Prepare*` state, `None` otherwise.
    pub const fn prepared(self) -> Option<Outcome> {
        match self {
            TxnState::PrepareCommit => Some(Outcome::Commit),
            TxnState::PrepareAbort => Some(Outcome::Abort),
            _ => None,
        }
    }

    /// True for `CompleteCommit` and `CompleteAbort`: the id is free to begin
    /// a new transaction.
    pub const fn is_complete(self) -> bool {
        matches!(self, TxnState::CompleteCommit | TxnState::CompleteAbort)
    }
}

impl fmt::Display for TxnState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a transaction ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    Commit,
    Abort,
}

impl Outcome {
    /// The state that journals the decision.
    pub const fn prepare_state(self) -> TxnState {
        match self {
            Outcome::Commit => TxnState::PrepareCommit,
            Outcome::Abort => TxnState::PrepareAbort,
        }
    }

    /// The state after every marker is written.
    pub const fn complete_state(self) -> TxnState {
        match self {
            Outcome::Commit => TxnState::CompleteCommit,
            Outcome::Abort => TxnState::CompleteAbort,
        }
    }

    /// The kind of control batch that carries the decision to a partition.
    pub const fn marker(self) -> ControlType {
        match self {
            Outcome::Commit => ControlType::Commit,
            Outcome::Abort => ControlType::Abort,
        }
    }
}

/// A consumer offset staged by `send_offsets`: stored for `group` only if the
/// transaction commits.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StagedOffset {
    pub group: String,
    pub tp: TopicPartition,
    pub offset: i64,
}

/// Everything durable about one transactional id; every journal line holds
/// one complete value of this, so recovery keeps the last line per id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TxnMetadata {
    pub id: String,
    pub state: TxnState,
    pub producer_id: i64,
    pub producer_epoch: i32,
    /// When the current transaction began (clock milliseconds); drives the
    /// timeout, also across restarts.
    pub start_ms: i64,
    /// Partitions touched by the current transaction and the offset of its
    /// first record there, `None` until the cluster reports the append.
    pub partitions: BTreeMap<TopicPartition, Option<i64>>,
    /// Staged offsets keyed by (group, partition).
    pub offsets: BTreeMap<(String, TopicPartition), i64>,
    /// Next sequence number per partition for the current producer epoch.
    /// Only exact in a line written by a clean close.
    pub sequences: BTreeMap<TopicPartition, i32>,
    /// True only in lines of the snapshot written by a clean close.
    pub clean: bool,
}

impl TxnMetadata {
    pub fn staged_offsets(&self) -> Vec<StagedOffset> {
        self.offsets
            .iter()
            .map(|((group, tp), offset)| StagedOffset {
                group: group.clone(),
                tp: tp.clone(),
                offset: *offset,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_spellings_round_trip() {
        for s in TxnState::ALL {
            assert_eq!(TxnState::parse(s.as_str()), Some(s));
        }
        assert_eq!(TxnState::parse("Empty"), None);
    }

    #[test]
    fn outcomes_name_their_states_and_markers() {
        assert_eq!(Outcome::Commit.prepare_state(), TxnState::PrepareCommit);
        assert_eq!(Outcome::Abort.complete_state(), TxnState::CompleteAbort);
        assert_eq!(Outcome::Abort.marker(), ControlType::Abort);
        assert_eq!(TxnState::PrepareAbort.prepared(), Some(Outcome::Abort));
        assert_eq!(TxnState::Ongoing.prepared(), None);
        assert!(TxnState::CompleteCommit.is_complete());
        assert!(!TxnState::PrepareCommit.is_complete());
    }
}
