//! `KafkaServer`: one listener per hosted broker id, Kafka's framing
//! (`int32 size` + header + body), in-order answers per connection with
//! pipelining, and every hostile or slow client kept inside fixed bounds.
//!
//! Listeners speak one of Kafka's security protocols (`listener.rs`): on
//! SSL and SASL_SSL ones a connection first completes a TLS handshake
//! (`tls.rs`) within `handshake_timeout`, inside its own task and counted
//! against `max_connections` from the accept on, so a client that stalls
//! the handshake is bounded like any slow client and never blocks the
//! accept loop. After the handshake the connection is served exactly as a
//! plaintext one: the serving code is generic over the stream's halves.
//! Each listener advertises its own endpoints in Metadata, so a client that
//! bootstrapped on the SASL_SSL port is sent SASL_SSL addresses.
//!
//! Per connection, one task reads and executes requests strictly one after
//! another — what a Kafka broker does too, and what keeps a producer's
//! batches in order — while a writer beside it sends the responses, so
//! reading, executing and writing overlap.
//!
//! Bounds: a size prefix above `max_request_bytes` (or negative) closes the
//! connection before anything is allocated for it, and a request's buffer
//! grows only with bytes actually received; at most `max_in_flight`
//! answered but unwritten responses (and `write_queue_bytes` of them) wait
//! per connection; a client that does not read for `write_timeout`, or
//! sends no complete request for `idle_timeout`, is dropped; at most
//! `max_connections` connections are served at once. A request that cannot
//! be decoded closes its connection (Kafka's behaviour); it never affects
//! another connection.

use crate::api::sasl::Session;
use crate::api::{self, Ctx};
use crate::codec::{DecodeError, Reader, Writer};
use crate::frame::{self, RequestHeader};
use crate::listener::SecurityProtocol;
use bytes::{Buf, BufMut, Bytes, BytesMut};
use mk_cluster::Principal;
use mk_cluster::{BrokerCluster, BrokerId};
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// How much one read may add to a request's buffer.
const READ_CHUNK: usize = 64 * 1024;

/// Limits and settings of the Kafka listeners. Every limit has a default.
#[derive(Debug, Clone)]
pub struct KafkaOptions {
    /// The largest request (its size prefix); longer ones close the
    /// connection before any allocation (`--kafka-max-request-bytes`).
    pub max_request_bytes: usize,
    /// The host Metadata advertises for every broker (default: each
    /// listener's own IP).
    pub advertised_host: Option<String>,
    /// Connections served at once per listener; more are closed on accept.
    pub max_connections: usize,
    /// A connection that sends no complete request for this long is closed
    /// (Kafka's `connections.max.idle.ms` is 10 minutes).
    pub idle_timeout: Duration,
    /// Requests answered but not yet written, per connection.
    pub max_in_flight: usize,
    /// Bytes of answered but unwritten responses per connection.
    pub write_queue_bytes: usize,
    /// A client that accepts no response bytes for this long is dropped.
    pub write_timeout: Duration,
    /// How long `shutdown` lets in-flight requests finish.
    pub shutdown_grace: Duration,
    /// The TLS configuration of SSL and SASL_SSL listeners (`tls.rs`).
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// A TLS handshake not finished within this is dropped.
    pub handshake_timeout: Duration,
    /// Mechanisms and PLAIN users of SASL listeners.
    pub sasl: crate::api::sasl::SaslOptions,
}

impl Default for KafkaOptions {
    fn default() -> Self {
        Self {
            max_request_bytes: 16 * 1_048_576,
            advertised_host: None,
            max_connections: 1_024,
            idle_timeout: Duration::from_secs(600),
            max_in_flight: 64,
            write_queue_bytes: 32 * 1_048_576,
            write_timeout: Duration::from_secs(30),
            shutdown_grace: Duration::from_secs(10),
            tls: None,
            handshake_timeout: Duration::from_secs(10),
            sasl: crate::api::sasl::SaslOptions::default(),
        }
    }
}

/// One advertised broker: what Metadata and DescribeCluster report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerEndpoint {
    pub broker_id: BrokerId,
    pub host: String,
    pub port: u16,
}

/// Listeners of one security protocol, one socket per hosted broker.
#[derive(Debug)]
pub struct KafkaListener {
    pub protocol: SecurityProtocol,
    pub sockets: Vec<(BrokerId, TcpListener)>,
}

/// What one listener advertises.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerEndpoints {
    pub protocol: SecurityProtocol,
    pub endpoints: Vec<BrokerEndpoint>,
}

/// Counters of all listeners.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub connections: AtomicU64,
    pub requests: AtomicU64,
    /// The largest request buffer any connection has held.
    pub peak_request_buffer: AtomicU64,
}

/// State every connection shares.
pub(crate) struct Shared {
    pub cluster: Arc<BrokerCluster>,
    pub options: KafkaOptions,
    pub listeners: Vec<ListenerEndpoints>,
    pub counters: Counters,
    pub stop: CancellationToken,
    pub kill: CancellationToken,
}

/// The running Kafka listeners (one per hosted broker id).
pub struct KafkaServer {
    shared: Arc<Shared>,
    accepts: Vec<JoinHandle<()>>,
    tasks: TaskTracker,
}

impl std::fmt::Debug for KafkaServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaServer")
            .field("listeners", &self.shared.listeners)
            .finish_non_exhaustive()
    }
}

impl KafkaServer {
    /// Serves PLAINTEXT on listeners the caller has bound, one per broker
    /// id (see [`KafkaServer::start_listeners`]).
    pub fn start_on(
        cluster: Arc<BrokerCluster>,
        listeners: Vec<(BrokerId, TcpListener)>,
        options: KafkaOptions,
    ) -> io::Result<KafkaServer> {
        let plaintext = KafkaListener {
            protocol: SecurityProtocol::Plaintext,
            sockets: listeners,
        };
        Self::start_listeners(cluster, vec![plaintext], options)
    }

    /// Serves on listeners the caller has bound (mk-server binds them
    /// before opening the data directory, so a taken port fails first):
    /// per security protocol, exactly one socket per hosted broker. TLS
    /// listeners need `options.tls`.
    pub fn start_listeners(
        cluster: Arc<BrokerCluster>,
        listeners: Vec<KafkaListener>,
        options: KafkaOptions,
    ) -> io::Result<KafkaServer> {
        let invalid = |m: String| io::Error::new(io::ErrorKind::InvalidInput, m);
        if options.max_request_bytes < 64 || options.max_in_flight == 0 {
            return Err(invalid(
                "max_request_bytes must be >= 64 and max_in_flight > 0".into(),
            ));
        }
        let mut advertised = Vec::with_capacity(listeners.len());
        for l in &listeners {
            if l.protocol.uses_sasl() && options.sasl.mechanisms.is_empty() {
                return Err(invalid(format!(
                    "the {} listener needs at least one SASL mechanism",
                    l.protocol
                )));
            }
            if l.protocol.uses_tls() && options.tls.is_none() {
                return Err(invalid(format!(
                    "the {} listener needs a TLS certificate and key",
                    l.protocol
                )));
            }
            advertised.push(ListenerEndpoints {
                protocol: l.protocol,
                endpoints: endpoints_of(&cluster, &l.sockets, &options)?,
            });
        }
        let shared = Arc::new(Shared {
            cluster,
            options,
            listeners: advertised,
            counters: Counters::default(),
            stop: CancellationToken::new(),
            kill: CancellationToken::new(),
        });
        let tasks = TaskTracker::new();
        let mut accepts = Vec::new();
        for (index, l) in listeners.into_iter().enumerate() {
            for (broker, socket) in l.sockets {
                tracing::info!(broker, protocol = %l.protocol, addr = ?socket.local_addr().ok(), "Kafka listener started");
                let at = Origin {
                    broker,
                    listener: index,
                    protocol: l.protocol,
                };
                accepts.push(tokio::spawn(accept_loop(
                    socket,
                    at,
                    shared.clone(),
                    tasks.clone(),
                )));
            }
        }
        Ok(KafkaServer {
            shared,
            accepts,
            tasks,
        })
    }

    /// Binds one listener per hosted broker on consecutive ports starting
    /// at `addr` (port 0 picks free ports) and starts serving.
    pub async fn start(
        cluster: Arc<BrokerCluster>,
        addr: SocketAddr,
        options: KafkaOptions,
    ) -> io::Result<KafkaServer> {
        let listeners = bind_consecutive(addr, cluster.broker_ids()).await?;
        Self::start_on(cluster, listeners, options)
    }

    /// What the first listener advertises, one endpoint per broker id.
    pub fn endpoints(&self) -> &[BrokerEndpoint] {
        self.shared
            .listeners
            .first()
            .map_or(&[][..], |l| &l.endpoints[..])
    }

    /// What every listener advertises, in the order they were given.
    pub fn listeners(&self) -> &[ListenerEndpoints] {
        &self.shared.listeners
    }

    /// Connections open right now, over all listeners.
    pub fn connections(&self) -> u64 {
        self.shared.counters.connections.load(Ordering::Relaxed)
    }

    /// Requests answered so far.
    pub fn requests(&self) -> u64 {
        self.shared.counters.requests.load(Ordering::Relaxed)
    }

    /// The largest request buffer any connection has held (bounded by
    /// `max_request_bytes`).
    pub fn peak_request_buffer_bytes(&self) -> u64 {
        self.shared
            .counters
            .peak_request_buffer
            .load(Ordering::Relaxed)
    }

    /// Stops accepting, lets in-flight requests finish (long polls answer
    /// at once), closes every connection and returns.
    pub async fn shutdown(self) {
        self.shared.stop.cancel();
        for a in self.accepts {
            let _ = a.await;
        }
        self.tasks.close();
        if tokio::time::timeout(self.shared.options.shutdown_grace, self.tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!("Kafka connections still busy after the grace period; dropping them");
            self.shared.kill.cancel();
            self.tasks.wait().await;
        }
        tracing::info!("Kafka listeners stopped");
    }
}

/// Binds `brokers.len()` listeners on consecutive ports from `addr`'s port
/// (all on free ports when it is 0).
pub async fn bind_consecutive(
    addr: SocketAddr,
    brokers: &[BrokerId],
) -> io::Result<Vec<(BrokerId, TcpListener)>> {
    reserve_consecutive(addr, brokers)?
        .into_iter()
        .map(|(b, socket)| Ok((b, listen(socket)?)))
        .collect()
}

/// Binds one socket per broker on consecutive ports from `addr`'s port (all
/// on free ports when it is 0) without listening: the ports are taken, so
/// a port in use fails here, but the kernel refuses connections until
/// [`listen`] is called. mk-server reserves before it opens the data
/// directory and listens once the cluster is open, so no client connects
/// to a broker that cannot answer yet.
pub fn reserve_consecutive(
    addr: SocketAddr,
    brokers: &[BrokerId],
) -> io::Result<Vec<(BrokerId, TcpSocket)>> {
    let mut out = Vec::with_capacity(brokers.len());
    for (i, b) in brokers.iter().enumerate() {
        let mut a = addr;
        if addr.port() != 0 {
            let port = u16::try_from(usize::from(addr.port()) + i).map_err(|_| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("no port left for broker {b} after {addr}"),
                )
            })?;
            a.set_port(port);
        }
        let socket = reserve(a).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot listen on {a} for broker {b}: {e}"),
            )
        })?;
        out.push((*b, socket));
    }
    Ok(out)
}

/// Binds `addr` without listening, with `SO_REUSEADDR` as std's
/// `TcpListener::bind` sets it on Unix (a restart must not wait for old
/// connections in TIME_WAIT). A port another process listens on is
/// EADDRINUSE here.
pub fn reserve(addr: SocketAddr) -> io::Result<TcpSocket> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    #[cfg(unix)]
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    Ok(socket)
}

/// Starts accepting on a reserved socket, with the backlog std uses.
pub fn listen(socket: TcpSocket) -> io::Result<TcpListener> {
    socket.listen(1024)
}

/// One endpoint per hosted broker of a listener's sockets; every hosted
/// broker needs exactly one.
fn endpoints_of(
    cluster: &BrokerCluster,
    sockets: &[(BrokerId, TcpListener)],
    options: &KafkaOptions,
) -> io::Result<Vec<BrokerEndpoint>> {
    let mut ids: Vec<BrokerId> = sockets.iter().map(|(b, _)| *b).collect();
    ids.sort_unstable();
    if ids != cluster.broker_ids() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "one listener per hosted broker is needed: brokers {:?}, listeners for {ids:?}",
                cluster.broker_ids()
            ),
        ));
    }
    let mut endpoints = Vec::with_capacity(sockets.len());
    for (broker_id, l) in sockets {
        let addr = l.local_addr()?;
        endpoints.push(BrokerEndpoint {
            broker_id: *broker_id,
            host: options
                .advertised_host
                .clone()
                .unwrap_or_else(|| addr.ip().to_string()),
            port: addr.port(),
        });
    }
    endpoints.sort_by_key(|e| e.broker_id);
    Ok(endpoints)
}

/// Where a connection arrived: which broker's socket of which listener.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Origin {
    pub broker: BrokerId,
    /// Index into `Shared::listeners`.
    pub listener: usize,
    pub protocol: SecurityProtocol,
}

/// What one Kafka listener socket does with an accepted connection (the
/// accept loop, limits, guard and panic containment are mk-listener's).
struct Accepted {
    at: Origin,
    shared: Arc<Shared>,
}

impl mk_listener::Accept for Accepted {
    type Held = mk_cluster::Counted;

    fn name(&self) -> &'static str {
        "kafka"
    }

    fn open_connections(&self) -> &std::sync::atomic::AtomicU64 {
        &self.shared.counters.connections
    }

    fn max_connections(&self) -> usize {
        self.shared.options.max_connections
    }

    fn admit(&self, peer: SocketAddr) -> bool {
        let online = self.shared.cluster.brokers().is_online(self.at.broker);
        if !online {
            tracing::debug!(%peer, broker = self.at.broker, "broker is offline; refusing the connection");
        }
        online
    }

    fn hold(&self) -> mk_cluster::Counted {
        self.shared
            .cluster
            .views()
            .connection_stats()
            .connection(mk_cluster::Protocol::Kafka)
    }

    fn serve(
        self: Arc<Self>,
        stream: TcpStream,
        peer: SocketAddr,
    ) -> impl std::future::Future<Output = ()> + Send + 'static {
        serve_stream(stream, peer, self.at, self.shared.clone())
    }
}

async fn accept_loop(listener: TcpListener, at: Origin, shared: Arc<Shared>, tasks: TaskTracker) {
    // Counted in the core beside the JSON-TCP listener, for `stats`.
    let _listening = shared
        .cluster
        .views()
        .connection_stats()
        .listening(mk_cluster::Protocol::Kafka);
    let stop = shared.stop.clone();
    mk_listener::accept_loop(listener, Arc::new(Accepted { at, shared }), stop, tasks).await;
}

/// The reader's side of a connection's answers, bounded (see mk-listener).
type Queue<'a> = mk_listener::Queue<'a, frame::Response>;

/// Serves one accepted connection: plaintext on its owned halves (no lock
/// between reader and writer), TLS after a handshake bounded by
/// `handshake_timeout`.
async fn serve_stream(stream: TcpStream, peer: SocketAddr, at: Origin, shared: Arc<Shared>) {
    let _ = stream.set_nodelay(true);
    let tls = match (&shared.options.tls, at.protocol.uses_tls()) {
        (Some(tls), true) => tls.clone(),
        _ => {
            let (rd, wr) = stream.into_split();
            let session = Session::new(at.protocol, Principal::anonymous());
            return serve_connection(rd, wr, Some(peer), at, session, shared).await;
        }
    };
    let acceptor = tokio_rustls::TlsAcceptor::from(tls);
    let handshake = tokio::time::timeout(shared.options.handshake_timeout, acceptor.accept(stream));
    let stream = tokio::select! {
        _ = shared.stop.cancelled() => return,
        r = handshake => match r {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => {
                tracing::debug!(%peer, error = %e, "TLS handshake failed");
                return;
            }
            Err(_) => {
                tracing::debug!(%peer, "TLS handshake timed out");
                return;
            }
        },
    };
    let principal = crate::tls::peer_principal(stream.get_ref().1);
    tracing::debug!(%peer, %principal, "TLS connection established");
    let (rd, wr) = tokio::io::split(stream);
    let session = Session::new(at.protocol, principal);
    serve_connection(rd, wr, Some(peer), at, session, shared).await;
}

async fn serve_connection<R, W>(
    rd: R,
    wr: W,
    peer: Option<SocketAddr>,
    at: Origin,
    session: Session,
    shared: Arc<Shared>,
) where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let limits = mk_listener::WriteLimits {
        queue_bytes: shared.options.write_queue_bytes,
        max_in_flight: shared.options.max_in_flight,
        timeout: shared.options.write_timeout,
    };
    let read = async |q: &Queue<'_>| {
        let conn = Connection {
            at,
            peer,
            session: std::sync::Mutex::new(session),
        };
        read_loop(rd, q, &conn, &shared).await
    };
    mk_listener::serve(wr, limits, &shared.kill, peer, read).await;
}

/// Why a connection stopped reading (logged at debug level).
#[derive(Debug)]
#[allow(dead_code, reason = "the payload is read through Debug in logs")]
enum ReadEnd {
    Eof,
    TooLarge(i64),
    Undecodable(DecodeError),
    Unsupported {
        api_key: i16,
        api_version: i16,
    },
    Idle,
    Shutdown,
    BrokerOffline,
    /// A SASL listener's client sent another request before
    /// authenticating.
    Unauthenticated(i16),
    AuthenticationFailed,
    WriterGone,
    Io(io::Error),
}

/// What a connection's requests are answered with besides the shared
/// state: where it arrived, from whom, and its identity.
struct Connection {
    at: Origin,
    peer: Option<SocketAddr>,
    session: std::sync::Mutex<Session>,
}

/// Room for the rest of the current request, at most one chunk at a time:
/// a claimed size never allocates by itself. See [`room_needed`].
fn make_room(buf: &mut BytesMut, largest: usize, shared: &Shared) {
    if let Some(additional) = room_needed(buf, largest) {
        buf.reserve(additional);
        shared
            .counters
            .peak_request_buffer
            .fetch_max(buf.capacity() as u64, Ordering::Relaxed);
    }
}

/// How much to reserve before the next read, if anything: the rest of the
/// current request, one chunk at most, once less than a page of room is
/// left. Between requests, a connection that sent requests larger than a
/// chunk (`largest`, counted in bytes it did send) gets room for the
/// largest of them: the buffer the last one left is then taken back whole
/// (its requests are answered, so nothing in it is copied), and the next
/// request is read into one place. Without that, its first bytes would
/// fill the last one's leftover room and be moved when that ran out.
fn room_needed(buf: &BytesMut, largest: usize) -> Option<usize> {
    let (wanted, least) = match claimed_size(buf) {
        Some(size) => {
            let rest = (4 + size - buf.len()).min(READ_CHUNK);
            (rest, rest.min(4096))
        }
        None if buf.is_empty() && largest > READ_CHUNK => (largest, largest),
        None => (READ_CHUNK, 4096),
    };
    (buf.capacity() - buf.len() < least).then_some(wanted)
}

/// The size prefix of the request at the front of `buf`, once it is there.
fn claimed_size(buf: &[u8]) -> Option<usize> {
    let prefix: [u8; 4] = buf.get(..4)?.try_into().ok()?;
    usize::try_from(i32::from_be_bytes(prefix)).ok()
}

/// How many bytes the next read may take: a chunk, or exactly the rest of
/// a request larger than a chunk, so that a large request ends the buffer
/// and the next one starts at its front ([`room_needed`]). Small requests
/// that a client pipelines are read several at a time.
fn read_limit(buf: &[u8]) -> usize {
    match claimed_size(buf) {
        Some(size) if 4 + size > READ_CHUNK && buf.len() < 4 + size => 4 + size - buf.len(),
        _ => READ_CHUNK,
    }
}

async fn read_loop<R: AsyncRead + Unpin>(
    mut rd: R,
    q: &Queue<'_>,
    conn: &Connection,
    shared: &Shared,
) -> ReadEnd {
    let broker = conn.at.broker;
    let max = shared.options.max_request_bytes;
    let mut offline = shared.cluster.brokers().watch_offline();
    let mut buf = BytesMut::with_capacity(8 * 1024);
    // The largest request this connection sent, prefix included.
    let mut largest = 0;
    let idle = shared.options.idle_timeout;
    let mut last_request = Instant::now();
    // One timer and one shutdown listener for the whole connection, not one
    // of each per read: the timer is re-armed only when it fires, to the
    // idle timeout after the last request if one came since.
    let idle_timer = tokio::time::sleep_until(last_request + idle);
    let stop = shared.stop.cancelled();
    tokio::pin!(idle_timer, stop);
    loop {
        // Answer every complete request already buffered.
        while buf.len() >= 4 {
            let size = i64::from(i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]));
            // A raw SASL token (after SaslHandshake v0) may be short.
            let min = if conn.session.lock().expect("session").expects_raw_token() {
                0
            } else {
                8
            };
            let size = match usize::try_from(size) {
                Ok(size) if size >= min && size <= max => size,
                _ => return ReadEnd::TooLarge(size),
            };
            if buf.len() < 4 + size {
                break;
            }
            buf.advance(4);
            let frame = buf.split_to(size).freeze();
            largest = largest.max(4 + size);
            if !shared.cluster.brokers().is_online(broker) {
                return ReadEnd::BrokerOffline;
            }
            match answer(frame, conn, q, shared).await {
                Ok(true) => {}
                Ok(false) => return ReadEnd::WriterGone,
                Err(end) => return end,
            }
            last_request = Instant::now();
        }
        make_room(&mut buf, largest, shared);
        let limit = read_limit(&buf);
        let mut room = (&mut buf).limit(limit);
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
            changed = offline.changed() => {
                if changed.is_err() || offline.borrow().contains(&broker) {
                    return ReadEnd::BrokerOffline;
                }
                continue;
            }
            r = rd.read_buf(&mut room) => r,
        };
        match read {
            Err(e) => return ReadEnd::Io(e),
            Ok(0) => return ReadEnd::Eof,
            Ok(_) => {}
        }
    }
}

/// Counts one request, for the server's counters and the cluster's
/// connection statistics.
fn count_request(shared: &Shared) {
    shared.counters.requests.fetch_add(1, Ordering::Relaxed);
    shared
        .cluster
        .views()
        .connection_stats()
        .answered(mk_cluster::Protocol::Kafka, 1);
}

/// Decodes and executes one request and queues its response (if it has
/// one). `Ok(false)` when the writer is gone, `Err` when the connection
/// must close.
async fn answer(
    frame: Bytes,
    conn: &Connection,
    q: &Queue<'_>,
    shared: &Shared,
) -> Result<bool, ReadEnd> {
    // With the write budget used up (a client that does not read), the
    // next answer is only built once part of the last one is written, so
    // such a connection holds one large answer, not two.
    if !q.room().await {
        return Ok(false);
    }
    count_request(shared);
    if conn.session.lock().expect("session").expects_raw_token() {
        return raw_sasl_token(&frame, conn, q, shared).await;
    }
    let peek = frame::peek_header(&frame).map_err(ReadEnd::Undecodable)?;
    if !conn.session.lock().expect("session").admits(peek.api_key) {
        return Err(ReadEnd::Unauthenticated(peek.api_key));
    }
    let Some(spec) = api::spec(peek.api_key)
        .filter(|s| s.supports(peek.api_version))
        .filter(|s| api::authz::serves(&shared.cluster, s.key))
    else {
        if peek.api_key == api::key::API_VERSIONS {
            // Clients start with their newest ApiVersions and retry with
            // the range this v0 answer carries.
            let body = api::versions::unsupported_version_body(&shared.cluster);
            return Ok(q
                .enqueue(frame::response_frame(peek.correlation_id, false, body).into())
                .await);
        }
        return Err(ReadEnd::Unsupported {
            api_key: peek.api_key,
            api_version: peek.api_version,
        });
    };
    let flexible = spec.is_flexible(peek.api_version);
    let mut r = Reader::new(&frame, false);
    let header = RequestHeader::read(&mut r, flexible).map_err(ReadEnd::Undecodable)?;
    r.flexible = flexible;
    let ctx = Ctx {
        cluster: &shared.cluster,
        broker_id: conn.at.broker,
        endpoints: &shared.listeners[conn.at.listener].endpoints,
        options: &shared.options,
        shutdown: &shared.stop,
        header: &header,
        peer: conn.peer,
        session: &conn.session,
    };
    let mut buf = BytesMut::with_capacity(256);
    buf.resize(frame::RESPONSE_HEADER_ROOM, 0);
    let mut w = Writer::with_buf(buf, flexible);
    // Counted per API by name (the `metrics` facade is a no-op unless the
    // binary installs a recorder): requests, latency, bytes in and out.
    let started = std::time::Instant::now();
    let labels = [("protocol", "kafka"), ("api", spec.name)];
    metrics::counter!("mk_requests_total", &labels).increment(1);
    metrics::counter!("mk_received_bytes_total", "protocol" => "kafka")
        .increment(frame.len() as u64 + 4);
    let answered = api::dispatch(&ctx, spec, &mut r, &mut w)
        .await
        .map_err(ReadEnd::Undecodable)?;
    metrics::histogram!("mk_request_duration_seconds", &labels)
        .record(started.elapsed().as_secs_f64());
    if !answered {
        return Ok(true);
    }
    // ApiVersions answers with header v0 at every version.
    let tagged = flexible && header.api_key != api::key::API_VERSIONS;
    let response = frame::finish_response_parts(w, header.correlation_id, tagged);
    let sent = mk_listener::Answer::len(&response) as u64;
    metrics::counter!("mk_sent_bytes_total", "protocol" => "kafka").increment(sent);
    let queued = q.enqueue(response).await;
    if conn.session.lock().expect("session").failed {
        return Err(ReadEnd::AuthenticationFailed);
    }
    Ok(queued)
}

/// One raw SASL token (after SaslHandshake v0): the server's token goes
/// back size-prefixed without a header; a failure closes the connection,
/// the only answer this framing has.
async fn raw_sasl_token(
    token: &[u8],
    conn: &Connection,
    q: &Queue<'_>,
    shared: &Shared,
) -> Result<bool, ReadEnd> {
    let step =
        conn.session
            .lock()
            .expect("session")
            .step(token, &shared.cluster, &shared.options.sasl);
    let reply = step.map_err(|e| {
        tracing::debug!(peer = ?conn.peer, error = %e, "SASL authentication failed");
        ReadEnd::AuthenticationFailed
    })?;
    let len = u32::try_from(reply.len()).map_err(|_| ReadEnd::AuthenticationFailed)?;
    let mut out = BytesMut::with_capacity(4 + reply.len());
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&reply);
    Ok(q.enqueue(out.freeze().into()).await)
}

#[cfg(test)]
mod tests {
    use super::{READ_CHUNK, read_limit, room_needed};
    use bytes::{BufMut, BytesMut};

    fn request(size: usize, have: usize) -> Vec<u8> {
        let mut buf = i32::try_from(size).unwrap().to_be_bytes().to_vec();
        buf.resize(4 + have, 0);
        buf
    }

    #[test]
    fn a_read_stops_at_the_end_of_a_large_request_and_not_of_a_small_one() {
        // No size prefix yet, or a request within one chunk: a chunk.
        assert_eq!(read_limit(&[0, 0]), READ_CHUNK);
        assert_eq!(read_limit(&request(100, 10)), READ_CHUNK);
        assert_eq!(read_limit(&request(READ_CHUNK - 4, 0)), READ_CHUNK);
        // A larger request: its rest, so the buffer ends empty with it.
        assert_eq!(read_limit(&request(READ_CHUNK - 3, 0)), READ_CHUNK - 3);
        assert_eq!(read_limit(&request(1 << 20, 0)), 1 << 20);
        assert_eq!(read_limit(&request(1 << 20, (1 << 20) - 1)), 1);
    }

    /// The read loop's buffer handling over a stream of large requests
    /// arriving as fast as reads can take them: after the first request,
    /// room is only ever made between requests, when nothing is in the
    /// buffer to move, and the buffer stays where it is.
    #[test]
    fn large_requests_are_read_without_moving_bytes_once_the_first_is_in() {
        let sizes = [1_000_000, 999_950, 1_000_100, 400_000, 1_000_000, 70_000];
        let mut stream = Vec::new();
        for (&size, i) in sizes.iter().zip(0u8..) {
            stream.extend_from_slice(&request(size, size));
            let at = stream.len() - size;
            stream[at] = i;
        }
        let mut buf = BytesMut::with_capacity(8 * 1024);
        let mut largest = 0;
        let mut sent = &stream[..];
        let mut requests = Vec::new();
        let mut moved_bytes = Vec::new();
        while requests.len() < sizes.len() {
            if let Some(size) = super::claimed_size(&buf)
                && buf.len() >= 4 + size
            {
                let _ = buf.split_to(4);
                let frame = buf.split_to(size).freeze();
                largest = largest.max(4 + size);
                requests.push((frame.len(), frame[0]));
                drop(frame); // answered
                continue;
            }
            if let Some(additional) = room_needed(&buf, largest) {
                let (before, len) = (buf.as_ptr(), buf.len());
                buf.reserve(additional);
                if !requests.is_empty() && len > 0 && before != buf.as_ptr() {
                    moved_bytes.push((requests.len(), len));
                }
            }
            let n = read_limit(&buf)
                .min(buf.capacity() - buf.len())
                .min(sent.len());
            buf.put_slice(&sent[..n]);
            sent = &sent[n..];
        }
        let expected: Vec<(usize, u8)> = sizes.iter().zip(0u8..).map(|(&s, i)| (s, i)).collect();
        assert_eq!(requests, expected, "every request whole and in order");
        assert_eq!(
            moved_bytes,
            vec![],
            "after the first request, no request's bytes are moved to make room"
        );
    }
}
