//! `JsonTcpServer`: accepts connections, frames request lines, answers each
//! in order, and keeps every hostile or slow client inside fixed bounds.
//!
//! Per connection, one task reads and executes requests strictly one after
//! another (Kafka does the same: a broker handles one request of a
//! connection at a time, which is what keeps appends in request order), and
//! a writer in the same task sends the responses. Pipelining works because
//! reading, executing and writing overlap and the writer batches whatever
//! responses are ready into one syscall.
//!
//! The reader hands answers to the writer through mk-listener's `Pipe`, which wakes
//! nobody: both halves are branches of one `biased` select, polled reader
//! first, so the writer looks at the pipe right after every step of the
//! reader. A channel would wake the task from inside its own poll, and
//! tokio answers a task that wakes itself by queueing it behind others and
//! waking an idle worker thread, which then steals the connection: every
//! request hopped between the two threads (3.3 context switches a request
//! measured, against 1 for a plain tokio responder).
//!
//! Bounds: a line is at most `max_frame_bytes` (the read buffer never holds
//! more than that plus `READ_CHUNK`); at most `max_in_flight` answered but
//! unwritten responses and at most `write_queue_bytes` of them wait per
//! connection; a client that does not read for `write_timeout` is dropped;
//! a client that sends no complete request for `idle_timeout` is dropped;
//! at most `max_connections` connections are served at once.

use crate::dispatch::{DispatchContext, execute_in, execute_produces};
use crate::protocol::{
    DecodedLine, ErrorResponse, Operation, ProduceSpec, Request, Response, decode_request_line,
};
use mk_cluster::{BrokerCluster, ClusterError, ErrorCode, Protocol as Listener};
use serde_json::Value;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::net::tcp::OwnedReadHalf;
use tokio::net::{TcpListener, TcpStream, ToSocketAddrs};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// How much one read may add to a connection's buffer.
const READ_CHUNK: usize = 64 * 1024;

/// Limits and switches of the server. Every limit has a default.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// Enables the lab operations (promote, replicate_once, ...).
    pub lab: bool,
    /// The longest request line, including its `\n`.
    pub max_frame_bytes: usize,
    /// Connections served at once; more are closed right after accept.
    pub max_connections: usize,
    /// A connection that sends no complete request for this long is closed.
    pub idle_timeout: Duration,
    /// Requests answered but not yet written, per connection (pipelining
    /// depth); when reached, the server stops reading from that client.
    pub max_in_flight: usize,
    /// Bytes of answered but unwritten responses per connection.
    pub write_queue_bytes: usize,
    /// A client that accepts no response bytes for this long is dropped.
    pub write_timeout: Duration,
    /// How long `shutdown` lets in-flight requests finish before it drops
    /// the connections that are still busy.
    pub shutdown_grace: Duration,
}

impl Default for ServerOptions {
    fn default() -> Self {
        Self {
            lab: false,
            max_frame_bytes: 1_048_576,
            max_connections: 1_024,
            idle_timeout: Duration::from_secs(600),
            max_in_flight: 128,
            write_queue_bytes: 4 * 1_048_576,
            write_timeout: Duration::from_secs(30),
            shutdown_grace: Duration::from_secs(10),
        }
    }
}

impl ServerOptions {
    /// Refuses limits that would stop every connection from working.
    fn validate(&self) -> io::Result<()> {
        if self.max_frame_bytes == 0 || self.max_in_flight == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "max_frame_bytes and max_in_flight must be > 0",
            ));
        }
        Ok(())
    }
}

/// Counters shared by the server and its connections (what `stats` shows
/// of the connections and requests is counted in the core's
/// `ConnectionStats`, beside the Kafka listeners').
#[derive(Debug, Default)]
struct Counters {
    /// Connections open now, for the `max_connections` limit.
    connections: AtomicU64,
    /// Requests being executed right now, over all connections.
    in_flight: AtomicU64,
    /// The largest read buffer any connection has held, in bytes.
    peak_read_buffer: AtomicU64,
}

/// State every connection task shares.
struct Shared {
    cluster: Arc<BrokerCluster>,
    options: ServerOptions,
    counters: Counters,
    /// Stop reading new requests (graceful shutdown).
    stop: CancellationToken,
    /// Drop the connection at once (grace period over).
    kill: CancellationToken,
}

/// A running JSON-TCP server.
pub struct JsonTcpServer {
    local_addr: SocketAddr,
    shared: Arc<Shared>,
    accept: JoinHandle<()>,
    tasks: TaskTracker,
}

impl std::fmt::Debug for JsonTcpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsonTcpServer")
            .field("local_addr", &self.local_addr)
            .finish_non_exhaustive()
    }
}

impl JsonTcpServer {
    /// Binds `addr` (port 0 picks a free port) and starts serving. Fails if
    /// the address cannot be bound (e.g. the port is taken).
    pub async fn start(
        cluster: Arc<BrokerCluster>,
        addr: impl ToSocketAddrs,
        options: ServerOptions,
    ) -> io::Result<JsonTcpServer> {
        options.validate()?;
        let listener = TcpListener::bind(addr).await?;
        Self::serve(cluster, listener, options, Protocol)
    }

    /// Serves on a listener the caller has already bound (mk-server binds
    /// before it opens the data directory, so a taken port fails first).
    pub fn start_on(
        cluster: Arc<BrokerCluster>,
        listener: TcpListener,
        options: ServerOptions,
    ) -> io::Result<JsonTcpServer> {
        options.validate()?;
        Self::serve(cluster, listener, options, Protocol)
    }

    /// Serves on `listener` with `responder` answering each request line
    /// (`options` are already validated).
    fn serve<R: Respond>(
        cluster: Arc<BrokerCluster>,
        listener: TcpListener,
        options: ServerOptions,
        responder: R,
    ) -> io::Result<JsonTcpServer> {
        let local_addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            cluster,
            options,
            counters: Counters::default(),
            stop: CancellationToken::new(),
            kill: CancellationToken::new(),
        });
        let tasks = TaskTracker::new();
        let accept = tokio::spawn(accept_loop(
            listener,
            shared.clone(),
            Arc::new(responder),
            tasks.clone(),
        ));
        tracing::info!(%local_addr, lab = shared.options.lab, "JSON-TCP server listening");
        Ok(JsonTcpServer {
            local_addr,
            shared,
            accept,
            tasks,
        })
    }

    /// The bound address (with the real port when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Connections open right now.
    pub fn connections(&self) -> u64 {
        self.shared.counters.connections.load(Ordering::Relaxed)
    }

    /// The largest read buffer (capacity, in bytes) any connection has held
    /// so far: never more than `max_frame_bytes` plus 64 KiB.
    pub fn peak_read_buffer_bytes(&self) -> u64 {
        self.shared
            .counters
            .peak_read_buffer
            .load(Ordering::Relaxed)
    }

    /// Stops accepting, lets in-flight requests finish (long polls answer at
    /// once with what is visible), writes their responses, closes every
    /// connection and returns. Connections still busy after the grace
    /// period are dropped.
    pub async fn shutdown(self) {
        self.shared.stop.cancel();
        let _ = self.accept.await;
        self.tasks.close();
        if tokio::time::timeout(self.shared.options.shutdown_grace, self.tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!("connections still busy after the shutdown grace period; dropping them");
            self.shared.kill.cancel();
            self.tasks.wait().await;
        }
        tracing::info!(local_addr = %self.local_addr, "JSON-TCP server stopped");
    }
}

/// What the JSON-TCP listener does with an accepted connection (the accept
/// loop, limits, guard and panic containment are mk-listener's).
struct Accepted<R> {
    shared: Arc<Shared>,
    responder: Arc<R>,
}

impl<R: Respond> mk_listener::Accept for Accepted<R> {
    type Held = mk_cluster::Counted;

    fn name(&self) -> &'static str {
        "json"
    }

    fn open_connections(&self) -> &AtomicU64 {
        &self.shared.counters.connections
    }

    fn max_connections(&self) -> usize {
        self.shared.options.max_connections
    }

    fn hold(&self) -> mk_cluster::Counted {
        self.shared
            .cluster
            .views()
            .connection_stats()
            .connection(Listener::JsonTcp)
    }

    async fn serve(self: Arc<Self>, stream: TcpStream, _peer: SocketAddr) {
        serve_connection(stream, self.shared.clone(), &*self.responder).await;
    }
}

async fn accept_loop<R: Respond>(
    listener: TcpListener,
    shared: Arc<Shared>,
    responder: Arc<R>,
    tasks: TaskTracker,
) {
    let _listening = shared
        .cluster
        .views()
        .connection_stats()
        .listening(Listener::JsonTcp);
    let stop = shared.stop.clone();
    let accepted = Arc::new(Accepted { shared, responder });
    mk_listener::accept_loop(listener, accepted, stop, tasks).await;
}

/// The reader's side of a connection's answers, bounded (see mk-listener).
type Queue<'a> = mk_listener::Queue<'a, Vec<u8>>;

async fn serve_connection(stream: TcpStream, shared: Arc<Shared>, responder: &impl Respond) {
    // Small responses must leave at once; the writer batches them itself.
    let _ = stream.set_nodelay(true);
    let peer = stream.peer_addr().ok();
    let (rd, wr) = stream.into_split();
    let limits = mk_listener::WriteLimits {
        queue_bytes: shared.options.write_queue_bytes,
        max_in_flight: shared.options.max_in_flight,
        timeout: shared.options.write_timeout,
    };
    let read = async |q: &Queue<'_>| read_loop(rd, q, &shared, responder).await;
    mk_listener::serve(wr, limits, &shared.kill, peer, read).await;
}

/// Why a connection stopped reading (logged at debug level).
#[derive(Debug)]
#[allow(dead_code, reason = "the payload is read through Debug in logs")]
enum ReadEnd {
    Eof,
    FrameTooLarge,
    Idle,
    Shutdown,
    WriterGone,
    Io(io::Error),
}

/// Grows the read buffer when less than 4 KiB is free: doubling, by at
/// least one read, never beyond one frame and one read.
fn make_room(buf: &mut Vec<u8>, max_frame: usize, shared: &Shared) {
    if buf.capacity() - buf.len() < 4096 {
        let target = (buf.capacity() * 2)
            .max(buf.len() + READ_CHUNK)
            .min(max_frame + READ_CHUNK);
        buf.reserve_exact(target - buf.len());
        shared
            .counters
            .peak_read_buffer
            .fetch_max(buf.capacity() as u64, Ordering::Relaxed);
    }
}

async fn read_loop(
    mut rd: OwnedReadHalf,
    q: &Queue<'_>,
    shared: &Shared,
    responder: &impl Respond,
) -> ReadEnd {
    let max_frame = shared.options.max_frame_bytes;
    let mut buf: Vec<u8> = Vec::with_capacity(4096);
    let mut run: Vec<std::ops::Range<usize>> = Vec::new();
    let idle = shared.options.idle_timeout;
    let mut last_request = Instant::now();
    // One timer and one shutdown listener for the whole connection, not one
    // of each per read: the timer is re-armed only when it fires, to the
    // idle timeout after the last request if one came since.
    let idle_timer = tokio::time::sleep_until(last_request + idle);
    let stop = shared.stop.cancelled();
    tokio::pin!(idle_timer, stop);
    loop {
        // Answer every complete line already buffered; consecutive lines
        // that may be answered together (produces: group commit) are.
        let mut start = 0;
        while let Some(pos) = memchr::memchr(b'\n', &buf[start..]) {
            let end = start + pos;
            if end - start + 1 > max_frame {
                if !answer_run(&buf, &mut run, q, shared, responder).await {
                    return ReadEnd::WriterGone;
                }
                return too_large(&mut rd, q, shared).await;
            }
            let line = &buf[start..end];
            let answered = if responder.may_group(line) {
                run.push(start..end);
                run.len() < MAX_GROUP || answer_run(&buf, &mut run, q, shared, responder).await
            } else {
                answer_run(&buf, &mut run, q, shared, responder).await
                    && answer(line, q, shared, responder).await
            };
            if !answered {
                return ReadEnd::WriterGone;
            }
            start = end + 1;
            last_request = Instant::now();
        }
        if !answer_run(&buf, &mut run, q, shared, responder).await {
            return ReadEnd::WriterGone;
        }
        buf.drain(..start);
        if buf.len() >= max_frame {
            // Even if the newline came next, the line would exceed the limit.
            return too_large(&mut rd, q, shared).await;
        }
        make_room(&mut buf, max_frame, shared);
        let read = tokio::select! {
            _ = &mut stop => return ReadEnd::Shutdown,
            () = &mut idle_timer => {
                let due = last_request + idle;
                if due <= Instant::now() {
                    return ReadEnd::Idle;
                }
                idle_timer.as_mut().reset(due);
                continue;
            }
            r = rd.read_buf(&mut buf) => r,
        };
        match read {
            Err(e) => return ReadEnd::Io(e),
            Ok(0) => {
                // A final line without `\n` is still a request.
                if !buf.is_empty() && !answer(&buf, q, shared, responder).await {
                    return ReadEnd::WriterGone;
                }
                return ReadEnd::Eof;
            }
            Ok(_) => {}
        }
    }
}

/// Answers FRAME_TOO_LARGE, then reads and drops what the client still
/// sends (at most [`LINGER_BYTES`], for at most [`LINGER`], until it
/// closes) before the connection closes. Closing a socket with unread
/// bytes makes the kernel reset the connection, and a client still writing
/// its long line would see only "broken pipe" or "connection reset", never
/// the answer; drained, it finishes writing and reads the error.
async fn too_large(rd: &mut OwnedReadHalf, q: &Queue<'_>, shared: &Shared) -> ReadEnd {
    let msg = format!(
        "request line exceeds max_frame_bytes ({} bytes including the newline); closing the connection",
        shared.options.max_frame_bytes
    );
    let bytes = ErrorResponse::new(ErrorCode::FrameTooLarge, msg).encode(None);
    let _ = q.enqueue(bytes).await;
    let mut chunk = vec![0u8; READ_CHUNK];
    let mut dropped = 0usize;
    let drain = async {
        while dropped < LINGER_BYTES {
            match rd.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => dropped += n,
            }
        }
    };
    tokio::select! {
        () = drain => {}
        () = tokio::time::sleep(LINGER) => {}
        () = shared.stop.cancelled() => {}
    }
    ReadEnd::FrameTooLarge
}

/// How long, and how many bytes, a connection closing for a too-large line
/// keeps reading what its client still sends (see `too_large`).
const LINGER: Duration = Duration::from_secs(5);
const LINGER_BYTES: usize = 256 * 1024 * 1024;

/// The most pipelined lines answered together (one `respond_group`).
const MAX_GROUP: usize = 256;

/// Answers one request line and queues its response. False when the writer
/// is gone.
async fn answer(line: &[u8], q: &Queue<'_>, shared: &Shared, responder: &impl Respond) -> bool {
    if !q.room().await {
        return false;
    }
    let bytes = {
        let _in_flight = InFlight::enter(&shared.counters.in_flight);
        responder.respond(line, shared).await
    };
    shared
        .cluster
        .views()
        .connection_stats()
        .answered(Listener::JsonTcp, 1);
    q.enqueue(bytes).await
}

/// Answers the lines of `run` (ranges of `buf`) together and empties it.
/// False when the writer is gone.
async fn answer_run(
    buf: &[u8],
    run: &mut Vec<std::ops::Range<usize>>,
    q: &Queue<'_>,
    shared: &Shared,
    responder: &impl Respond,
) -> bool {
    let lines: Vec<&[u8]> = run.drain(..).map(|r| &buf[r]).collect();
    match lines.as_slice() {
        [] => return true,
        [line] => return answer(line, q, shared, responder).await,
        _ => {}
    }
    if !q.room().await {
        return false;
    }
    let answers = {
        let _in_flight: Vec<InFlight<'_>> = lines
            .iter()
            .map(|_| InFlight::enter(&shared.counters.in_flight))
            .collect();
        responder.respond_group(&lines, shared).await
    };
    shared
        .cluster
        .views()
        .connection_stats()
        .answered(Listener::JsonTcp, lines.len() as u64);
    for bytes in answers {
        if !q.enqueue(bytes).await {
            return false;
        }
    }
    true
}

/// Counts one request as executing for as long as it lives, so the count
/// also drops when the request panics (the panic is contained per
/// connection) or its connection is dropped mid-request at shutdown.
struct InFlight<'a>(&'a AtomicU64);

impl<'a> InFlight<'a> {
    fn enter(counter: &'a AtomicU64) -> Self {
        counter.fetch_add(1, Ordering::AcqRel);
        Self(counter)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// What the server does with one complete request line: the seam between
/// the socket handling of this module and the protocol. The server always
/// answers through [`Protocol`]; the tests put a misbehaving implementation
/// behind it to prove that the server contains what happens there.
trait Respond: Send + Sync + 'static {
    fn respond(&self, line: &[u8], shared: &Shared) -> impl Future<Output = Vec<u8>> + Send;

    /// Whether `line` may be answered together with its pipelined
    /// neighbours by `respond_group`.
    fn may_group(&self, _line: &[u8]) -> bool {
        false
    }

    /// The answers to consecutive pipelined lines, in order: what `respond`
    /// gives for one after the other.
    fn respond_group(
        &self,
        lines: &[&[u8]],
        shared: &Shared,
    ) -> impl Future<Output = Vec<Vec<u8>>> + Send {
        async move {
            let mut answers = Vec::with_capacity(lines.len());
            for line in lines {
                answers.push(self.respond(line, shared).await);
            }
            answers
        }
    }
}

/// Decode, one core call, encode; a pipelined run of produces is one core
/// call (`produce_group`, group commit).
struct Protocol;

impl Respond for Protocol {
    fn respond(&self, line: &[u8], shared: &Shared) -> impl Future<Output = Vec<u8>> + Send {
        respond(line, shared)
    }

    fn may_group(&self, line: &[u8]) -> bool {
        crate::fast::looks_like_produce(line)
    }

    fn respond_group(
        &self,
        lines: &[&[u8]],
        shared: &Shared,
    ) -> impl Future<Output = Vec<Vec<u8>>> + Send {
        respond_group(lines, shared)
    }
}

/// The response line for one request line, counted in the metrics: bytes
/// in and out, and per operation (`invalid` for a line that does not
/// decode) the requests, errors and latency. The `metrics` facade is a
/// no-op unless the binary installs a recorder (`--metrics-listen`).
async fn respond(line: &[u8], shared: &Shared) -> Vec<u8> {
    let started = std::time::Instant::now();
    let (api, answer) = respond_decoded(decode_request_line(line), shared).await;
    count(line, api, &answer, started);
    answer
}

/// The response lines for consecutive pipelined lines, in order, each
/// what `respond` gives it; the produces among them go to the core
/// together, each run of them as one call (`execute_produces`).
async fn respond_group(lines: &[&[u8]], shared: &Shared) -> Vec<Vec<u8>> {
    let started = std::time::Instant::now();
    let mut answers: Vec<Option<(&'static str, Vec<u8>)>> = lines.iter().map(|_| None).collect();
    let mut produces: Vec<(usize, Option<Value>, ProduceSpec)> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let decoded = decode_request_line(line);
        match decoded.request {
            Ok(Request::Produce(spec)) => produces.push((i, decoded.id, spec)),
            request => {
                answer_produces(&mut produces, &mut answers, shared).await;
                let decoded = DecodedLine {
                    id: decoded.id,
                    request,
                };
                answers[i] = Some(respond_decoded(decoded, shared).await);
            }
        }
    }
    answer_produces(&mut produces, &mut answers, shared).await;
    lines
        .iter()
        .zip(answers)
        .map(|(line, answer)| {
            let (api, answer) = answer.expect("every line is answered");
            count(line, api, &answer, started);
            answer
        })
        .collect()
}

async fn answer_produces(
    produces: &mut Vec<(usize, Option<Value>, ProduceSpec)>,
    answers: &mut [Option<(&'static str, Vec<u8>)>],
    shared: &Shared,
) {
    if produces.is_empty() {
        return;
    }
    let (places, specs): (Vec<(usize, Option<Value>)>, Vec<ProduceSpec>) = produces
        .drain(..)
        .map(|(i, id, spec)| ((i, id), spec))
        .unzip();
    let results = execute_produces(&shared.cluster, specs).await;
    for ((i, id), r) in places.into_iter().zip(results) {
        answers[i] = Some((Operation::Produce.name(), encode(r, id.as_ref())));
    }
}

/// Counts one answered request in the metrics.
fn count(line: &[u8], api: &'static str, answer: &[u8], started: std::time::Instant) {
    let labels = [("protocol", "json"), ("api", api)];
    metrics::counter!("mk_requests_total", &labels).increment(1);
    if answer.starts_with(b"{\"ok\":false") {
        metrics::counter!("mk_request_errors_total", &labels).increment(1);
    }
    metrics::histogram!("mk_request_duration_seconds", &labels)
        .record(started.elapsed().as_secs_f64());
    metrics::counter!("mk_received_bytes_total", "protocol" => "json")
        .increment(line.len() as u64 + 1);
    metrics::counter!("mk_sent_bytes_total", "protocol" => "json").increment(answer.len() as u64);
}

/// The operation's wire name and the response line.
async fn respond_decoded(decoded: DecodedLine, shared: &Shared) -> (&'static str, Vec<u8>) {
    let id = decoded.id.as_ref();
    let request = match decoded.request {
        Err(e) => {
            return (
                "invalid",
                ErrorResponse::new(ErrorCode::InvalidRequest, e.0).encode(id),
            );
        }
        Ok(r) => r,
    };
    let op = request.operation();
    if op.is_lab() && !shared.options.lab {
        let answer = ErrorResponse::new(
            ErrorCode::InvalidRequest,
            format!(
                "{:?} is a lab operation; lab operations are disabled (start the server with --lab to enable them)",
                op.name()
            ),
        )
        .encode(id);
        return (op.name(), answer);
    }
    let ctx = DispatchContext {
        cluster: &shared.cluster,
        shutdown: &shared.stop,
        in_flight: shared.counters.in_flight.load(Ordering::Relaxed),
    };
    (op.name(), encode(execute_in(&ctx, request).await, id))
}

fn encode(r: Result<Response, ClusterError>, id: Option<&Value>) -> Vec<u8> {
    match r {
        Ok(response) => response.encode(id),
        Err(e) => ErrorResponse::new(json_code(e.code()), e.to_string()).encode(id),
    }
}

/// The code this protocol reports for a core code. Spec 06 fixed
/// INVALID_REQUEST for every invalid create/alter argument and for an empty
/// group id; the finer codes Kafka clients expect (INVALID_PARTITIONS,
/// INVALID_GROUP_ID, OFFSET_METADATA_TOO_LARGE, ...) are reported here as
/// INVALID_REQUEST with the same message. Likewise the transaction codes of Kafka's flow keep the spec's
/// three: a zombie's send is PRODUCER_FENCED (Kafka: INVALID_PRODUCER_EPOCH),
/// an unknown transactional id, a transaction still completing and one
/// only an abort can end are INVALID_TXN_STATE (Kafka:
/// INVALID_PRODUCER_ID_MAPPING, CONCURRENT_TRANSACTIONS,
/// TRANSACTION_ABORTABLE), and a bad timeout is INVALID_REQUEST.
pub fn json_code(code: ErrorCode) -> ErrorCode {
    match code {
        ErrorCode::InvalidTopic
        | ErrorCode::InvalidPartitions
        | ErrorCode::InvalidReplicationFactor
        | ErrorCode::InvalidConfig
        | ErrorCode::InvalidGroupId
        | ErrorCode::InvalidTransactionTimeout
        | ErrorCode::OffsetMetadataTooLarge
        | ErrorCode::OperationNotAttempted => ErrorCode::InvalidRequest,
        ErrorCode::InvalidProducerEpoch => ErrorCode::ProducerFenced,
        ErrorCode::InvalidProducerIdMapping
        | ErrorCode::ConcurrentTransactions
        | ErrorCode::TransactionAbortable => ErrorCode::InvalidTxnState,
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mk_cluster::{ManualClock, MiniKafkaConfig};
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    /// A request line that makes [`PanicsOnMarker`] panic.
    const MARKER: &[u8] = b"{\"operation\":\"panic_for_tests\"}";

    /// The protocol, except that the marker line panics inside the request,
    /// where a bug in decoding or in the core would.
    struct PanicsOnMarker;

    impl Respond for PanicsOnMarker {
        async fn respond(&self, line: &[u8], shared: &Shared) -> Vec<u8> {
            if line == MARKER {
                panic!("test-only panic inside a request");
            }
            respond(line, shared).await
        }
    }

    #[tokio::test]
    async fn a_panicking_connection_does_not_take_the_server_down() {
        let dir = tempfile::tempdir().unwrap();
        let cluster = BrokerCluster::open_with_clock(
            MiniKafkaConfig::new(dir.path()),
            Arc::new(ManualClock::new(0)),
        )
        .unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let server = JsonTcpServer::serve(
            cluster.clone(),
            listener,
            ServerOptions::default(),
            PanicsOnMarker,
        )
        .unwrap();
        let shared = server.shared.clone();
        let addr = server.local_addr();
        let mut bad = TcpStream::connect(addr).await.unwrap();
        bad.write_all(&[MARKER, b"\n"].concat()).await.unwrap();
        let mut rest = Vec::new();
        let n = tokio::time::timeout(Duration::from_secs(10), bad.read_to_end(&mut rest))
            .await
            .unwrap()
            .unwrap_or(0);
        assert_eq!(n, 0, "the panicking connection is closed without an answer");
        let good = TcpStream::connect(addr).await.unwrap();
        let (rd, mut wr) = good.into_split();
        wr.write_all(b"{\"operation\":\"list_topics\"}\n")
            .await
            .unwrap();
        let mut line = String::new();
        tokio::time::timeout(
            Duration::from_secs(10),
            BufReader::new(rd).read_line(&mut line),
        )
        .await
        .unwrap()
        .unwrap();
        assert_eq!(line, "{\"ok\":true,\"topics\":[]}\n");
        drop(wr);
        server.shutdown().await;
        // Every connection task has ended: nothing may still count as open
        // or executing, not even the request that panicked.
        assert_eq!(shared.counters.in_flight.load(Ordering::Acquire), 0);
        assert_eq!(shared.counters.connections.load(Ordering::Acquire), 0);
        cluster.lifecycle().close().await.unwrap();
    }
}
