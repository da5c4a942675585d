//! The page, its scripts and styles and the vendored uPlot, compiled into
//! the binary: the console needs no network and no files at run time.

use crate::http::{ApiError, Body, error_response};
use http_body_util::Full;
use hyper::body::Bytes;
use hyper::header::{
    CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, HeaderValue, REFERRER_POLICY,
    X_CONTENT_TYPE_OPTIONS, X_FRAME_OPTIONS,
};
use hyper::{Method, Response, StatusCode};

/// One file of the page.
struct Asset {
    path: &'static str,
    content_type: &'static str,
    body: &'static [u8],
}

macro_rules! asset {
    ($path:literal, $file:literal, $type:expr) => {
        Asset {
            path: $path,
            content_type: $type,
            body: include_bytes!(concat!("../assets/", $file)),
        }
    };
}

const JS: &str = "text/javascript; charset=utf-8";

/// Every file the console serves.
const ASSETS: &[Asset] = &[
    asset!("/", "index.html", "text/html; charset=utf-8"),
    asset!("/assets/style.css", "style.css", "text/css; charset=utf-8"),
    asset!("/assets/favicon.svg", "favicon.svg", "image/svg+xml"),
    asset!("/assets/js/app.js", "js/app.js", JS),
    asset!("/assets/js/charts.js", "js/charts.js", JS),
    asset!("/assets/js/overview.js", "js/overview.js", JS),
    asset!("/assets/js/topics.js", "js/topics.js", JS),
    asset!("/assets/js/messages.js", "js/messages.js", JS),
    asset!("/assets/js/groups.js", "js/groups.js", JS),
    asset!("/assets/js/transactions.js", "js/transactions.js", JS),
    asset!(
        "/assets/vendor/uplot/uPlot.iife.min.js",
        "vendor/uplot/uPlot.iife.min.js",
        JS
    ),
    asset!(
        "/assets/vendor/uplot/uPlot.min.css",
        "vendor/uplot/uPlot.min.css",
        "text/css; charset=utf-8"
    ),
];

/// The page may load only what it serves itself, and no other site may
/// frame it.
const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                   connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/// Answers a request for a file of the page.
pub(crate) fn serve(method: &Method, path: &str) -> Response<Body> {
    if *method != Method::GET && *method != Method::HEAD {
        return error_response(&ApiError {
            status: StatusCode::METHOD_NOT_ALLOWED,
            code: "METHOD_NOT_ALLOWED",
            message: format!("{path} answers GET only"),
        });
    }
    let path = if path == "/index.html" { "/" } else { path };
    let Some(asset) = ASSETS.iter().find(|a| a.path == path) else {
        return error_response(&ApiError::not_found(format!("no file {path}")));
    };
    let body = if *method == Method::HEAD {
        Bytes::new()
    } else {
        Bytes::from_static(asset.body)
    };
    let mut r = Response::new(Full::new(body));
    let headers = r.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(asset.content_type));
    // The files change only with the binary; revalidating is cheap on
    // loopback and never shows a stale page after an upgrade.
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_script_the_page_imports_is_served() {
        // The modules import each other as ./name.js: each import must be
        // in the table, or the page breaks without a build step noticing.
        for a in ASSETS.iter().filter(|a| a.content_type == JS) {
            let text = std::str::from_utf8(a.body).unwrap();
            for part in text.split(" from \"./").skip(1) {
                let file = part.split('"').next().unwrap();
                let path = format!("/assets/js/{file}");
                assert!(
                    ASSETS.iter().any(|b| b.path == path),
                    "{} imports {file}, which is not served",
                    a.path
                );
            }
        }
        let index = std::str::from_utf8(ASSETS[0].body).unwrap();
        for part in index.split("\"/assets/").skip(1) {
            let path = format!("/assets/{}", part.split('"').next().unwrap());
            assert!(
                ASSETS.iter().any(|b| b.path == path),
                "index.html loads {path}"
            );
        }
    }

    #[test]
    fn unknown_files_are_404_and_changes_405() {
        assert_eq!(serve(&Method::GET, "/nope").status(), StatusCode::NOT_FOUND);
        assert_eq!(
            serve(&Method::POST, "/").status(),
            StatusCode::METHOD_NOT_ALLOWED
        );
        let r = serve(&Method::GET, "/index.html");
        assert_eq!(r.status(), StatusCode::OK);
        assert!(
            r.headers()[CONTENT_SECURITY_POLICY]
                .to_str()
                .unwrap()
                .contains("default-src 'self'")
        );
    }
}
