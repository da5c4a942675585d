//! Request and response headers. A request is `int32 size` + header +
//! body; the header is v1 (api_key, api_version, correlation_id, client_id)
//! for classic versions and v2 (the same + tagged fields) for flexible
//! ones — its client_id stays a classic nullable string either way. A
//! response is `int32 size` + correlation_id (+ tagged fields for flexible
//! versions, except ApiVersions, whose response header is always v0) +
//! body.

use crate::codec::{DecodeError, DecodeResult, Reader, Writer};
use bytes::{BufMut, Bytes, BytesMut};

/// The fixed start of every request header, readable before the API and
/// version are known to be supported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeaderPeek {
    pub api_key: i16,
    pub api_version: i16,
    pub correlation_id: i32,
}

pub fn peek_header(frame: &[u8]) -> DecodeResult<HeaderPeek> {
    let mut r = mk_cluster::ByteReader::new(frame);
    Ok(HeaderPeek {
        api_key: r.i16()?,
        api_version: r.i16()?,
        correlation_id: r.i32()?,
    })
}

/// A decoded request header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestHeader {
    pub api_key: i16,
    pub api_version: i16,
    pub correlation_id: i32,
    pub client_id: Option<String>,
}

impl RequestHeader {
    /// Reads a header v1 (`flexible` false) or v2. `r` must be a classic
    /// reader: the client id is a classic string in both versions.
    pub fn read(r: &mut Reader<'_>, flexible: bool) -> DecodeResult<Self> {
        let api_key = r.i16()?;
        let api_version = r.i16()?;
        let correlation_id = r.i32()?;
        let client_id = r.nullable_string()?;
        if flexible {
            r.flexible = true;
            r.skip_tagged_fields()?;
        }
        Ok(Self {
            api_key,
            api_version,
            correlation_id,
            client_id,
        })
    }

    /// Writes the header (for tests and the conformance suite's clients).
    pub fn write(&self, w: &mut Writer, flexible: bool) {
        w.i16(self.api_key);
        w.i16(self.api_version);
        w.i32(self.correlation_id);
        let was = w.flexible;
        w.flexible = false;
        w.nullable_string(self.client_id.as_deref());
        w.flexible = was;
        if flexible {
            w.uvarint(0);
        }
    }
}

/// Room a response writer leaves at its start for the frame's size,
/// correlation id and (empty) tagged-field section, so the body never has
/// to be copied behind a header.
pub const RESPONSE_HEADER_ROOM: usize = 9;

/// A response's size prefix. Responses are bounded by what requests may ask
/// (fetch sizes are i32), so a size that does not fit is a broken invariant.
fn frame_size(n: usize) -> i32 {
    i32::try_from(n).expect("a response frame is smaller than 2 GiB")
}

/// Turns a writer started with [`RESPONSE_HEADER_ROOM`] placeholder bytes
/// into the whole frame, in place.
pub fn finish_response(mut buf: BytesMut, correlation_id: i32, tagged: bool) -> Bytes {
    let header = 4 + usize::from(tagged);
    let start = RESPONSE_HEADER_ROOM - 4 - header;
    let size = frame_size(buf.len() - RESPONSE_HEADER_ROOM + header);
    buf[start..start + 4].copy_from_slice(&size.to_be_bytes());
    buf[start + 4..start + 8].copy_from_slice(&correlation_id.to_be_bytes());
    if tagged {
        buf[start + 8] = 0;
    }
    let _ = buf.split_to(start);
    buf.freeze()
}

/// A whole response frame as the connection's writer sends it: one buffer,
/// or (a fetch answer) the response's own bytes with the stored record
/// blocks between them as parts of their own, written with one vectored
/// write instead of being copied into one buffer first.
#[derive(Debug, Clone)]
pub enum Response {
    One(Bytes),
    Parts(Vec<Bytes>),
}

impl Response {
    /// The frame as one buffer (its parts copied together).
    pub fn to_bytes(&self) -> Bytes {
        match self {
            Response::One(b) => b.clone(),
            Response::Parts(parts) => {
                let mut out = BytesMut::with_capacity(mk_listener::Answer::len(self));
                for p in parts {
                    out.put_slice(p);
                }
                out.freeze()
            }
        }
    }
}

impl From<Bytes> for Response {
    fn from(b: Bytes) -> Self {
        Response::One(b)
    }
}

impl mk_listener::Answer for Response {
    fn len(&self) -> usize {
        match self {
            Response::One(b) => b.len(),
            Response::Parts(parts) => parts.iter().map(Bytes::len).sum(),
        }
    }

    fn parts<'a>(&'a self, out: &mut Vec<std::io::IoSlice<'a>>) {
        match self {
            Response::One(b) => out.push(std::io::IoSlice::new(b)),
            Response::Parts(parts) => out.extend(parts.iter().map(|p| std::io::IoSlice::new(p))),
        }
    }
}

/// Turns a writer started with [`RESPONSE_HEADER_ROOM`] placeholder bytes
/// into the whole frame: in place when it wrote one buffer; when it wrote
/// parts, its first part (the response's first bytes, up to the first
/// record block) is copied behind a new header.
pub fn finish_response_parts(w: Writer, correlation_id: i32, tagged: bool) -> Response {
    if !w.has_parts() {
        return Response::One(finish_response(w.buf, correlation_id, tagged));
    }
    let mut parts = w.into_parts();
    let total: usize = parts.iter().map(Bytes::len).sum();
    let header = 4 + usize::from(tagged);
    let first = &parts[0];
    let mut head = BytesMut::with_capacity(4 + header + first.len() - RESPONSE_HEADER_ROOM);
    head.put_i32(frame_size(total - RESPONSE_HEADER_ROOM + header));
    head.put_i32(correlation_id);
    if tagged {
        head.put_u8(0);
    }
    head.put_slice(&first[RESPONSE_HEADER_ROOM..]);
    parts[0] = head.freeze();
    Response::Parts(parts)
}

/// A whole response frame: size, correlation id, the optional (empty)
/// tagged-field section, then the body.
pub fn response_frame(correlation_id: i32, tagged: bool, body: Bytes) -> Bytes {
    let header = 4 + usize::from(tagged);
    let mut out = BytesMut::with_capacity(4 + header + body.len());
    out.put_i32(frame_size(header + body.len()));
    out.put_i32(correlation_id);
    if tagged {
        out.put_u8(0);
    }
    out.put_slice(&body);
    out.freeze()
}

/// Splits a response frame (without its size prefix) into correlation id
/// and body, for tests and clients.
pub fn split_response(frame: &Bytes, tagged: bool) -> Result<(i32, Bytes), DecodeError> {
    let mut r = Reader::new(frame, tagged);
    let correlation_id = r.i32()?;
    r.skip_tagged_fields()?;
    let at = r.position();
    Ok((correlation_id, frame.slice(at..)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{Message, RecordSet};
    use crate::messages::fetch::{FetchResponse, FetchableTopicResponse, PartitionData};

    /// A fetch answer with record sets of small and large parts, at a
    /// classic and a flexible version.
    fn answer(records: impl Fn(u8) -> RecordSet) -> FetchResponse {
        let partition = |i: u8| PartitionData {
            partition_index: i32::from(i),
            high_watermark: 10,
            records: Some(records(i)),
            ..PartitionData::default()
        };
        FetchResponse {
            responses: vec![FetchableTopicResponse {
                topic: "t".into(),
                partitions: (0..3).map(partition).collect(),
                ..FetchableTopicResponse::default()
            }],
            ..FetchResponse::default()
        }
    }

    fn parts(i: u8) -> Vec<Bytes> {
        vec![
            Bytes::from(vec![i; 61]),
            Bytes::from(vec![i + 1; 4_000]),
            Bytes::from(vec![i + 2; 61]),
            Bytes::from(vec![i + 3; 600]),
            Bytes::from(vec![i + 4; 100]),
        ]
    }

    /// The frame written from parts is byte for byte the frame written as
    /// one buffer.
    #[test]
    fn a_response_written_in_parts_is_the_response_written_whole() {
        for (version, flexible) in [(11, false), (12, true)] {
            let write = |m: &FetchResponse| {
                let mut buf = BytesMut::new();
                buf.resize(RESPONSE_HEADER_ROOM, 0);
                let mut w = Writer::with_buf(buf, flexible);
                m.write(&mut w, version);
                finish_response_parts(w, 42, flexible)
            };
            let in_parts = write(&answer(|i| {
                let mut set = RecordSet::default();
                parts(i).into_iter().for_each(|p| set.push(p));
                set
            }));
            let Response::Parts(p) = &in_parts else {
                panic!("large parts are sent as they are")
            };
            // The head, then per partition: a block, the header between
            // it and the next (copied), the next block, the bytes up to
            // the next partition's first block (copied).
            assert_eq!(p.len(), 1 + 3 * 4);
            let mut w = Writer::new(flexible);
            w.buf.resize(RESPONSE_HEADER_ROOM, 0);
            answer(|i| {
                let flat: Vec<u8> = parts(i).iter().flat_map(|p| p.to_vec()).collect();
                RecordSet::from(Bytes::from(flat))
            })
            .write(&mut w, version);
            let whole = finish_response(BytesMut::from(&w.into_bytes()[..]), 42, flexible);
            assert_eq!(in_parts.to_bytes(), whole, "v{version}");
            let mut w = Writer::new(flexible);
            answer(|i| RecordSet::from(Bytes::from(vec![i; 10]))).write(&mut w, version);
            assert!(!w.has_parts(), "small record sets are copied");
        }
    }
}
