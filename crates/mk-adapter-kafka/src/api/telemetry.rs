//! Client telemetry (KIP-714): GetTelemetrySubscriptions and PushTelemetry.
//! The core hands every client an instance id and the empty subscription
//! (`telemetry().subscription`), so clients push nothing; a push that comes
//! anyway is checked (`telemetry().push`) and dropped.

use super::Ctx;
use crate::codec::Uuid;
use crate::errors::{self, KafkaCode};
use crate::messages::get_telemetry_subscriptions::{
    GetTelemetrySubscriptionsRequest, GetTelemetrySubscriptionsResponse,
};
use crate::messages::push_telemetry::{PushTelemetryRequest, PushTelemetryResponse};
use mk_cluster::{TelemetryPush, TelemetryRefusal};

/// Kafka's UNKNOWN_SUBSCRIPTION_ID.
const UNKNOWN_SUBSCRIPTION_ID: KafkaCode = KafkaCode(117);
/// Kafka's TELEMETRY_TOO_LARGE.
const TELEMETRY_TOO_LARGE: KafkaCode = KafkaCode(118);

pub async fn handle_get_telemetry_subscriptions(
    ctx: &Ctx<'_>,
    req: GetTelemetrySubscriptionsRequest,
) -> GetTelemetrySubscriptionsResponse {
    match ctx
        .cluster
        .telemetry()
        .subscription(req.client_instance_id.0)
    {
        Ok(s) => GetTelemetrySubscriptionsResponse {
            throttle_time_ms: 0,
            error_code: KafkaCode::NONE,
            client_instance_id: Uuid(s.client_instance_id),
            subscription_id: s.subscription_id,
            // Only uncompressed pushes are offered: nothing is decoded.
            accepted_compression_types: Vec::new(),
            push_interval_ms: s.push_interval_ms,
            telemetry_max_bytes: s.telemetry_max_bytes,
            delta_temporality: s.delta_temporality,
            requested_metrics: s.requested_metrics,
        },
        Err(e) => GetTelemetrySubscriptionsResponse {
            error_code: errors::from_cluster(&e).0,
            ..Default::default()
        },
    }
}

pub async fn handle_push_telemetry(
    ctx: &Ctx<'_>,
    req: PushTelemetryRequest,
) -> PushTelemetryResponse {
    let push = TelemetryPush {
        client_instance_id: req.client_instance_id.0,
        subscription_id: req.subscription_id,
        compression_type: req.compression_type,
        metrics_len: req.metrics.len(),
    };
    let error_code = match ctx.cluster.telemetry().push(&push) {
        Ok(()) => KafkaCode::NONE,
        Err(TelemetryRefusal::NoInstanceId) => KafkaCode::INVALID_REQUEST,
        Err(TelemetryRefusal::UnknownSubscription) => UNKNOWN_SUBSCRIPTION_ID,
        Err(TelemetryRefusal::UnsupportedCompression) => KafkaCode::UNSUPPORTED_COMPRESSION_TYPE,
        Err(TelemetryRefusal::TooLarge) => TELEMETRY_TOO_LARGE,
    };
    PushTelemetryResponse {
        throttle_time_ms: 0,
        error_code,
    }
}
