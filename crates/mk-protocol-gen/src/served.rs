//! The list of served APIs (crates/mk-adapter-kafka/schema/served.list) and
//! the Rust made of it, `messages/served.rs`: the API table ApiVersions
//! advertises (`APIS`: the served versions, the first flexible one from the
//! schema) and the router from (key, version) to the decoder and the
//! handler of each served API.

use crate::schema::Api;
use crate::table::{const_name, spec_entry};
use std::fmt::Write;

/// One line of the list: `Produce 3-9 produce::handle_produce`, with an
/// optional `read <path>` naming a hand-written reader of the request and
/// an optional `guard <path>` naming its authorization (api/authz/): a
/// function of the context and the request that answers at once (denied)
/// or passes the request, maybe narrowed, on to the handler with a patch
/// adding the denied parts to its response.
#[derive(Debug, Clone)]
pub struct Served {
    pub api: String,
    pub lo: i16,
    pub hi: i16,
    pub handler: String,
    pub read: Option<String>,
    pub guard: Option<String>,
}

/// Parses the list and checks it against the schemas: every API known,
/// served at versions its schema has, listed once, by key.
pub fn parse(src: &str, apis: &[Api]) -> Result<Vec<Served>, String> {
    let mut out: Vec<Served> = Vec::new();
    for (i, line) in src.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = |e: String| format!("served.list line {}: {e}", i + 1);
        let w: Vec<&str> = line.split_whitespace().collect();
        let usage = "expected `<Api> <lo>-<hi> <handler> [read <fn>] [guard <fn>]`";
        let (api, range, handler, options) = match w.as_slice() {
            [a, r, h, options @ ..] => (*a, *r, *h, options),
            _ => return Err(at(usage.into())),
        };
        let (mut read, mut guard) = (None, None);
        for pair in options.chunks(2) {
            match pair {
                ["read", f] if read.is_none() => read = Some(f.to_string()),
                ["guard", f] if guard.is_none() => guard = Some(f.to_string()),
                _ => return Err(at(usage.into())),
            }
        }
        let schema = apis
            .iter()
            .find(|a| a.name == api)
            .ok_or_else(|| at(format!("no schema for `{api}`")))?;
        let (lo, hi) = range
            .split_once('-')
            .and_then(|(l, h)| Some((l.parse::<i16>().ok()?, h.parse::<i16>().ok()?)))
            .ok_or_else(|| at(format!("bad range `{range}`")))?;
        if lo > hi || lo < schema.versions.lo || hi > schema.versions.hi {
            return Err(at(format!(
                "{api} {lo}-{hi} is not within its schema's {}-{}",
                schema.versions.lo, schema.versions.hi
            )));
        }
        if out.iter().any(|s| s.api == api) {
            return Err(at(format!("{api} is listed twice")));
        }
        out.push(Served {
            api: api.to_string(),
            lo,
            hi,
            handler: handler.to_string(),
            read,
            guard,
        });
    }
    let key = |s: &Served| apis.iter().find(|a| a.name == s.api).map_or(0, |a| a.key);
    out.sort_by_key(key);
    Ok(out)
}

fn api<'a>(apis: &'a [Api], s: &Served) -> &'a Api {
    apis.iter()
        .find(|a| a.name == s.api)
        .expect("checked by parse")
}

fn table(out: &mut String, apis: &[Api], served: &[Served]) {
    out.push_str(
        "/// Every API this broker serves, by key: the versions it advertises\n\
         /// (served.list) and the first flexible one (the schema's).\n\
         pub const APIS: &[ApiSpec] = &[\n",
    );
    for s in served {
        spec_entry(out, api(apis, s), s.lo, s.hi);
    }
    out.push_str(
        "];\n\n\
         /// The served entry of an API key.\n\
         pub fn spec(key: i16) -> Option<&'static ApiSpec> {\n\
         APIS.iter().find(|a| a.key == key)\n\
         }\n\n\
         /// The APIs with an authorization guard (served.list's `guard`):\n\
         /// with the authorizer on, the others are neither advertised nor\n\
         /// served, except those every client needs before it authenticates.\n\
         pub const GUARDED: &[i16] = &[\n",
    );
    for s in served.iter().filter(|s| s.guard.is_some()) {
        let _ = writeln!(out, "key::{},", const_name(&api(apis, s).name));
    }
    out.push_str("];\n\n");
}

/// The expression decoding the request of `s` from `r` at `v`.
fn read_expr(apis: &[Api], s: &Served) -> String {
    let a = api(apis, s);
    match &s.read {
        Some(f) => format!("api::{f}(r, v)?"),
        None => format!("{}::{}::read(r, v)?", a.module, a.request),
    }
}

fn dispatch(out: &mut String, apis: &[Api], served: &[Served]) {
    out.push_str(
        "/// Decodes the body of a served request (every byte of it), runs its\n\
         /// handler and encodes the answer into `w`. Returns false for a\n\
         /// request that has no answer (Produce with acks=0). A body that\n\
         /// cannot be decoded is an error: the connection is closed.\n\
         pub async fn dispatch(\n\
         ctx: &Ctx<'_>,\n\
         spec: &ApiSpec,\n\
         r: &mut Reader<'_>,\n\
         w: &mut Writer,\n\
         ) -> DecodeResult<bool> {\n\
         let v = ctx.version();\n\
         Ok(match spec.key {\n",
    );
    for s in served {
        let a = api(apis, s);
        let serve = match &s.guard {
            None => format!("api::{}(ctx, req).await.answer(w, v)", s.handler),
            Some(g) => format!(
                "match api::authz::judge(ctx, req, api::{g}) {{\n\
                 api::authz::Gate::Serve(req, patch) => patch.apply(api::{}(ctx, req).await).answer(w, v),\n\
                 api::authz::Gate::Answer(denied) => denied.answer(w, v),\n\
                 }}",
                s.handler
            ),
        };
        let _ = writeln!(
            out,
            "key::{} => {{\nlet req = {};\nr.finish(\"request\")?;\n{serve}\n}}",
            const_name(&a.name),
            read_expr(apis, s),
        );
    }
    out.push_str(
        "other => {\n\
         return Err(DecodeError::Invalid(format!(\"API key {other} is not served\")));\n\
         }\n\
         })\n\
         }\n\n",
    );
}

fn decode(out: &mut String, apis: &[Api], served: &[Served]) {
    out.push_str(
        "/// Decodes a whole request frame (header and body) of a served API\n\
         /// without executing it, exactly as a connection would: what the fuzz\n\
         /// target and the hostile-input tests drive. Unserved (API, version)\n\
         /// pairs are an error, as on a connection.\n\
         pub fn decode_request(frame: &Bytes) -> DecodeResult<RequestHeader> {\n\
         let peek = crate::frame::peek_header(frame)?;\n\
         let spec = spec(peek.api_key)\n\
         .filter(|s| s.supports(peek.api_version))\n\
         .ok_or_else(|| {\n\
         DecodeError::Invalid(format!(\n\
         \"unsupported API {} version {}\",\n\
         peek.api_key, peek.api_version\n\
         ))\n\
         })?;\n\
         let flexible = spec.is_flexible(peek.api_version);\n\
         let mut reader = Reader::new(frame, false);\n\
         let header = RequestHeader::read(&mut reader, flexible)?;\n\
         reader.flexible = flexible;\n\
         let r = &mut reader;\n\
         let v = header.api_version;\n\
         match spec.key {\n",
    );
    for s in served {
        let a = api(apis, s);
        let _ = writeln!(
            out,
            "key::{} => {{ {}; }}",
            const_name(&a.name),
            read_expr(apis, s)
        );
    }
    out.push_str(
        "other => {\n\
         return Err(DecodeError::Invalid(format!(\"API key {other} is not served\")));\n\
         }\n\
         }\n\
         r.finish(\"request\")?;\n\
         Ok(header)\n\
         }\n",
    );
}

pub fn module(apis: &[Api], served: &[Served]) -> String {
    let mut out = String::from(
        "//! The APIs this broker serves: the table ApiVersions advertises and\n\
         //! the router from (key, version) to each API's decoder and handler.\n\
         //!\n\
         //! Generated when mk-adapter-kafka is built (its build.rs, with\n\
         //! mk-protocol-gen) from `crates/mk-adapter-kafka/schema/served.list`\n\
         //! and the schemas; edit those. `cargo xtask codegen --print served`\n\
         //! shows this module.\n\n\
         use super::*;\n\
         use crate::api::{self, Answer, Ctx};\n\
         use crate::codec::{DecodeError, DecodeResult, Message, Reader, Writer};\n\
         use crate::frame::RequestHeader;\n\
         use bytes::Bytes;\n\n",
    );
    table(&mut out, apis, served);
    dispatch(&mut out, apis, served);
    decode(&mut out, apis, served);
    out
}
