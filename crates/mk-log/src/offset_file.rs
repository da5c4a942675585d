//! The shape of the small files that hold one offset of a partition
//! (`log-start-offset`, `cleaner-offset-checkpoint`): magic (4 bytes) |
//! version u8 = 1 | offset i64 BE | crc32c u32 BE of the twelve bytes
//! before it; 17 bytes in all. Each file has its own magic, so one is never
//! read as the other.

const VERSION: u8 = 1;
/// The length of every offset file.
pub(crate) const FILE_BYTES: usize = 17;

/// The file holding `offset` under `magic`.
pub(crate) fn encode(magic: &[u8; 4], offset: i64) -> Vec<u8> {
    let mut out = Vec::with_capacity(FILE_BYTES);
    out.extend_from_slice(magic);
    out.push(VERSION);
    out.extend_from_slice(&offset.to_be_bytes());
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_be_bytes());
    out
}

/// The offset in `bytes` if they are an intact file of `magic` holding a
/// non-negative offset; otherwise why not.
pub(crate) fn decode(magic: &[u8; 4], bytes: &[u8]) -> Result<i64, &'static str> {
    let Ok(whole) = <&[u8; FILE_BYTES]>::try_from(bytes) else {
        return Err("it is not 17 bytes long");
    };
    let (body, crc) = whole.split_at(FILE_BYTES - 4);
    if &body[..4] != magic || body[4] != VERSION {
        return Err("its magic or version is not this file's");
    }
    let crc = u32::from_be_bytes(crc.try_into().expect("four bytes"));
    if crc32c::crc32c(body) != crc {
        return Err("its checksum does not match");
    }
    let offset = i64::from_be_bytes(body[5..].try_into().expect("eight bytes"));
    if offset < 0 {
        return Err("its offset is negative");
    }
    Ok(offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_any_damage_or_the_other_files_magic() {
        for (magic, other) in [(b"MKLS", b"MKCO"), (b"MKCO", b"MKLS")] {
            let bytes = encode(magic, 1_234_567);
            assert_eq!(bytes.len(), FILE_BYTES);
            assert_eq!(decode(magic, &bytes), Ok(1_234_567));
            for i in 0..bytes.len() {
                let mut bad = bytes.clone();
                bad[i] ^= 0x40;
                assert!(decode(magic, &bad).is_err(), "byte {i} flipped");
            }
            assert!(decode(magic, &bytes[..16]).is_err());
            assert!(decode(other, &bytes).is_err());
            assert_eq!(
                decode(magic, &encode(magic, -1)),
                Err("its offset is negative")
            );
        }
    }
}
