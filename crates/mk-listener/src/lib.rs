//! The connection plumbing both TCP listeners of the broker share (the
//! Kafka listener and the JSON-TCP one); what a connection's bytes mean
//! stays in each adapter.
//!
//! - [`accept_loop`]: accepts until stopped, backs off when `accept` fails
//!   (out of file descriptors must not spin the loop), refuses connections
//!   past the listener's limit, and serves each connection in a task of its
//!   own whose panic is contained there (logged, the connection dropped,
//!   every other connection served). A [`ConnectionGuard`] keeps the open
//!   count right however the connection ends.
//! - [`Pipe`] and [`Queue`]: the answers of one connection on their way from
//!   its reader to its writer, bounded by a byte budget and a count of
//!   answers not yet written. Pushing wakes nobody: the reader and the
//!   writer are branches of one `biased` select, reader first ([`drive`]),
//!   so the writer looks at the pipe after every step of the reader. (A
//!   channel woke the running task from inside its own poll, which tokio
//!   answers by waking an idle worker that then steals the connection:
//!   every request hopped between two threads.)
//! - [`write_loop`]: writes whatever is queued in one flush, each write
//!   bounded by the write timeout, so a client that does not read is
//!   dropped. An answer may be made of several parts ([`Answer`]: a Kafka
//!   fetch answer is its header bytes and the stored batches' bytes); they
//!   go out with vectored writes, never copied together first.

use bytes::Bytes;
use futures::FutureExt;
use std::collections::VecDeque;
use std::future::Future;
use std::io::{self, IoSlice};
use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::io::{AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// What a listener does with the connections `accept_loop` takes.
pub trait Accept: Send + Sync + Sized + 'static {
    /// Held as long as a connection lives, beside the open count (the
    /// core's per-protocol connection count).
    type Held: Send + 'static;

    /// The protocol, for log lines.
    fn name(&self) -> &'static str;

    /// Connections open now (counted by the guard).
    fn open_connections(&self) -> &AtomicU64;

    /// At most this many connections are served at once.
    fn max_connections(&self) -> usize;

    /// Whether to take a connection at all, before it is counted (the
    /// Kafka listener of an offline broker refuses every connection).
    fn admit(&self, _peer: SocketAddr) -> bool {
        true
    }

    /// What the connection holds while it lives.
    fn hold(&self) -> Self::Held;

    /// Serves one connection to its end.
    fn serve(
        self: Arc<Self>,
        stream: TcpStream,
        peer: SocketAddr,
    ) -> impl Future<Output = ()> + Send + 'static;
}

/// Decrements the open-connection count however the connection ends.
pub struct ConnectionGuard<A: Accept> {
    acceptor: Arc<A>,
    _held: A::Held,
}

impl<A: Accept> Drop for ConnectionGuard<A> {
    fn drop(&mut self) {
        self.acceptor
            .open_connections()
            .fetch_sub(1, Ordering::AcqRel);
    }
}

/// Accepts connections on `listener` until `stop`, each served in a task
/// of `tasks` (see the module docs).
pub async fn accept_loop<A: Accept>(
    listener: TcpListener,
    acceptor: Arc<A>,
    stop: CancellationToken,
    tasks: TaskTracker,
) {
    let name = acceptor.name();
    loop {
        let accepted = tokio::select! {
            _ = stop.cancelled() => return,
            r = listener.accept() => r,
        };
        let (stream, peer) = match accepted {
            Ok(x) => x,
            Err(e) => {
                tracing::warn!(protocol = name, error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        if !acceptor.admit(peer) {
            drop(stream);
            continue;
        }
        let open = acceptor.open_connections().fetch_add(1, Ordering::AcqRel);
        let guard = ConnectionGuard {
            acceptor: acceptor.clone(),
            _held: acceptor.hold(),
        };
        let max = acceptor.max_connections();
        if usize::try_from(open).unwrap_or(usize::MAX) >= max {
            tracing::warn!(protocol = name, %peer, max, "too many connections; closing the new one");
            drop((stream, guard));
            continue;
        }
        let served = acceptor.clone().serve(stream, peer);
        tasks.spawn(async move {
            let _guard = guard;
            if AssertUnwindSafe(served).catch_unwind().await.is_err() {
                tracing::error!(protocol = name, %peer, "a connection task panicked; the connection was dropped");
            }
        });
    }
}

/// An answer the writer sends: bytes in one or more parts, written back to
/// back.
pub trait Answer {
    /// Its size in bytes (what it takes of the write budget).
    fn len(&self) -> usize;

    /// Whether it has no bytes.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends its parts, in order, to `out`.
    fn parts<'a>(&'a self, out: &mut Vec<IoSlice<'a>>);
}

impl Answer for Vec<u8> {
    fn len(&self) -> usize {
        self.len()
    }
    fn parts<'a>(&'a self, out: &mut Vec<IoSlice<'a>>) {
        out.push(IoSlice::new(self));
    }
}

impl Answer for Bytes {
    fn len(&self) -> usize {
        self.len()
    }
    fn parts<'a>(&'a self, out: &mut Vec<IoSlice<'a>>) {
        out.push(IoSlice::new(self));
    }
}

impl Answer for &'static [u8] {
    fn len(&self) -> usize {
        <[u8]>::len(self)
    }
    fn parts<'a>(&'a self, out: &mut Vec<IoSlice<'a>>) {
        out.push(IoSlice::new(self));
    }
}

/// One answer waiting to be written, holding its share of the connection's
/// write budget and its in-flight slot until it is written.
struct Outgoing<B> {
    bytes: B,
    _budget: OwnedSemaphorePermit,
    _slot: OwnedSemaphorePermit,
}

/// The answers of one connection on their way from its reader to its
/// writer (see the module docs: pushing wakes nobody).
pub struct Pipe<B> {
    queue: Mutex<VecDeque<Outgoing<B>>>,
    /// The reader has stopped: the writer drains and closes.
    closed: AtomicBool,
}

impl<B> Default for Pipe<B> {
    fn default() -> Self {
        Self {
            queue: Mutex::new(VecDeque::new()),
            closed: AtomicBool::new(false),
        }
    }
}

impl<B> Pipe<B> {
    /// The reader has stopped: the writer writes what is queued and closes.
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
    }

    // The queue is plain data whose every update is one push or one swap:
    // a panic elsewhere cannot have broken it, so poison is ignored.
    fn push(&self, o: Outgoing<B>) {
        self.queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push_back(o);
    }

    /// Moves every queued answer into the empty `into`, which the pipe
    /// keeps as its next queue: neither side gives up its capacity.
    fn take_all(&self, into: &mut VecDeque<Outgoing<B>>) {
        std::mem::swap(
            &mut *self.queue.lock().unwrap_or_else(PoisonError::into_inner),
            into,
        );
    }
}

/// The reader's side of a connection's answers: the pipe, its byte budget
/// and its count of answers not yet written.
pub struct Queue<'a, B> {
    pipe: &'a Pipe<B>,
    budget: Arc<Semaphore>,
    budget_bytes: usize,
    slots: Arc<Semaphore>,
}

impl<'a, B: Answer> Queue<'a, B> {
    /// A queue into `pipe` that holds at most `budget_bytes` of answers
    /// (at least 1) and at most `max_in_flight` of them.
    pub fn new(pipe: &'a Pipe<B>, budget_bytes: usize, max_in_flight: usize) -> Self {
        let budget_bytes = budget_bytes.clamp(1, Semaphore::MAX_PERMITS.min(u32::MAX as usize));
        Self {
            pipe,
            budget: Arc::new(Semaphore::new(budget_bytes)),
            budget_bytes,
            slots: Arc::new(Semaphore::new(max_in_flight)),
        }
    }

    /// Waits until the write budget is not used up. A client that does not
    /// read makes one large answer hold the whole budget; its next request
    /// then waits here instead of building a second large answer beside
    /// it, so such a connection holds one answer, not two. False when the
    /// budget is gone (the connection is closing).
    pub async fn room(&self) -> bool {
        self.budget.acquire().await.is_ok()
    }

    /// Queues `bytes` for the writer once the budget and a slot allow; an
    /// answer larger than the whole budget takes all of it, so it still
    /// goes out, alone. False when the connection is closing.
    pub async fn enqueue(&self, bytes: B) -> bool {
        let want = bytes.len().clamp(1, self.budget_bytes);
        let Ok(budget) = self
            .budget
            .clone()
            .acquire_many_owned(u32::try_from(want).unwrap_or(u32::MAX))
            .await
        else {
            return false;
        };
        let Ok(slot) = self.slots.clone().acquire_owned().await else {
            return false;
        };
        self.pipe.push(Outgoing {
            bytes,
            _budget: budget,
            _slot: slot,
        });
        true
    }
}

/// How much of a connection's answers may wait to be written, and how long
/// a write may take.
#[derive(Debug, Clone, Copy)]
pub struct WriteLimits {
    /// At most this many bytes of answers wait (see [`Queue::new`]).
    pub queue_bytes: usize,
    /// At most this many answers wait.
    pub max_in_flight: usize,
    /// A write that the client does not take within this ends the
    /// connection.
    pub timeout: Duration,
}

/// Serves one connection: `read` reads its requests and queues their
/// answers until it stops (the pipe is closed then, and the writer sends
/// what is queued), while the writer sends them into `wr` ([`drive`]).
pub async fn serve<B, W, E>(
    wr: W,
    limits: WriteLimits,
    kill: &CancellationToken,
    peer: Option<SocketAddr>,
    read: impl AsyncFnOnce(&Queue<'_, B>) -> E,
) where
    B: Answer,
    W: AsyncWrite + Unpin,
    E: std::fmt::Debug,
{
    let pipe = Pipe::default();
    let queue = Queue::new(&pipe, limits.queue_bytes, limits.max_in_flight);
    let reader = async {
        let end = read(&queue).await;
        pipe.close();
        end
    };
    drive(reader, &pipe, wr, limits.timeout, kill, peer).await;
}

/// Runs one connection: `reader` (which must `close` the pipe when it
/// stops) and the writer of `pipe` into `wr`, until both ended or `kill`
/// fires. A writer that fails (a client that does not read) ends the
/// connection at once.
pub async fn drive<E: std::fmt::Debug, B: Answer, W: AsyncWrite + Unpin>(
    reader: impl Future<Output = E>,
    pipe: &Pipe<B>,
    wr: W,
    write_timeout: Duration,
    kill: &CancellationToken,
    peer: Option<SocketAddr>,
) {
    let writer = write_loop(wr, pipe, write_timeout);
    tokio::pin!(reader, writer);
    tokio::select! {
        biased;
        _ = kill.cancelled() => {}
        end = &mut reader => {
            tracing::debug!(?peer, ?end, "connection stops reading");
            // The writer drains what is queued and closes.
            tokio::select! {
                _ = kill.cancelled() => {}
                r = &mut writer => if let Err(e) = r {
                    tracing::debug!(?peer, error = %e, "connection write failed");
                }
            }
        }
        r = &mut writer => if let Err(e) = r {
            tracing::debug!(?peer, error = %e, "dropping a connection that does not read");
        },
    }
}

/// Writes what the reader queued, all of it in one flush, until the reader
/// has stopped and everything is written. With nothing queued it waits for
/// the next poll of the connection's task without registering a waker (the
/// reader, polled first in every pass, is what queues).
pub async fn write_loop<W: AsyncWrite + Unpin, B: Answer>(
    wr: W,
    pipe: &Pipe<B>,
    write_timeout: Duration,
) -> io::Result<()> {
    let mut w = BufWriter::with_capacity(64 * 1024, wr);
    let mut batch = VecDeque::new();
    loop {
        // Read before taking: an answer queued before the reader stopped
        // is in this batch, or in none taken after it.
        let closed = pipe.closed.load(Ordering::Acquire);
        pipe.take_all(&mut batch);
        if batch.is_empty() {
            if closed {
                return timed(write_timeout, w.shutdown()).await;
            }
            until_polled_again().await;
            continue;
        }
        write_answers(&mut w, &batch, write_timeout).await?;
        batch.clear();
        timed(write_timeout, w.flush()).await?;
    }
}

/// The most slices one vectored write passes (the kernel takes up to
/// 1024).
const MAX_SLICES: usize = 64;

/// Writes every part of `answers` in order with vectored writes: parts
/// smaller than the buffer's room are gathered into it, larger runs go to
/// the socket as they are (`BufWriter` decides), nothing is copied into
/// one buffer first. Each write is bounded by `write_timeout`.
async fn write_answers<W: AsyncWrite + Unpin, B: Answer>(
    w: &mut BufWriter<W>,
    answers: &VecDeque<Outgoing<B>>,
    write_timeout: Duration,
) -> io::Result<()> {
    let mut slices = Vec::with_capacity(answers.len());
    for o in answers {
        o.bytes.parts(&mut slices);
    }
    let mut rest = &mut slices[..];
    IoSlice::advance_slices(&mut rest, 0);
    while !rest.is_empty() {
        let n = rest.len().min(MAX_SLICES);
        let written = timed(write_timeout, w.write_vectored(&rest[..n])).await?;
        if written == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        IoSlice::advance_slices(&mut rest, written);
    }
    Ok(())
}

/// Pending once, without registering a waker; ready on the next poll.
async fn until_polled_again() {
    let mut first = true;
    std::future::poll_fn(|_| {
        if std::mem::take(&mut first) {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
}

/// `fut`, failed with TimedOut when the client accepted no bytes for `limit`.
pub async fn timed<T>(limit: Duration, fut: impl Future<Output = io::Result<T>>) -> io::Result<T> {
    match tokio::time::timeout(limit, fut).await {
        Ok(r) => r,
        Err(_) => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("the client accepted no response bytes for {limit:?}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_budget_bounds_what_waits_and_a_huge_answer_goes_out_alone() {
        let pipe: Pipe<Vec<u8>> = Pipe::default();
        let q = Queue::new(&pipe, 10, 8);
        assert!(q.enqueue(vec![1; 4]).await);
        assert!(
            q.enqueue(vec![2; 100]).now_or_never().is_none(),
            "over budget: waits"
        );
        let mut out = Vec::new();
        pipe.close();
        write_loop(&mut out, &pipe, Duration::from_secs(1))
            .await
            .unwrap();
        assert_eq!(out, vec![1; 4]);
        // With the budget back, the huge answer takes all of it.
        assert!(q.enqueue(vec![2; 100]).await);
        assert!(q.enqueue(vec![3]).now_or_never().is_none());
    }

    /// An answer of many parts (more than one vectored write takes).
    struct Parts(Vec<Bytes>);

    impl Answer for Parts {
        fn len(&self) -> usize {
            self.0.iter().map(Bytes::len).sum()
        }
        fn parts<'a>(&'a self, out: &mut Vec<IoSlice<'a>>) {
            out.extend(self.0.iter().map(|p| IoSlice::new(p)));
        }
    }

    #[tokio::test]
    async fn answers_of_many_parts_go_out_whole_and_in_order() {
        let pipe: Pipe<Parts> = Pipe::default();
        let q = Queue::new(&pipe, 1 << 20, 8);
        // 150 parts of growing sizes, empty ones among them, then a large
        // one past the writer's buffer.
        let small: Vec<Bytes> = (0..150u8)
            .map(|i| Bytes::from(vec![i; usize::from(i % 7)]))
            .collect();
        let large = Parts(vec![
            Bytes::from(vec![7u8; 200_000]),
            Bytes::from_static(b"end"),
        ]);
        let mut expected: Vec<u8> = small.iter().flat_map(|p| p.to_vec()).collect();
        expected.extend(std::iter::repeat_n(7u8, 200_000));
        expected.extend_from_slice(b"end");
        assert!(q.enqueue(Parts(small)).await);
        assert!(q.enqueue(large).await);
        pipe.close();
        let mut out = Vec::new();
        write_loop(&mut out, &pipe, Duration::from_secs(1))
            .await
            .unwrap();
        assert_eq!(out.len(), expected.len());
        assert!(out == expected);
    }

    #[tokio::test]
    async fn the_writer_drains_what_was_queued_before_the_reader_stopped() {
        let pipe: Pipe<&'static [u8]> = Pipe::default();
        let q = Queue::new(&pipe, 1 << 20, 2);
        assert!(q.enqueue(b"a").await);
        assert!(q.enqueue(b"b").await);
        assert!(
            q.enqueue(b"c").now_or_never().is_none(),
            "two in flight at most"
        );
        pipe.close();
        let mut out = Vec::new();
        write_loop(&mut out, &pipe, Duration::from_secs(1))
            .await
            .unwrap();
        assert_eq!(out, b"ab");
    }
}
