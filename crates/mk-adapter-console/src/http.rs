//! HTTP plumbing of the API: the one table from core error codes to HTTP
//! statuses, JSON answers, the request's path and query, and reading a
//! bounded JSON body.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::{Response, StatusCode};
use mk_cluster::{ClusterError, ErrorCode};
use serde_json::{Value, json};

pub(crate) type Body = Full<Bytes>;

/// A failed request: its status, the stable error code and a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
}

impl ApiError {
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            code: ErrorCode::InvalidRequest.as_str(),
            message: message.into(),
        }
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::NOT_FOUND,
            code: "NOT_FOUND",
            message: message.into(),
        }
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::FORBIDDEN,
            code: "FORBIDDEN",
            message: message.into(),
        }
    }
}

impl From<ClusterError> for ApiError {
    fn from(e: ClusterError) -> Self {
        let code = e.code();
        Self {
            status: status_of(code),
            code: code.as_str(),
            message: e.to_string(),
        }
    }
}

/// The HTTP status of each core error code (the code itself travels in
/// the body): what is missing is 404, what is malformed 400, what
/// conflicts with the current state 409, a broker that cannot serve 503.
pub(crate) fn status_of(code: ErrorCode) -> StatusCode {
    use ErrorCode as C;
    match code {
        C::UnknownTopic | C::UnknownPartition | C::UnknownTopicId | C::GroupIdNotFound => {
            StatusCode::NOT_FOUND
        }
        C::InvalidRequest
        | C::InvalidRecord
        | C::InvalidTopic
        | C::InvalidPartitions
        | C::InvalidReplicationFactor
        | C::InvalidConfig
        | C::InvalidGroupId
        | C::OffsetOutOfRange
        | C::FrameTooLarge => StatusCode::BAD_REQUEST,
        C::StorageError
        | C::ClusterClosed
        | C::ClusterFailed
        | C::LeaderNotAvailable
        | C::NotEnoughReplicas
        | C::NotEnoughReplicasAfterAppend
        | C::RequestTimedOut => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::CONFLICT,
    }
}

/// A JSON answer.
pub(crate) fn json_response(status: StatusCode, value: &Value) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::from(value.to_string())));
    *r.status_mut() = status;
    r.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("application/json; charset=utf-8"),
    );
    r
}

pub(crate) fn error_response(e: &ApiError) -> Response<Body> {
    json_response(
        e.status,
        &json!({"error": {"code": e.code, "message": e.message}}),
    )
}

/// The decoded segments of a path below `/api/`.
pub(crate) fn path_segments(rest: &str) -> Result<Vec<String>, ApiError> {
    rest.split('/')
        .filter(|s| !s.is_empty())
        .map(|s| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8()
                .map(|d| d.into_owned())
                .map_err(|_| ApiError::bad_request(format!("the path segment {s:?} is not UTF-8")))
        })
        .collect()
}

/// The query string's parameters.
#[derive(Debug, Default)]
pub(crate) struct Query(Vec<(String, String)>);

impl Query {
    pub fn parse(query: Option<&str>) -> Self {
        Query(
            query
                .map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
                .unwrap_or_default(),
        )
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// An integer parameter, `None` when absent or empty.
    pub fn int(&self, name: &str) -> Result<Option<i64>, ApiError> {
        match self.get(name).filter(|v| !v.is_empty()) {
            None => Ok(None),
            Some(v) => v.parse().map(Some).map_err(|_| {
                ApiError::bad_request(format!("{name} must be an integer, got {v:?}"))
            }),
        }
    }
}

/// Reads a JSON body of at most `limit` bytes; an empty body is `null`.
pub(crate) async fn read_json(body: Incoming, limit: usize) -> Result<Value, ApiError> {
    let bytes = Limited::new(body, limit)
        .collect()
        .await
        .map_err(|e| {
            ApiError::bad_request(format!(
                "cannot read the request body (at most {limit} bytes): {e}"
            ))
        })?
        .to_bytes();
    if bytes.is_empty() {
        return Ok(Value::Null);
    }
    serde_json::from_slice(&bytes)
        .map_err(|e| ApiError::bad_request(format!("the body is not JSON: {e}")))
}

/// Bytes as JSON: base64, `null` for none.
pub(crate) fn bytes_json(b: Option<&Bytes>) -> Value {
    b.map_or(Value::Null, |b| Value::String(BASE64.encode(b)))
}

/// A required string field of a JSON object.
pub(crate) fn str_field<'a>(v: &'a Value, name: &str) -> Result<&'a str, ApiError> {
    v.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| ApiError::bad_request(format!("{name} must be a string")))
}

/// An optional integer field; `null` counts as absent.
pub(crate) fn opt_int(v: &Value, name: &str) -> Result<Option<i64>, ApiError> {
    match v.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(x) => x
            .as_i64()
            .map(Some)
            .ok_or_else(|| ApiError::bad_request(format!("{name} must be an integer"))),
    }
}

/// Decodes a byte field given as text or as base64.
pub(crate) fn decode_bytes(
    value: &Value,
    base64: bool,
    what: &str,
) -> Result<Option<Bytes>, ApiError> {
    match value {
        Value::Null => Ok(None),
        Value::String(s) if base64 => BASE64
            .decode(s)
            .map(|b| Some(Bytes::from(b)))
            .map_err(|e| ApiError::bad_request(format!("{what} is not base64: {e}"))),
        Value::String(s) => Ok(Some(Bytes::copy_from_slice(s.as_bytes()))),
        _ => Err(ApiError::bad_request(format!(
            "{what} must be a string or null"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_a_status_and_missing_things_are_404() {
        for code in ErrorCode::ALL {
            let s = status_of(code);
            assert!(s.is_client_error() || s.is_server_error(), "{code:?}");
        }
        assert_eq!(status_of(ErrorCode::UnknownTopic), StatusCode::NOT_FOUND);
        assert_eq!(
            status_of(ErrorCode::TopicAlreadyExists),
            StatusCode::CONFLICT
        );
        assert_eq!(status_of(ErrorCode::InvalidConfig), StatusCode::BAD_REQUEST);
        assert_eq!(
            status_of(ErrorCode::StorageError),
            StatusCode::SERVICE_UNAVAILABLE
        );
    }

    #[test]
    fn paths_and_queries_are_decoded() {
        assert_eq!(
            path_segments("groups/my%20group/reset-offsets").unwrap(),
            vec!["groups", "my group", "reset-offsets"]
        );
        assert!(path_segments("groups/%ff").is_err());
        let q = Query::parse(Some("offset=12&limit=&ts=x%20y"));
        assert_eq!(q.int("offset").unwrap(), Some(12));
        assert_eq!(q.int("limit").unwrap(), None);
        assert_eq!(q.get("ts"), Some("x y"));
        assert!(q.int("ts").is_err());
    }

    #[test]
    fn byte_fields_are_text_or_base64() {
        assert_eq!(
            decode_bytes(&json!("aGk="), true, "v").unwrap().as_deref(),
            Some(&b"hi"[..])
        );
        assert_eq!(
            decode_bytes(&json!("aGk="), false, "v").unwrap().as_deref(),
            Some(&b"aGk="[..])
        );
        assert_eq!(decode_bytes(&Value::Null, true, "v").unwrap(), None);
        assert!(decode_bytes(&json!("!!"), true, "v").is_err());
        assert!(decode_bytes(&json!(3), false, "v").is_err());
        assert_eq!(bytes_json(Some(&Bytes::from_static(b"hi"))), json!("aGk="));
    }
}
