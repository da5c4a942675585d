//! SASL/PLAIN (RFC 4616) against the users of `--sasl-plain-users`
//! (`user:password` lines). Passwords are kept only as SHA-512 digests and
//! compared in constant time; an unknown user is checked against a decoy
//! digest, so both failures take the same path and give the same answer.

use crate::error::AuthError;
use sha2::{Digest, Sha512};
use std::collections::BTreeMap;
use subtle::ConstantTimeEq;

const MECHANISM: &str = "PLAIN";

/// The PLAIN users.
#[derive(Clone, Default)]
pub struct PlainUsers {
    users: BTreeMap<String, [u8; 64]>,
}

impl std::fmt::Debug for PlainUsers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlainUsers")
            .field("users", &self.users.keys().collect::<Vec<_>>())
            .finish()
    }
}

fn digest(password: &[u8]) -> [u8; 64] {
    Sha512::digest(password).into()
}

impl PlainUsers {
    /// Reads a users file: one `user:password` per line (split at the
    /// first colon), blank lines and `#` comments ignored; an empty user or
    /// password and a repeated user are refused.
    pub fn parse(text: &str) -> Result<PlainUsers, AuthError> {
        let mut users = BTreeMap::new();
        for (i, line) in text.lines().enumerate() {
            let bad = |reason| AuthError::InvalidUsersFile {
                line: i + 1,
                reason,
            };
            let line = line.trim_end_matches('\r');
            if line.trim().is_empty() || line.trim_start().starts_with('#') {
                continue;
            }
            let (user, password) = line.split_once(':').ok_or(bad("expected user:password"))?;
            if user.is_empty() || password.is_empty() {
                return Err(bad("empty user or password"));
            }
            if users
                .insert(user.to_string(), digest(password.as_bytes()))
                .is_some()
            {
                return Err(bad("user listed twice"));
            }
        }
        Ok(PlainUsers { users })
    }

    pub fn len(&self) -> usize {
        self.users.len()
    }

    pub fn is_empty(&self) -> bool {
        self.users.is_empty()
    }

    /// Checks one PLAIN message (`authzid NUL authcid NUL passwd`) and
    /// returns the authenticated user. An authorization id other than the
    /// user is refused, as Kafka refuses it.
    pub fn authenticate(&self, message: &[u8]) -> Result<String, AuthError> {
        let malformed = |reason| AuthError::Malformed {
            mechanism: MECHANISM,
            reason,
        };
        let mut parts = message.split(|b| *b == 0);
        let (Some(authzid), Some(user), Some(password), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(malformed("expected authzid NUL user NUL password"));
        };
        let user = std::str::from_utf8(user).map_err(|_| malformed("user is not UTF-8"))?;
        if user.is_empty() || password.is_empty() {
            return Err(malformed("empty user or password"));
        }
        if !authzid.is_empty() && authzid != user.as_bytes() {
            return Err(malformed("authorization id differs from the user"));
        }
        let offered = digest(password);
        let (expected, known) = match self.users.get(user) {
            Some(d) => (d, true),
            None => (&DECOY, false),
        };
        let matches: bool = offered.ct_eq(expected).into();
        if matches && known {
            Ok(user.to_string())
        } else {
            Err(AuthError::AuthenticationFailed {
                mechanism: MECHANISM,
            })
        }
    }
}

/// What an unknown user's password is compared with: a digest no password
/// is known to produce.
const DECOY: [u8; 64] = [0x5a; 64];

#[cfg(test)]
mod tests {
    use super::*;

    fn users() -> PlainUsers {
        PlainUsers::parse("# comment\nalice:s3cret\n\nbob:pa:ss\n").unwrap()
    }

    #[test]
    fn the_right_password_authenticates() {
        let u = users();
        assert_eq!(u.len(), 2);
        assert_eq!(u.authenticate(b"\0alice\0s3cret").unwrap(), "alice");
        assert_eq!(u.authenticate(b"bob\0bob\0pa:ss").unwrap(), "bob");
    }

    #[test]
    fn wrong_password_and_unknown_user_give_the_same_error() {
        let u = users();
        let wrong = u.authenticate(b"\0alice\0nope").unwrap_err();
        let unknown = u.authenticate(b"\0mallory\0s3cret").unwrap_err();
        assert_eq!(wrong, unknown);
        assert_eq!(wrong.code().as_str(), "SASL_AUTHENTICATION_FAILED");
        assert!(!wrong.to_string().contains("alice"));
    }

    #[test]
    fn malformed_messages_and_files_are_refused() {
        let u = users();
        for m in [
            &b"alice\0s3cret"[..],
            b"\0\0s3cret",
            b"\0alice\0",
            b"x\0alice\0s3cret",
            b"\0alice\0s3cret\0more",
        ] {
            assert!(u.authenticate(m).is_err(), "{m:?}");
        }
        assert!(PlainUsers::parse("alice\n").is_err());
        assert!(PlainUsers::parse("alice:a\nalice:b\n").is_err());
        assert!(PlainUsers::parse(":pw\n").is_err());
        let debug = format!("{u:?}");
        assert!(debug.contains("alice") && !debug.contains("s3cret"));
    }
}
