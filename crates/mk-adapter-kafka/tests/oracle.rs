//! Every schema'd message at every version of its schema, against the
//! `kafka-protocol` crate (generated from Kafka 4.1.0's own schemas): a
//! sample value with every field the version has set (tagged ones too,
//! arrays of two) is encoded by our generated code, decoded and re-encoded
//! by the oracle to the same bytes, and decoded by ours back to the same
//! value; and each message's default encodes as the oracle's default
//! does. This proves the transcribed schemas field by field — names aside,
//! a field with the wrong type, version range, order, tag or default
//! changes the bytes.

#[path = "generated/samples.rs"]
mod samples;

use bytes::{Bytes, BytesMut};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion};
use mk_adapter_kafka::api::{APIS, key};
use mk_adapter_kafka::codec::{Message, Reader, Writer};
use mk_adapter_kafka::messages::{self, SCHEMAS};
use samples::Sample;
use std::fmt::Debug;

fn ours<M: Message>(m: &M, v: i16, flexible: bool) -> Bytes {
    let mut w = Writer::new(flexible);
    m.write(&mut w, v);
    w.into_bytes()
}

fn theirs<T: Encodable>(t: &T, v: i16, what: &str) -> Bytes {
    let mut out = BytesMut::new();
    t.encode(&mut out, v)
        .unwrap_or_else(|e| panic!("{what}: the oracle cannot encode: {e}"));
    out.freeze()
}

/// The sample round trip and the default comparison of one message at
/// one version.
fn check<O, T>(what: &str, v: i16, flexible: bool)
where
    O: Message + Sample + Default + PartialEq + Debug,
    T: Encodable + Decodable + Default + Debug,
{
    for seed in [0, 7] {
        let sample = O::sample(v, seed);
        let bytes = ours(&sample, v, flexible);
        let mut input = bytes.clone();
        let decoded = T::decode(&mut input, v)
            .unwrap_or_else(|e| panic!("{what}: the oracle cannot decode ours: {e}"));
        assert!(
            input.is_empty(),
            "{what}: the oracle left {} bytes",
            input.len()
        );
        // A tagged field under a tag the oracle does not know would survive
        // its round trip as an unknown field: none may be left.
        let debug = format!("{decoded:?}");
        assert!(
            !debug.contains("unknown_tagged_fields: {")
                || debug.matches("unknown_tagged_fields: {}").count()
                    == debug.matches("unknown_tagged_fields: {").count(),
            "{what}: the oracle sees tagged fields it does not know: {debug}"
        );
        assert_eq!(
            theirs(&decoded, v, what),
            bytes,
            "{what}: the oracle re-encodes our bytes differently"
        );
        let mut r = Reader::new(&bytes, flexible);
        let back = O::read(&mut r, v).unwrap_or_else(|e| panic!("{what}: ours: {e}"));
        r.finish(what).unwrap();
        assert_eq!(back, sample, "{what}: ours decodes to another value");
    }
    assert_eq!(
        ours(&O::default(), v, flexible),
        theirs(&T::default(), v, what),
        "{what}: the defaults differ"
    );
}

/// Runs `check` for the request and the response of one API at every
/// version of its schema; returns how many (message, version) pairs.
macro_rules! check_api {
    ($name:ident, $module:ident, $req:ident, $resp:ident, $key:ident, $lo:expr, $hi:expr, $flex:expr) => {{
        let mut n = 0;
        for v in $lo..=$hi {
            let flexible = v >= $flex;
            check::<messages::$module::$req, kafka_protocol::messages::$req>(
                &format!("{} v{v}", stringify!($req)),
                v,
                flexible,
            );
            check::<messages::$module::$resp, kafka_protocol::messages::$resp>(
                &format!("{} v{v}", stringify!($resp)),
                v,
                flexible,
            );
            n += 2;
        }
        n
    }};
}

#[test]
fn every_message_at_every_version_matches_the_oracle() {
    let mut pairs = 0;
    let mut apis = 0;
    macro_rules! one {
        ($($t:tt)*) => {{
            pairs += check_api!($($t)*);
            apis += 1;
        }};
    }
    for_every_api!(one);
    assert_eq!(apis, SCHEMAS.len(), "every schema is checked");
    let expected: i32 = SCHEMAS
        .iter()
        .map(|s| 2 * i32::from(s.max_version - s.min_version + 1))
        .sum();
    assert_eq!(pairs, expected);
}

#[test]
fn the_schema_table_is_kafka_4_1s_stable_versions() {
    use kafka_protocol::messages::ApiKey;
    for s in SCHEMAS {
        let key = ApiKey::try_from(s.key).expect("a Kafka API key");
        let theirs = key.valid_versions();
        assert_eq!(s.min_version, theirs.min, "{}", s.name);
        // Kafka 4.1 lists OffsetCommit v10, OffsetFetch v10 and
        // InitProducerId v6 as unstable (not advertised by default); the
        // oracle's table includes them, our schemas stop at the stable
        // version before.
        let unstable = matches!(s.name, "OffsetCommit" | "OffsetFetch" | "InitProducerId");
        assert_eq!(
            s.max_version + i16::from(unstable),
            theirs.max,
            "{}",
            s.name
        );
    }
}

#[test]
fn request_read_picks_the_decoder_of_the_key_and_refuses_the_rest() {
    use messages::{Request, key};
    let mut apis = 0;
    macro_rules! one {
        ($name:ident, $module:ident, $req:ident, $resp:ident, $key:ident, $lo:expr, $hi:expr, $flex:expr) => {{
            for v in $lo..=$hi {
                let flexible = v >= $flex;
                let sample = <messages::$module::$req as Sample>::sample(v, 3);
                let bytes = ours(&sample, v, flexible);
                let mut r = Reader::new(&bytes, flexible);
                let decoded = Request::read(key::$key, v, &mut r).unwrap();
                assert_eq!(decoded, Request::$name(sample));
                let mut r = Reader::new(&bytes, flexible);
                assert!(Request::read(key::$key, $hi + 1, &mut r).is_err());
            }
            apis += 1;
        }};
    }
    for_every_api!(one);
    assert_eq!(apis, SCHEMAS.len());
    let empty = Bytes::new();
    let mut r = Reader::new(&empty, false);
    assert!(Request::read(9999, 0, &mut r).is_err());
}

/// The numbers and booleans of a `{:#?}` rendering, by field path: the
/// values both implementations print alike.
fn scalar_fields(debug: &str) -> std::collections::BTreeMap<String, String> {
    let mut out = std::collections::BTreeMap::new();
    let mut path: Vec<String> = Vec::new();
    for line in debug.lines() {
        let depth = (line.len() - line.trim_start().len()) / 4;
        path.truncate(depth.saturating_sub(1));
        let Some((name, value)) = line.trim().split_once(": ") else {
            continue;
        };
        let value = value.trim_end_matches(',');
        if value.ends_with('{') || value.ends_with('(') || value.ends_with('[') {
            path.push(name.to_string());
            continue;
        }
        let scalar = value == "true" || value == "false" || value.parse::<f64>().is_ok();
        if scalar {
            let mut key = path.clone();
            key.push(name.trim_start_matches('_').to_string());
            out.insert(key.join("."), value.to_string());
        }
    }
    out
}

/// Every struct's default, ours against the oracle's: the bytes at every
/// version, and every number and boolean field by name (tagged fields are
/// never written at their default, so only this shows theirs).
fn check_default<O, T>(what: &str, lo: i16, hi: i16, flex: i16)
where
    O: Message + Default + Debug,
    T: Encodable + Default + Debug,
{
    for v in lo..=hi {
        assert_eq!(
            ours(&O::default(), v, v >= flex),
            theirs(&T::default(), v, what),
            "{what} v{v}: the defaults encode differently"
        );
    }
    let ours = scalar_fields(&format!("{:#?}", O::default()));
    let theirs = scalar_fields(&format!("{:#?}", T::default()));
    for (field, value) in &ours {
        assert_eq!(
            theirs.get(field),
            Some(value),
            "{what}.{field}: our default is {value}, the oracle's {:?}",
            theirs.get(field)
        );
    }
}

#[test]
fn every_struct_defaults_as_kafka_does() {
    let mut structs = 0;
    macro_rules! one {
        ($ours:ty, $theirs:ty, $lo:expr, $hi:expr, $flex:expr) => {{
            check_default::<$ours, $theirs>(stringify!($ours), $lo, $hi, $flex);
            structs += 1;
        }};
    }
    for_every_struct!(one);
    assert!(structs > 300, "{structs} structs");
}

/// Our request and response header versions at `v` against the oracle's:
/// v2/v1 requests and v1/v0 responses by flexibility, and ApiVersions'
/// response header v0 at every version.
fn check_headers<Req: HeaderVersion, Resp: HeaderVersion>(
    name: &str,
    k: i16,
    v: i16,
    flexible: bool,
) {
    assert_eq!(
        Req::header_version(v),
        if flexible { 2 } else { 1 },
        "{name} v{v}: request header version"
    );
    let response = if k == key::API_VERSIONS || !flexible {
        0
    } else {
        1
    };
    assert_eq!(
        Resp::header_version(v),
        response,
        "{name} v{v}: response header version"
    );
}

#[test]
fn header_versions_agree_with_the_oracle_at_every_version() {
    let mut apis = 0;
    macro_rules! one {
        ($name:ident, $module:ident, $req:ident, $resp:ident, $key:ident, $lo:expr, $hi:expr, $flex:expr) => {{
            let schema = messages::schema(key::$key).unwrap();
            for v in $lo..=$hi {
                check_headers::<kafka_protocol::messages::$req, kafka_protocol::messages::$resp>(
                    stringify!($name),
                    key::$key,
                    v,
                    schema.is_flexible(v),
                );
            }
            apis += 1;
        }};
    }
    for_every_api!(one);
    assert_eq!(apis, SCHEMAS.len());
}

#[test]
fn every_advertised_version_is_one_the_oracle_checks_and_flexible_alike() {
    for a in APIS {
        let s = messages::schema(a.key).unwrap_or_else(|| panic!("{} has no schema", a.name));
        assert_eq!((a.name, a.flexible_from), (s.name, s.flexible_from));
        assert!(
            s.supports(a.min_version) && s.supports(a.max_version),
            "{} {}-{} is outside its schema's {}-{}",
            a.name,
            a.min_version,
            a.max_version,
            s.min_version,
            s.max_version
        );
    }
}

#[test]
fn request_headers_agree_with_the_oracle() {
    use mk_adapter_kafka::frame::RequestHeader;
    for flexible in [false, true] {
        let ours = RequestHeader {
            api_key: 3,
            api_version: if flexible { 12 } else { 8 },
            correlation_id: 99,
            client_id: Some("rdkafka".to_string()),
        };
        let mut w = Writer::new(false);
        ours.write(&mut w, flexible);
        let bytes = w.into_bytes();
        let version = if flexible { 2 } else { 1 };
        let mut buf = bytes.clone();
        let theirs = kafka_protocol::messages::RequestHeader::decode(&mut buf, version).unwrap();
        assert!(buf.is_empty());
        assert_eq!(theirs.correlation_id, 99);
        assert_eq!(theirs.request_api_version, ours.api_version);
        assert_eq!(theirs.client_id.as_deref(), Some("rdkafka"));
        let mut r = Reader::new(&bytes, false);
        assert_eq!(RequestHeader::read(&mut r, flexible).unwrap(), ours);
        assert!(r.is_empty());
    }
}
