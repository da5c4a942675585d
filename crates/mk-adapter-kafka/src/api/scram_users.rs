//! DescribeUserScramCredentials and AlterUserScramCredentials: the SCRAM
//! users of SASL listeners, kept by the core's security role (salt,
//! iterations and derived keys; the client sends a salted password, never
//! the password). Kafka's rules — per user all or nothing, RESOURCE_NOT_FOUND
//! and DUPLICATE_RESOURCE, iterations bounds — are the core's.

use crate::api::Ctx;
use crate::codec::{DecodeResult, Message, Reader};
use crate::errors::{KafkaCode, kafka_code};
use crate::messages::alter_user_scram_credentials::{
    AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse,
    AlterUserScramCredentialsResult,
};
use crate::messages::describe_user_scram_credentials::{
    CredentialInfo, DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse,
    DescribeUserScramCredentialsResult,
};
use mk_cluster::{ScramDeletion, ScramUpsertion};

/// Reads AlterUserScramCredentials as librdkafka sends it too.
pub fn read_alter_user_scram_credentials_request(
    r: &mut Reader<'_>,
    v: i16,
) -> DecodeResult<AlterUserScramCredentialsRequest> {
    read_as_librdkafka_sends(r, v)
}

/// DescribeUserScramCredentials, with the same allowance.
pub fn read_describe_user_scram_credentials_request(
    r: &mut Reader<'_>,
    v: i16,
) -> DecodeResult<DescribeUserScramCredentialsRequest> {
    read_as_librdkafka_sends(r, v)
}

/// librdkafka ends both SCRAM requests with a second empty tagged-field
/// section (one zero byte), which Kafka's parser, reading no further than
/// the schema, ignores: so does this one.
fn read_as_librdkafka_sends<M: Message>(r: &mut Reader<'_>, v: i16) -> DecodeResult<M> {
    let req = M::read(r, v)?;
    if r.remaining() == 1 && r.peek_zeros(1) {
        r.bytes_exact(1)?;
    }
    Ok(req)
}

/// Every user with credentials (no names, or an empty list), or the named
/// ones.
pub async fn handle_describe_user_scram_credentials(
    ctx: &Ctx<'_>,
    req: DescribeUserScramCredentialsRequest,
) -> DescribeUserScramCredentialsResponse {
    let names: Option<Vec<String>> = req
        .users
        .filter(|u| !u.is_empty())
        .map(|u| u.into_iter().map(|n| n.name).collect());
    let results = ctx
        .cluster
        .security()
        .describe_scram(names.as_deref())
        .into_iter()
        .map(|(user, answer)| match answer {
            Ok(info) => DescribeUserScramCredentialsResult {
                user,
                error_code: KafkaCode::NONE,
                error_message: None,
                credential_infos: info
                    .into_iter()
                    .map(|(m, iterations)| CredentialInfo {
                        mechanism: m.code(),
                        iterations: i32::try_from(iterations).unwrap_or(i32::MAX),
                    })
                    .collect(),
            },
            Err(e) => DescribeUserScramCredentialsResult {
                user,
                error_code: kafka_code(e.code()),
                error_message: Some(e.to_string()),
                credential_infos: Vec::new(),
            },
        })
        .collect();
    DescribeUserScramCredentialsResponse {
        throttle_time_ms: 0,
        error_code: KafkaCode::NONE,
        error_message: None,
        results,
    }
}

/// Deletes and sets credentials; one result per user named.
pub async fn handle_alter_user_scram_credentials(
    ctx: &Ctx<'_>,
    req: AlterUserScramCredentialsRequest,
) -> AlterUserScramCredentialsResponse {
    let deletions: Vec<ScramDeletion> = req
        .deletions
        .iter()
        .map(|d| ScramDeletion {
            user: d.name.clone(),
            mechanism: d.mechanism,
        })
        .collect();
    let upsertions: Vec<ScramUpsertion> = req
        .upsertions
        .iter()
        .map(|u| ScramUpsertion {
            user: u.name.clone(),
            mechanism: u.mechanism,
            iterations: u.iterations,
            salt: u.salt.to_vec(),
            salted_password: u.salted_password.to_vec(),
        })
        .collect();
    let results = match ctx.cluster.security().alter_scram(&deletions, &upsertions) {
        Ok(answers) => answers
            .into_iter()
            .map(|(user, r)| AlterUserScramCredentialsResult {
                user,
                error_code: r
                    .as_ref()
                    .map_or_else(|e| kafka_code(e.code()), |()| KafkaCode::NONE),
                error_message: r.err().map(|e| e.to_string()),
            })
            .collect(),
        Err(e) => {
            // Nothing was stored: every user named gets the failure.
            let mut users: Vec<&str> = deletions.iter().map(|d| d.user.as_str()).collect();
            users.extend(upsertions.iter().map(|u| u.user.as_str()));
            users.dedup();
            users
                .into_iter()
                .map(|user| AlterUserScramCredentialsResult {
                    user: user.to_string(),
                    error_code: kafka_code(e.code()),
                    error_message: Some(e.to_string()),
                })
                .collect()
        }
    };
    AlterUserScramCredentialsResponse {
        throttle_time_ms: 0,
        results,
    }
}
