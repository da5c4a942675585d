//! Bytes in and out of the terminal, binary-safe: the encodings of keys and
//! values (`--encoding text|base64|hex`), kcat-like `--format` strings for
//! consumed records, the tombstone marker (`--null-value`), and the parser
//! of produce input lines, which reports a bad line by its number.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use mk_cluster::{Bytes, ConsumerRecord, TopicPartition};
use serde_json::json;
use std::io::Write;

/// How keys, values and header values appear as text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Encoding {
    /// The raw bytes (no UTF-8 requirement; `--json` replaces invalid
    /// UTF-8, so use base64 there for exact bytes).
    Text,
    /// Standard base64 with padding.
    Base64,
    /// Lowercase hexadecimal.
    Hex,
}

impl Encoding {
    pub fn encode(self, b: &[u8]) -> Vec<u8> {
        match self {
            Encoding::Text => b.to_vec(),
            Encoding::Base64 => STANDARD.encode(b).into_bytes(),
            Encoding::Hex => hex::encode(b).into_bytes(),
        }
    }

    /// The bytes as a JSON string (lossy for invalid UTF-8 in text).
    fn encode_string(self, b: &[u8]) -> String {
        match self {
            Encoding::Text => String::from_utf8_lossy(b).into_owned(),
            Encoding::Base64 => STANDARD.encode(b),
            Encoding::Hex => hex::encode(b),
        }
    }

    pub fn decode(self, text: &[u8]) -> Result<Bytes, String> {
        match self {
            Encoding::Text => Ok(Bytes::copy_from_slice(text)),
            Encoding::Base64 => STANDARD
                .decode(text)
                .map(Bytes::from)
                .map_err(|e| format!("not valid base64: {e}")),
            Encoding::Hex => hex::decode(text)
                .map(Bytes::from)
                .map_err(|e| format!("not valid hex: {e}")),
        }
    }
}

/// One piece of a `--format` string.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Literal(Vec<u8>),
    Topic,
    Partition,
    Offset,
    Key,
    KeyLength,
    Value,
    ValueLength,
    Timestamp,
    Headers,
}

/// A parsed `--format` string, kcat's tokens: `%t` topic, `%p` partition,
/// `%o` offset, `%k` key, `%K` key length, `%s` value, `%S` value length,
/// `%T` timestamp (ms), `%h` headers (`k=v,k=v`), `%%`, and the escapes
/// `\n`, `\t`, `\r`, `\\`. Like kcat, nothing is added at the end: a
/// format prints a newline only if it has `\n`. A null key or value
/// prints the null marker and its length is -1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Format(Vec<Piece>);

impl std::str::FromStr for Format {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let mut pieces = Vec::new();
        let mut literal = Vec::new();
        let mut chars = s.chars();
        while let Some(c) = chars.next() {
            let token = match c {
                '%' => match chars.next() {
                    Some('t') => Piece::Topic,
                    Some('p') => Piece::Partition,
                    Some('o') => Piece::Offset,
                    Some('k') => Piece::Key,
                    Some('K') => Piece::KeyLength,
                    Some('s') => Piece::Value,
                    Some('S') => Piece::ValueLength,
                    Some('T') => Piece::Timestamp,
                    Some('h') => Piece::Headers,
                    Some('%') => {
                        literal.push(b'%');
                        continue;
                    }
                    other => {
                        return Err(format!(
                            "unknown token %{} in --format; known: %t %p %o %k %K %s %S %T %h %%",
                            other.map_or(String::new(), String::from)
                        ));
                    }
                },
                '\\' => {
                    let escaped = match chars.next() {
                        Some('n') => b'\n',
                        Some('t') => b'\t',
                        Some('r') => b'\r',
                        Some('\\') => b'\\',
                        other => {
                            return Err(format!(
                                "unknown escape \\{} in --format; known: \\n \\t \\r \\\\",
                                other.map_or(String::new(), String::from)
                            ));
                        }
                    };
                    literal.push(escaped);
                    continue;
                }
                c => {
                    let mut buf = [0u8; 4];
                    literal.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                    continue;
                }
            };
            if !literal.is_empty() {
                pieces.push(Piece::Literal(std::mem::take(&mut literal)));
            }
            pieces.push(token);
        }
        if !literal.is_empty() {
            pieces.push(Piece::Literal(literal));
        }
        Ok(Format(pieces))
    }
}

/// How consumed records are written to stdout.
#[derive(Debug, Clone)]
pub struct Output {
    pub format: Option<Format>,
    pub encoding: Encoding,
    /// What a null key or value prints as; `None` keeps each layout's own
    /// default (the default layout says `tombstone`, a `--format` prints
    /// nothing, JSON has `null`).
    pub null_value: Option<String>,
    pub json: bool,
}

impl Output {
    /// Appends one record's output to `out`.
    pub fn render(&self, tp: &TopicPartition, r: &ConsumerRecord, out: &mut Vec<u8>) {
        if self.json {
            self.render_json(tp, r, out);
        } else if let Some(f) = &self.format {
            self.render_format(f, tp, r, out);
        } else {
            self.render_default(tp, r, out);
        }
    }

    fn bytes(&self, b: Option<&Bytes>, out: &mut Vec<u8>) {
        match b {
            Some(b) => out.extend_from_slice(&self.encoding.encode(b)),
            None => out.extend_from_slice(self.null_value.as_deref().unwrap_or("").as_bytes()),
        }
    }

    /// `topic-p@offset [key=K] value=V`, or `tombstone` instead of the
    /// value for a null value (so it cannot be mistaken for the string
    /// "null"), unless `--null-value` names a marker.
    fn render_default(&self, tp: &TopicPartition, r: &ConsumerRecord, out: &mut Vec<u8>) {
        let _ = write!(out, "{tp}@{}", r.offset);
        if let Some(k) = &r.key {
            out.extend_from_slice(b" key=");
            self.bytes(Some(k), out);
        }
        match (&r.value, &self.null_value) {
            (None, None) => out.extend_from_slice(b" tombstone"),
            (v, _) => {
                out.extend_from_slice(b" value=");
                self.bytes(v.as_ref(), out);
            }
        }
        out.push(b'\n');
    }

    fn render_format(
        &self,
        f: &Format,
        tp: &TopicPartition,
        r: &ConsumerRecord,
        out: &mut Vec<u8>,
    ) {
        let len = |b: &Option<Bytes>| b.as_ref().map_or(-1, |b| b.len() as i64);
        for piece in &f.0 {
            match piece {
                Piece::Literal(l) => out.extend_from_slice(l),
                Piece::Topic => out.extend_from_slice(tp.topic.as_bytes()),
                Piece::Partition => {
                    let _ = write!(out, "{}", tp.partition);
                }
                Piece::Offset => {
                    let _ = write!(out, "{}", r.offset);
                }
                Piece::Key => self.bytes(r.key.as_ref(), out),
                Piece::KeyLength => {
                    let _ = write!(out, "{}", len(&r.key));
                }
                Piece::Value => self.bytes(r.value.as_ref(), out),
                Piece::ValueLength => {
                    let _ = write!(out, "{}", len(&r.value));
                }
                Piece::Timestamp => {
                    let _ = write!(out, "{}", r.timestamp_ms);
                }
                Piece::Headers => {
                    for (i, h) in r.headers.iter().enumerate() {
                        if i > 0 {
                            out.push(b',');
                        }
                        out.extend_from_slice(h.key.as_bytes());
                        out.push(b'=');
                        self.bytes(h.value.as_ref(), out);
                    }
                }
            }
        }
    }

    fn render_json(&self, tp: &TopicPartition, r: &ConsumerRecord, out: &mut Vec<u8>) {
        let text = |b: &Option<Bytes>| b.as_ref().map(|b| self.encoding.encode_string(b));
        let headers: Vec<_> = r
            .headers
            .iter()
            .map(|h| json!({"key": h.key, "value": text(&h.value)}))
            .collect();
        let line = json!({
            "topic": tp.topic, "partition": tp.partition, "offset": r.offset,
            "key": text(&r.key), "value": text(&r.value),
            "timestamp_ms": r.timestamp_ms, "headers": headers,
        });
        let _ = writeln!(out, "{line}");
    }
}

/// How produce reads its input lines.
#[derive(Debug, Clone)]
pub struct Input {
    /// `Some(delimiter)`: lines are `key<delimiter>value`.
    pub key_delimiter: Option<Vec<u8>>,
    pub encoding: Encoding,
    /// A key or value equal to this is null (a tombstone for a value).
    pub null_value: Option<Vec<u8>>,
}

/// One parsed input line: key and value.
pub type ParsedLine = (Option<Bytes>, Option<Bytes>);

impl Input {
    /// Parses one line (without its line break). The error says what is
    /// wrong; the caller adds the line number.
    pub fn parse(&self, line: &[u8]) -> Result<ParsedLine, String> {
        let (key, value) = match &self.key_delimiter {
            None => (None, line),
            Some(d) => match find(line, d) {
                Some(at) => (Some(&line[..at]), &line[at + d.len()..]),
                None => {
                    return Err(format!(
                        "expected key{}value (no {:?} in the line)",
                        String::from_utf8_lossy(d),
                        String::from_utf8_lossy(d)
                    ));
                }
            },
        };
        let field = |name: &str, b: &[u8]| -> Result<Option<Bytes>, String> {
            if self.null_value.as_deref() == Some(b) {
                return Ok(None);
            }
            self.encoding
                .decode(b)
                .map(Some)
                .map_err(|e| format!("the {name} is {e}"))
        };
        Ok((
            match key {
                None => None,
                Some(k) => field("key", k)?,
            },
            field("value", value)?,
        ))
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return None;
    }
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// A time for `--from-time` and `--to-datetime`: milliseconds since the
/// epoch, or an RFC 3339 date-time (`2024-05-01T12:00:00Z`; without a zone
/// it is UTC, and a space may stand for the `T`).
pub fn parse_time(s: &str) -> Result<i64, String> {
    if let Ok(ms) = s.parse::<i64>() {
        return Ok(ms);
    }
    let t = humantime::parse_rfc3339_weak(s).map_err(|e| {
        format!("expected milliseconds since the epoch or a date-time like 2024-05-01T12:00:00Z, got {s:?} ({e})")
    })?;
    let ms = t
        .duration_since(std::time::UNIX_EPOCH)
        .map_err(|_| format!("{s:?} is before 1970"))?
        .as_millis();
    i64::try_from(ms).map_err(|_| format!("{s:?} is too far in the future"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use mk_cluster::Header;

    fn record(key: Option<&[u8]>, value: Option<&[u8]>) -> ConsumerRecord {
        ConsumerRecord {
            offset: 7,
            key: key.map(Bytes::copy_from_slice),
            value: value.map(Bytes::copy_from_slice),
            timestamp_ms: 1_000,
            headers: vec![Header::new("h", Some(Bytes::from_static(b"x")))],
        }
    }

    fn render(o: &Output, r: &ConsumerRecord) -> Vec<u8> {
        let mut out = Vec::new();
        o.render(&TopicPartition::new("t", 1), r, &mut out);
        out
    }

    fn output(format: Option<&str>, encoding: Encoding, null: Option<&str>) -> Output {
        Output {
            format: format.map(|f| f.parse().unwrap()),
            encoding,
            null_value: null.map(str::to_string),
            json: false,
        }
    }

    #[test]
    fn formats_are_binary_safe_and_tombstones_are_distinct() {
        let plain = output(None, Encoding::Text, None);
        assert_eq!(
            render(&plain, &record(Some(b"k"), Some(b"null"))),
            b"t-1@7 key=k value=null\n"
        );
        assert_eq!(
            render(&plain, &record(Some(b"k"), None)),
            b"t-1@7 key=k tombstone\n"
        );
        assert_eq!(
            render(&plain, &record(None, Some(b"\xff\x00"))),
            b"t-1@7 value=\xff\x00\n",
            "raw bytes, not U+FFFD"
        );
        let kcat = output(
            Some("%t-%p@%o %k=%s (%K/%S) %T [%h]\\n"),
            Encoding::Hex,
            Some("NULL"),
        );
        assert_eq!(
            render(&kcat, &record(Some(b"k"), None)),
            b"t-1@7 6b=NULL (1/-1) 1000 [h=78]\n"
        );
        let b64 = output(Some("%s"), Encoding::Base64, None);
        assert_eq!(render(&b64, &record(None, Some(b"\xff"))), b"/w==");
        assert!("%x".parse::<Format>().unwrap_err().contains("%x"));
        assert!("\\q".parse::<Format>().is_err());
        assert_eq!(
            "100%%\\t".parse::<Format>().unwrap(),
            Format(vec![Piece::Literal(b"100%\t".to_vec())])
        );
    }

    #[test]
    fn input_lines_decode_keys_values_and_null_markers() {
        let keyed = Input {
            key_delimiter: Some(b"\t".to_vec()),
            encoding: Encoding::Text,
            null_value: Some(b"NULL".to_vec()),
        };
        assert_eq!(
            keyed.parse(b"k\tv\tw").unwrap(),
            (
                Some(Bytes::from_static(b"k")),
                Some(Bytes::from_static(b"v\tw"))
            )
        );
        assert_eq!(
            keyed.parse(b"k\tNULL").unwrap(),
            (Some(Bytes::from_static(b"k")), None)
        );
        assert!(keyed.parse(b"no tab").unwrap_err().contains("no"));
        let unkeyed = |encoding| Input {
            key_delimiter: None,
            encoding,
            null_value: None,
        };
        let hex = unkeyed(Encoding::Hex);
        assert_eq!(
            hex.parse(b"ff00").unwrap().1,
            Some(Bytes::from_static(b"\xff\x00"))
        );
        assert!(hex.parse(b"zz").unwrap_err().contains("hex"));
        let text = unkeyed(Encoding::Text);
        assert_eq!(
            text.parse(b"\xff").unwrap().1,
            Some(Bytes::from_static(b"\xff"))
        );
    }

    #[test]
    fn times_are_milliseconds_or_rfc3339() {
        assert_eq!(parse_time("1700000000000").unwrap(), 1_700_000_000_000);
        assert_eq!(
            parse_time("2023-11-14T22:13:20Z").unwrap(),
            1_700_000_000_000
        );
        assert_eq!(
            parse_time("2023-11-14 22:13:20").unwrap(),
            1_700_000_000_000
        );
        assert!(parse_time("yesterday").is_err());
    }
}
