//! What every listener reports about its clients — listeners up,
//! connections open and accepted, requests answered — per protocol, kept in
//! the core so that one `stats` view (and the metrics and readiness built
//! on it) shows both protocols while no adapter depends on another. Each
//! listener updates it; nothing here decides anything.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// A protocol the broker serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Protocol {
    /// The Kafka protocol (mk-adapter-kafka).
    Kafka,
    /// Newline-delimited JSON over TCP (mk-adapter-jsontcp).
    JsonTcp,
}

impl Protocol {
    /// Every protocol, in display order.
    pub const ALL: [Protocol; 2] = [Protocol::Kafka, Protocol::JsonTcp];

    /// The short name used in `stats` and as the metrics' `protocol` label.
    pub const fn name(self) -> &'static str {
        match self {
            Protocol::Kafka => "kafka",
            Protocol::JsonTcp => "json",
        }
    }

    /// Parses [`Protocol::name`].
    pub fn parse(name: &str) -> Option<Protocol> {
        Protocol::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// One protocol's counters.
#[derive(Debug, Default)]
struct Counters {
    listeners: AtomicU64,
    open: AtomicU64,
    accepted: AtomicU64,
    requests: AtomicU64,
}

/// The counters of every protocol (one per `BrokerCluster`, shared through
/// an `Arc` so that a connection task's guard can outlive a borrow).
#[derive(Debug, Default)]
pub struct ConnectionStats {
    kafka: Counters,
    json: Counters,
}

/// A snapshot of one protocol's counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProtocolStats {
    pub protocol: Protocol,
    /// Accept loops running now (one per hosted broker for Kafka).
    pub listeners: u64,
    /// Connections open now.
    pub connections: u64,
    /// Connections accepted since start (refused ones included).
    pub connections_accepted: u64,
    /// Requests answered since start.
    pub requests: u64,
}

impl ConnectionStats {
    fn of(&self, p: Protocol) -> &Counters {
        match p {
            Protocol::Kafka => &self.kafka,
            Protocol::JsonTcp => &self.json,
        }
    }

    /// An accept loop of `p` runs for as long as the guard lives.
    pub fn listening(self: &Arc<Self>, p: Protocol) -> Counted {
        Counted::enter(self.clone(), p, Live::Listener)
    }

    /// A connection of `p` is open for as long as the guard lives.
    pub fn connection(self: &Arc<Self>, p: Protocol) -> Counted {
        self.of(p).accepted.fetch_add(1, Ordering::Relaxed);
        Counted::enter(self.clone(), p, Live::Connection)
    }

    /// `n` requests of `p` were answered.
    pub fn answered(&self, p: Protocol, n: u64) {
        self.of(p).requests.fetch_add(n, Ordering::Relaxed);
    }

    /// Every protocol's counters now, in [`Protocol::ALL`] order.
    pub fn snapshot(&self) -> Vec<ProtocolStats> {
        Protocol::ALL
            .into_iter()
            .map(|p| {
                let c = self.of(p);
                ProtocolStats {
                    protocol: p,
                    listeners: c.listeners.load(Ordering::Relaxed),
                    connections: c.open.load(Ordering::Relaxed),
                    connections_accepted: c.accepted.load(Ordering::Relaxed),
                    requests: c.requests.load(Ordering::Relaxed),
                }
            })
            .collect()
    }
}

/// What a [`Counted`] guard counts.
#[derive(Debug, Clone, Copy)]
enum Live {
    Listener,
    Connection,
}

/// Counts one live thing (a listener, a connection) until dropped, so the
/// count also drops when the task holding it panics or is cancelled.
#[derive(Debug)]
pub struct Counted {
    stats: Arc<ConnectionStats>,
    protocol: Protocol,
    live: Live,
}

impl Counted {
    fn enter(stats: Arc<ConnectionStats>, protocol: Protocol, live: Live) -> Self {
        let c = Self {
            stats,
            protocol,
            live,
        };
        c.counter().fetch_add(1, Ordering::AcqRel);
        c
    }

    fn counter(&self) -> &AtomicU64 {
        let c = self.stats.of(self.protocol);
        match self.live {
            Live::Listener => &c.listeners,
            Live::Connection => &c.open,
        }
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.counter().fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guards_count_while_they_live_and_protocols_stay_apart() {
        let s = Arc::new(ConnectionStats::default());
        let listener = s.listening(Protocol::Kafka);
        let a = s.connection(Protocol::Kafka);
        let b = s.connection(Protocol::Kafka);
        s.answered(Protocol::Kafka, 3);
        s.answered(Protocol::JsonTcp, 1);
        drop(a);
        let [kafka, json] = s.snapshot()[..] else {
            panic!("two protocols")
        };
        assert_eq!(
            (
                kafka.listeners,
                kafka.connections,
                kafka.connections_accepted,
                kafka.requests
            ),
            (1, 1, 2, 3)
        );
        assert_eq!((json.listeners, json.connections, json.requests), (0, 0, 1));
        drop((b, listener));
        let kafka = s.snapshot()[0];
        assert_eq!((kafka.listeners, kafka.connections), (0, 0));
        assert_eq!(Protocol::parse("json"), Some(Protocol::JsonTcp));
    }
}
