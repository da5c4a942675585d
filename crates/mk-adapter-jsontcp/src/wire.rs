//! Low-level JSON helpers of the protocol: strict, typed field access on a
//! decoded object (every failure is a readable INVALID_REQUEST message), and a
//! writer that emits object fields in exactly the order it is called with,
//! which is how the wire field order of spec 06 is guaranteed.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use mk_cluster::Bytes;
use serde_json::{Map, Value};

/// A decoding failure; always INVALID_REQUEST on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError(pub String);

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

pub(crate) type Decoded<T> = Result<T, DecodeError>;

pub(crate) fn bad<T>(msg: impl Into<String>) -> Decoded<T> {
    Err(DecodeError(msg.into()))
}

/// Parses one JSON document into a `Value` exactly as `serde_json` does,
/// except that an object naming a key twice is refused: serde_json keeps
/// the last value, so `{"operation":"list_topics","operation":"produce"}`
/// would silently produce. Nesting is bounded by serde_json's recursion
/// limit as before.
pub(crate) fn parse_strict(bytes: &[u8]) -> serde_json::Result<Value> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let v = <NoDuplicates as serde::Deserialize>::deserialize(&mut de)?.0;
    de.end()?;
    Ok(v)
}

/// A `Value` whose objects have no repeated key.
struct NoDuplicates(Value);

impl<'de> serde::Deserialize<'de> for NoDuplicates {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NoDuplicatesVisitor).map(NoDuplicates)
    }
}

struct NoDuplicatesVisitor;

impl<'de> serde::de::Visitor<'de> for NoDuplicatesVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        // Like serde_json's own `Value`: a non-finite float becomes null.
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        serde::Deserialize::deserialize(d).map(|v: NoDuplicates| v.0)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(NoDuplicates(v)) = seq.next_element()? {
            items.push(v);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                return Err(serde::de::Error::custom(format!(
                    "duplicate key {key:?}; every key may appear once"
                )));
            }
            let NoDuplicates(v) = map.next_value()?;
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}

/// The JSON type of a value, for error messages.
pub(crate) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_f64() => "a non-integer number",
        Value::Number(_) => "an integer",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Strict typed access to the fields of one JSON object. `ctx` names the
/// object in messages (e.g. `records[2]`).
#[derive(Clone, Copy)]
pub(crate) struct Fields<'a> {
    map: &'a Map<String, Value>,
    ctx: &'a str,
    /// The position in the array `ctx`, for array items. Kept apart so the
    /// message is only formatted when there is an error (hot path).
    index: Option<usize>,
}

impl<'a> Fields<'a> {
    pub fn new(map: &'a Map<String, Value>, ctx: &'a str) -> Self {
        Self {
            map,
            ctx,
            index: None,
        }
    }

    /// Item `index` of the array field `name`, which must be an object.
    pub fn item(v: &'a Value, name: &'a str, index: usize) -> Decoded<Self> {
        match v.as_object() {
            Some(map) => Ok(Self {
                map,
                ctx: name,
                index: Some(index),
            }),
            None => bad(format!(
                "{name}[{index}] must be an object, got {}",
                type_name(v)
            )),
        }
    }

    fn path(&self, name: &str) -> String {
        match (self.ctx.is_empty(), self.index) {
            (true, _) => format!("field {name:?}"),
            (false, None) => format!("field {:?} of {}", name, self.ctx),
            (false, Some(i)) => format!("field {:?} of {}[{i}]", name, self.ctx),
        }
    }

    /// The field if present and not null.
    pub fn get(&self, name: &str) -> Option<&'a Value> {
        self.map.get(name).filter(|v| !v.is_null())
    }

    pub fn require(&self, name: &str) -> Decoded<&'a Value> {
        match self.get(name) {
            Some(v) => Ok(v),
            None => bad(format!("missing {}", self.path(name))),
        }
    }

    /// Field `name` read by `as_kind`; where that finds nothing, the error
    /// says the field must be `kind` ("a string") and what it is instead.
    fn typed<T>(
        &self,
        name: &str,
        kind: &str,
        as_kind: impl FnOnce(&'a Value) -> Option<T>,
    ) -> Decoded<T> {
        let v = self.require(name)?;
        as_kind(v).map_or_else(
            || {
                bad(format!(
                    "{} must be {kind}, got {}",
                    self.path(name),
                    type_name(v)
                ))
            },
            Ok,
        )
    }

    /// `read` of field `name` where it is present and not null.
    fn opt<T>(
        &self,
        name: &str,
        read: impl FnOnce(&Self, &str) -> Decoded<T>,
    ) -> Decoded<Option<T>> {
        match self.get(name) {
            None => Ok(None),
            Some(_) => read(self, name).map(Some),
        }
    }

    pub fn str(&self, name: &str) -> Decoded<&'a str> {
        self.typed(name, "a string", Value::as_str)
    }

    pub fn opt_str(&self, name: &str) -> Decoded<Option<&'a str>> {
        self.opt(name, Self::str)
    }

    /// An optional string field, owned.
    pub fn opt_string(&self, name: &str) -> Decoded<Option<String>> {
        Ok(self.opt_str(name)?.map(str::to_string))
    }

    pub fn string(&self, name: &str) -> Decoded<String> {
        self.str(name).map(str::to_string)
    }

    /// An integer in `[min, max]`. Floats, strings, booleans and integers
    /// out of range are refused.
    pub fn int(&self, name: &str, min: i64, max: i64) -> Decoded<i64> {
        let v = self.require(name)?;
        int_value(v, min, max).map_err(|why| DecodeError(format!("{} {why}", self.path(name))))
    }

    pub fn opt_int(&self, name: &str, min: i64, max: i64) -> Decoded<Option<i64>> {
        self.opt(name, |f, name| f.int(name, min, max))
    }

    /// An integer in `[min, max]` as the type the request holds it in; a
    /// value that does not fit `T` is refused like one out of range.
    pub fn int_as<T: TryFrom<i64>>(&self, name: &str, min: i64, max: i64) -> Decoded<T> {
        let v = self.require(name)?;
        typed_int(v, min, max).map_err(|why| DecodeError(format!("{} {why}", self.path(name))))
    }

    pub fn opt_int_as<T: TryFrom<i64>>(
        &self,
        name: &str,
        min: i64,
        max: i64,
    ) -> Decoded<Option<T>> {
        self.opt(name, |f, name| f.int_as(name, min, max))
    }

    pub fn u32(&self, name: &str) -> Decoded<u32> {
        self.int_as(name, 0, i64::from(u32::MAX))
    }

    pub fn opt_u32(&self, name: &str) -> Decoded<Option<u32>> {
        self.opt_int_as(name, 0, i64::from(u32::MAX))
    }

    pub fn i32(&self, name: &str) -> Decoded<i32> {
        self.int_as(name, i64::from(i32::MIN), i64::from(i32::MAX))
    }

    pub fn i64(&self, name: &str) -> Decoded<i64> {
        self.int(name, i64::MIN, i64::MAX)
    }

    pub fn opt_i64(&self, name: &str) -> Decoded<Option<i64>> {
        self.opt_int(name, i64::MIN, i64::MAX)
    }

    pub fn bool(&self, name: &str) -> Decoded<bool> {
        self.typed(name, "a boolean", Value::as_bool)
    }

    pub fn array(&self, name: &str) -> Decoded<&'a Vec<Value>> {
        self.typed(name, "an array", Value::as_array)
    }

    pub fn opt_array(&self, name: &str) -> Decoded<Option<&'a Vec<Value>>> {
        self.opt(name, Self::array)
    }

    pub fn object(&self, name: &str) -> Decoded<&'a Map<String, Value>> {
        self.typed(name, "an object", Value::as_object)
    }

    /// Optional base64 bytes: absent or `null` is `None`, `""` is empty.
    pub fn opt_b64(&self, name: &str) -> Decoded<Option<Bytes>> {
        self.opt(name, |f, name| {
            decode_b64(f.str(name)?).map_err(|why| DecodeError(format!("{} {why}", f.path(name))))
        })
    }

    /// An array of strings.
    pub fn strings(&self, name: &str) -> Decoded<Vec<String>> {
        let items = self.array(name)?;
        items
            .iter()
            .enumerate()
            .map(|(i, v)| {
                v.as_str().map(str::to_string).ok_or_else(|| {
                    DecodeError(format!(
                        "{}[{i}] must be a string, got {}",
                        self.path(name),
                        type_name(v)
                    ))
                })
            })
            .collect()
    }
}

/// Checks that `v` is a JSON integer in `[min, max]`; the error completes
/// the sentence "field X ...".
/// [`int_value`] converted to `T`: `[min, max]` should lie within `T`, and a
/// value that still does not fit (a usize on a 32-bit target) is refused.
pub(crate) fn typed_int<T: TryFrom<i64>>(v: &Value, min: i64, max: i64) -> Result<T, String> {
    let i = int_value(v, min, max)?;
    T::try_from(i).map_err(|_| format!("does not fit this platform, got {i}"))
}

pub(crate) fn int_value(v: &Value, min: i64, max: i64) -> Result<i64, String> {
    let Value::Number(n) = v else {
        return Err(format!("must be an integer, got {}", type_name(v)));
    };
    if let Some(i) = n.as_i64() {
        if i < min || i > max {
            return Err(format!("must be between {min} and {max}, got {i}"));
        }
        return Ok(i);
    }
    if n.is_u64() {
        return Err(format!("must be between {min} and {max}, got {n}"));
    }
    // serde_json reads integers beyond 64 bits as floats; say "out of range"
    // for those instead of "not an integer".
    match n.as_f64() {
        Some(f) if f.fract() == 0.0 && f.abs() >= 9.2e18 => {
            Err(format!("must be between {min} and {max}, got {n}"))
        }
        _ => Err(format!("must be an integer, got {n}")),
    }
}

/// Strict standard base64: padding required, no whitespace.
pub(crate) fn decode_b64(s: &str) -> Result<Bytes, String> {
    STANDARD
        .decode(s)
        .map(Bytes::from)
        .map_err(|e| format!("is not valid base64 (standard alphabet, padded): {e}"))
}

/// Writes one JSON object field by field, in call order.
pub(crate) struct ObjWriter<'a> {
    out: &'a mut Vec<u8>,
    first: bool,
}

impl<'a> ObjWriter<'a> {
    pub fn new(out: &'a mut Vec<u8>) -> Self {
        out.push(b'{');
        Self { out, first: true }
    }

    /// A success object: `{"ok":true`.
    pub fn ok(out: &'a mut Vec<u8>) -> Self {
        let mut w = Self::new(out);
        w.raw("ok", b"true");
        w
    }

    fn key(&mut self, name: &str) {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        self.out.push(b'"');
        // Field names are static ASCII identifiers; they need no escaping.
        self.out.extend_from_slice(name.as_bytes());
        self.out.extend_from_slice(b"\":");
    }

    pub fn raw(&mut self, name: &str, json: &[u8]) -> &mut Self {
        self.key(name);
        self.out.extend_from_slice(json);
        self
    }

    pub fn int(&mut self, name: &str, n: i64) -> &mut Self {
        self.key(name);
        push_int(self.out, n);
        self
    }

    pub fn opt_int(&mut self, name: &str, n: Option<i64>) -> &mut Self {
        match n {
            Some(n) => self.int(name, n),
            None => self.raw(name, b"null"),
        }
    }

    pub fn bool(&mut self, name: &str, b: bool) -> &mut Self {
        self.raw(name, if b { b"true" } else { b"false" })
    }

    /// The string when there is one; nothing at all otherwise (an
    /// optional request field left out).
    pub fn str_if_some(&mut self, name: &str, s: Option<&str>) -> &mut Self {
        if let Some(s) = s {
            self.str(name, s);
        }
        self
    }

    pub fn str(&mut self, name: &str, s: &str) -> &mut Self {
        self.key(name);
        push_str(self.out, s);
        self
    }

    pub fn b64(&mut self, name: &str, b: Option<&[u8]>) -> &mut Self {
        self.key(name);
        push_b64(self.out, b);
        self
    }

    pub fn value(&mut self, name: &str, v: &Value) -> &mut Self {
        self.key(name);
        push_value(self.out, v);
        self
    }

    /// A nested value written by `f` (an object or an array).
    pub fn with(&mut self, name: &str, f: impl FnOnce(&mut Vec<u8>)) -> &mut Self {
        self.key(name);
        f(self.out);
        self
    }

    pub fn end(&mut self) {
        self.out.push(b'}');
    }
}

/// Writes `[item, item, ...]` with `f` writing each item.
pub(crate) fn push_array<T>(
    out: &mut Vec<u8>,
    items: impl IntoIterator<Item = T>,
    mut f: impl FnMut(&mut Vec<u8>, T),
) {
    out.push(b'[');
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        f(out, item);
    }
    out.push(b']');
}

pub(crate) fn push_int(out: &mut Vec<u8>, n: i64) {
    // Formatting straight into the buffer avoids a String per integer;
    // writing into a Vec cannot fail.
    let _ = std::io::Write::write_fmt(out, format_args!("{n}"));
}

pub(crate) fn push_str(out: &mut Vec<u8>, s: &str) {
    // Serializing a &str into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

pub(crate) fn push_value(out: &mut Vec<u8>, v: &Value) {
    let _ = serde_json::to_writer(&mut *out, v);
}

pub(crate) fn push_b64(out: &mut Vec<u8>, b: Option<&[u8]>) {
    match b {
        None => out.extend_from_slice(b"null"),
        Some(b) => {
            out.push(b'"');
            // Encoding straight into the output (SIMD) avoids a temporary
            // String; the base64 alphabet needs no JSON escaping.
            base64_simd::STANDARD.encode_append(b, out);
            out.push(b'"');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn integers_are_strict() {
        assert_eq!(int_value(&json!(5), 0, 10), Ok(5));
        assert!(
            int_value(&json!(5.0), 0, 10)
                .unwrap_err()
                .contains("integer")
        );
        assert!(
            int_value(&json!("5"), 0, 10)
                .unwrap_err()
                .contains("a string")
        );
        assert!(
            int_value(&json!(true), 0, 10)
                .unwrap_err()
                .contains("boolean")
        );
        assert!(
            int_value(&json!(-1), 0, 10)
                .unwrap_err()
                .contains("between")
        );
        assert!(
            int_value(&json!(u64::MAX), 0, 10)
                .unwrap_err()
                .contains("between")
        );
        let huge: Value = serde_json::from_str("1180591620717411303424").unwrap();
        assert!(int_value(&huge, 0, 10).unwrap_err().contains("between"));
    }

    #[test]
    fn duplicate_keys_are_refused_at_every_depth_and_values_parse_as_serde_json_does() {
        for line in [
            r#"{"operation":"list_topics","operation":"produce"}"#,
            r#"{"a":{"b":1,"b":2}}"#,
            r#"{"records":[{"value_b64":"aGk=","value_b64":"aGk="}]}"#,
        ] {
            let e = parse_strict(line.as_bytes()).unwrap_err();
            assert!(e.to_string().contains("duplicate key"), "{line}: {e}");
        }
        for line in [
            r#"{"a":[1,-2,3.5,"x",null,true,{"b":{}}],"c":1180591620717411303424}"#,
            r#"[]"#,
            r#""s""#,
        ] {
            let ours = parse_strict(line.as_bytes()).unwrap();
            let theirs: Value = serde_json::from_str(line).unwrap();
            assert_eq!(ours, theirs, "{line}");
        }
        assert!(parse_strict(b"{} x").is_err(), "trailing characters");
    }

    #[test]
    fn base64_is_strict_standard_with_padding() {
        assert_eq!(
            decode_b64("aGVsbG8=").unwrap(),
            Bytes::from_static(b"hello")
        );
        assert_eq!(decode_b64("").unwrap(), Bytes::new());
        assert!(decode_b64("aGVsbG8").is_err(), "missing padding");
        assert!(decode_b64("aGVs bG8=").is_err(), "whitespace");
        assert!(decode_b64("aGVsbG8=\n").is_err(), "trailing newline");
        assert!(decode_b64("_-8=").is_err(), "url-safe alphabet");
    }

    proptest::proptest! {
        #[test]
        fn b64_output_is_the_standard_encoding(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200)) {
            let mut out = Vec::new();
            push_b64(&mut out, Some(&bytes));
            let expected = format!("\"{}\"", STANDARD.encode(&bytes));
            proptest::prop_assert_eq!(String::from_utf8(out).unwrap(), expected);
        }
    }

    #[test]
    fn writer_keeps_call_order() {
        let mut out = Vec::new();
        let mut w = ObjWriter::ok(&mut out);
        w.str("z", "a\"b")
            .int("a", -3)
            .b64("k", Some(b"hi"))
            .b64("n", None);
        w.end();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"ok":true,"z":"a\"b","a":-3,"k":"aGk=","n":null}"#
        );
    }
}
