//! The transaction state machine's vocabulary: `TxnState`, `Outcome`,
//! `StagedCommit` and `StagedOffset`, and the durable per-id metadata that every journal line
//! carries in full.

use mk_core::TopicPartition;
use mk_log::ControlType;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// The state of the latest transaction of one transactional id (Kafka's
/// `TransactionState` without the states of its own log handling).
///
/// `Empty -> Ongoing -> PrepareCommit -> CompleteCommit` and
/// `Ongoing -> PrepareAbort -> CompleteAbort`. `InitProducerId` leaves an id
/// `Empty` under a new epoch; `Empty` and `Complete*` ids begin their next
/// transaction with the first partition or group added (or an explicit
/// teaching-model `begin`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TxnState {
    Empty,
    Ongoing,
    PrepareCommit,
    CompleteCommit,
    PrepareAbort,
    CompleteAbort,
}

impl TxnState {
    /// Every state, in lifecycle order.
    pub const ALL: [TxnState; 6] = [
        TxnState::Empty,
        TxnState::Ongoing,
        TxnState::PrepareCommit,
        TxnState::CompleteCommit,
        TxnState::PrepareAbort,
        TxnState::CompleteAbort,
    ];

    /// The spelling used in the journal and in messages.
    pub const fn as_str(self) -> &'static str {
        match self {
            TxnState::Empty => "Empty",
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

    /// True for `CompleteCommit` and `CompleteAbort`.
    pub const fn is_complete(self) -> bool {
        matches!(self, TxnState::CompleteCommit | TxnState::CompleteAbort)
    }

    /// True when no transaction is open or deciding: `Empty` or `Complete*`.
    /// Such an id may begin its next transaction or get a new epoch.
    pub const fn is_idle(self) -> bool {
        matches!(
            self,
            TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort
        )
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

/// What TxnOffsetCommit stages for one partition: the offset, and the
/// leader epoch and metadata string the committer sent with it, stored as
/// they are if the transaction commits.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StagedCommit {
    pub offset: i64,
    /// `None` when the committer named no epoch.
    pub leader_epoch: Option<i32>,
    pub metadata: String,
}

impl From<i64> for StagedCommit {
    fn from(offset: i64) -> Self {
        Self {
            offset,
            leader_epoch: None,
            metadata: String::new(),
        }
    }
}

/// A consumer offset staged by TxnOffsetCommit: stored for `group` only if the
/// transaction commits.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StagedOffset {
    pub group: String,
    pub tp: TopicPartition,
    pub offset: i64,
    pub leader_epoch: Option<i32>,
    pub metadata: String,
}

/// No producer epoch: what `last_producer_epoch` holds when the latest
/// bump was not asked for by a producer naming its current epoch.
pub(crate) const NO_EPOCH: i32 = -1;

/// Everything durable about one transactional id; every journal line holds
/// one complete value of this, so recovery keeps the last line per id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TxnMetadata {
    pub id: String,
    pub state: TxnState,
    pub producer_id: i64,
    pub producer_epoch: i32,
    /// The epoch before the latest bump that a producer asked for with its
    /// current epoch (KIP-360), so a retry of that InitProducerId gets the
    /// same answer; `NO_EPOCH` otherwise.
    pub last_producer_epoch: i32,
    /// The producer's `transaction.timeout.ms`, from its InitProducerId.
    pub timeout_ms: i64,
    /// When the current transaction began (clock milliseconds); drives the
    /// timeout, also across restarts.
    pub start_ms: i64,
    /// Partitions added to the current transaction: each gets a marker.
    pub partitions: BTreeSet<TopicPartition>,
    /// Groups added with AddOffsetsToTxn: only they may stage offsets.
    pub groups: BTreeSet<String>,
    /// Staged offsets keyed by (group, partition).
    pub offsets: BTreeMap<(String, TopicPartition), StagedCommit>,
    /// Set while a transactions-v2 end that exhausted the epochs is
    /// Prepare*: its markers carry `producer_id` at the last epoch, and
    /// completing it moves the id to this producer id at epoch 0.
    pub next_producer_id: Option<i64>,
    /// Set when that end completed: the producer id the id moved away
    /// from. A retry of the end names it with `last_producer_epoch`, and
    /// gets the same answer (the fresh producer id at epoch 0) until the
    /// next transaction begins.
    pub previous_producer_id: Option<i64>,
}

impl TxnMetadata {
    /// The `(producer id, epoch)` a retry of the latest epoch bump names:
    /// the epoch before the bump, under the producer id before it (the
    /// previous one after a move to a fresh producer id). `None` when no
    /// retry is remembered.
    pub fn retry_identity(&self) -> Option<(i64, i32)> {
        (self.last_producer_epoch != NO_EPOCH).then(|| {
            (
                self.previous_producer_id.unwrap_or(self.producer_id),
                self.last_producer_epoch,
            )
        })
    }

    pub fn staged_offsets(&self) -> Vec<StagedOffset> {
        self.offsets
            .iter()
            .map(|((group, tp), staged)| StagedOffset {
                group: group.clone(),
                tp: tp.clone(),
                offset: staged.offset,
                leader_epoch: staged.leader_epoch,
                metadata: staged.metadata.clone(),
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
        assert_eq!(TxnState::parse("Dead"), None);
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
        assert!(TxnState::Empty.is_idle() && TxnState::CompleteAbort.is_idle());
        assert!(!TxnState::Ongoing.is_idle() && !TxnState::PrepareAbort.is_idle());
    }
}
