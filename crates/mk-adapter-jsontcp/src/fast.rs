//! A fast path for the hottest request, a batched `produce`: the line is
//! deserialized straight into borrowed typed fields (no `serde_json::Value`
//! tree) and every base64 payload is decoded into one shared buffer, so a
//! 100-record request costs a handful of allocations instead of several per
//! record.
//!
//! It never decides anything on its own: it only accepts requests whose
//! every field is plainly well formed, and answers `None` for anything else
//! (an unknown or duplicate field, a `null` where the strict decoder has an
//! opinion, bad base64, idempotence fields, ...), so those go through the
//! strict decoder in `protocol`, which produces the same result or the
//! precise INVALID_REQUEST message.

use crate::protocol::{DecodedLine, ProduceRecords, ProduceSpec, Request};
use mk_cluster::{AckMode, Bytes, Header, ProduceEntry, TopicPartition};
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
    #[serde(borrow)]
    records: Vec<Entry<'a>>,
    #[serde(default, deserialize_with = "present")]
    id: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry<'a> {
    #[serde(default, borrow)]
    key_b64: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    value_b64: Option<Cow<'a, str>>,
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
    value_b64: Option<Cow<'a, str>>,
}

/// Cheap test for "this line may be a batched produce" before trying.
fn looks_like_batched_produce(line: &[u8]) -> bool {
    let has = |needle: &[u8]| line.windows(needle.len()).any(|w| w == needle);
    line.len() > 256 && has(b"\"records\"") && has(b"\"produce\"")
}

/// Decodes a plainly well-formed batched produce, or `None`.
pub(crate) fn decode_batched_produce(line: &[u8]) -> Option<DecodedLine> {
    if !looks_like_batched_produce(line) {
        return None;
    }
    let p: Produce<'_> = serde_json::from_slice(line).ok()?;
    if p.operation != "produce" {
        return None;
    }
    let acks = match p.acks {
        None => AckMode::One,
        Some(Acks::Text(s)) => AckMode::from_str(&s).ok()?,
        Some(Acks::Number(n)) => AckMode::try_from(n).ok()?,
    };
    // One buffer for every payload: each key, value and header value is a
    // slice of it.
    let mut buf: Vec<u8> = Vec::with_capacity(line.len() * 3 / 4);
    let mut spans: Vec<Option<(usize, usize)>> = Vec::with_capacity(p.records.len() * 2);
    let decode = |s: &Option<Cow<'_, str>>, buf: &mut Vec<u8>| -> Option<Option<(usize, usize)>> {
        match s {
            None => Some(None),
            Some(s) => {
                let start = buf.len();
                base64::Engine::decode_vec(
                    &base64::engine::general_purpose::STANDARD,
                    s.as_bytes(),
                    buf,
                )
                .ok()?;
                Some(Some((start, buf.len())))
            }
        }
    };
    let mut header_spans = Vec::new();
    for r in &p.records {
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
    let records = p
        .records
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
    Some(DecodedLine {
        id: p.id,
        request: Ok(Request::Produce(ProduceSpec {
            tp: TopicPartition::new(p.topic.into_owned(), p.partition.unwrap_or(0)),
            acks,
            producer: None,
            records: ProduceRecords::Batch(records),
        })),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::decode_request_line;

    fn slow(line: &str) -> DecodedLine {
        decode_request_line(line.as_bytes())
    }

    fn pad(extra: &str) -> String {
        // Long enough to pass the cheap pre-check.
        let rec = r#"{"value_b64":"aGVsbG8="}"#;
        let records = [rec; 12].join(",");
        format!(
            r#"{{"operation":"produce","topic":"t","records":[{records},{{"key_b64":null,"value_b64":"","headers":[{{"key":"h","value_b64":"eA=="}},{{"key":"n"}}],"timestamp_ms":7}}]{extra}}}"#
        )
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
            let line = pad(extra);
            let fast = decode_batched_produce(line.as_bytes())
                .unwrap_or_else(|| panic!("fast path refused {extra}"));
            let strict = slow(&line);
            assert_eq!(fast.id, strict.id, "{extra}");
            assert_eq!(fast.request.unwrap(), strict.request.unwrap(), "{extra}");
        }
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
                decode_batched_produce(line.as_bytes()).is_none(),
                "fast path took {extra}"
            );
        }
        let bad_b64 = pad("").replace("aGVsbG8=", "aGVsbG8");
        assert!(decode_batched_produce(bad_b64.as_bytes()).is_none());
        assert!(
            slow(&bad_b64).request.is_err(),
            "the strict decoder names the error"
        );
        let not_produce = pad("").replace("\"produce\"", "\"fetch\"");
        assert!(decode_batched_produce(not_produce.as_bytes()).is_none());
    }
}
