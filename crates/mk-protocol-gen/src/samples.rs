//! Emits crates/mk-adapter-kafka/tests/generated/samples.rs: a sample value
//! of every schema struct at every version — each field the version has
//! set to a value other than its default (so tagged fields are written),
//! arrays of two different items, null nowhere — and `for_every_api!`,
//! the list of APIs with their Kafka names and versions, which the oracle
//! and hostile-input tests expand.

use crate::rust::{cond, ident};
use crate::schema::{Api, Default, Field, Type, parse_int};
use crate::table::const_name;
use std::fmt::Write;

/// An expression of the field's Rust type (without `Option`) different
/// from its default, varying with the runtime `seed` and the field's
/// position `idx`.
fn value(module: &str, t: &Type, f: &Field, idx: usize) -> String {
    let dflt = match &f.default {
        Some(Default::Number(n)) => parse_int(n).map_or("0".to_string(), |i| i.to_string()),
        _ => "0".to_string(),
    };
    let name = &f.name;
    match t {
        Type::Bool => {
            let d = matches!(f.default, Some(Default::Bool(true)));
            format!("{}", !d)
        }
        Type::Int8 => format!("int::<i8>(seed, {idx}, {dflt})"),
        Type::Int16 => format!("int::<i16>(seed, {idx}, {dflt})"),
        Type::Int32 => format!("int::<i32>(seed, {idx}, {dflt})"),
        Type::Int64 => format!("int::<i64>(seed, {idx}, {dflt})"),
        Type::Uint16 => format!("int::<u16>(seed, {idx}, {dflt})"),
        Type::Error => format!("KafkaCode(int::<i16>(seed, {idx}, {dflt}))"),
        Type::Float64 => format!("f64::from(int::<i16>(seed, {idx}, {dflt})) + 0.5"),
        Type::Uuid => format!("Uuid([seed.wrapping_add({idx}).wrapping_add(1); 16])"),
        Type::String => format!("format!(\"{name}-{{seed}}\")"),
        Type::Bytes | Type::Records => format!("Bytes::from(vec![seed; {}])", 1 + idx % 3),
        Type::ResponseRecords => format!(
            "mk_adapter_kafka::codec::RecordSet::from(Bytes::from(vec![seed; {}]))",
            1 + idx % 3
        ),
        Type::Struct(n) => format!("{module}::{n}::sample(v, seed.wrapping_add({idx}))"),
        Type::Array(item) => {
            let one = value(module, item, f, idx).replace("seed", "s");
            format!("(1..=2u8).map(|i| {{ let s = seed.wrapping_add(i); {one} }}).collect()")
        }
    }
}

fn sample_impl(out: &mut String, api: &Api, name: &str) {
    let s = api.get(name);
    let _ = writeln!(out, "impl Sample for {}::{} {{", api.module, name);
    let mut body = String::from("let mut m = Self::default();\n");
    for (idx, f) in s.fields.iter().enumerate() {
        let mut v = value(&api.module, &f.ty, f, idx);
        if f.optional {
            v = format!("Some({v})");
        }
        let stmt = format!("m.{} = {v};", ident(&f.name));
        match f.versions.and_then(|r| cond(r, api.versions)) {
            Some(c) => {
                let _ = writeln!(body, "if {c} {{ {stmt} }}");
            }
            None => {
                let _ = writeln!(body, "{stmt}");
            }
        }
    }
    body.push_str("m\n");
    let uses_v = body.contains("v >=")
        || body.contains("v <=")
        || body.contains("v ==")
        || body.contains("(&v)")
        || body.contains("(v,");
    let v = if uses_v { "v" } else { "_v" };
    let _ = writeln!(
        out,
        "fn sample({v}: i16, seed: u8) -> Self {{\n{body}}}\n}}\n"
    );
}

const PRELUDE: &str = "\
//! A sample value of every message of every schema at every version: each
//! field the version has set to a value other than its default (so tagged
//! fields are written too), arrays of two different items. The oracle
//! test and the hostile-input test start from these.
//!
//! Generated when mk-adapter-kafka is built (its build.rs, with
//! mk-protocol-gen) from `crates/mk-adapter-kafka/schema/`; edit the
//! generator. `cargo xtask codegen --print samples` shows this module.

// Generated code: one statement per field, and `for_every_api!` is
// expanded by some test binaries only.
#![allow(
    clippy::too_many_lines,
    clippy::field_reassign_with_default,
    unused_imports,
    unused_macros,
    dead_code
)]

use bytes::Bytes;
use mk_adapter_kafka::codec::Uuid;
use mk_adapter_kafka::errors::KafkaCode;
use mk_adapter_kafka::messages::*;

/// A value of a message struct at a version, varied by `seed`.
pub trait Sample: Sized {
    fn sample(v: i16, seed: u8) -> Self;
}

/// A small integer that is not `default`: `1 + idx + 4 * seed`, moved on
/// by one if it is the default.
fn int<T: TryFrom<i64>>(seed: u8, idx: i64, default: i64) -> T {
    let mut x = 1 + idx + 4 * i64::from(seed);
    if x == default {
        x += 1;
    }
    T::try_from(x).unwrap_or_else(|_| panic!(\"sample value {x} does not fit\"))
}

";

pub fn module(apis: &[Api]) -> String {
    let mut out = String::from(PRELUDE);
    for api in apis {
        for name in &api.order {
            sample_impl(&mut out, api, name);
        }
    }
    out.push_str(
        "/// Calls `$m!(Name, module, Request, Response, KEY, min, max, flexible_from)`\n\
         /// for every API with a schema; the names are Kafka's, so the oracle's\n\
         /// types have them too.\n\
         #[macro_export]\n\
         macro_rules! for_every_api {\n\
         ($m:ident) => {\n",
    );
    for a in apis {
        let _ = writeln!(
            out,
            "$m!({}, {}, {}, {}, {}, {}, {}, {});",
            a.name,
            a.module,
            a.request,
            a.response,
            const_name(&a.name),
            a.versions.lo,
            a.versions.hi,
            a.flexible.map_or("i16::MAX".to_string(), |f| f.to_string())
        );
    }
    out.push_str("};\n}\n\n");
    every_struct(&mut out, apis);
    out
}

/// Structs we name differently from Kafka (Kafka's request and response
/// files may reuse a name for different structs; one Rust module cannot).
const KAFKA_NAMES: &[(&str, &str, &str)] = &[
    ("AlterClientQuotas", "EntryResult", "EntryData"),
    ("DescribeQuorum", "TopicResult", "TopicData"),
    ("DescribeQuorum", "PartitionResult", "PartitionData"),
];

/// `for_every_struct!`: every struct with the path of the oracle's struct
/// of the same meaning.
fn every_struct(out: &mut String, apis: &[Api]) {
    out.push_str(
        "/// Calls `$m!(ours, oracle's, min, max, flexible_from)` for every struct\n\
         /// of every schema, with the path of the `kafka-protocol` struct of the\n\
         /// same meaning.\n\
         #[macro_export]\n\
         macro_rules! for_every_struct {\n\
         ($m:ident) => {\n",
    );
    for a in apis {
        for name in &a.order {
            let s = a.get(name);
            let section = if s.section == "response" {
                "response"
            } else {
                "request"
            };
            let kafka = KAFKA_NAMES
                .iter()
                .find(|(api, ours, _)| *api == a.name && ours == name)
                .map_or(name.as_str(), |(_, _, k)| k);
            let _ = writeln!(
                out,
                "$m!(mk_adapter_kafka::messages::{}::{name}, kafka_protocol::messages::{}_{section}::{kafka}, {}, {}, {});",
                a.module,
                a.module,
                s.versions.lo,
                s.versions.hi,
                a.flexible.map_or("i16::MAX".to_string(), |f| f.to_string())
            );
        }
    }
    out.push_str("};\n}\n");
}
