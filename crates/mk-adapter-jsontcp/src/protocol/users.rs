//! SCRAM users on the wire (what `mk-server user add|delete|list` sends):
//! `upsert_scram_credential`, `delete_scram_credential` and
//! `describe_scram_credentials`. The password travels to the broker once,
//! over the loopback-only JSON-TCP listener; the core salts and hashes it,
//! and no response ever carries a password, a salt or a key.
//! Each operation is a module with its four directions side by side.

use super::common::objects;
use super::{Request, Response};
use crate::wire::{DecodeError, Decoded, Fields, ObjWriter, push_array, push_str};
use mk_cluster::{ScramMechanism, ScramUserInfo};

/// A password in a request. Its `Debug` says nothing, so a request that
/// is logged or printed in a test failure never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct Password(String);

impl Password {
    pub fn new(password: impl Into<String>) -> Password {
        Password(password.into())
    }

    /// The password itself, for the one place that hashes it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Password {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Password(..)")
    }
}

/// A mechanism by its SASL name (`SCRAM-SHA-256`, `SCRAM-SHA-512`).
fn mechanism_of(f: &Fields<'_>, name: &str) -> Decoded<ScramMechanism> {
    let m = f.str(name)?;
    ScramMechanism::from_name(m).ok_or_else(|| {
        DecodeError(format!(
            "field {name:?} must be SCRAM-SHA-256 or SCRAM-SHA-512, got {m:?}"
        ))
    })
}

fn opt_mechanism_of(f: &Fields<'_>, name: &str) -> Decoded<Option<ScramMechanism>> {
    match f.get(name) {
        None => Ok(None),
        Some(_) => mechanism_of(f, name).map(Some),
    }
}

/// `upsert_scram_credential`: user, mechanism, password, optional
/// iterations (default 4096) -> user, mechanism, iterations.
pub(super) mod upsert_scram_credential {
    use super::*;

    pub fn decode(f: &Fields<'_>) -> Decoded<Request> {
        Ok(Request::UpsertScramCredential {
            user: f.string("user")?,
            mechanism: mechanism_of(f, "mechanism")?,
            password: Password(f.string("password")?),
            iterations: f.opt_u32("iterations")?,
        })
    }

    pub fn encode(
        w: &mut ObjWriter<'_>,
        user: &str,
        mechanism: ScramMechanism,
        password: &Password,
        iterations: Option<u32>,
    ) {
        w.str("user", user)
            .str("mechanism", mechanism.name())
            .str("password", password.expose());
        if let Some(n) = iterations {
            w.int("iterations", i64::from(n));
        }
    }

    pub fn encode_response(
        w: &mut ObjWriter<'_>,
        user: &str,
        mechanism: ScramMechanism,
        iterations: u32,
    ) {
        w.str("user", user)
            .str("mechanism", mechanism.name())
            .int("iterations", i64::from(iterations));
    }

    pub fn decode_response(f: &Fields<'_>) -> Decoded<Response> {
        Ok(Response::UpsertScramCredential {
            user: f.string("user")?,
            mechanism: mechanism_of(f, "mechanism")?,
            iterations: f.u32("iterations")?,
        })
    }
}

/// `delete_scram_credential`: user, optional mechanism (default: every
/// mechanism the user has) -> user, deleted (the mechanisms removed).
pub(super) mod delete_scram_credential {
    use super::*;

    pub fn decode(f: &Fields<'_>) -> Decoded<Request> {
        Ok(Request::DeleteScramCredential {
            user: f.string("user")?,
            mechanism: opt_mechanism_of(f, "mechanism")?,
        })
    }

    pub fn encode(w: &mut ObjWriter<'_>, user: &str, mechanism: Option<ScramMechanism>) {
        w.str("user", user);
        if let Some(m) = mechanism {
            w.str("mechanism", m.name());
        }
    }

    pub fn encode_response(w: &mut ObjWriter<'_>, user: &str, deleted: &[ScramMechanism]) {
        w.str("user", user).with("deleted", |out| {
            push_array(out, deleted, |o, m| push_str(o, m.name()));
        });
    }

    pub fn decode_response(f: &Fields<'_>) -> Decoded<Response> {
        let deleted = f
            .strings("deleted")?
            .iter()
            .map(|m| {
                ScramMechanism::from_name(m)
                    .ok_or_else(|| DecodeError(format!("unknown SCRAM mechanism {m:?}")))
            })
            .collect::<Decoded<Vec<_>>>()?;
        Ok(Response::DeleteScramCredential {
            user: f.string("user")?,
            deleted,
        })
    }
}

/// `describe_scram_credentials`: optional user (default: every user with
/// a credential) -> users [{user, credentials [{mechanism, iterations}]}],
/// by name.
pub(super) mod describe_scram_credentials {
    use super::*;

    pub fn decode(f: &Fields<'_>) -> Decoded<Request> {
        Ok(Request::DescribeScramCredentials {
            user: f.opt_string("user")?,
        })
    }

    pub fn encode(w: &mut ObjWriter<'_>, user: Option<&str>) {
        w.str_if_some("user", user);
    }

    pub fn encode_response(w: &mut ObjWriter<'_>, users: &[(String, ScramUserInfo)]) {
        w.with("users", |out| {
            push_array(out, users, |out, (user, info)| {
                let mut u = ObjWriter::new(out);
                u.str("user", user).with("credentials", |out| {
                    push_array(out, info, |out, (m, iterations)| {
                        let mut c = ObjWriter::new(out);
                        c.str("mechanism", m.name())
                            .int("iterations", i64::from(*iterations));
                        c.end();
                    });
                });
                u.end();
            });
        });
    }

    pub fn decode_response(f: &Fields<'_>) -> Decoded<Response> {
        Ok(Response::DescribeScramCredentials(objects(
            f,
            "users",
            |u| {
                let credentials = objects(u, "credentials", |c| {
                    Ok((mechanism_of(c, "mechanism")?, c.u32("iterations")?))
                })?;
                Ok((u.string("user")?, credentials))
            },
        )?))
    }
}
