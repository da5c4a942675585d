//! AlterUserScramCredentials' rules (Kafka's `ScramControlManager`),
//! applied to the security store's data by `Security::alter_scram`.

use crate::error::ClusterError;
use crate::security::{ScramDeletion, ScramUpsertion};
use crate::security_store::SecurityData;
use mk_auth::{ScramCredential, ScramMechanism};

type Answers = Vec<(String, Result<(), ClusterError>)>;

/// Applies the changes user by user; a user with any refused change keeps
/// its credentials as they were.
pub(crate) fn alter(
    data: &mut SecurityData,
    deletions: &[ScramDeletion],
    upsertions: &[ScramUpsertion],
) -> Answers {
    let mut users: Vec<&str> = Vec::new();
    for u in deletions
        .iter()
        .map(|d| d.user.as_str())
        .chain(upsertions.iter().map(|u| u.user.as_str()))
    {
        if !users.contains(&u) {
            users.push(u);
        }
    }
    users
        .into_iter()
        .map(|user| {
            let dels: Vec<&ScramDeletion> = deletions.iter().filter(|d| d.user == user).collect();
            let ups: Vec<&ScramUpsertion> = upsertions.iter().filter(|u| u.user == user).collect();
            let answer = apply_user(data, user, &dels, &ups);
            (user.to_string(), answer)
        })
        .collect()
}

fn mechanism(code: i8) -> Result<ScramMechanism, ClusterError> {
    ScramMechanism::from_code(code).ok_or_else(|| {
        ClusterError::Auth(mk_auth::AuthError::UnsupportedMechanism(format!(
            "SCRAM mechanism code {code}"
        )))
    })
}

fn apply_user(
    data: &mut SecurityData,
    user: &str,
    dels: &[&ScramDeletion],
    ups: &[&ScramUpsertion],
) -> Result<(), ClusterError> {
    if user.is_empty() {
        return Err(ClusterError::Auth(
            mk_auth::AuthError::UnacceptableCredential("the user name is empty".into()),
        ));
    }
    let mut seen = Vec::new();
    for m in dels
        .iter()
        .map(|d| d.mechanism)
        .chain(ups.iter().map(|u| u.mechanism))
    {
        let m = mechanism(m)?;
        if seen.contains(&m) {
            return Err(ClusterError::DuplicateResource(format!(
                "more than one change of {} for user {user:?}",
                m.name()
            )));
        }
        seen.push(m);
    }
    let mut next = data.scram.clone();
    for d in dels {
        let m = mechanism(d.mechanism)?;
        if next.remove(&(user.to_string(), m)).is_none() {
            return Err(ClusterError::ResourceNotFound(format!(
                "attempt to delete a user credential that does not exist: {user:?} {}",
                m.name()
            )));
        }
    }
    for u in ups {
        let m = mechanism(u.mechanism)?;
        let iterations = u32::try_from(u.iterations).map_err(|_| {
            mk_auth::AuthError::UnacceptableCredential(format!(
                "iterations must be positive, got {}",
                u.iterations
            ))
        })?;
        let c = ScramCredential::from_salted_password(m, &u.salted_password, &u.salt, iterations)?;
        next.insert((user.to_string(), m), c);
    }
    data.scram = next;
    Ok(())
}
