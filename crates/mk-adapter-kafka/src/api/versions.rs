//! ApiVersions: the first request of every client. The answer is the API
//! table of `api/mod.rs`, exactly.

use super::{APIS, Ctx, Message};
use crate::codec::{DecodeResult, Reader, Writer};
use crate::errors::KafkaCode;
use bytes::Bytes;

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ApiVersionsRequest {
    /// v3+: the client library's name and version (logged).
    pub client_software_name: String,
    pub client_software_version: String,
}

impl Message for ApiVersionsRequest {
    fn read(r: &mut Reader<'_>, v: i16) -> DecodeResult<Self> {
        let mut req = Self::default();
        if v >= 3 {
            req.client_software_name = r.string()?;
            req.client_software_version = r.string()?;
        }
        r.skip_tagged_fields()?;
        Ok(req)
    }

    fn write(&self, w: &mut Writer, v: i16) {
        if v >= 3 {
            w.string(&self.client_software_name);
            w.string(&self.client_software_version);
        }
        w.no_tagged_fields();
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApiVersionRange {
    pub api_key: i16,
    pub min_version: i16,
    pub max_version: i16,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiVersionsResponse {
    pub error_code: KafkaCode,
    pub api_keys: Vec<ApiVersionRange>,
    /// v1+.
    pub throttle_time_ms: i32,
}

impl Message for ApiVersionsResponse {
    fn read(r: &mut Reader<'_>, v: i16) -> DecodeResult<Self> {
        let error_code = KafkaCode(r.i16()?);
        let api_keys = r.array(|r| {
            let k = ApiVersionRange {
                api_key: r.i16()?,
                min_version: r.i16()?,
                max_version: r.i16()?,
            };
            r.skip_tagged_fields()?;
            Ok(k)
        })?;
        let throttle_time_ms = if v >= 1 { r.i32()? } else { 0 };
        r.skip_tagged_fields()?;
        Ok(Self {
            error_code,
            api_keys,
            throttle_time_ms,
        })
    }

    fn write(&self, w: &mut Writer, v: i16) {
        w.i16(self.error_code.0);
        w.array(&self.api_keys, |w, k| {
            w.i16(k.api_key);
            w.i16(k.min_version);
            w.i16(k.max_version);
            w.no_tagged_fields();
        });
        if v >= 1 {
            w.i32(self.throttle_time_ms);
        }
        w.no_tagged_fields();
    }
}

/// The advertised table.
pub fn table() -> Vec<ApiVersionRange> {
    APIS.iter()
        .map(|a| ApiVersionRange {
            api_key: a.key,
            min_version: a.min_version,
            max_version: a.max_version,
        })
        .collect()
}

pub async fn handle(ctx: &Ctx<'_>, req: ApiVersionsRequest) -> ApiVersionsResponse {
    if !req.client_software_name.is_empty() {
        tracing::debug!(
            client = %req.client_software_name,
            version = %req.client_software_version,
            client_id = ?ctx.header.client_id,
            "Kafka client connected"
        );
    }
    ApiVersionsResponse {
        error_code: KafkaCode::NONE,
        api_keys: table(),
        throttle_time_ms: 0,
    }
}

/// The v0 answer to an ApiVersions request of a version above ours:
/// UNSUPPORTED_VERSION with our table, so the client retries lower.
pub fn unsupported_version_body() -> Bytes {
    let mut w = Writer::new(false);
    ApiVersionsResponse {
        error_code: KafkaCode::UNSUPPORTED_VERSION,
        api_keys: table(),
        throttle_time_ms: 0,
    }
    .write(&mut w, 0);
    w.into_bytes()
}
