//! `Principal`: who a connection is, in Kafka's `Type:name` form
//! (`User:alice`, `User:ANONYMOUS` before or without authentication), and
//! the principal Kafka's default SSL principal builder gives a client
//! certificate: `User:` + the subject DN as Java's
//! `X500Principal.getName()` prints it (RFC 2253).

use crate::error::AuthError;
use std::fmt;
use x509_parser::prelude::{FromDer, X509Certificate};

/// A Kafka principal: a type (always `User` for clients) and a name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Principal {
    principal_type: String,
    name: String,
}

/// The principal type of every client.
pub const USER_TYPE: &str = "User";

impl Principal {
    /// `User:<name>`.
    pub fn user(name: impl Into<String>) -> Principal {
        Principal {
            principal_type: USER_TYPE.to_string(),
            name: name.into(),
        }
    }

    /// `User:ANONYMOUS`: a connection on a PLAINTEXT listener, or on an
    /// SSL listener without client certificates, as in Kafka.
    pub fn anonymous() -> Principal {
        Principal::user("ANONYMOUS")
    }

    /// Parses `Type:name` (split at the first colon, as Kafka's
    /// `SecurityUtils.parseKafkaPrincipal`); both parts must be non-empty.
    pub fn parse(s: &str) -> Result<Principal, AuthError> {
        match s.split_once(':') {
            Some((t, n)) if !t.is_empty() && !n.is_empty() => Ok(Principal {
                principal_type: t.to_string(),
                name: n.to_string(),
            }),
            _ => Err(AuthError::InvalidPrincipal(s.to_string())),
        }
    }

    pub fn principal_type(&self) -> &str {
        &self.principal_type
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}

impl fmt::Display for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.principal_type, self.name)
    }
}

/// The principal of a client certificate (DER): `User:` + its subject DN
/// in RFC 2253 form, most significant RDN last as Java prints it
/// (`CN=client,OU=eng,O=Acme,C=US`).
pub fn ssl_principal(cert_der: &[u8]) -> Result<Principal, AuthError> {
    let (_, cert) = X509Certificate::from_der(cert_der)
        .map_err(|e| AuthError::InvalidCertificate(e.to_string()))?;
    Ok(Principal::user(rfc2253(cert.subject())?))
}

/// Java's RFC 2253 rendering of an X.500 name: RDNs in reverse order
/// joined by `,`, the attributes of one RDN by `+`, the keywords Java
/// knows, any other attribute as its OID with the DER value in hex.
fn rfc2253(name: &x509_parser::x509::X509Name<'_>) -> Result<String, AuthError> {
    let mut rdns = Vec::new();
    for rdn in name.iter() {
        let mut avas = Vec::new();
        for ava in rdn.iter() {
            let oid = ava.attr_type().to_id_string();
            let rendered = match (keyword(&oid), ava.as_str()) {
                (Some(k), Ok(v)) => format!("{k}={}", escape(v)),
                _ => format!("{oid}=#{}", hex_der(ava.attr_value())),
            };
            avas.push(rendered);
        }
        rdns.push(avas.join("+"));
    }
    rdns.reverse();
    Ok(rdns.join(","))
}

/// The attribute keywords of Java's RFC 2253 output.
fn keyword(oid: &str) -> Option<&'static str> {
    Some(match oid {
        "2.5.4.3" => "CN",
        "2.5.4.6" => "C",
        "2.5.4.7" => "L",
        "2.5.4.8" => "ST",
        "2.5.4.9" => "STREET",
        "2.5.4.10" => "O",
        "2.5.4.11" => "OU",
        "0.9.2342.19200300.100.1.25" => "DC",
        "0.9.2342.19200300.100.1.1" => "UID",
        _ => return None,
    })
}

/// RFC 2253 escaping as Java applies it: the special characters anywhere,
/// a space at either end.
fn escape(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    let last = v.chars().count().saturating_sub(1);
    for (i, c) in v.chars().enumerate() {
        if ",=+<>#;\"\\".contains(c) || (c == ' ' && (i == 0 || i == last)) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `#` + hex of an attribute value's DER encoding (tag, length, content).
fn hex_der(v: &x509_parser::der_parser::asn1_rs::Any<'_>) -> String {
    use std::fmt::Write;
    let data = v.data;
    let mut der = vec![u8::try_from(v.header.tag().0).unwrap_or(0)];
    match u8::try_from(data.len()) {
        Ok(n) if n < 0x80 => der.push(n),
        _ => {
            let len = data.len().to_be_bytes();
            let skip = len.iter().take_while(|b| **b == 0).count();
            der.push(0x80 | u8::try_from(len.len() - skip).unwrap_or(0));
            der.extend_from_slice(&len[skip..]);
        }
    }
    der.extend_from_slice(data);
    der.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn principals_parse_at_the_first_colon() {
        let p = Principal::parse("User:CN=a:b,O=x").unwrap();
        assert_eq!(p.principal_type(), "User");
        assert_eq!(p.name(), "CN=a:b,O=x");
        assert_eq!(p.to_string(), "User:CN=a:b,O=x");
        for bad in ["alice", ":alice", "User:", ""] {
            assert!(Principal::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(Principal::anonymous().to_string(), "User:ANONYMOUS");
    }

    #[test]
    fn values_are_escaped_as_java_prints_them() {
        assert_eq!(escape("a,b"), "a\\,b");
        assert_eq!(escape(" x "), "\\ x\\ ");
        assert_eq!(escape("plain"), "plain");
        assert_eq!(escape("a+b=c"), "a\\+b\\=c");
    }
}
