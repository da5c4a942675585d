//! Share sessions (KIP-932): what a member's ShareFetch and
//! ShareAcknowledge requests carry between them. Epoch 0 opens a session
//! with the partitions the request names (replacing the member's previous
//! one); each later request carries the next epoch and adds partitions or
//! forgets some; epoch -1 is the member's last request, after which the
//! session is gone and the records the member still holds are released.

use crate::error::{GroupError, Result};
use mk_core::TopicPartition;
use std::collections::{BTreeMap, BTreeSet};

/// The epoch of a request that opens a session.
pub const INITIAL_SESSION_EPOCH: i32 = 0;
/// The epoch of a member's last request.
pub const FINAL_SESSION_EPOCH: i32 = -1;

#[derive(Debug, Clone, PartialEq, Eq)]
struct Session {
    /// The epoch the member's next request must carry.
    next_epoch: i32,
    partitions: BTreeSet<TopicPartition>,
}

/// What a request does to its session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SessionStep {
    /// A session was opened (epoch 0).
    Opened,
    /// The session went on.
    Continued,
    /// The member's last request: the session is closed.
    Closed,
}

/// Every open share session, keyed by (group, member).
#[derive(Debug, Default)]
pub(crate) struct ShareSessions {
    sessions: BTreeMap<(String, String), Session>,
}

impl ShareSessions {
    /// Applies one request's epoch and partition changes. Errors: a
    /// session that does not exist -> SHARE_SESSION_NOT_FOUND; another epoch
    /// than the next one, or epoch 0 where a session cannot be opened (a
    /// ShareAcknowledge) -> INVALID_SHARE_SESSION_EPOCH; more open sessions
    /// than `max` -> SHARE_SESSION_NOT_FOUND (Kafka answers
    /// SHARE_SESSION_LIMIT_REACHED; the client treats both alike).
    pub(crate) fn step(
        &mut self,
        key: (String, String),
        epoch: i32,
        may_open: bool,
        added: &[TopicPartition],
        forgotten: &[TopicPartition],
        max: usize,
    ) -> Result<SessionStep> {
        match epoch {
            INITIAL_SESSION_EPOCH if may_open => {
                if !self.sessions.contains_key(&key) && self.sessions.len() >= max {
                    return Err(GroupError::ShareSessionNotFound(format!(
                        "the broker already has its maximum of {max} share sessions"
                    )));
                }
                let partitions = added.iter().cloned().collect();
                self.sessions.insert(
                    key,
                    Session {
                        next_epoch: 1,
                        partitions,
                    },
                );
                Ok(SessionStep::Opened)
            }
            FINAL_SESSION_EPOCH => {
                self.sessions.remove(&key);
                Ok(SessionStep::Closed)
            }
            e if e > 0 => self.continue_session(&key, e, added, forgotten),
            e => Err(GroupError::InvalidShareSessionEpoch(format!(
                "share session epoch {e} cannot be used by this request"
            ))),
        }
    }

    fn continue_session(
        &mut self,
        key: &(String, String),
        epoch: i32,
        added: &[TopicPartition],
        forgotten: &[TopicPartition],
    ) -> Result<SessionStep> {
        let Some(s) = self.sessions.get_mut(key) else {
            return Err(GroupError::ShareSessionNotFound(format!(
                "member {} of share group {} has no share session",
                key.1, key.0
            )));
        };
        if s.next_epoch != epoch {
            return Err(GroupError::InvalidShareSessionEpoch(format!(
                "share session epoch {epoch}; the next epoch of the session is {}",
                s.next_epoch
            )));
        }
        s.next_epoch = if epoch == i32::MAX { 1 } else { epoch + 1 };
        s.partitions.extend(added.iter().cloned());
        for tp in forgotten {
            s.partitions.remove(tp);
        }
        Ok(SessionStep::Continued)
    }

    /// The partitions of a session (none if it is closed).
    pub(crate) fn partitions(&self, key: &(String, String)) -> Vec<TopicPartition> {
        self.sessions
            .get(key)
            .map(|s| s.partitions.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Drops the session of a member that left its group.
    pub(crate) fn remove(&mut self, key: &(String, String)) {
        self.sessions.remove(key);
    }

    /// Drops every session of a group.
    pub(crate) fn remove_group(&mut self, group: &str) {
        self.sessions.retain(|(g, _), _| g != group);
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.sessions.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> (String, String) {
        ("g".into(), "m".into())
    }

    #[test]
    fn epochs_follow_one_another_and_the_last_closes() {
        let mut s = ShareSessions::default();
        let t0 = TopicPartition::new("t", 0);
        let t1 = TopicPartition::new("t", 1);
        let code = |r: Result<SessionStep>| r.unwrap_err().code();
        assert_eq!(
            code(s.step(key(), 1, true, &[], &[], 10)),
            mk_core::ErrorCode::ShareSessionNotFound
        );
        assert_eq!(
            s.step(key(), 0, true, std::slice::from_ref(&t0), &[], 10)
                .unwrap(),
            SessionStep::Opened
        );
        assert_eq!(
            code(s.step(key(), 2, true, &[], &[], 10)),
            mk_core::ErrorCode::InvalidShareSessionEpoch
        );
        assert_eq!(
            s.step(key(), 1, true, std::slice::from_ref(&t1), &[t0], 10)
                .unwrap(),
            SessionStep::Continued
        );
        assert_eq!(s.partitions(&key()), vec![t1]);
        assert_eq!(
            code(s.step(key(), 0, false, &[], &[], 10)),
            mk_core::ErrorCode::InvalidShareSessionEpoch
        );
        assert_eq!(
            s.step(key(), -1, false, &[], &[], 10).unwrap(),
            SessionStep::Closed
        );
        assert_eq!(s.len(), 0);
        assert_eq!(
            s.step(key(), 0, true, &[], &[], 0).unwrap_err().code(),
            mk_core::ErrorCode::ShareSessionNotFound
        );
    }
}
