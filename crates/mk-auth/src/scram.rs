//! SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677), server side.
//!
//! A `ScramCredential` is what the broker stores: salt, iteration count,
//! StoredKey and ServerKey; never the password, from which they are derived
//! one way (`SaltedPassword = PBKDF2(password, salt, i)`, `ClientKey =
//! HMAC(SaltedPassword, "Client Key")`, `StoredKey = H(ClientKey)`,
//! `ServerKey = HMAC(SaltedPassword, "Server Key")`).
//!
//! `ScramServer` is one exchange: client-first -> server-first,
//! client-final -> server-final. The caller supplies the server nonce and
//! the credential lookup. An unknown user gets a decoy credential derived
//! from a per-broker secret, so the exchange proceeds identically (same
//! salt every time for that name, same work) and fails only at the proof,
//! with the same error as a wrong password.

use crate::error::AuthError;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256, Sha512};
use subtle::ConstantTimeEq;

/// A SCRAM hash function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ScramMechanism {
    #[serde(rename = "SCRAM-SHA-256")]
    Sha256,
    #[serde(rename = "SCRAM-SHA-512")]
    Sha512,
}

impl ScramMechanism {
    /// Kafka's bounds on the iteration count of a stored credential.
    pub const MIN_ITERATIONS: u32 = 4096;
    pub const MAX_ITERATIONS: u32 = 16384;

    pub fn name(self) -> &'static str {
        match self {
            ScramMechanism::Sha256 => "SCRAM-SHA-256",
            ScramMechanism::Sha512 => "SCRAM-SHA-512",
        }
    }

    /// Kafka's code in Describe/AlterUserScramCredentials.
    pub fn code(self) -> i8 {
        match self {
            ScramMechanism::Sha256 => 1,
            ScramMechanism::Sha512 => 2,
        }
    }

    pub fn from_code(code: i8) -> Option<ScramMechanism> {
        match code {
            1 => Some(ScramMechanism::Sha256),
            2 => Some(ScramMechanism::Sha512),
            _ => None,
        }
    }

    pub fn from_name(name: &str) -> Option<ScramMechanism> {
        [ScramMechanism::Sha256, ScramMechanism::Sha512]
            .into_iter()
            .find(|m| m.name().eq_ignore_ascii_case(name))
    }

    /// The hash's output length in bytes.
    pub fn hash_len(self) -> usize {
        match self {
            ScramMechanism::Sha256 => 32,
            ScramMechanism::Sha512 => 64,
        }
    }

    fn hmac(self, key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
        // HMAC accepts keys of any length, so `new_from_slice` cannot fail.
        match self {
            ScramMechanism::Sha256 => {
                let mut m = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("any key length");
                parts.iter().for_each(|p| m.update(p));
                m.finalize().into_bytes().to_vec()
            }
            ScramMechanism::Sha512 => {
                let mut m = <Hmac<Sha512> as Mac>::new_from_slice(key).expect("any key length");
                parts.iter().for_each(|p| m.update(p));
                m.finalize().into_bytes().to_vec()
            }
        }
    }

    fn hash(self, data: &[u8]) -> Vec<u8> {
        match self {
            ScramMechanism::Sha256 => Sha256::digest(data).to_vec(),
            ScramMechanism::Sha512 => Sha512::digest(data).to_vec(),
        }
    }

    /// `Hi(password, salt, i)`: PBKDF2 with this HMAC.
    pub fn salted_password(self, password: &[u8], salt: &[u8], iterations: u32) -> Vec<u8> {
        let mut out = vec![0; self.hash_len()];
        match self {
            ScramMechanism::Sha256 => {
                pbkdf2::pbkdf2_hmac::<Sha256>(password, salt, iterations, &mut out);
            }
            ScramMechanism::Sha512 => {
                pbkdf2::pbkdf2_hmac::<Sha512>(password, salt, iterations, &mut out);
            }
        }
        out
    }
}

/// A stored SCRAM credential (what Kafka keeps per user and mechanism).
#[derive(Clone, PartialEq, Eq)]
pub struct ScramCredential {
    pub mechanism: ScramMechanism,
    pub salt: Vec<u8>,
    pub stored_key: Vec<u8>,
    pub server_key: Vec<u8>,
    pub iterations: u32,
}

impl std::fmt::Debug for ScramCredential {
    /// Names the mechanism and iterations only: keys and salt stay out of
    /// logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScramCredential")
            .field("mechanism", &self.mechanism)
            .field("iterations", &self.iterations)
            .finish_non_exhaustive()
    }
}

impl ScramCredential {
    /// The credential of a password (what `mk-server user add` stores).
    pub fn from_password(
        mechanism: ScramMechanism,
        password: &str,
        salt: &[u8],
        iterations: u32,
    ) -> Result<ScramCredential, AuthError> {
        check_bounds(salt, iterations)?;
        let salted = mechanism.salted_password(password.as_bytes(), salt, iterations);
        ScramCredential::from_salted_password(mechanism, &salted, salt, iterations)
    }

    /// The credential of a salted password, as AlterUserScramCredentials
    /// carries it (the client ran PBKDF2).
    pub fn from_salted_password(
        mechanism: ScramMechanism,
        salted_password: &[u8],
        salt: &[u8],
        iterations: u32,
    ) -> Result<ScramCredential, AuthError> {
        check_bounds(salt, iterations)?;
        if salted_password.len() != mechanism.hash_len() {
            return Err(AuthError::UnacceptableCredential(format!(
                "a {} salted password has {} bytes, got {}",
                mechanism.name(),
                mechanism.hash_len(),
                salted_password.len()
            )));
        }
        let client_key = mechanism.hmac(salted_password, &[b"Client Key"]);
        Ok(ScramCredential {
            mechanism,
            salt: salt.to_vec(),
            stored_key: mechanism.hash(&client_key),
            server_key: mechanism.hmac(salted_password, &[b"Server Key"]),
            iterations,
        })
    }

    /// A credential for a user that does not exist: stable per name, so a
    /// probe sees the same salt every time, and matching no proof.
    fn decoy(mechanism: ScramMechanism, user: &str, secret: &[u8]) -> ScramCredential {
        let name = mechanism.name().as_bytes();
        let salt = mechanism.hmac(secret, &[b"salt", name, user.as_bytes()]);
        ScramCredential {
            mechanism,
            salt: salt[..24.min(salt.len())].to_vec(),
            stored_key: mechanism.hmac(secret, &[b"stored", name, user.as_bytes()]),
            server_key: mechanism.hmac(secret, &[b"server", name, user.as_bytes()]),
            iterations: ScramMechanism::MIN_ITERATIONS,
        }
    }
}

/// Whether a salt and an iteration count make an acceptable credential
/// (a salt, and Kafka's iteration bounds). Checked before PBKDF2 runs, so
/// an oversized count costs nothing.
pub fn check_bounds(salt: &[u8], iterations: u32) -> Result<(), AuthError> {
    if salt.is_empty() {
        return Err(AuthError::UnacceptableCredential(
            "the salt must not be empty".into(),
        ));
    }
    if iterations < ScramMechanism::MIN_ITERATIONS {
        return Err(AuthError::UnacceptableCredential(format!(
            "too few iterations: at least {}, got {iterations}",
            ScramMechanism::MIN_ITERATIONS
        )));
    }
    if iterations > ScramMechanism::MAX_ITERATIONS {
        return Err(AuthError::UnacceptableCredential(format!(
            "too many iterations: at most {}, got {iterations}",
            ScramMechanism::MAX_ITERATIONS
        )));
    }
    Ok(())
}

/// One server-side SCRAM exchange.
#[derive(Debug)]
pub struct ScramServer {
    mechanism: ScramMechanism,
    state: State,
}

#[derive(Debug)]
enum State {
    ClientFirst,
    ClientFinal(Box<Pending>),
    Done,
}

/// What the server keeps between its two messages.
#[derive(Debug)]
struct Pending {
    user: String,
    known: bool,
    credential: ScramCredential,
    gs2_header: String,
    client_first_bare: String,
    server_first: String,
    nonce: String,
}

impl ScramServer {
    pub fn new(mechanism: ScramMechanism) -> ScramServer {
        ScramServer {
            mechanism,
            state: State::ClientFirst,
        }
    }

    pub fn mechanism(&self) -> ScramMechanism {
        self.mechanism
    }

    /// A malformed message ends the exchange (the state is already Done).
    fn malformed(&self, reason: &'static str) -> AuthError {
        AuthError::Malformed {
            mechanism: self.mechanism.name(),
            reason,
        }
    }

    /// Reads the client-first message and answers server-first.
    /// `server_nonce` must be fresh, random and printable without commas;
    /// `credential` looks the user up; `decoy_secret` is the broker's
    /// secret for unknown users' decoys.
    pub fn client_first(
        &mut self,
        message: &[u8],
        server_nonce: &str,
        credential: impl FnOnce(&str) -> Option<ScramCredential>,
        decoy_secret: &[u8],
    ) -> Result<Vec<u8>, AuthError> {
        if !matches!(self.state, State::ClientFirst) {
            self.state = State::Done;
            return Err(AuthError::IllegalSaslState("unexpected SCRAM client-first"));
        }
        self.state = State::Done;
        let first = parse_client_first(message).map_err(|r| self.malformed(r))?;
        let (credential, known) = match credential(&first.user) {
            Some(c) if c.mechanism == self.mechanism => (c, true),
            _ => (
                ScramCredential::decoy(self.mechanism, &first.user, decoy_secret),
                false,
            ),
        };
        let nonce = format!("{}{server_nonce}", first.client_nonce);
        let server_first = format!(
            "r={nonce},s={},i={}",
            B64.encode(&credential.salt),
            credential.iterations
        );
        let reply = server_first.clone().into_bytes();
        self.state = State::ClientFinal(Box::new(Pending {
            user: first.user,
            known,
            credential,
            gs2_header: first.gs2_header,
            client_first_bare: first.bare,
            server_first,
            nonce,
        }));
        Ok(reply)
    }

    /// Verifies the client-final message's proof; on success returns the
    /// authenticated user and the server-final message.
    pub fn client_final(&mut self, message: &[u8]) -> Result<(String, Vec<u8>), AuthError> {
        let State::ClientFinal(p) = std::mem::replace(&mut self.state, State::Done) else {
            return Err(AuthError::IllegalSaslState("unexpected SCRAM client-final"));
        };
        let m = self.mechanism;
        let text = std::str::from_utf8(message).map_err(|_| self.malformed("not UTF-8"))?;
        let (without_proof, proof) = text
            .rsplit_once(",p=")
            .ok_or_else(|| self.malformed("no proof"))?;
        let proof = B64
            .decode(proof)
            .map_err(|_| self.malformed("proof is not base64"))?;
        let mut attrs = without_proof.split(',');
        let binding = attrs.next().and_then(|a| a.strip_prefix("c="));
        let nonce = attrs.next().and_then(|a| a.strip_prefix("r="));
        let (Some(binding), Some(nonce)) = (binding, nonce) else {
            return Err(self.malformed("expected c=...,r=...,p=..."));
        };
        if B64.decode(binding).ok().as_deref() != Some(p.gs2_header.as_bytes()) {
            return Err(self.malformed("channel binding does not match the gs2 header"));
        }
        let auth_message = format!("{},{},{without_proof}", p.client_first_bare, p.server_first);
        let signature = m.hmac(&p.credential.stored_key, &[auth_message.as_bytes()]);
        let proof_ok = proof.len() == signature.len() && {
            let client_key: Vec<u8> = proof.iter().zip(&signature).map(|(a, b)| a ^ b).collect();
            bool::from(m.hash(&client_key).ct_eq(&p.credential.stored_key))
        };
        let nonce_ok = bool::from(nonce.as_bytes().ct_eq(p.nonce.as_bytes()));
        if !(proof_ok && nonce_ok && p.known) {
            return Err(AuthError::AuthenticationFailed {
                mechanism: m.name(),
            });
        }
        let server_signature = m.hmac(&p.credential.server_key, &[auth_message.as_bytes()]);
        let reply = format!("v={}", B64.encode(server_signature)).into_bytes();
        Ok((p.user, reply))
    }
}

/// The parts of a client-first message the server needs.
struct ClientFirst {
    gs2_header: String,
    bare: String,
    user: String,
    client_nonce: String,
}

fn parse_client_first(message: &[u8]) -> Result<ClientFirst, &'static str> {
    let text = std::str::from_utf8(message).map_err(|_| "not UTF-8")?;
    let (flag, rest) = text.split_once(',').ok_or("no gs2 header")?;
    if !(flag == "n" || flag == "y") {
        return Err("channel binding is not supported");
    }
    let (authzid, bare) = rest.split_once(',').ok_or("no gs2 header")?;
    let mut attrs = bare.split(',');
    let user = attrs
        .next()
        .and_then(|a| a.strip_prefix("n="))
        .ok_or("expected n=user")?;
    let user = decode_saslname(user).ok_or("invalid user name encoding")?;
    let client_nonce = attrs
        .next()
        .and_then(|a| a.strip_prefix("r="))
        .ok_or("expected r=nonce")?;
    if client_nonce.is_empty() || !client_nonce.bytes().all(|b| (0x21..=0x7e).contains(&b)) {
        return Err("invalid client nonce");
    }
    for ext in attrs {
        if ext.starts_with("m=") || ext == "tokenauth=true" {
            return Err("unsupported SCRAM extension");
        }
    }
    if !authzid.is_empty() {
        let a = authzid.strip_prefix("a=").ok_or("invalid authzid")?;
        if decode_saslname(a).as_deref() != Some(user.as_str()) {
            return Err("authorization id differs from the user");
        }
    }
    if user.is_empty() {
        return Err("empty user name");
    }
    Ok(ClientFirst {
        gs2_header: format!("{flag},{authzid},"),
        bare: bare.to_string(),
        user,
        client_nonce: client_nonce.to_string(),
    })
}

/// RFC 5802's saslname: `=2C` is `,`, `=3D` is `=`, any other `=` is an
/// error.
fn decode_saslname(s: &str) -> Option<String> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('=') {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if let Some(r) = tail.strip_prefix("=2C") {
            out.push(',');
            rest = r;
        } else if let Some(r) = tail.strip_prefix("=3D") {
            out.push('=');
            rest = r;
        } else {
            return None;
        }
    }
    out.push_str(rest);
    Some(out)
}
