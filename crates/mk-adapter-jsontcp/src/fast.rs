//! A fast path for the hottest requests, `produce` with one record or a
//! batch: the line is deserialized straight into borrowed typed fields (no
//! `serde_json::Value` tree) and every base64 payload is decoded into one
//! shared buffer, so a 100-record request costs a handful of allocations
//! instead of several per record, and a one-record request a few instead
//! of a tree of maps.
//!
//! It never decides anything on its own: it only accepts requests whose
//! every field is plainly well formed, and answers `None` for anything else
//! (an unknown or duplicate field, a `null` where the strict decoder has an
//! opinion, bad base64, idempotence fields, ...), so those go through the
//! strict decoder in `protocol`, which produces the same result or the
//! precise INVALID_REQUEST message.

use crate::protocol::{DecodedLine, ProduceRecords, ProduceSpec, Request};
use mk_cluster::{AckMode, Bytes, Header, ProduceEntry};
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use std::borrow::Cow;
use std::str::FromStr;

/// Deserializes a field that must not be `null` when present; absence is
/// `None` through `#[serde(default)]`.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Acks<'a> {
    Text(#[serde(borrow)] Cow<'a, str>),
    Number(i64),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Produce<'a> {
    #[serde(borrow)]
    operation: Cow<'a, str>,
    #[serde(borrow)]
    topic: Cow<'a, str>,
    #[serde(default, deserialize_with = "present")]
    partition: Option<u32>,
    #[serde(default, deserialize_with = "present", borrow)]
    acks: Option<Acks<'a>>,
    #[serde(default, deserialize_with = "present", borrow)]
    records: Option<Vec<Entry<'a>>>,
    /// One record's key and value, the form without `records`.
    #[serde(default, borrow)]
    key_b64: Option<&'a [u8]>,
    #[serde(default, borrow)]
    value_b64: Option<&'a [u8]>,
    #[serde(default, deserialize_with = "present")]
    id: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry<'a> {
    #[serde(default, borrow)]
    key_b64: Option<&'a [u8]>,
    #[serde(default, borrow)]
    value_b64: Option<&'a [u8]>,
    #[serde(default, deserialize_with = "present", borrow)]
    headers: Option<Vec<HeaderItem<'a>>>,
    #[serde(default, deserialize_with = "present")]
    timestamp_ms: Option<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HeaderItem<'a> {
    #[serde(borrow)]
    key: Cow<'a, str>,
    #[serde(default, borrow)]
    value_b64: Option<&'a [u8]>,
}

/// Cheap test for "this line may be a produce" before trying.
pub(crate) fn looks_like_produce(line: &[u8]) -> bool {
    memchr::memmem::find(line, b"\"produce\"").is_some()
}

/// Decodes a plainly well-formed produce (one record or a batch), or
/// `None`.
pub(crate) fn decode_produce(line: &[u8]) -> Option<DecodedLine> {
    if !looks_like_produce(line) {
        return None;
    }
    let p: Produce<'_> = serde_json::from_slice(line).ok()?;
    if p.operation != "produce" {
        return None;
    }
    let acks = match &p.acks {
        None => AckMode::One,
        Some(Acks::Text(s)) => AckMode::from_str(s).ok()?,
        Some(Acks::Number(n)) => AckMode::try_from(*n).ok()?,
    };
    let records = match (p.records, &p.key_b64, &p.value_b64) {
        (Some(entries), None, None) => ProduceRecords::Batch(entries_of(entries, line.len())?),
        // Both forms at once: the strict decoder names the error.
        (Some(_), _, _) => return None,
        (None, key, value) => {
            let one = |s: &Option<&[u8]>| -> Option<Option<Bytes>> {
                match s {
                    None => Some(None),
                    Some(s) => {
                        let mut v = Vec::new();
                        unbase64(s, &mut v)?;
                        Some(Some(Bytes::from(v)))
                    }
                }
            };
            ProduceRecords::Single {
                key: one(key)?,
                value: one(value)?,
            }
        }
    };
    Some(DecodedLine {
        id: p.id,
        request: Ok(Request::Produce(ProduceSpec {
            topic: p.topic.into_owned(),
            partition: p.partition,
            acks,
            producer: None,
            records,
        })),
    })
}

/// Appends the bytes of standard padded base64 `text` to `buf` with a SIMD
/// decoder, or `None` (then `buf` may hold part of them: the caller gives
/// up the fast path). It accepts exactly what the strict decoder's
/// `base64` engine accepts (`tests::simd_base64_accepts_what_the_strict_engine_accepts`).
fn unbase64(text: &[u8], buf: &mut Vec<u8>) -> Option<()> {
    base64_simd::STANDARD.decode_append(text, buf).ok()
}

/// The records of a batched produce, every payload a slice of one buffer.
fn entries_of(entries: Vec<Entry<'_>>, line_len: usize) -> Option<Vec<ProduceEntry>> {
    // One buffer for every payload: each key, value and header value is a
    // slice of it.
    let mut buf: Vec<u8> = Vec::with_capacity(line_len * 3 / 4);
    let mut spans: Vec<Option<(usize, usize)>> = Vec::with_capacity(entries.len() * 2);
    let decode = |s: &Option<&[u8]>, buf: &mut Vec<u8>| -> Option<Option<(usize, usize)>> {
        match s {
            None => Some(None),
            Some(s) => {
                let start = buf.len();
                unbase64(s, buf)?;
                Some(Some((start, buf.len())))
            }
        }
    };
    let mut header_spans = Vec::new();
    for r in &entries {
        spans.push(decode(&r.key_b64, &mut buf)?);
        spans.push(decode(&r.value_b64, &mut buf)?);
        for h in r.headers.iter().flatten() {
            header_spans.push(decode(&h.value_b64, &mut buf)?);
        }
    }
    let buf = Bytes::from(buf);
    let slice = |span: Option<(usize, usize)>| span.map(|(a, b)| buf.slice(a..b));
    let mut spans = spans.into_iter();
    let mut header_spans = header_spans.into_iter();
    let records = entries
        .into_iter()
        .map(|r| {
            let key = slice(spans.next().flatten());
            let value = slice(spans.next().flatten());
            let headers = r
                .headers
                .unwrap_or_default()
                .into_iter()
                .map(|h| Header::new(h.key.into_owned(), slice(header_spans.next().flatten())))
                .collect();
            ProduceEntry {
                key,
                value,
                headers,
                timestamp_ms: r.timestamp_ms,
            }
        })
        .collect();
    Some(records)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::decode_strict;
    use base64::Engine;
    use proptest::prelude::*;

    fn pad(extra: &str) -> String {
        // Long enough to pass the cheap pre-check.
        let rec = r#"{"value_b64":"aGVsbG8="}"#;
        let records = [rec; 12].join(",");
        format!(
            r#"{{"operation":"produce","topic":"t","records":[{records},{{"key_b64":null,"value_b64":"","headers":[{{"key":"h","value_b64":"eA=="}},{{"key":"n"}}],"timestamp_ms":7}}]{extra}}}"#
        )
    }

    /// The fast path must take `line` and decode it exactly as the strict
    /// decoder alone does (which never consults the fast path).
    fn assert_fast_equals_strict(line: &str) -> Result<(), TestCaseError> {
        let fast = decode_produce(line.as_bytes());
        prop_assert!(
            fast.is_some(),
            "the fast path refused a plain request: {line}"
        );
        let fast = fast.expect("checked above");
        let strict = decode_strict(line.as_bytes());
        prop_assert!(strict.request.is_ok(), "{line}: {:?}", strict.request);
        prop_assert_eq!(fast.id, strict.id, "{}", line);
        prop_assert_eq!(fast.request, strict.request, "{}", line);
        Ok(())
    }

    /// Text that is base64 of `bytes`, possibly damaged: a character
    /// replaced (often by padding or a letter whose unused bits are not
    /// zero), padding dropped or added, or a cut.
    fn maybe_base64() -> impl Strategy<Value = Vec<u8>> {
        let alphabet: Vec<u8> =
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_ \n".to_vec();
        (
            prop::collection::vec(any::<u8>(), 0..80),
            0usize..5,
            any::<prop::sample::Index>(),
            prop::sample::select(alphabet),
        )
            .prop_map(|(bytes, damage, at, c)| {
                let mut text = base64::engine::general_purpose::STANDARD
                    .encode(&bytes)
                    .into_bytes();
                let i = if text.is_empty() {
                    0
                } else {
                    at.index(text.len())
                };
                match damage {
                    0 => {}
                    1 if !text.is_empty() => text[i] = c,
                    2 => text.retain(|b| *b != b'='),
                    3 => text.push(b'='),
                    _ => text.truncate(i),
                }
                text
            })
    }

    proptest! {
        #[test]
        fn simd_base64_accepts_what_the_strict_engine_accepts(text in maybe_base64()) {
            let strict = base64::engine::general_purpose::STANDARD.decode(&text).ok();
            let mut fast = Vec::new();
            let fast = unbase64(&text, &mut fast).map(|()| fast);
            prop_assert_eq!(fast, strict, "{:?}", String::from_utf8_lossy(&text));
        }
    }

    #[test]
    fn fast_and_strict_decoders_agree_on_plain_batched_produces() {
        for extra in [
            "",
            r#","partition":2"#,
            r#","acks":"all""#,
            r#","acks":-1"#,
            r#","acks":0,"id":null"#,
            r#","id":{"x":[1,2]}"#,
        ] {
            assert_fast_equals_strict(&pad(extra)).unwrap();
        }
    }

    /// A JSON string literal, escaped the way serde_json writes it.
    fn lit(s: &str) -> String {
        serde_json::to_string(s).expect("a string always serializes")
    }

    /// An optional base64 member: absent, `null`, or a padded string.
    fn b64_member(name: &'static str) -> impl Strategy<Value = Option<String>> {
        prop_oneof![
            Just(None),
            Just(Some(format!("\"{name}\":null"))),
            prop::collection::vec(any::<u8>(), 0..48).prop_map(move |b| {
                let text = base64::engine::general_purpose::STANDARD.encode(b);
                Some(format!("\"{name}\":{}", lit(&text)))
            }),
        ]
    }

    /// An object from optional members, in the shuffled order given.
    fn object(members: Vec<Option<String>>, spaced: bool) -> String {
        let sep = if spaced { ", " } else { "," };
        let members: Vec<String> = members.into_iter().flatten().collect();
        format!("{{{}}}", members.join(sep))
    }

    /// Header keys with characters that need escaping or are not ASCII.
    const KEY: &str = "[a-zA-Z0-9 é☃\"\\\\/]{0,8}";

    fn header() -> impl Strategy<Value = String> {
        (KEY, b64_member("value_b64"))
            .prop_map(|(key, value)| vec![Some(format!("\"key\":{}", lit(&key))), value])
            .prop_shuffle()
            .prop_map(|members| object(members, false))
    }

    fn record() -> impl Strategy<Value = String> {
        let headers = prop::option::of(prop::collection::vec(header(), 0..3))
            .prop_map(|h| h.map(|h| format!("\"headers\":[{}]", h.join(","))));
        let timestamp =
            prop::option::of(any::<i64>()).prop_map(|t| t.map(|t| format!("\"timestamp_ms\":{t}")));
        (
            b64_member("key_b64"),
            b64_member("value_b64"),
            headers,
            timestamp,
            any::<bool>(),
        )
            .prop_flat_map(|(k, v, h, t, spaced)| {
                Just(vec![k, v, h, t])
                    .prop_shuffle()
                    .prop_map(move |members| object(members, spaced))
            })
    }

    /// Every form of `acks` both decoders accept.
    fn acks() -> impl Strategy<Value = Option<String>> {
        prop::option::of(prop::sample::select(vec![
            r#""0""#, r#""1""#, r#""all""#, r#""-1""#, "0", "1", "-1",
        ]))
        .prop_map(|a| a.map(|a| format!("\"acks\":{a}")))
    }

    fn id() -> impl Strategy<Value = Option<String>> {
        prop::option::of(prop_oneof![
            Just("null".to_string()),
            any::<i64>().prop_map(|n| n.to_string()),
            "[a-z\"é]{0,6}".prop_map(|s| lit(&s)),
            Just(r#"{"nested":[1,{"a":null}],"b":true}"#.to_string()),
        ])
        .prop_map(|id| id.map(|id| format!("\"id\":{id}")))
    }

    /// A plainly well-formed batched produce: every field of the fast
    /// path's grammar, each present or absent, in any order.
    fn batched_produce() -> impl Strategy<Value = String> {
        (
            "[a-zA-Z0-9._-]{1,30}",
            prop::option::of(any::<u32>()),
            acks(),
            prop::collection::vec(record(), 1..12),
            id(),
        )
            .prop_flat_map(|(topic, partition, acks, mut records, id)| {
                // The pre-check skips short lines; a long value keeps every
                // generated request above it.
                records.push(format!(r#"{{"value_b64":"{}"}}"#, "QUJD".repeat(70)));
                let members = vec![
                    Some(r#""operation":"produce""#.to_string()),
                    Some(format!("\"topic\":{}", lit(&topic))),
                    partition.map(|p| format!("\"partition\":{p}")),
                    acks,
                    Some(format!("\"records\":[{}]", records.join(","))),
                    id,
                ];
                Just(members)
                    .prop_shuffle()
                    .prop_map(|members| object(members, false))
            })
    }

    /// A plainly well-formed one-record produce (no `records`): key and
    /// value each absent, `null` or base64, every member in any order.
    fn single_produce() -> impl Strategy<Value = String> {
        (
            "[a-zA-Z0-9._-]{1,30}",
            prop::option::of(any::<u32>()),
            acks(),
            b64_member("key_b64"),
            b64_member("value_b64"),
            id(),
            any::<bool>(),
        )
            .prop_flat_map(|(topic, partition, acks, key, value, id, spaced)| {
                let members = vec![
                    Some(r#""operation":"produce""#.to_string()),
                    Some(format!("\"topic\":{}", lit(&topic))),
                    partition.map(|p| format!("\"partition\":{p}")),
                    acks,
                    key,
                    value,
                    id,
                ];
                Just(members)
                    .prop_shuffle()
                    .prop_map(move |members| object(members, spaced))
            })
    }

    /// One change that may or may not leave the request plain.
    fn perturbation() -> impl Strategy<Value = (&'static str, &'static str)> {
        prop::sample::select(vec![
            (r#""records":["#, r#""partition":null,"records":["#),
            (r#""records":["#, r#""partition":-1,"records":["#),
            (r#""records":["#, r#""partition":1.5,"records":["#),
            (r#""records":["#, r#""acks":"2","records":["#),
            (r#""records":["#, r#""acks":null,"records":["#),
            (r#""records":["#, r#""acks":true,"records":["#),
            (r#""records":["#, r#""unknown":1,"records":["#),
            (r#""records":["#, r#""topic":"dup","records":["#),
            (r#""records":["#, r#""key_b64":"aGk=","records":["#),
            (
                r#""records":["#,
                r#""producer_id":1,"producer_epoch":0,"base_sequence":0,"records":["#,
            ),
            (r#""records":[{"#, r#""records":[{"timestamp_ms":null,"#),
            (r#""records":[{"#, r#""records":[{"timestamp_ms":"7","#),
            (r#""records":[{"#, r#""records":[{"headers":null,"#),
            (
                r#""records":[{"#,
                r#""records":[{"headers":[{"key":"k","extra":1}],"#,
            ),
            (r#""records":[{"#, r#""records":[{"key_b64":5,"#),
            (r#""records":[{"#, r#""records":[{"oops":5,"#),
            (r#""QUJD"#, r#""QUJ"#),
            (r#""produce""#, r#""fetch""#),
            (r#""produce""#, r#""Produce""#),
            // These keep the request plain: the fast path must take them.
            (r#""records":["#, r#""records" : [ "#),
            (r#"}]"#, r#"} ]"#),
            (r#""operation""#, r#" "operation""#),
        ])
    }

    proptest! {
        #[test]
        fn fast_path_decodes_generated_batched_produces_like_the_strict_decoder(
            line in batched_produce()
        ) {
            assert_fast_equals_strict(&line)?;
        }

        #[test]
        fn fast_path_decodes_generated_single_record_produces_like_the_strict_decoder(
            line in single_produce()
        ) {
            assert_fast_equals_strict(&line)?;
        }

        #[test]
        fn fast_path_takes_an_unusual_single_record_produce_only_if_it_decodes_the_same(
            line in single_produce(),
            extra in prop::sample::select(vec![
                r#","records":[]"#,
                r#","records":null"#,
                r#","key_b64":"aGk=""#,
                r#","value_b64":5"#,
                r#","partition":-1"#,
                r#","producer_id":1,"producer_epoch":0,"base_sequence":0"#,
                r#","unknown":1"#,
                r#" "#,
            ]),
        ) {
            let line = format!("{}{extra}}}", &line[..line.len() - 1]);
            agrees_with_strict(&line)?;
        }

        #[test]
        fn fast_path_takes_an_unusual_request_only_if_it_decodes_the_same(
            line in batched_produce(),
            (from, to) in perturbation(),
        ) {
            let line = line.replacen(from, to, 1);
            agrees_with_strict(&line)?;
        }
    }

    /// If the fast path takes `line`, the strict decoder takes it too, to
    /// the same id and request.
    fn agrees_with_strict(line: &str) -> Result<(), TestCaseError> {
        if let Some(fast) = decode_produce(line.as_bytes()) {
            let strict = decode_strict(line.as_bytes());
            prop_assert!(strict.request.is_ok(), "{}: {:?}", line, strict.request);
            prop_assert_eq!(fast.id, strict.id, "{}", line);
            prop_assert_eq!(fast.request, strict.request, "{}", line);
        }
        Ok(())
    }

    #[test]
    fn anything_unusual_is_left_to_the_strict_decoder() {
        for extra in [
            r#","partition":null"#,
            r#","partition":-1"#,
            r#","partition":1.5"#,
            r#","acks":"2""#,
            r#","acks":null"#,
            r#","producer_id":1,"producer_epoch":0,"base_sequence":0"#,
            r#","unknown":1"#,
            r#","topic":"dup""#,
            r#","key_b64":"aGk=""#,
        ] {
            let line = pad(extra);
            assert!(
                decode_produce(line.as_bytes()).is_none(),
                "fast path took {extra}"
            );
        }
        let bad_b64 = pad("").replace("aGVsbG8=", "aGVsbG8");
        assert!(decode_produce(bad_b64.as_bytes()).is_none());
        assert!(
            decode_strict(bad_b64.as_bytes()).request.is_err(),
            "the strict decoder names the error"
        );
        let not_produce = pad("").replace("\"produce\"", "\"fetch\"");
        assert!(decode_produce(not_produce.as_bytes()).is_none());
    }
}
