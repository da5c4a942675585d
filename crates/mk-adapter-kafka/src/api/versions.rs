//! ApiVersions: the first request of every client. The answer is the API
//! table (`APIS`, generated from schema/served.list), exactly.

use super::{APIS, Ctx, Message};
use crate::codec::Writer;
use crate::errors::KafkaCode;
use crate::messages::api_versions::{ApiVersion, ApiVersionsRequest, ApiVersionsResponse};
use bytes::Bytes;

/// The advertised table.
pub fn table() -> Vec<ApiVersion> {
    APIS.iter()
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
        api_keys: table(),
        ..ApiVersionsResponse::default()
    }
}

/// The v0 answer to an ApiVersions request of a version above ours:
/// UNSUPPORTED_VERSION with our table, so the client retries lower.
pub fn unsupported_version_body() -> Bytes {
    let mut w = Writer::new(false);
    ApiVersionsResponse {
        error_code: KafkaCode::UNSUPPORTED_VERSION,
        api_keys: table(),
        ..ApiVersionsResponse::default()
    }
    .write(&mut w, 0);
    w.into_bytes()
}
