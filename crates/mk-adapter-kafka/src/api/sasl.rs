//! SaslHandshake and SaslAuthenticate, and the per-connection `Session`
//! they drive: which principal the connection speaks for and whether it
//! has authenticated. The mechanisms themselves (PLAIN's check, SCRAM's
//! exchange) are mk-auth's; the credentials, nonces and the decoy secret
//! come from the core's security role. Handshake v0 switches the
//! connection to raw tokens (size-prefixed SASL bytes without a Kafka
//! header, as pre-KIP-152 clients send them), which the server feeds to
//! [`Session::step`] directly.

use crate::api::{Ctx, key};
use crate::errors::KafkaCode;
use crate::listener::SecurityProtocol;
use crate::messages::sasl_authenticate::{SaslAuthenticateRequest, SaslAuthenticateResponse};
use crate::messages::sasl_handshake::{SaslHandshakeRequest, SaslHandshakeResponse};
use bytes::Bytes;
use mk_cluster::{AuthError, BrokerCluster, PlainUsers, Principal, SaslMechanism, ScramServer};
use std::sync::Arc;

/// The SASL settings of a broker's SASL listeners.
#[derive(Debug, Clone)]
pub struct SaslOptions {
    /// What SaslHandshake offers (`--sasl-mechanisms`).
    pub mechanisms: Vec<SaslMechanism>,
    /// PLAIN's users (`--sasl-plain-users`); none: every PLAIN login fails.
    pub plain_users: Option<Arc<PlainUsers>>,
}

impl Default for SaslOptions {
    fn default() -> Self {
        SaslOptions {
            mechanisms: SaslMechanism::ALL.to_vec(),
            plain_users: None,
        }
    }
}

/// Where a connection's SASL exchange stands.
#[derive(Debug)]
enum Stage {
    /// A SASL listener before SaslHandshake.
    Handshake,
    /// After SaslHandshake: the first token of `mechanism`.
    FirstToken { mechanism: SaslMechanism, raw: bool },
    /// SCRAM after server-first: the client-final message.
    ScramFinal { server: Box<ScramServer>, raw: bool },
    /// Authenticated, or a listener without SASL.
    Done,
}

/// One connection's identity.
#[derive(Debug)]
pub struct Session {
    pub protocol: SecurityProtocol,
    /// `User:ANONYMOUS`, the SSL principal of a client certificate, or the
    /// SASL user once authenticated.
    pub principal: Principal,
    stage: Stage,
    /// Set by a failed authentication: the server closes the connection
    /// once the answer is written.
    pub failed: bool,
}

impl Session {
    pub fn new(protocol: SecurityProtocol, principal: Principal) -> Session {
        Session {
            protocol,
            principal,
            stage: if protocol.uses_sasl() {
                Stage::Handshake
            } else {
                Stage::Done
            },
            failed: false,
        }
    }

    /// Whether the connection has authenticated (always, without SASL).
    pub fn authenticated(&self) -> bool {
        matches!(self.stage, Stage::Done)
    }

    /// Whether a request with `api_key` may be served now: before
    /// authenticating, only ApiVersions and the SASL requests.
    pub fn admits(&self, api_key: i16) -> bool {
        self.authenticated()
            || matches!(
                api_key,
                key::API_VERSIONS | key::SASL_HANDSHAKE | key::SASL_AUTHENTICATE
            )
    }

    /// Whether the next frame is a raw SASL token (after handshake v0).
    pub fn expects_raw_token(&self) -> bool {
        matches!(
            self.stage,
            Stage::FirstToken { raw: true, .. } | Stage::ScramFinal { raw: true, .. }
        )
    }

    /// Feeds one token of the exchange; returns the server's token.
    pub fn step(
        &mut self,
        token: &[u8],
        cluster: &BrokerCluster,
        options: &SaslOptions,
    ) -> Result<Vec<u8>, AuthError> {
        match std::mem::replace(&mut self.stage, Stage::Handshake) {
            Stage::FirstToken {
                mechanism: SaslMechanism::Plain,
                ..
            } => {
                let user = match &options.plain_users {
                    Some(users) => users.authenticate(token)?,
                    None => PlainUsers::default().authenticate(token)?,
                };
                self.succeed(user);
                Ok(Vec::new())
            }
            Stage::FirstToken {
                mechanism: SaslMechanism::Scram(m),
                raw,
            } => {
                let security = cluster.security();
                let mut server = Box::new(ScramServer::new(m));
                let reply = server.client_first(
                    token,
                    &security.new_nonce(),
                    |user| security.scram_credential(user, m),
                    security.decoy_secret(),
                )?;
                self.stage = Stage::ScramFinal { server, raw };
                Ok(reply)
            }
            Stage::ScramFinal { mut server, .. } => {
                let (user, reply) = server.client_final(token)?;
                self.succeed(user);
                Ok(reply)
            }
            stage @ (Stage::Handshake | Stage::Done) => {
                self.stage = stage;
                Err(AuthError::IllegalSaslState(
                    "SaslAuthenticate before SaslHandshake or after authentication",
                ))
            }
        }
    }

    fn succeed(&mut self, user: String) {
        tracing::debug!(user = %user, "SASL authentication succeeded");
        self.principal = Principal::user(user);
        self.stage = Stage::Done;
    }
}

/// SaslHandshake: picks the mechanism of the exchange that follows.
pub async fn handle_sasl_handshake(
    ctx: &Ctx<'_>,
    req: SaslHandshakeRequest,
) -> SaslHandshakeResponse {
    let options = &ctx.options.sasl;
    let mechanisms = options
        .mechanisms
        .iter()
        .map(|m| m.name().to_string())
        .collect();
    let mut session = ctx.session.lock().expect("session");
    let error_code = if !matches!(session.stage, Stage::Handshake) {
        KafkaCode::ILLEGAL_SASL_STATE
    } else {
        match SaslMechanism::parse(&req.mechanism).filter(|m| options.mechanisms.contains(m)) {
            None => KafkaCode::UNSUPPORTED_SASL_MECHANISM,
            Some(mechanism) => {
                session.stage = Stage::FirstToken {
                    mechanism,
                    raw: ctx.version() == 0,
                };
                KafkaCode::NONE
            }
        }
    };
    // On a SASL listener a failed handshake ends the connection; on one
    // without SASL the answer is ILLEGAL_SASL_STATE and the connection
    // stays, as Kafka answers there.
    if !error_code.is_none() && session.protocol.uses_sasl() {
        session.failed = true;
    }
    SaslHandshakeResponse {
        error_code,
        mechanisms,
    }
}

/// SaslAuthenticate: one token of the exchange. A failure answers
/// SASL_AUTHENTICATION_FAILED with a message that does not say whether the
/// user exists, and the connection is closed after the answer.
pub async fn handle_sasl_authenticate(
    ctx: &Ctx<'_>,
    req: SaslAuthenticateRequest,
) -> SaslAuthenticateResponse {
    let mut session = ctx.session.lock().expect("session");
    if session.expects_raw_token() {
        session.failed = true;
        return SaslAuthenticateResponse {
            error_code: KafkaCode::ILLEGAL_SASL_STATE,
            error_message: Some("SaslHandshake v0 was followed by SaslAuthenticate".into()),
            ..SaslAuthenticateResponse::default()
        };
    }
    match session.step(&req.auth_bytes, ctx.cluster, &ctx.options.sasl) {
        Ok(reply) => SaslAuthenticateResponse {
            error_message: None,
            auth_bytes: Bytes::from(reply),
            ..SaslAuthenticateResponse::default()
        },
        Err(e) => {
            session.failed = session.protocol.uses_sasl();
            SaslAuthenticateResponse {
                error_code: crate::errors::kafka_code(e.code()),
                error_message: Some(e.to_string()),
                ..SaslAuthenticateResponse::default()
            }
        }
    }
}
