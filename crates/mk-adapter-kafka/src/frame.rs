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
