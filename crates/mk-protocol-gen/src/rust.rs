//! Emits the Rust of one API's messages: a struct per schema struct with a
//! `Default` that honours the schema's defaults, and its `Message` impl —
//! one statement per field, in wire order, through mk-adapter-kafka's
//! bounded `Reader` and its `Writer`, with known tagged fields read and
//! written and unknown ones skipped.

use crate::schema::{Api, Default, Field, Struct, Type, Versions, parse_int};
use std::fmt::Write;

/// Rust's reserved words a Kafka field name can be (`match`).
const KEYWORDS: &[&str] = &["match", "type", "ref", "mod", "use", "in", "as", "fn"];

pub fn ident(name: &str) -> String {
    if KEYWORDS.contains(&name) {
        format!("r#{name}")
    } else {
        name.to_string()
    }
}

/// The Rust type of a wire type (without the field's nullability).
fn rust_type(t: &Type) -> String {
    match t {
        Type::Uuid => "Uuid".into(),
        Type::String => "String".into(),
        Type::Bytes | Type::Records => "Bytes".into(),
        Type::ResponseRecords => "RecordSet".into(),
        Type::Error => "KafkaCode".into(),
        Type::Struct(n) => n.clone(),
        Type::Array(t) => format!("Vec<{}>", rust_type(t)),
        // A number or bool: its Rust type is named as its reader method.
        fixed => fixed_width(fixed).into(),
    }
}

pub fn field_type(f: &Field) -> String {
    let t = rust_type(&f.ty);
    if f.optional {
        format!("Option<{t}>")
    } else {
        t
    }
}

/// A version condition in Rust, or `None` when it always holds within
/// `within`.
pub fn cond(r: Versions, within: Versions) -> Option<String> {
    let lo = r.lo > within.lo;
    let hi = r.hi < within.hi;
    match (lo, hi) {
        (false, false) => None,
        (true, false) => Some(format!("v >= {}", r.lo)),
        (false, true) => Some(format!("v <= {}", r.hi)),
        (true, true) if r.lo == r.hi => Some(format!("v == {}", r.lo)),
        (true, true) => Some(format!("({}..={}).contains(&v)", r.lo, r.hi)),
    }
}

/// The value of a type when nothing is said: Kafka's zero values.
fn zero(t: &Type) -> String {
    match t {
        Type::Bool => "false".into(),
        Type::Float64 => "0.0".into(),
        Type::Uuid => "Uuid::ZERO".into(),
        Type::String => "String::new()".into(),
        Type::Bytes | Type::Records => "Bytes::new()".into(),
        Type::ResponseRecords => "RecordSet::default()".into(),
        Type::Error => "KafkaCode::NONE".into(),
        Type::Struct(n) => format!("{n}::default()"),
        Type::Array(_) => "Vec::new()".into(),
        _ => "0".into(),
    }
}

fn number(t: &Type, n: &str) -> String {
    match t {
        Type::Float64 if !n.contains('.') => format!("{n}.0"),
        Type::Float64 => n.to_string(),
        Type::Error => format!("KafkaCode({})", parse_int(n).unwrap_or(0)),
        Type::Int32 if parse_int(n) == Some(i128::from(i32::MIN)) => "i32::MIN".into(),
        Type::Int32 if parse_int(n) == Some(i128::from(i32::MAX)) => "i32::MAX".into(),
        Type::Int64 if parse_int(n) == Some(i128::from(i64::MAX)) => "i64::MAX".into(),
        _ => n.to_string(),
    }
}

/// The field's default as a Rust expression.
pub fn default_expr(f: &Field) -> String {
    let plain = match &f.default {
        None | Some(Default::Null) => zero(&f.ty),
        Some(Default::Bool(b)) => b.to_string(),
        Some(Default::Number(n)) => number(&f.ty, n),
        Some(Default::Str(s)) => format!("{s:?}.to_string()"),
    };
    match (f.optional, &f.default) {
        (true, Some(Default::Null)) => "None".into(),
        (true, _) => format!("Some({plain})"),
        (false, _) => plain,
    }
}

/// Whether the field differs from its default (a tagged field is only
/// written then, as Kafka does).
fn differs(f: &Field, value: &str) -> String {
    let d = default_expr(f);
    match d.as_str() {
        "String::new()" | "Vec::new()" | "Bytes::new()" => format!("!{value}.is_empty()"),
        "None" => format!("{value}.is_some()"),
        "false" => value.to_string(),
        "true" => format!("!{value}"),
        _ => format!("{value} != {d}"),
    }
}

/// The `Reader` and `Writer` method of a fixed-width type (`r.i32()`,
/// `w.i32(x)`). The other types have their own methods; for them this is
/// empty, which the generated code would not compile with.
fn fixed_width(t: &Type) -> &'static str {
    match t {
        Type::Bool => "bool",
        Type::Int8 => "i8",
        Type::Int16 => "i16",
        Type::Int32 => "i32",
        Type::Int64 => "i64",
        Type::Uint16 => "u16",
        Type::Float64 => "f64",
        Type::Uuid => "uuid",
        _ => "",
    }
}

/// A Rust expression of type `DecodeResult<_>` reading one value of
/// type `t` (not null).
fn read_result(t: &Type) -> String {
    match t {
        Type::String => "r.string()".into(),
        Type::Bytes | Type::Records => "r.bytes()".into(),
        Type::ResponseRecords => "r.bytes().map(RecordSet::from)".into(),
        Type::Error => "r.i16().map(KafkaCode)".into(),
        Type::Struct(n) => format!("{n}::read(r, v)"),
        Type::Array(item) => format!("r.array(|r| {})", read_result(item)),
        fixed => format!("r.{}()", fixed_width(fixed)),
    }
}

/// The same, unwrapped with `?`.
fn read_value(t: &Type) -> String {
    match t {
        Type::Error => "KafkaCode(r.i16()?)".into(),
        t => format!("{}?", read_result(t)),
    }
}

/// A Rust expression reading a value that may be null.
fn read_nullable(t: &Type) -> String {
    match t {
        Type::String => "r.nullable_string()?".into(),
        Type::Bytes | Type::Records => "r.nullable_bytes()?".into(),
        Type::ResponseRecords => "r.nullable_bytes()?.map(RecordSet::from)".into(),
        Type::Struct(n) => format!("r.nullable_struct::<{n}>(v)?"),
        Type::Array(item) => format!("r.nullable_array(|r| {})?", read_result(item)),
        other => read_value(other),
    }
}

/// The expression a field is read with at the versions `within`.
fn read_expr(f: &Field) -> String {
    if !f.optional {
        return read_value(&f.ty);
    }
    let within = f.effective;
    let nullable = f.nullable.unwrap_or(within);
    match cond(nullable, within) {
        None => read_nullable(&f.ty),
        Some(c) => format!(
            "if {c} {{ {} }} else {{ Some({}) }}",
            read_nullable(&f.ty),
            read_value(&f.ty)
        ),
    }
}

/// What a write statement writes: a field of `self` (a place, `self.x`)
/// or an array item (a reference, `x`).
#[derive(Clone, Copy)]
enum Place<'a> {
    Field(&'a str),
    Item(&'a str),
}

impl Place<'_> {
    /// The value of a `Copy` type.
    fn copied(self) -> String {
        match self {
            Place::Field(p) => p.to_string(),
            Place::Item(x) => format!("*{x}"),
        }
    }

    /// A reference to the value.
    fn by_ref(self) -> String {
        match self {
            Place::Field(p) => format!("&{p}"),
            Place::Item(x) => x.to_string(),
        }
    }

    /// The place itself, for method calls.
    fn expr(self) -> String {
        match self {
            Place::Field(p) | Place::Item(p) => p.to_string(),
        }
    }
}

/// A statement (without `;`) writing a value of type `t`.
fn write_value(t: &Type, at: Place<'_>) -> String {
    match t {
        Type::String => format!("w.string({})", at.by_ref()),
        Type::Bytes | Type::Records => format!("w.bytes({})", at.by_ref()),
        Type::ResponseRecords => format!("w.record_set({})", at.by_ref()),
        Type::Error => format!("w.i16({}.0)", at.expr()),
        Type::Struct(_) => format!("{}.write(w, v)", at.expr()),
        Type::Array(item) => format!(
            "w.array({}, |w, x| {})",
            at.by_ref(),
            write_value(item, Place::Item("x"))
        ),
        fixed => format!("w.{}({})", fixed_width(fixed), at.copied()),
    }
}

/// Writing an optional field (`self.x`, an `Option`): where null is
/// allowed (`nullable`) with the writer's nullable form, otherwise its
/// contents or the type's empty value.
fn write_optional(t: &Type, p: &str, nullable: bool) -> String {
    let (form, or_empty) = if nullable {
        ("nullable_", "")
    } else {
        ("", ".unwrap_or_default()")
    };
    match t {
        Type::String => format!("w.{form}string({p}.as_deref(){or_empty})"),
        Type::Bytes | Type::Records => format!("w.{form}bytes({p}.as_deref(){or_empty})"),
        Type::ResponseRecords if nullable => format!("w.nullable_record_set({p}.as_ref())"),
        Type::ResponseRecords => {
            format!("w.record_set({p}.as_ref().unwrap_or(&RecordSet::default()))")
        }
        Type::Struct(_) if nullable => format!("w.nullable_struct({p}.as_ref(), v)"),
        Type::Struct(n) => format!("{p}.as_ref().unwrap_or(&{n}::default()).write(w, v)"),
        Type::Array(item) => format!(
            "w.{form}array({p}.as_deref(){or_empty}, |w, x| {})",
            write_value(item, Place::Item("x"))
        ),
        other => write_value(other, Place::Field(p)),
    }
}

fn write_stmt(f: &Field) -> String {
    let p = format!("self.{}", ident(&f.name));
    if !f.optional {
        return format!("{};", write_value(&f.ty, Place::Field(&p)));
    }
    let within = f.effective;
    let nullable = f.nullable.unwrap_or(within);
    match cond(nullable, within) {
        None => format!("{};", write_optional(&f.ty, &p, true)),
        Some(c) => format!(
            "if {c} {{ {}; }} else {{ {}; }}",
            write_optional(&f.ty, &p, true),
            write_optional(&f.ty, &p, false)
        ),
    }
}

/// The range a field's statement is guarded by inside its struct.
fn guard(f: &Field) -> Option<Versions> {
    f.versions
}

fn doc_lines(out: &mut String, indent: &str, doc: &[String]) {
    for d in doc {
        if d.is_empty() {
            let _ = writeln!(out, "{indent}///");
        } else {
            let _ = writeln!(out, "{indent}/// {d}");
        }
    }
}

/// A short description of a field's wire facts for its doc comment, in
/// the schema's words.
fn wire_facts(api: &Api, f: &Field) -> String {
    let mut facts = Vec::new();
    if let Some(v) = f.versions {
        facts.push(format!("versions {}", range_text(api, v)));
    }
    if let Some(n) = f.nullable {
        facts.push(if n == f.effective {
            "nullable".to_string()
        } else {
            format!("nullable in {}", range_text(api, n))
        });
    }
    if let Some(t) = f.tag {
        facts.push(format!("tagged field {t}"));
    }
    match &f.default {
        Some(Default::Null) => facts.push("default null".into()),
        Some(Default::Number(n)) => facts.push(format!("default {n}")),
        Some(Default::Bool(b)) => facts.push(format!("default {b}")),
        Some(Default::Str(s)) => facts.push(format!("default {s:?}")),
        None => {}
    }
    facts.join("; ")
}

/// `3+`, `3-12` or `7`.
fn range_text(api: &Api, v: Versions) -> String {
    if v.hi == api.versions.hi {
        format!("{}+", v.lo)
    } else if v.lo == v.hi {
        v.lo.to_string()
    } else {
        format!("{}-{}", v.lo, v.hi)
    }
}

fn has_float(api: &Api, s: &Struct) -> bool {
    s.fields.iter().any(|f| {
        let mut t = &f.ty;
        while let Type::Array(i) = t {
            t = i;
        }
        match t {
            Type::Float64 => true,
            Type::Struct(n) => has_float(api, api.get(n)),
            _ => false,
        }
    })
}

fn emit_struct_def(out: &mut String, api: &Api, s: &Struct) {
    doc_lines(out, "", &s.doc);
    let eq = if has_float(api, s) { "" } else { ", Eq" };
    // Rust's derived default is Kafka's zero values; a struct with any
    // other default spells its `Default` out.
    let derived = s.fields.iter().all(|f| match default_expr(f).as_str() {
        "None" => true,
        d => !f.optional && d == zero(&f.ty),
    });
    let default = if derived { ", Default" } else { "" };
    let _ = writeln!(out, "#[derive(Debug, Clone{default}, PartialEq{eq})]");
    let _ = writeln!(out, "pub struct {} {{", s.name);
    for f in &s.fields {
        doc_lines(out, "    ", &f.doc);
        let facts = wire_facts(api, f);
        if !facts.is_empty() {
            if !f.doc.is_empty() {
                let _ = writeln!(out, "    ///");
            }
            let mut facts = facts;
            facts[..1].make_ascii_uppercase();
            let _ = writeln!(out, "    /// {facts}.");
        }
        let _ = writeln!(out, "    pub {}: {},", ident(&f.name), field_type(f));
    }
    let _ = writeln!(out, "}}\n");
    if derived {
        return;
    }
    let _ = writeln!(out, "impl Default for {} {{", s.name);
    let _ = writeln!(out, "    fn default() -> Self {{");
    let _ = writeln!(out, "        Self {{");
    for f in &s.fields {
        let _ = writeln!(out, "            {}: {},", ident(&f.name), default_expr(f));
    }
    let _ = writeln!(out, "        }}\n    }}\n}}\n");
}

/// One statement per untagged field of `s`, in wire order, each under the
/// condition on the version its field needs within `within` (if any).
fn untagged(out: &mut String, s: &Struct, within: Versions, stmt: impl Fn(&Field) -> String) {
    for f in s.fields.iter().filter(|f| f.tag.is_none()) {
        let stmt = stmt(f);
        match guard(f).and_then(|g| cond(g, within)) {
            Some(c) => {
                let _ = writeln!(out, "if {c} {{ {stmt} }}");
            }
            None => {
                let _ = writeln!(out, "{stmt}");
            }
        }
    }
}

/// The body of `read`, one statement per field, then the tagged fields.
fn read_body(api: &Api, s: &Struct, within: Versions) -> String {
    let mut out = String::from("let mut m = Self::default();\n");
    untagged(&mut out, s, within, |f| {
        format!("m.{} = {};", ident(&f.name), read_expr(f))
    });
    let tagged: Vec<&Field> = s.fields.iter().filter(|f| f.tag.is_some()).collect();
    if tagged.is_empty() {
        out.push_str("r.skip_tagged_fields()?;\n");
    } else {
        out.push_str("r.tagged_fields(|tag, r| {\n match tag {\n");
        for f in tagged {
            let tag = f.tag.unwrap_or_default();
            let g = guard(f)
                .and_then(|g| cond(g, api.flexible_versions()))
                .map(|c| format!(" if {c}"))
                .unwrap_or_default();
            let _ = writeln!(out, "{tag}{g} => m.{} = {},", ident(&f.name), read_expr(f));
        }
        out.push_str("_ => return Ok(false),\n}\nOk(true)\n})?;\n");
    }
    out.push_str("Ok(m)\n");
    out
}

/// The body of `write`: the fields in wire order, then the tagged ones
/// that differ from their defaults.
fn write_body(api: &Api, s: &Struct, within: Versions) -> String {
    let mut out = String::new();
    untagged(&mut out, s, within, write_stmt);
    let tagged: Vec<&Field> = s.fields.iter().filter(|f| f.tag.is_some()).collect();
    if tagged.is_empty() {
        out.push_str("w.no_tagged_fields();\n");
        return out;
    }
    out.push_str("if w.flexible {\n");
    for (i, f) in tagged.iter().enumerate() {
        let mut c = differs(f, &format!("self.{}", ident(&f.name)));
        if let Some(g) = guard(f).and_then(|g| cond(g, api.flexible_versions())) {
            c = format!("{g} && {c}");
        }
        let _ = writeln!(out, "let t{i} = {c};");
    }
    let sum: Vec<String> = (0..tagged.len())
        .map(|i| format!("u32::from(t{i})"))
        .collect();
    let _ = writeln!(out, "w.uvarint({});", sum.join(" + "));
    for (i, f) in tagged.iter().enumerate() {
        let stmt = write_stmt(f);
        let _ = writeln!(
            out,
            "if t{i} {{ w.tagged_field({}, |w| {{ {stmt} }}); }}",
            f.tag.unwrap_or_default()
        );
    }
    out.push_str("}\n");
    out
}

/// Whether a body uses the version `v`.
fn uses_version(body: &str) -> bool {
    body.split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .any(|w| w == "v")
}

fn emit_message_impl(out: &mut String, api: &Api, s: &Struct) {
    let within = api.versions;
    let read = read_body(api, s, within);
    let write = write_body(api, s, within);
    let rv = if uses_version(&read) { "v" } else { "_v" };
    let wv = if uses_version(&write) { "v" } else { "_v" };
    let _ = writeln!(out, "impl Message for {} {{", s.name);
    let _ = writeln!(
        out,
        "fn read(r: &mut Reader<'_>, {rv}: i16) -> DecodeResult<Self> {{\n{read}}}\n"
    );
    let _ = writeln!(
        out,
        "fn write(&self, w: &mut Writer, {wv}: i16) {{\n{write}}}\n}}\n"
    );
}

/// `text` as `//! ` lines of at most 80 columns.
fn wrapped(out: &mut String, text: &str) {
    let mut line = String::from("//!");
    for word in text.split_whitespace() {
        if line.len() + 1 + word.len() > 80 && line.len() > 3 {
            let _ = writeln!(out, "{line}");
            line = String::from("//!");
        }
        line.push(' ');
        line.push_str(word);
    }
    let _ = writeln!(out, "{line}");
}

fn api_header(api: &Api) -> String {
    let mut out = String::new();
    let flex = match api.flexible {
        Some(f) => format!(", flexible from {f}"),
        None => ", never flexible".to_string(),
    };
    let _ = writeln!(
        out,
        "//! {} (API key {}): versions {}-{}{flex}.",
        api.name, api.key, api.versions.lo, api.versions.hi
    );
    if !api.doc.is_empty() {
        out.push_str("//!\n");
        wrapped(&mut out, &api.doc.join(" "));
    }
    out.push_str("//!\n");
    wrapped(
        &mut out,
        &format!(
            "Generated when mk-adapter-kafka is built (its build.rs, with \
             mk-protocol-gen) from `crates/mk-adapter-kafka/schema/{}.schema`; \
             edit the schema. `cargo xtask codegen --print {}` shows this module.",
            api.module, api.module
        ),
    );
    out.push('\n');
    out
}

/// The whole module of one API.
pub fn module(api: &Api) -> String {
    let mut out = api_header(api);
    out.push_str(
        "// Generated code: one statement per field, so long messages make long\n\
         // functions, and a field read into a defaulted struct is the point.\n\
         #![allow(clippy::too_many_lines, clippy::field_reassign_with_default)]\n\n",
    );
    let mut body = String::new();
    for name in &api.order {
        let s = api.get(name);
        emit_struct_def(&mut body, api, s);
        emit_message_impl(&mut body, api, s);
    }
    let mut uses = vec!["DecodeResult", "Message", "Reader", "Writer"];
    if body.contains("RecordSet") {
        uses.push("RecordSet");
    }
    if body.contains("Uuid") {
        uses.push("Uuid");
    }
    let _ = writeln!(out, "use crate::codec::{{{}}};", uses.join(", "));
    if body.contains("KafkaCode") {
        out.push_str("use crate::errors::KafkaCode;\n");
    }
    if body.contains("Bytes") {
        out.push_str("use bytes::Bytes;\n");
    }
    out.push('\n');
    out.push_str(&body);
    out
}
