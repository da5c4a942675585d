//! Client telemetry (KIP-714): what a client asks before it pushes its
//! metrics, and what becomes of a push. No metrics plugin exists here, so
//! every client is subscribed to nothing: it is given an instance id (a
//! fresh one when it has none), an empty list of requested metrics, and the
//! interval after which it may ask again. Kafka's clients then push
//! nothing; a push that comes anyway is checked as Kafka checks it and
//! dropped.

use crate::cluster::BrokerCluster;
use crate::error::Result;
use crate::metadata::TopicId;

/// How long a client waits before asking again (Kafka's default
/// `interval.ms` of a client-metrics subscription: five minutes).
pub const TELEMETRY_PUSH_INTERVAL_MS: i32 = 300_000;

/// The largest push accepted (Kafka's `telemetry.max.bytes` default).
pub const TELEMETRY_MAX_BYTES: i32 = 1024 * 1024;

/// The id of the one subscription every client gets: the empty one. Kafka
/// derives a subscription's id from its contents; it only has to change
/// when they do, and ours never do.
pub const EMPTY_SUBSCRIPTION_ID: i32 = 0;

/// A client's telemetry subscription.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TelemetrySubscription {
    /// The client's instance id: the one it sent, or a fresh one.
    pub client_instance_id: [u8; 16],
    pub subscription_id: i32,
    /// Metric name prefixes the client should push: none.
    pub requested_metrics: Vec<String>,
    pub push_interval_ms: i32,
    pub telemetry_max_bytes: i32,
    /// Kafka's default temporality for pushed sums (delta).
    pub delta_temporality: bool,
}

/// A push, as the client sent it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TelemetryPush {
    pub client_instance_id: [u8; 16],
    pub subscription_id: i32,
    /// Kafka's compression type id of the metrics (0 = none).
    pub compression_type: i8,
    pub metrics_len: usize,
}

/// Why a push is refused (each is one of Kafka's error codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TelemetryRefusal {
    /// The all-zero instance id, which only asks for one (INVALID_REQUEST).
    NoInstanceId,
    /// Not the subscription the broker handed out (UNKNOWN_SUBSCRIPTION_ID).
    UnknownSubscription,
    /// Compressed although no compression was offered
    /// (UNSUPPORTED_COMPRESSION_TYPE).
    UnsupportedCompression,
    /// Longer than `TELEMETRY_MAX_BYTES` (TELEMETRY_TOO_LARGE).
    TooLarge,
}

/// The telemetry role: `cluster.telemetry()`.
#[derive(Debug, Clone, Copy)]
pub struct Telemetry<'a> {
    cluster: &'a BrokerCluster,
}

impl BrokerCluster {
    /// The client telemetry role (see [`Telemetry`]).
    pub fn telemetry(&self) -> Telemetry<'_> {
        Telemetry { cluster: self }
    }
}

impl Telemetry<'_> {
    /// The subscription of the client with instance id `client_instance_id`
    /// (all zeroes: it has none yet, and gets a fresh one).
    pub fn subscription(self, client_instance_id: [u8; 16]) -> Result<TelemetrySubscription> {
        self.cluster.check_running()?;
        let client_instance_id = if client_instance_id == [0; 16] {
            TopicId::random().0
        } else {
            client_instance_id
        };
        Ok(TelemetrySubscription {
            client_instance_id,
            subscription_id: EMPTY_SUBSCRIPTION_ID,
            requested_metrics: Vec::new(),
            push_interval_ms: TELEMETRY_PUSH_INTERVAL_MS,
            telemetry_max_bytes: TELEMETRY_MAX_BYTES,
            delta_temporality: true,
        })
    }

    /// Checks a push as Kafka does; an accepted one is dropped (no plugin
    /// exports metrics here).
    pub fn push(self, push: &TelemetryPush) -> std::result::Result<(), TelemetryRefusal> {
        if push.client_instance_id == [0; 16] {
            return Err(TelemetryRefusal::NoInstanceId);
        }
        if push.subscription_id != EMPTY_SUBSCRIPTION_ID {
            return Err(TelemetryRefusal::UnknownSubscription);
        }
        if push.compression_type != 0 {
            return Err(TelemetryRefusal::UnsupportedCompression);
        }
        if push.metrics_len > TELEMETRY_MAX_BYTES as usize {
            return Err(TelemetryRefusal::TooLarge);
        }
        Ok(())
    }
}
