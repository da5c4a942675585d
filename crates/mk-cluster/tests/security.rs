//! The security role (`cluster.security()`): ACLs and SCRAM credentials are
//! persisted in `security.json` (never a password), survive a reopen, follow
//! Kafka's AlterUserScramCredentials rules, and the authorizer decides only
//! when it is on.
#![allow(
    clippy::too_many_lines,
    reason = "a test scenario reads top to bottom as one story; split, its steps would scatter"
)]

use mk_cluster::*;
use std::sync::Arc;

fn open(dir: &std::path::Path, authorizer: Option<AuthorizerConfig>) -> Arc<BrokerCluster> {
    let mut config = MiniKafkaConfig::new(dir);
    config.authorizer = authorizer;
    BrokerCluster::open_with_clock(config, Arc::new(ManualClock::new(1_000))).unwrap()
}

fn allow_read(topic: &str, pattern_type: PatternType, who: &str) -> AclBinding {
    AclBinding {
        pattern: ResourcePattern {
            resource_type: ResourceType::Topic,
            name: topic.into(),
            pattern_type,
        },
        entry: AccessControlEntry {
            principal: who.into(),
            host: "*".into(),
            operation: Operation::Read,
            permission: Permission::Allow,
        },
    }
}

fn alice() -> Identity {
    Identity {
        principal: Principal::user("alice"),
        host: Some("127.0.0.1".parse().unwrap()),
    }
}

fn upsert(c: &BrokerCluster, user: &str, mechanism: ScramMechanism, password: &str) -> Vec<u8> {
    let salt = c.security().new_salt();
    let salted = mechanism.salted_password(password.as_bytes(), &salt, 4096);
    let answers = c
        .security()
        .alter_scram(
            &[],
            &[ScramUpsertion {
                user: user.into(),
                mechanism: mechanism.code(),
                iterations: 4096,
                salt: salt.clone(),
                salted_password: salted.clone(),
            }],
        )
        .unwrap();
    assert!(answers[0].1.is_ok(), "{answers:?}");
    salted
}

#[tokio::test]
async fn acls_persist_and_decide_only_with_the_authorizer_on() {
    let dir = tempfile::tempdir().unwrap();
    let c = open(dir.path(), Some(AuthorizerConfig::default()));
    let who = alice();
    assert!(
        !c.security()
            .authorize(&who, Operation::Read, ResourceType::Topic, "orders")
    );
    let created = c
        .security()
        .create_acls(vec![
            allow_read("ord", PatternType::Prefixed, "User:alice"),
            allow_read("x", PatternType::Literal, "alice-without-type"),
        ])
        .unwrap();
    assert!(created[0].is_ok());
    assert_eq!(
        created[1].as_ref().unwrap_err().code(),
        ErrorCode::InvalidRequest
    );
    assert!(
        c.security()
            .authorize(&who, Operation::Read, ResourceType::Topic, "orders")
    );
    // READ implies DESCRIBE, never WRITE.
    assert!(
        c.security()
            .authorize(&who, Operation::Describe, ResourceType::Topic, "orders")
    );
    assert!(
        !c.security()
            .authorize(&who, Operation::Write, ResourceType::Topic, "orders")
    );
    c.lifecycle().close().await.unwrap();

    // The ACL survives a reopen; with the authorizer off everything is
    // allowed, as before security existed.
    let off = open(dir.path(), None);
    assert_eq!(
        off.security().describe_acls(&AclBindingFilter::any()).len(),
        1
    );
    assert!(
        off.security()
            .authorize(&who, Operation::Write, ResourceType::Topic, "orders")
    );
    let removed = off
        .security()
        .delete_acls(&[AclBindingFilter::any()])
        .unwrap();
    assert_eq!(removed[0].len(), 1);
    off.lifecycle().close().await.unwrap();
    let again = open(dir.path(), Some(AuthorizerConfig::default()));
    assert!(
        again
            .security()
            .describe_acls(&AclBindingFilter::any())
            .is_empty()
    );
    again.lifecycle().close().await.unwrap();
}

#[tokio::test]
async fn scram_credentials_persist_without_the_password() {
    let dir = tempfile::tempdir().unwrap();
    let c = open(dir.path(), None);
    let salted = upsert(&c, "alice", ScramMechanism::Sha512, "very-secret-pw");
    upsert(&c, "bob", ScramMechanism::Sha256, "other-secret-pw");
    c.lifecycle().close().await.unwrap();

    let text = std::fs::read_to_string(dir.path().join("security.json")).unwrap();
    assert!(!text.contains("very-secret-pw"));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join("security.json"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "security.json is readable by others");
    }

    let c = open(dir.path(), None);
    let stored = c
        .security()
        .scram_credential("alice", ScramMechanism::Sha512)
        .unwrap();
    let expected =
        ScramCredential::from_salted_password(ScramMechanism::Sha512, &salted, &stored.salt, 4096)
            .unwrap();
    assert_eq!(stored, expected);
    assert!(
        c.security()
            .scram_credential("alice", ScramMechanism::Sha256)
            .is_none()
    );
    let all = c.security().describe_scram(None);
    let names: Vec<&str> = all.iter().map(|(u, _)| u.as_str()).collect();
    assert_eq!(names, ["alice", "bob"]);
    let asked = c
        .security()
        .describe_scram(Some(&["carol".to_string(), "bob".to_string()]));
    assert_eq!(
        asked[0].1.as_ref().unwrap_err().code(),
        ErrorCode::ResourceNotFound
    );
    assert_eq!(
        asked[1].1.as_ref().unwrap(),
        &vec![(ScramMechanism::Sha256, 4096)]
    );
    c.lifecycle().close().await.unwrap();
}

#[tokio::test]
async fn alter_scram_applies_per_user_all_or_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let c = open(dir.path(), None);
    upsert(&c, "alice", ScramMechanism::Sha256, "pw-one-two-three");
    let salt = c.security().new_salt();
    let answers = c
        .security()
        .alter_scram(
            &[
                // Alice: deleting a credential she does not have refuses
                // her upsertion too.
                ScramDeletion {
                    user: "alice".into(),
                    mechanism: ScramMechanism::Sha512.code(),
                },
                ScramDeletion {
                    user: "bob".into(),
                    mechanism: ScramMechanism::Sha256.code(),
                },
            ],
            &[
                ScramUpsertion {
                    user: "alice".into(),
                    mechanism: ScramMechanism::Sha256.code(),
                    iterations: 8192,
                    salt: salt.clone(),
                    salted_password: ScramMechanism::Sha256.salted_password(b"new", &salt, 8192),
                },
                ScramUpsertion {
                    user: "carol".into(),
                    mechanism: ScramMechanism::Sha256.code(),
                    iterations: 100,
                    salt: salt.clone(),
                    salted_password: ScramMechanism::Sha256.salted_password(b"x", &salt, 100),
                },
                ScramUpsertion {
                    user: "dave".into(),
                    mechanism: 9,
                    iterations: 4096,
                    salt: salt.clone(),
                    salted_password: vec![0; 32],
                },
            ],
        )
        .unwrap();
    let codes: Vec<(&str, Option<ErrorCode>)> = answers
        .iter()
        .map(|(u, r)| (u.as_str(), r.as_ref().err().map(ClusterError::code)))
        .collect();
    assert_eq!(
        codes,
        [
            ("alice", Some(ErrorCode::ResourceNotFound)),
            ("bob", Some(ErrorCode::ResourceNotFound)),
            ("carol", Some(ErrorCode::UnacceptableCredential)),
            ("dave", Some(ErrorCode::UnsupportedSaslMechanism)),
        ]
    );
    let kept = c
        .security()
        .scram_credential("alice", ScramMechanism::Sha256)
        .unwrap();
    assert_eq!(kept.iterations, 4096);
    c.lifecycle().close().await.unwrap();
}

/// `mk-server user add|delete` (JSON-TCP's upsert/delete_scram_credential):
/// the core salts and hashes the password itself, under the same rules as
/// AlterUserScramCredentials, and a refused change writes nothing.
#[tokio::test]
async fn scram_credentials_from_a_password_are_salted_in_the_core() {
    let dir = tempfile::tempdir().unwrap();
    let c = open(dir.path(), None);
    let s = c.security();
    assert_eq!(
        s.upsert_scram_password("alice", ScramMechanism::Sha512, "pw-alice-512", None)
            .unwrap(),
        DEFAULT_SCRAM_ITERATIONS
    );
    assert_eq!(
        s.upsert_scram_password("alice", ScramMechanism::Sha256, "pw-alice-256", Some(8192))
            .unwrap(),
        8192
    );
    let stored = s.scram_credential("alice", ScramMechanism::Sha512).unwrap();
    let expected = ScramCredential::from_password(
        ScramMechanism::Sha512,
        "pw-alice-512",
        &stored.salt,
        DEFAULT_SCRAM_ITERATIONS,
    )
    .unwrap();
    assert_eq!(stored, expected, "the stored keys are the password's");
    let wrong = ScramCredential::from_password(
        ScramMechanism::Sha512,
        "pw-alice-256",
        &stored.salt,
        DEFAULT_SCRAM_ITERATIONS,
    )
    .unwrap();
    assert_ne!(stored, wrong);

    let before = std::fs::read(dir.path().join("security.json")).unwrap();
    let refused = [
        s.upsert_scram_password("bob", ScramMechanism::Sha512, "pw", Some(4095)),
        s.upsert_scram_password("bob", ScramMechanism::Sha512, "pw", Some(u32::MAX)),
        s.upsert_scram_password("bob", ScramMechanism::Sha512, "", None),
        s.upsert_scram_password("", ScramMechanism::Sha512, "pw", None),
    ];
    for r in refused {
        assert_eq!(r.unwrap_err().code(), ErrorCode::UnacceptableCredential);
    }
    assert_eq!(
        s.delete_scram_credentials("bob", None).unwrap_err().code(),
        ErrorCode::ResourceNotFound
    );
    assert_eq!(
        s.delete_scram_credentials("alice", Some(ScramMechanism::Sha256))
            .unwrap(),
        [ScramMechanism::Sha256]
    );
    assert_eq!(
        s.delete_scram_credentials("alice", Some(ScramMechanism::Sha256))
            .unwrap_err()
            .code(),
        ErrorCode::ResourceNotFound
    );
    let after = std::fs::read(dir.path().join("security.json")).unwrap();
    assert_ne!(before, after, "the deletion was written");
    c.lifecycle().close().await.unwrap();

    let c = open(dir.path(), None);
    let text = std::fs::read_to_string(dir.path().join("security.json")).unwrap();
    assert!(!text.contains("pw-alice"));
    let all = c.security().describe_scram(None);
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].0, "alice");
    assert_eq!(
        all[0].1.as_ref().unwrap(),
        &vec![(ScramMechanism::Sha512, DEFAULT_SCRAM_ITERATIONS)]
    );
    assert_eq!(
        c.security()
            .delete_scram_credentials("alice", None)
            .unwrap(),
        [ScramMechanism::Sha512]
    );
    assert!(c.security().describe_scram(None).is_empty());
    c.lifecycle().close().await.unwrap();
}
