//! Emits `messages/mod.rs`: the module of every API, the table of what
//! each schema says (`SCHEMAS`: key, name, versions, first flexible
//! version), the API keys, and `Request`, the decoded body of any request,
//! read by (key, version).

use crate::schema::Api;
use std::fmt::Write;

/// `ListOffsets` -> `LIST_OFFSETS`.
pub fn const_name(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

/// One `ApiSpec` of a table: `api` at versions `lo`-`hi`, its first
/// flexible version from its schema.
pub fn spec_entry(out: &mut String, api: &Api, lo: i16, hi: i16) {
    let flexible = api
        .flexible
        .map_or("i16::MAX".to_string(), |f| f.to_string());
    let _ = writeln!(
        out,
        "ApiSpec {{ key: key::{}, name: {:?}, min_version: {lo}, max_version: {hi}, flexible_from: {flexible} }},",
        const_name(&api.name),
        api.name,
    );
}

fn schemas(out: &mut String, apis: &[Api]) {
    out.push_str(
        "/// One API with a range of versions and the first flexible one\n\
         /// (`i16::MAX` if none is): what its schema says (`SCHEMAS`, Kafka\n\
         /// 4.1's versions) or what this broker serves (`served::APIS`).\n\
         #[derive(Debug, Clone, Copy, PartialEq, Eq)]\n\
         pub struct ApiSpec {\n\
         pub key: i16,\n\
         pub name: &'static str,\n\
         pub min_version: i16,\n\
         pub max_version: i16,\n\
         pub flexible_from: i16,\n\
         }\n\n\
         impl ApiSpec {\n\
         pub fn supports(&self, version: i16) -> bool {\n\
         (self.min_version..=self.max_version).contains(&version)\n\
         }\n\n\
         pub fn is_flexible(&self, version: i16) -> bool {\n\
         version >= self.flexible_from\n\
         }\n\
         }\n\n\
         /// Every schema, by API key.\n\
         pub const SCHEMAS: &[ApiSpec] = &[\n",
    );
    for a in apis {
        spec_entry(out, a, a.versions.lo, a.versions.hi);
    }
    out.push_str(
        "];\n\n\
         /// The schema of an API key.\n\
         pub fn schema(key: i16) -> Option<&'static ApiSpec> {\n\
         SCHEMAS.iter().find(|s| s.key == key)\n\
         }\n\n",
    );
}

fn keys(out: &mut String, apis: &[Api]) {
    out.push_str("/// API keys.\npub mod key {\n");
    for a in apis {
        let _ = writeln!(out, "pub const {}: i16 = {};", const_name(&a.name), a.key);
    }
    out.push_str("}\n\n");
}

fn request_enum(out: &mut String, apis: &[Api]) {
    out.push_str(
        "/// The decoded body of a request of any API.\n\
         // Decoded once and moved once: the size of the largest variant is\n\
         // no cost worth a box per request.\n\
         #[allow(clippy::large_enum_variant)]\n\
         #[derive(Debug, Clone, PartialEq)]\n\
         pub enum Request {\n",
    );
    for a in apis {
        let _ = writeln!(out, "{}({}::{}),", a.name, a.module, a.request);
    }
    out.push_str(
        "}\n\n\
         impl Request {\n\
         /// Decodes the body of a request of API `key` at `version` (the\n\
         /// reader already set to the version's flexibility). An API without\n\
         /// a schema, or a version outside it, is an error.\n\
         pub fn read(key: i16, version: i16, r: &mut Reader<'_>) -> DecodeResult<Request> {\n\
         if !schema(key).is_some_and(|s| s.supports(version)) {\n\
         return Err(DecodeError::Invalid(format!(\"no schema for API {key} version {version}\")));\n\
         }\n\
         Ok(match key {\n",
    );
    for a in apis {
        let _ = writeln!(
            out,
            "key::{} => Request::{}({}::{}::read(r, version)?),",
            const_name(&a.name),
            a.name,
            a.module,
            a.request
        );
    }
    out.push_str(
        "_ => return Err(DecodeError::Invalid(format!(\"no schema for API {key}\"))),\n\
         })\n\
         }\n\n\
         /// Decodes a whole request frame (header and body, every byte) of any\n\
         /// API with a schema, served or not: what the fuzz target and the\n\
         /// hostile-input tests drive to reach every generated decoder.\n\
         pub fn decode_frame(frame: &Bytes) -> DecodeResult<(RequestHeader, Request)> {\n\
         let peek = crate::frame::peek_header(frame)?;\n\
         let flexible = schema(peek.api_key).is_some_and(|s| s.is_flexible(peek.api_version));\n\
         let mut r = Reader::new(frame, false);\n\
         let header = RequestHeader::read(&mut r, flexible)?;\n\
         r.flexible = flexible;\n\
         let body = Request::read(header.api_key, header.api_version, &mut r)?;\n\
         r.finish(\"request\")?;\n\
         Ok((header, body))\n\
         }\n\
         }\n",
    );
}

/// The table module, with `decls`, the declarations of its submodules:
/// `pub mod x;` in a source tree, an `include!` of the generated file at
/// build time.
pub fn module(apis: &[Api], decls: &[String]) -> String {
    let mut out = String::from(
        "//! The messages of every client-facing API of Kafka 4.1 (controller,\n\
         //! KRaft and inter-broker APIs left out), one module per API, with the\n\
         //! table of what each schema says.\n\
         //!\n\
         //! Generated when mk-adapter-kafka is built (its build.rs, with\n\
         //! mk-protocol-gen) from `crates/mk-adapter-kafka/schema/`; edit the\n\
         //! schemas. `cargo xtask codegen --print mod` shows this module.\n\n",
    );
    for decl in decls {
        let _ = writeln!(out, "{decl}");
    }
    out.push_str(
        "\nuse crate::codec::{DecodeError, DecodeResult, Message, Reader};\n\
         use crate::frame::RequestHeader;\n\
         use bytes::Bytes;\n\n",
    );
    schemas(&mut out, apis);
    keys(&mut out, apis);
    request_enum(&mut out, apis);
    out
}
