//! The requests and answers of Kafka's classic group protocol as the
//! coordinator sees them (an adapter has decoded them from its wire), and the
//! completion handles of the two requests that wait: a JoinGroup waits for
//! the rebalance barrier, a follower's SyncGroup for the leader's assignment.
//!
//! A handle is a `futures_channel::oneshot` receiver, like mk-replication's
//! `AckHandle`: an async caller awaits it, a synchronous caller (a test, a
//! lab) polls it with `try_result`, and this crate stays free of any
//! runtime. The coordinator resolves the sending half in a later operation
//! (another member's join, the leader's sync, a leave) or in a time step.

use crate::error::{GroupError, Result};
use crate::group::{GroupState, GroupType};
use bytes::Bytes;
use futures_channel::oneshot;
use mk_core::TopicPartition;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A successful heartbeat's answer to a member of a KIP-848 consumer
/// group or a share group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeartbeatAnswer {
    pub member_id: String,
    /// The member's epoch after this heartbeat (-1 or -2 after a leave).
    pub member_epoch: i32,
    pub heartbeat_interval_ms: i32,
    /// The partitions the member may consume, sorted; sent when the member
    /// joined, sent a full request, or its assignment changed.
    pub assignment: Option<Vec<TopicPartition>>,
}

/// A JoinGroup request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupJoin {
    pub group_id: String,
    /// Empty for a member that has no id yet.
    pub member_id: String,
    /// Kafka's `group.instance.id`: set for a static member.
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub session_timeout_ms: i32,
    /// The longest the member may take to rejoin once a rebalance started;
    /// zero or negative means "the session timeout" (JoinGroup v0 has none).
    pub rebalance_timeout_ms: i32,
    pub protocol_type: String,
    /// `(name, metadata)` in the member's order of preference.
    pub protocols: Vec<(String, Bytes)>,
    /// JoinGroup v4+: a member without an id first gets MEMBER_ID_REQUIRED
    /// with an id made by the coordinator, and joins again with it.
    pub require_known_member_id: bool,
    /// The topics the member subscribes to, decoded by the adapter from the
    /// consumer protocol's metadata; empty if it cannot tell. Used by
    /// describe, lag and offset deletion, never for assignment.
    pub subscribed_topics: Vec<String>,
}

/// One member as the leader learns it from its JoinGroup answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinedMember {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    /// The member's metadata for the chosen protocol.
    pub metadata: Bytes,
}

/// A successful JoinGroup answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupJoined {
    pub generation_id: i32,
    pub protocol_type: String,
    pub protocol_name: String,
    pub leader_id: String,
    pub member_id: String,
    /// Every member of the generation (sorted by member id) for the leader;
    /// empty for everyone else.
    pub members: Vec<JoinedMember>,
}

/// A SyncGroup request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupSync {
    pub group_id: String,
    pub generation_id: i32,
    pub member_id: String,
    pub group_instance_id: Option<String>,
    /// SyncGroup v5+ repeats the protocol type and name; they must match.
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    /// The leader's assignment: `(member id, opaque bytes)`. Followers send
    /// none.
    pub assignments: Vec<(String, Bytes)>,
    /// The same assignment decoded by the adapter (member id -> partitions),
    /// so describe and lag can show it. Never used to decide anything.
    pub assigned_partitions: Vec<(String, Vec<TopicPartition>)>,
}

/// A successful SyncGroup answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupSynced {
    pub protocol_type: String,
    pub protocol_name: String,
    /// This member's assignment, verbatim as the leader sent it.
    pub assignment: Bytes,
}

/// One row of ListGroups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupListing {
    pub group_id: String,
    /// Empty for a classic group that never had a member (one used only to
    /// store offsets); "consumer" for KIP-848 groups, "share" for share
    /// groups, as Kafka lists them.
    pub protocol_type: String,
    pub state: GroupState,
    pub group_type: GroupType,
}

/// The answer of a waiting request: resolved by a later operation of the
/// coordinator, or immediately when nothing has to be waited for.
#[derive(Debug)]
pub struct GroupHandle<T> {
    rx: oneshot::Receiver<Result<T>>,
}

/// The answer of a JoinGroup.
pub type JoinHandle = GroupHandle<GroupJoined>;
/// The answer of a SyncGroup.
pub type SyncHandle = GroupHandle<GroupSynced>;

impl<T> GroupHandle<T> {
    /// The outcome if it is known, `None` while the request waits. The
    /// outcome is handed out once; after that the handle reports CLOSED.
    pub fn try_result(&mut self) -> Option<Result<T>> {
        match self.rx.try_recv() {
            Ok(None) => None,
            Ok(Some(r)) => Some(r),
            Err(oneshot::Canceled) => Some(Err(dropped())),
        }
    }
}

impl<T> Future for GroupHandle<T> {
    type Output = Result<T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.rx)
            .poll(cx)
            .map(|r| r.unwrap_or_else(|oneshot::Canceled| Err(dropped())))
    }
}

fn dropped() -> GroupError {
    GroupError::Closed(
        "the group coordinator was closed (or the answer was already taken) before the request \
         was answered"
            .into(),
    )
}

/// The coordinator's half of a waiting request.
#[derive(Debug)]
pub(crate) struct Waiter<T> {
    tx: oneshot::Sender<Result<T>>,
}

impl<T> Waiter<T> {
    pub(crate) fn new() -> (Self, GroupHandle<T>) {
        let (tx, rx) = oneshot::channel();
        (Self { tx }, GroupHandle { rx })
    }

    /// Answers the request. A caller that stopped waiting (dropped its
    /// handle, e.g. because its connection closed) is not an error.
    pub(crate) fn resolve(self, r: Result<T>) {
        let _ = self.tx.send(r);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mk_core::ErrorCode;

    #[test]
    fn a_handle_is_pending_until_resolved_and_reports_a_dropped_coordinator() {
        let (w, mut h) = Waiter::<u8>::new();
        assert!(h.try_result().is_none());
        w.resolve(Ok(7));
        assert_eq!(h.try_result().unwrap().unwrap(), 7);
        assert_eq!(
            h.try_result().unwrap().unwrap_err().code(),
            ErrorCode::ClusterClosed,
            "the outcome is handed out once"
        );

        let (w, mut h) = Waiter::<u8>::new();
        drop(w);
        assert_eq!(
            h.try_result().unwrap().unwrap_err().code(),
            ErrorCode::ClusterClosed
        );
    }
}
