//! The TLS side of SSL and SASL_SSL listeners: a rustls server
//! configuration (TLS 1.2 and 1.3, the ring provider) from PEM files, with
//! client certificates required when a client CA is given, and Kafka's
//! default SSL principal of the certificate a client presented.

use mk_cluster::Principal;
use rustls::server::WebPkiClientVerifier;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::path::Path;
use std::sync::Arc;

/// The PEM files of `--tls-cert`, `--tls-key` and `--tls-client-ca`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    pub cert: std::path::PathBuf,
    pub key: std::path::PathBuf,
    /// When set, clients must present a certificate this CA signed.
    pub client_ca: Option<std::path::PathBuf>,
}

/// A rustls server configuration from PEM files; the error names the file
/// and what is wrong with it.
pub fn server_config(files: &TlsFiles) -> Result<Arc<rustls::ServerConfig>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let certs = read_certs(&files.cert, "--tls-cert")?;
    let key = PrivateKeyDer::from_pem_file(&files.key).map_err(|e| {
        format!(
            "--tls-key {}: no usable private key: {e}",
            files.key.display()
        )
    })?;
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(|e| format!("TLS: {e}"))?;
    let builder = match &files.client_ca {
        None => builder.with_no_client_auth(),
        Some(path) => {
            let mut roots = rustls::RootCertStore::empty();
            for c in read_certs(path, "--tls-client-ca")? {
                roots
                    .add(c)
                    .map_err(|e| format!("--tls-client-ca {}: {e}", path.display()))?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| format!("--tls-client-ca {}: {e}", path.display()))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let config = builder
        .with_single_cert(certs, key)
        .map_err(|e| format!("--tls-cert/--tls-key do not make a usable pair: {e}"))?;
    Ok(Arc::new(config))
}

fn read_certs(path: &Path, flag: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|i| i.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("{flag} {}: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!(
            "{flag} {}: no certificate in the file",
            path.display()
        ));
    }
    Ok(certs)
}

/// The principal of a TLS connection: Kafka's default SSL principal of the
/// client's certificate (`User:` + its subject DN), `User:ANONYMOUS`
/// without one.
pub fn peer_principal(conn: &rustls::ServerConnection) -> Principal {
    match conn.peer_certificates().and_then(|c| c.first()) {
        None => Principal::anonymous(),
        Some(cert) => mk_cluster::ssl_principal(cert.as_ref()).unwrap_or_else(|e| {
            tracing::warn!(error = %e, "client certificate without a usable subject");
            Principal::anonymous()
        }),
    }
}
