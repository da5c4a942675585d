//! Produce results and the `acks=all` completion handle: a
//! `futures_channel::oneshot` receiver that an async caller can `.await`
//! and a synchronous caller can poll with [`AckHandle::try_result`], while
//! this crate stays free of any runtime. The replica set resolves the
//! sending half in a later state transition (HW advance, ISR shrink,
//! promotion, close).

use crate::error::{ReplicationError, Result};
use futures_channel::oneshot;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// What a producer learns about an appended batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProduceResult {
    /// Offset of the batch's first record; `None` for `acks=0`.
    pub base_offset: Option<i64>,
    /// The offset after the batch; `None` for `acks=0`.
    pub next_offset: Option<i64>,
    /// The leader epoch the batch was written (or found) under.
    pub leader_epoch: i32,
    /// True when the batch was an idempotent retry of a batch already in the
    /// log: nothing was written and the offsets are the original ones.
    pub duplicate: bool,
}

impl ProduceResult {
    /// The result of a batch the leader has just written.
    pub(crate) fn written(info: &mk_log::AppendInfo) -> Self {
        Self {
            base_offset: Some(info.base_offset),
            next_offset: Some(info.next_offset),
            leader_epoch: info.leader_epoch,
            duplicate: false,
        }
    }

    /// The same result without offsets (what `acks=0` reports).
    pub(crate) fn without_offsets(self) -> Self {
        Self {
            base_offset: None,
            next_offset: None,
            ..self
        }
    }
}

/// The answer of `append`: complete for `acks=0` / `acks=1`, a handle for
/// `acks=all`.
#[derive(Debug)]
pub enum AppendOutcome {
    /// `acks=0` (offsets unknown) or `acks=1` (offsets known).
    Done(ProduceResult),
    /// `acks=all`: resolves once the batch is committed, or fails.
    Pending(AckHandle),
}

impl AppendOutcome {
    /// Waits for the final result (immediately ready unless `Pending`).
    pub async fn result(self) -> Result<ProduceResult> {
        match self {
            AppendOutcome::Done(r) => Ok(r),
            AppendOutcome::Pending(handle) => handle.await,
        }
    }
}

/// The completion of one `acks=all` append.
#[derive(Debug)]
pub struct AckHandle {
    rx: oneshot::Receiver<Result<ProduceResult>>,
    base_offset: i64,
    next_offset: i64,
}

impl AckHandle {
    /// Offset of the batch's first record (already assigned on the leader).
    pub fn base_offset(&self) -> i64 {
        self.base_offset
    }

    /// The high watermark the batch waits for.
    pub fn next_offset(&self) -> i64 {
        self.next_offset
    }

    /// The outcome if it is known, `None` while pending. The outcome is
    /// handed out once; after that the handle reports `Closed`.
    pub fn try_result(&mut self) -> Option<Result<ProduceResult>> {
        match self.rx.try_recv() {
            Ok(None) => None,
            Ok(Some(r)) => Some(r),
            Err(oneshot::Canceled) => Some(Err(dropped())),
        }
    }
}

impl Future for AckHandle {
    type Output = Result<ProduceResult>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.rx)
            .poll(cx)
            .map(|r| r.unwrap_or_else(|oneshot::Canceled| Err(dropped())))
    }
}

fn dropped() -> ReplicationError {
    ReplicationError::Closed(
        "the replica set was dropped (or the outcome was already taken) before the batch was acknowledged"
            .into(),
    )
}

/// The replica set's half of a pending `acks=all` append.
#[derive(Debug)]
pub(crate) struct Waiter {
    tx: oneshot::Sender<Result<ProduceResult>>,
    result: ProduceResult,
    next_offset: i64,
}

impl Waiter {
    /// A waiter for `result` (which carries its offsets) and its handle.
    pub(crate) fn new(result: ProduceResult) -> (Self, AckHandle) {
        let (tx, rx) = oneshot::channel();
        let base_offset = result.base_offset.expect("an acks=all result has offsets");
        let next_offset = result.next_offset.expect("an acks=all result has offsets");
        (
            Self {
                tx,
                result,
                next_offset,
            },
            AckHandle {
                rx,
                base_offset,
                next_offset,
            },
        )
    }

    pub(crate) fn next_offset(&self) -> i64 {
        self.next_offset
    }

    /// Resolves the handle successfully. A caller that stopped waiting
    /// (dropped its handle) is not an error.
    pub(crate) fn succeed(self) {
        let _ = self.tx.send(Ok(self.result));
    }

    /// Fails the handle with `err`.
    pub(crate) fn fail(self, err: ReplicationError) {
        let _ = self.tx.send(Err(err));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mk_core::ErrorCode;

    fn result() -> ProduceResult {
        ProduceResult {
            base_offset: Some(3),
            next_offset: Some(5),
            leader_epoch: 0,
            duplicate: false,
        }
    }

    #[test]
    fn handle_is_pending_until_resolved_and_reports_a_dropped_sender() {
        let (w, mut h) = Waiter::new(result());
        assert_eq!(
            (h.base_offset(), h.next_offset(), w.next_offset()),
            (3, 5, 5)
        );
        assert!(h.try_result().is_none());
        w.succeed();
        assert_eq!(h.try_result().unwrap().unwrap(), result());

        let (w, mut h) = Waiter::new(result());
        drop(w);
        assert_eq!(
            h.try_result().unwrap().unwrap_err().code(),
            ErrorCode::ClusterClosed
        );
    }

    #[test]
    fn acks0_result_has_no_offsets() {
        let r = result().without_offsets();
        assert_eq!((r.base_offset, r.next_offset), (None, None));
    }
}
