//! ApiVersions: the first request of every client. The answer is the API
//! table (`APIS`, generated from schema/served.list), exactly, and (v3+)
//! the features Kafka 4.1 reports for what this broker serves:
//! `group.version` 1 (KIP-848 consumer groups), `share.version` 1
//! (KIP-932 share groups) and `transaction.version` 2 (KIP-890
//! transactions v2), supported and finalized.

use super::{APIS, Ctx, Message};
use crate::codec::Writer;
use crate::errors::KafkaCode;
use crate::messages::api_versions::{
    ApiVersion, ApiVersionsRequest, ApiVersionsResponse, FinalizedFeatureKey, SupportedFeatureKey,
};
use bytes::Bytes;

/// The table: every served API.
pub fn table() -> Vec<ApiVersion> {
    advertised(|_| true)
}

/// The table as advertised by a broker: with the authorizer on, only the
/// APIs with an authorization guard (api/authz/).
pub fn advertised_by(cluster: &mk_cluster::BrokerCluster) -> Vec<ApiVersion> {
    advertised(|key| super::authz::serves(cluster, key))
}

fn advertised(serves: impl Fn(i16) -> bool) -> Vec<ApiVersion> {
    APIS.iter()
        .filter(|a| serves(a.key))
        .map(|a| ApiVersion {
            api_key: a.key,
            min_version: a.min_version,
            max_version: a.max_version,
        })
        .collect()
}

pub async fn handle_api_versions(ctx: &Ctx<'_>, req: ApiVersionsRequest) -> ApiVersionsResponse {
    if !req.client_software_name.is_empty() {
        tracing::debug!(
            client = %req.client_software_name,
            version = %req.client_software_version,
            client_id = ?ctx.header.client_id,
            "Kafka client connected"
        );
    }
    ApiVersionsResponse {
        api_keys: advertised_by(ctx.cluster),
        supported_features: FEATURES
            .iter()
            .map(|(name, level)| SupportedFeatureKey {
                name: (*name).to_string(),
                min_version: 0,
                max_version: *level,
            })
            .collect(),
        finalized_features_epoch: FINALIZED_FEATURES_EPOCH,
        finalized_features: FEATURES
            .iter()
            .map(|(name, level)| FinalizedFeatureKey {
                name: (*name).to_string(),
                max_version_level: *level,
                min_version_level: *level,
            })
            .collect(),
        ..ApiVersionsResponse::default()
    }
}

/// The features this broker has, at the level it runs them: the KIP-848
/// consumer group protocol, KIP-932 share groups and KIP-890 transactions
/// v2 (`transaction.version` 2: the Java client then sends EndTxn v5,
/// Produce v12 and TxnOffsetCommit v5 without AddPartitionsToTxn or
/// AddOffsetsToTxn). Each is supported from level 0 up to its level.
pub const FEATURES: [(&str, i16); 3] = [
    ("group.version", 1),
    ("share.version", 1),
    ("transaction.version", 2),
];

/// The epoch of the finalized features: they never change while the
/// broker runs.
const FINALIZED_FEATURES_EPOCH: i64 = 1;

/// The v0 answer to an ApiVersions request of a version above ours:
/// UNSUPPORTED_VERSION with our table, so the client retries lower.
pub fn unsupported_version_body(cluster: &mk_cluster::BrokerCluster) -> Bytes {
    let mut w = Writer::new(false);
    ApiVersionsResponse {
        error_code: KafkaCode::UNSUPPORTED_VERSION,
        api_keys: advertised_by(cluster),
        ..ApiVersionsResponse::default()
    }
    .write(&mut w, 0);
    w.into_bytes()
}
