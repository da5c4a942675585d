//! SCRAM against RFC 7677's published exchange, a client written from RFC
//! 5802 for SHA-512, and the failures: wrong password, unknown user (same
//! error), replayed or tampered messages, and the credential bounds.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use hmac::{Hmac, Mac};
use mk_auth::{AuthError, ScramCredential, ScramMechanism, ScramServer};
use sha2::{Digest, Sha512};

const SECRET: &[u8] = b"broker decoy secret";

#[test]
fn rfc7677_example_exchange_verifies_byte_for_byte() {
    let salt = B64.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap();
    let cred =
        ScramCredential::from_password(ScramMechanism::Sha256, "pencil", &salt, 4096).unwrap();
    let mut server = ScramServer::new(ScramMechanism::Sha256);
    let first = server
        .client_first(
            b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
            "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
            |u| (u == "user").then(|| cred.clone()),
            SECRET,
        )
        .unwrap();
    assert_eq!(
        String::from_utf8(first).unwrap(),
        "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    );
    let (user, last) = server
        .client_final(
            b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
        )
        .unwrap();
    assert_eq!(user, "user");
    assert_eq!(
        String::from_utf8(last).unwrap(),
        "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    );
}

/// A SCRAM-SHA-512 client from RFC 5802's formulas.
fn client_final(password: &str, client_first_bare: &str, server_first: &str) -> String {
    let attrs: Vec<&str> = server_first.split(',').collect();
    let nonce = attrs[0].strip_prefix("r=").unwrap();
    let salt = B64.decode(attrs[1].strip_prefix("s=").unwrap()).unwrap();
    let iterations: u32 = attrs[2].strip_prefix("i=").unwrap().parse().unwrap();
    let mut salted = [0u8; 64];
    pbkdf2::pbkdf2_hmac::<Sha512>(password.as_bytes(), &salt, iterations, &mut salted);
    let mac = |key: &[u8], data: &[u8]| {
        let mut m = <Hmac<Sha512> as Mac>::new_from_slice(key).unwrap();
        m.update(data);
        m.finalize().into_bytes().to_vec()
    };
    let client_key = mac(&salted, b"Client Key");
    let stored_key = Sha512::digest(&client_key);
    let without_proof = format!("c=biws,r={nonce}");
    let auth = format!("{client_first_bare},{server_first},{without_proof}");
    let signature = mac(&stored_key, auth.as_bytes());
    let proof: Vec<u8> = client_key
        .iter()
        .zip(&signature)
        .map(|(a, b)| a ^ b)
        .collect();
    format!("{without_proof},p={}", B64.encode(proof))
}

fn exchange(password: &str, user: &str) -> Result<String, AuthError> {
    let cred =
        ScramCredential::from_password(ScramMechanism::Sha512, "right", b"saltsalt", 4096).unwrap();
    let mut server = ScramServer::new(ScramMechanism::Sha512);
    let bare = format!("n={user},r=clientnonce");
    let first = server.client_first(
        format!("n,,{bare}").as_bytes(),
        "servernonce",
        |u| (u == "alice").then(|| cred.clone()),
        SECRET,
    )?;
    let first = String::from_utf8(first).unwrap();
    let last = client_final(password, &bare, &first);
    server.client_final(last.as_bytes()).map(|(u, _)| u)
}

#[test]
fn sha512_exchange_authenticates_the_right_password() {
    assert_eq!(exchange("right", "alice").unwrap(), "alice");
}

#[test]
fn wrong_password_and_unknown_user_fail_alike() {
    let wrong = exchange("wrong", "alice").unwrap_err();
    let unknown = exchange("right", "mallory").unwrap_err();
    assert_eq!(wrong, unknown);
    assert_eq!(wrong.code().as_str(), "SASL_AUTHENTICATION_FAILED");
    // An unknown user's server-first looks like a real one and stays the
    // same across attempts (a changing salt would reveal the decoy).
    let salts: Vec<String> = (0..2)
        .map(|_| {
            let mut s = ScramServer::new(ScramMechanism::Sha512);
            let first = s
                .client_first(b"n,,n=mallory,r=abc", "xyz", |_| None, SECRET)
                .unwrap();
            String::from_utf8(first).unwrap()
        })
        .collect();
    assert_eq!(salts[0], salts[1]);
    assert!(salts[0].contains(",s=") && salts[0].ends_with(",i=4096"));
}

#[test]
fn tampered_and_out_of_order_messages_are_refused() {
    let cred =
        ScramCredential::from_password(ScramMechanism::Sha512, "right", b"saltsalt", 4096).unwrap();
    let start = |s: &mut ScramServer| {
        s.client_first(b"n,,n=alice,r=cn", "sn", |_| Some(cred.clone()), SECRET)
            .map(|f| String::from_utf8(f).unwrap())
    };
    // A proof for a different nonce fails.
    let mut s = ScramServer::new(ScramMechanism::Sha512);
    let first = start(&mut s).unwrap();
    let forged = client_final("right", "n=alice,r=cn", &first.replace("r=cnsn", "r=cnXX"));
    assert!(s.client_final(forged.as_bytes()).is_err());
    // A second client-first, and a final before a first, are illegal.
    let mut s = ScramServer::new(ScramMechanism::Sha512);
    start(&mut s).unwrap();
    assert!(matches!(start(&mut s), Err(AuthError::IllegalSaslState(_))));
    let mut s = ScramServer::new(ScramMechanism::Sha512);
    assert!(matches!(
        s.client_final(b"c=biws,r=x,p=AAAA"),
        Err(AuthError::IllegalSaslState(_))
    ));
    for bad in [
        &b"p=tls-unique,,n=alice,r=cn"[..],
        b"n,,r=cn",
        b"n,,n=alice",
        b"n,,n=al=ice,r=cn",
        b"n,a=bob,n=alice,r=cn",
        b"n,,n=alice,r=cn,tokenauth=true",
        b"\xff",
    ] {
        let mut s = ScramServer::new(ScramMechanism::Sha512);
        let e = s
            .client_first(bad, "sn", |_| Some(cred.clone()), SECRET)
            .unwrap_err();
        assert_eq!(e.code().as_str(), "SASL_AUTHENTICATION_FAILED", "{bad:?}");
    }
}

#[test]
fn credentials_respect_kafka_bounds_and_never_print_keys() {
    let m = ScramMechanism::Sha256;
    assert!(ScramCredential::from_password(m, "pw", b"salt", 4095).is_err());
    assert!(ScramCredential::from_password(m, "pw", b"salt", 16385).is_err());
    assert!(ScramCredential::from_password(m, "pw", b"", 4096).is_err());
    assert!(ScramCredential::from_salted_password(m, &[0; 31], b"salt", 4096).is_err());
    let c = ScramCredential::from_password(m, "pw", b"salt", 4096).unwrap();
    let same = ScramCredential::from_salted_password(
        m,
        &m.salted_password(b"pw", b"salt", 4096),
        b"salt",
        4096,
    )
    .unwrap();
    assert_eq!(c, same);
    let debug = format!("{c:?}");
    assert!(debug.contains("4096") && !debug.contains("stored_key"));
    assert_eq!(ScramMechanism::from_code(2), Some(ScramMechanism::Sha512));
    assert_eq!(ScramMechanism::from_code(0), None);
}
