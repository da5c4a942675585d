//! The schema language of crates/mk-adapter-kafka/schema/ (described in
//! that folder's README.md): its parser and the checks that make a schema
//! something the emitters can trust — every struct defined once, every
//! version range inside its API's, tags only in flexible versions,
//! defaults of the field's type.

use std::collections::BTreeMap;

/// An inclusive range of versions; `hi` is the API's newest version for an
/// open range (`v3+`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Versions {
    pub lo: i16,
    pub hi: i16,
}

impl Versions {
    pub fn intersect(self, other: Versions) -> Versions {
        Versions {
            lo: self.lo.max(other.lo),
            hi: self.hi.min(other.hi),
        }
    }

    pub fn is_empty(self) -> bool {
        self.lo > self.hi
    }
}

/// A field's wire type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Type {
    Bool,
    Int8,
    Int16,
    Int32,
    Int64,
    Uint16,
    Float64,
    Uuid,
    String,
    Bytes,
    /// Record batches: nullable bytes on the wire, kept raw.
    Records,
    /// Record batches in a response: on the wire as `Records`, in Rust a
    /// `RecordSet` whose large parts (stored blocks) are written without
    /// being copied.
    ResponseRecords,
    /// An `int16` error code, `KafkaCode` in Rust.
    Error,
    Struct(String),
    Array(Box<Type>),
}

impl Type {
    fn parse(s: &str) -> Result<Type, String> {
        if let Some(item) = s.strip_prefix("[]") {
            let item = Type::parse(item)?;
            if matches!(item, Type::Array(_)) {
                return Err("arrays of arrays do not exist in the protocol".into());
            }
            return Ok(Type::Array(Box::new(item)));
        }
        Ok(match s {
            "bool" => Type::Bool,
            "int8" => Type::Int8,
            "int16" => Type::Int16,
            "int32" => Type::Int32,
            "int64" => Type::Int64,
            "uint16" => Type::Uint16,
            "float64" => Type::Float64,
            "uuid" => Type::Uuid,
            "string" => Type::String,
            "bytes" => Type::Bytes,
            "records" => Type::Records,
            "error" => Type::Error,
            s if s.starts_with(|c: char| c.is_ascii_uppercase())
                && s.chars().all(|c| c.is_ascii_alphanumeric()) =>
            {
                Type::Struct(s.to_string())
            }
            other => return Err(format!("unknown type `{other}`")),
        })
    }

    /// The struct this type names, directly or as array items.
    pub fn struct_name(&self) -> Option<&str> {
        match self {
            Type::Struct(n) => Some(n),
            Type::Array(t) => t.struct_name(),
            _ => None,
        }
    }

    fn may_be_null(&self) -> bool {
        matches!(
            self,
            Type::String
                | Type::Bytes
                | Type::Records
                | Type::ResponseRecords
                | Type::Struct(_)
                | Type::Array(_)
        )
    }
}

/// A default value as the schema writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Default {
    Null,
    Bool(bool),
    /// An integer (decimal or `0x` hex) or a float, as written.
    Number(String),
    Str(String),
}

#[derive(Debug, Clone)]
pub struct Field {
    pub name: String,
    pub ty: Type,
    /// The versions the field exists in; `None` is "whenever its struct does".
    pub versions: Option<Versions>,
    /// Where null is allowed: `None` never, otherwise a range.
    pub nullable: Option<Versions>,
    /// Whether the type is `Option<_>` in Rust (nullable in some version).
    pub optional: bool,
    pub tag: Option<u32>,
    pub default: Option<Default>,
    pub doc: Vec<String>,
    /// The versions in which the field can be on the wire at all: its own
    /// range within every enclosing field's.
    pub effective: Versions,
}

#[derive(Debug, Clone)]
pub struct Struct {
    pub name: String,
    /// `request`, `response` or `struct`: the section defining it.
    pub section: String,
    /// The versions its defining field exists in.
    pub versions: Versions,
    pub doc: Vec<String>,
    pub fields: Vec<Field>,
}

#[derive(Debug, Clone)]
pub struct Api {
    pub name: String,
    /// The schema file's stem (`produce`), also the Rust module name.
    pub module: String,
    pub key: i16,
    pub versions: Versions,
    /// The first flexible version, if any is.
    pub flexible: Option<i16>,
    pub doc: Vec<String>,
    pub request: String,
    pub response: String,
    /// Every struct of the file (request, response and nested ones).
    pub structs: BTreeMap<String, Struct>,
    /// Structs in the order the file defines them.
    pub order: Vec<String>,
}

impl Api {
    pub fn flexible_versions(&self) -> Versions {
        Versions {
            lo: self.flexible.unwrap_or(i16::MAX),
            hi: self.versions.hi,
        }
    }

    pub fn get(&self, name: &str) -> &Struct {
        &self.structs[name]
    }
}

/// One non-blank, non-comment line: its indentation, text and the comment
/// lines right above it.
struct Line {
    number: usize,
    indent: usize,
    text: String,
    doc: Vec<String>,
}

fn lines(src: &str) -> Result<Vec<Line>, String> {
    let mut out = Vec::new();
    let mut doc = Vec::new();
    for (i, raw) in src.lines().enumerate() {
        let trimmed = raw.trim();
        if trimmed.is_empty() {
            doc.clear();
            continue;
        }
        if let Some(c) = trimmed.strip_prefix('#') {
            doc.push(c.strip_prefix(' ').unwrap_or(c).to_string());
            continue;
        }
        let indent = raw.len() - raw.trim_start().len();
        if raw[..indent].contains('\t') || indent % 2 != 0 {
            return Err(format!("line {}: indent with two spaces", i + 1));
        }
        out.push(Line {
            number: i + 1,
            indent: indent / 2,
            text: trimmed.to_string(),
            doc: std::mem::take(&mut doc),
        });
    }
    Ok(out)
}

/// Parses `v3+`, `v3-12` or `v13` against an API's newest version.
fn versions(s: &str, max: i16) -> Result<Versions, String> {
    let body = s
        .strip_prefix('v')
        .ok_or_else(|| format!("versions `{s}` must start with `v`"))?;
    let num = |t: &str| {
        t.parse::<i16>()
            .map_err(|_| format!("bad version number in `{s}`"))
    };
    let r = if let Some(lo) = body.strip_suffix('+') {
        Versions {
            lo: num(lo)?,
            hi: max,
        }
    } else if let Some((lo, hi)) = body.split_once('-') {
        Versions {
            lo: num(lo)?,
            hi: num(hi)?,
        }
    } else {
        let v = num(body)?;
        Versions { lo: v, hi: v }
    };
    if r.is_empty() {
        return Err(format!("empty version range `{s}`"));
    }
    Ok(r)
}

/// Splits a field line into words, keeping a quoted default whole.
fn words(text: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        if let Some(q) = rest.strip_prefix('"') {
            let end = q.find('"').ok_or("unterminated string")?;
            out.push(format!("\"{}\"", &q[..end]));
            rest = q[end + 1..].trim_start();
        } else {
            let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
            out.push(rest[..end].to_string());
            rest = rest[end..].trim_start();
        }
    }
    Ok(out)
}

fn parse_default(s: &str) -> Default {
    match s {
        "null" => Default::Null,
        "true" => Default::Bool(true),
        "false" => Default::Bool(false),
        s if s.starts_with('"') => Default::Str(s.trim_matches('"').to_string()),
        s => Default::Number(s.to_string()),
    }
}

/// The header line: `api Produce key 0 versions 3-13 flexible v9+`.
fn header(line: &Line, api: &mut Api) -> Result<(), String> {
    let w = words(&line.text)?;
    let [a, name, k, key, vs, range, f, flex] = w.as_slice() else {
        return Err("expected `api <Name> key <n> versions <a>-<b> flexible v<n>+|none`".into());
    };
    if (a.as_str(), k.as_str(), vs.as_str(), f.as_str()) != ("api", "key", "versions", "flexible") {
        return Err("expected `api <Name> key <n> versions <a>-<b> flexible v<n>+|none`".into());
    }
    api.name = name.clone();
    api.key = key.parse().map_err(|_| format!("bad key `{key}`"))?;
    api.versions = versions(&format!("v{range}"), i16::MAX)?;
    api.flexible = match flex.as_str() {
        "none" => None,
        f => Some(versions(f, api.versions.hi)?.lo),
    };
    api.doc = line.doc.clone();
    Ok(())
}

/// Parses one field line (without its nested block).
fn field(line: &Line, api: &Api, parent: Versions) -> Result<Field, String> {
    let w = words(&line.text)?;
    if w.len() < 2 {
        return Err("a field needs a name and a type".into());
    }
    let (ty_text, all_nullable) = match w[1].strip_suffix('?') {
        Some(t) => (t, true),
        None => (w[1].as_str(), false),
    };
    let mut f = Field {
        name: w[0].clone(),
        ty: Type::parse(ty_text)?,
        versions: None,
        nullable: None,
        optional: all_nullable,
        tag: None,
        default: None,
        doc: line.doc.clone(),
        effective: parent,
    };
    let max = api.versions.hi;
    let mut i = 2;
    while i < w.len() {
        let word = w[i].as_str();
        let arg = w.get(i + 1).map(String::as_str);
        match (word, arg) {
            (v, _) if v.starts_with('v') => {
                f.versions = Some(versions(v, max)?);
                i += 1;
            }
            ("nullable", Some(a)) => {
                f.nullable = Some(versions(a, max)?);
                f.optional = true;
                i += 2;
            }
            ("tag", Some(a)) => {
                f.tag = Some(a.parse().map_err(|_| format!("bad tag `{a}`"))?);
                i += 2;
            }
            ("default", Some(a)) => {
                f.default = Some(parse_default(a));
                i += 2;
            }
            _ => return Err(format!("unexpected `{word}`")),
        }
    }
    if let Some(v) = f.versions {
        f.effective = v.intersect(parent);
        if f.effective.is_empty() {
            return Err(format!("field `{}` exists in no version", f.name));
        }
    }
    if all_nullable {
        f.nullable = Some(f.effective);
    }
    Ok(f)
}

struct Parser<'a> {
    lines: &'a [Line],
    at: usize,
    api: Api,
    section: String,
}

impl Parser<'_> {
    /// Reads the fields indented at `depth` into struct `name`.
    fn block(
        &mut self,
        name: &str,
        doc: Vec<String>,
        depth: usize,
        range: Versions,
    ) -> Result<(), String> {
        if self.api.structs.contains_key(name) || self.api.order.iter().any(|n| n == name) {
            return Err(format!("struct `{name}` is defined twice"));
        }
        // A struct comes before the structs its fields define.
        self.api.order.push(name.to_string());
        let mut fields: Vec<Field> = Vec::new();
        while let Some(line) = self.lines.get(self.at) {
            if line.indent < depth {
                break;
            }
            if line.indent > depth {
                return Err(format!("line {}: unexpected indentation", line.number));
            }
            let mut f =
                field(line, &self.api, range).map_err(|e| format!("line {}: {e}", line.number))?;
            self.at += 1;
            if fields.iter().any(|g| g.name == f.name) {
                return Err(format!("line {}: field `{}` twice", line.number, f.name));
            }
            let nested = self.lines.get(self.at).is_some_and(|l| l.indent > depth);
            match (f.ty.struct_name(), nested) {
                (Some(s), true) => {
                    let s = s.to_string();
                    self.block(&s, line.doc.clone(), depth + 1, f.effective)?;
                }
                (None, true) => {
                    return Err(format!("line {}: only structs have fields", line.number));
                }
                _ => {}
            }
            if self.section == "response" && f.ty == Type::Records {
                f.ty = Type::ResponseRecords;
            }
            fields.push(f);
        }
        self.api.structs.insert(
            name.to_string(),
            Struct {
                name: name.to_string(),
                section: self.section.clone(),
                versions: range,
                doc,
                fields,
            },
        );
        Ok(())
    }

    fn sections(&mut self) -> Result<(), String> {
        while let Some(line) = self.lines.get(self.at) {
            self.at += 1;
            let w = words(&line.text)?;
            let (kind, name) = match w.as_slice() {
                [k] if k == "request" => ("request", format!("{}Request", self.api.name)),
                [k] if k == "response" => ("response", format!("{}Response", self.api.name)),
                [k, n] if k == "struct" => ("struct", n.clone()),
                _ => {
                    return Err(format!(
                        "line {}: expected `request`, `response` or `struct <Name>`",
                        line.number
                    ));
                }
            };
            match kind {
                "request" => self.api.request = name.clone(),
                "response" => self.api.response = name.clone(),
                _ => {}
            }
            let range = self.api.versions;
            self.section = kind.to_string();
            self.block(&name, line.doc.clone(), 1, range)?;
        }
        Ok(())
    }
}

/// Parses one schema file.
pub fn parse(module: &str, src: &str) -> Result<Api, String> {
    let lines = lines(src)?;
    let first = lines.first().ok_or("empty schema")?;
    let mut api = Api {
        name: String::new(),
        module: module.to_string(),
        key: 0,
        versions: Versions { lo: 0, hi: 0 },
        flexible: None,
        doc: Vec::new(),
        request: String::new(),
        response: String::new(),
        structs: BTreeMap::new(),
        order: Vec::new(),
    };
    header(first, &mut api).map_err(|e| format!("line {}: {e}", first.number))?;
    let mut p = Parser {
        lines: &lines,
        at: 1,
        api,
        section: String::new(),
    };
    p.sections()?;
    let api = p.api;
    if api.request.is_empty() || api.response.is_empty() {
        return Err("a schema needs a request and a response".into());
    }
    check(&api)?;
    Ok(api)
}

/// The rules a parsed schema must keep.
fn check(api: &Api) -> Result<(), String> {
    for s in api.structs.values() {
        let mut tags = Vec::new();
        for f in &s.fields {
            let at = || format!("{}.{}", s.name, f.name);
            if let Some(n) = f.ty.struct_name()
                && !api.structs.contains_key(n)
            {
                return Err(format!("{}: struct `{n}` is never defined", at()));
            }
            if f.nullable.is_some() && !f.ty.may_be_null() {
                return Err(format!("{}: a {:?} cannot be null", at(), f.ty));
            }
            if f.default == Some(Default::Null) && f.nullable.is_none() {
                return Err(format!("{}: default null on a non-nullable field", at()));
            }
            check_default(f).map_err(|e| format!("{}: {e}", at()))?;
            if let Some(t) = f.tag {
                let flex = api.flexible_versions();
                if f.effective.intersect(flex) != f.effective {
                    return Err(format!("{}: tagged outside the flexible versions", at()));
                }
                if tags.contains(&t) {
                    return Err(format!("{}: tag {t} used twice", at()));
                }
                tags.push(t);
            }
        }
    }
    Ok(())
}

fn check_default(f: &Field) -> Result<(), String> {
    let Some(d) = &f.default else {
        return Ok(());
    };
    let ok = match (&f.ty, d) {
        (_, Default::Null) => true,
        (Type::Bool, Default::Bool(_)) => true,
        (Type::String, Default::Str(_)) => true,
        (
            Type::Int8 | Type::Int16 | Type::Int32 | Type::Int64 | Type::Uint16 | Type::Error,
            Default::Number(n),
        ) => parse_int(n).is_some(),
        (Type::Float64, Default::Number(n)) => n.parse::<f64>().is_ok(),
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(format!("default {d:?} does not fit {:?}", f.ty))
    }
}

/// An integer literal of the schema (decimal or `0x` hex).
pub fn parse_int(s: &str) -> Option<i128> {
    match s.strip_prefix("0x") {
        Some(h) => i128::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
# A test API.
api Test key 99 versions 0-4 flexible v2+

request
  # The topics.
  topics []Topic
    name string v0-2
    id uuid v3+
    parts []int32
  extra string? v1+ default null
  hint int32 v3+ tag 0 default -1

response
  error_code error
  topics []Topic v4
";

    #[test]
    fn a_schema_parses_with_its_ranges_docs_and_tags() {
        let api = parse("test", SAMPLE).unwrap();
        assert_eq!((api.key, api.flexible), (99, Some(2)));
        let req = api.get("TestRequest");
        assert_eq!(req.fields[0].doc, vec!["The topics.".to_string()]);
        let topic = api.get("Topic");
        assert_eq!(topic.fields[0].effective, Versions { lo: 0, hi: 2 });
        assert_eq!(req.fields[1].nullable, Some(Versions { lo: 1, hi: 4 }));
        assert_eq!(req.fields[2].tag, Some(0));
        assert_eq!(api.order, ["TestRequest", "Topic", "TestResponse"]);
    }

    #[test]
    fn broken_schemas_are_refused_with_the_reason() {
        let cases = [
            (SAMPLE.replace("tag 0", "tag 0 v1+"), "tagged outside"),
            (SAMPLE.replace("uuid v3+", "uuid? v3+"), "cannot be null"),
            (SAMPLE.replace("[]Topic v4", "[]Topik v4"), "never defined"),
            (SAMPLE.replace("default -1", "default x"), "does not fit"),
            (SAMPLE.replace("  hint", "   hint"), "two spaces"),
        ];
        for (src, want) in cases {
            let e = parse("test", &src).unwrap_err();
            assert!(e.contains(want), "{e} should say {want}");
        }
    }
}
