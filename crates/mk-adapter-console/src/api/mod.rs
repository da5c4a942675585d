//! The console's HTTP+JSON API under `/api/`: the router (one arm per
//! method and path) and the request checks every route shares. Each
//! family's decode, core call and encode sit side by side in its module:
//! `overview.rs`, `topics.rs`, `records.rs`, `groups.rs`,
//! `transactions.rs`.

mod groups;
mod overview;
mod records;
mod topics;
mod transactions;

use crate::assets;
use crate::http::{ApiError, Body, Query, error_response, json_response, path_segments, read_json};
use crate::server::Context;
use hyper::body::Incoming;
use hyper::header::{CONTENT_TYPE, HOST, ORIGIN};
use hyper::{Method, Request, Response, StatusCode};
use mk_cluster::BrokerCluster;
use serde_json::Value;

/// What a route answers: a status and a JSON value.
type Answer = Result<(StatusCode, Value), ApiError>;

/// Answers one request: a static asset, or an API call.
pub(crate) async fn handle(ctx: &Context, req: Request<Incoming>) -> Response<Body> {
    if let Err(e) = check_request(ctx, &req) {
        return error_response(&e);
    }
    let (parts, body) = req.into_parts();
    let Some(rest) = parts.uri.path().strip_prefix("/api/") else {
        return assets::serve(&parts.method, parts.uri.path());
    };
    let answer = async {
        let segments = path_segments(rest)?;
        let query = Query::parse(parts.uri.query());
        let body = match parts.method {
            Method::POST | Method::PATCH => read_json(body, ctx.options.max_body_bytes).await?,
            _ => Value::Null,
        };
        let segments: Vec<&str> = segments.iter().map(String::as_str).collect();
        route(&ctx.cluster, &parts.method, &segments, &query, body).await
    }
    .await;
    match answer {
        Ok((status, value)) => json_response(status, &value),
        Err(e) => error_response(&e),
    }
}

async fn route(
    c: &BrokerCluster,
    method: &Method,
    path: &[&str],
    q: &Query,
    body: Value,
) -> Answer {
    let ok = |v: Value| Ok((StatusCode::OK, v));
    match (method.clone(), path) {
        (Method::GET, ["overview"]) => ok(overview::get(c)?),
        (Method::GET, ["topics"]) => ok(topics::list(c)?),
        (Method::POST, ["topics"]) => Ok((StatusCode::CREATED, topics::create(c, &body)?)),
        (Method::GET, ["topics", t]) => ok(topics::describe(c, t)?),
        (Method::DELETE, ["topics", t]) => ok(topics::delete(c, t, q)?),
        (Method::PATCH, ["topics", t, "configs"]) => ok(topics::alter_configs(c, t, &body)?),
        (Method::GET, ["topics", t, "partitions", p]) => ok(topics::partition(c, t, p)?),
        (Method::GET, ["topics", t, "partitions", p, "records"]) => {
            ok(records::browse(c, t, p, q)?)
        }
        (Method::POST, ["topics", t, "records"]) => ok(records::produce(c, t, &body).await?),
        (Method::GET, ["groups"]) => ok(groups::list(c)?),
        (Method::GET, ["groups", g]) => ok(groups::describe(c, g)?),
        (Method::POST, ["groups", g, "reset-offsets"]) => ok(groups::reset_offsets(c, g, &body)?),
        (Method::GET, ["transactions"]) => ok(transactions::list(c)?),
        _ => Err(ApiError::not_found(format!(
            "no API {method} /api/{}",
            path.join("/")
        ))),
    }
}

/// The console has no authentication, so it only answers what a person
/// at this machine's browser sends: on a loopback listener the `Host`
/// must be a loopback name (a web page that rebinds its own name to
/// 127.0.0.1 is refused), and a change must carry JSON and, if the
/// browser names an `Origin`, come from the console's own page.
fn check_request(ctx: &Context, req: &Request<Incoming>) -> Result<(), ApiError> {
    let host = req.headers().get(HOST).and_then(|h| h.to_str().ok());
    if ctx.loopback
        && let Some(host) = host
        && !is_loopback_host(host)
    {
        return Err(ApiError::forbidden(format!(
            "the console listens on loopback and answers only loopback names, not {host:?}"
        )));
    }
    if matches!(*req.method(), Method::GET | Method::HEAD) {
        return Ok(());
    }
    if let Some(origin) = req.headers().get(ORIGIN) {
        let same = host.is_some_and(|h| origin.to_str().ok() == Some(&format!("http://{h}")));
        if !same {
            return Err(ApiError::forbidden(
                "changes are accepted only from the console's own page",
            ));
        }
    }
    let json = req
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if *req.method() != Method::DELETE && !json {
        return Err(ApiError::bad_request(
            "changes must be sent as Content-Type: application/json",
        ));
    }
    Ok(())
}

/// `localhost`, `127.x.x.x` or `[::1]`, with or without a port.
fn is_loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(n, _)| n),
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// A partition number from the path.
fn partition_of(p: &str) -> Result<u32, ApiError> {
    p.parse()
        .map_err(|_| ApiError::bad_request(format!("partition must be a number, got {p:?}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_names_pass_the_host_check() {
        for ok in [
            "localhost",
            "localhost:9080",
            "127.0.0.1:9080",
            "127.1.2.3",
            "[::1]:9080",
            "[::1]",
        ] {
            assert!(is_loopback_host(ok), "{ok}");
        }
        for bad in [
            "evil.example:9080",
            "10.0.0.1:9080",
            "[2001:db8::1]:80",
            "localhost.evil.example",
        ] {
            assert!(!is_loopback_host(bad), "{bad}");
        }
    }
}
