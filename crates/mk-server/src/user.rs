//! The `user` commands: the SCRAM users SASL listeners check, like
//! `kafka-configs --entity-type users`. `add` sets a credential from a
//! password, `delete` removes one or all of a user's credentials, `list`
//! shows each user's mechanisms and iteration counts. The password is read
//! from a file or stdin (never the command line, where `ps` and the shell
//! history would show it) and sent once to the broker over its loopback
//! JSON-TCP listener; the broker salts and hashes it. Nothing printed here
//! carries a password, a salt or a key.

use crate::commands::{CmdError, CmdResult, say, usage};
use mk_adapter_jsontcp::{JsonTcpClient, Password};
use mk_cluster::ScramMechanism;
use serde_json::json;
use std::io::{BufRead, IsTerminal};
use std::path::Path;

/// Where `user add` reads the password.
#[derive(Debug, Clone, Copy)]
pub enum PasswordSource<'a> {
    /// The first line of a file.
    File(&'a Path),
    /// The first line of stdin; typed twice, unseen, on a terminal.
    Stdin,
}

/// A `--mechanism` value.
pub fn parse_mechanism(name: &str) -> Result<ScramMechanism, String> {
    ScramMechanism::from_name(name)
        .ok_or_else(|| format!("must be SCRAM-SHA-256 or SCRAM-SHA-512, got {name:?}"))
}

/// The first line of `text` without its line ending; none when `text` is
/// empty or the line is.
fn first_line(text: &str) -> Option<&str> {
    let line = text.split('\n').next().unwrap_or("");
    let line = line.strip_suffix('\r').unwrap_or(line);
    (!line.is_empty()).then_some(line)
}

/// Reads the password before anything is sent. An empty one is a usage
/// error here (the broker refuses it too).
pub fn read_password(source: PasswordSource<'_>) -> Result<Password, CmdError> {
    let text = match source {
        PasswordSource::File(path) => std::fs::read_to_string(path).map_err(|e| {
            CmdError::Failed(format!(
                "cannot read --password-file {}: {e}",
                path.display()
            ))
        })?,
        PasswordSource::Stdin if std::io::stdin().is_terminal() => return prompt_twice(),
        PasswordSource::Stdin => {
            let mut line = String::new();
            std::io::stdin().lock().read_line(&mut line).map_err(|e| {
                CmdError::Failed(format!("cannot read the password from stdin: {e}"))
            })?;
            line
        }
    };
    match first_line(&text) {
        Some(p) => Ok(Password::new(p)),
        None => usage("the password is empty (it is the first line of stdin or --password-file)"),
    }
}

/// On a terminal: the password twice, with echo off.
fn prompt_twice() -> Result<Password, CmdError> {
    let first = prompt("Password: ")?;
    let again = prompt("Retype the password: ")?;
    if first != again {
        return usage("the two passwords differ");
    }
    match first_line(&first) {
        Some(p) => Ok(Password::new(p)),
        None => usage("the password is empty"),
    }
}

/// One line from the terminal with echo off (restored afterwards, also
/// when reading fails).
fn prompt(text: &str) -> Result<String, CmdError> {
    use rustix::termios::{LocalModes, OptionalActions, tcgetattr, tcsetattr};
    let failed = |e: std::io::Error| CmdError::Failed(format!("cannot read the password: {e}"));
    let stdin = std::io::stdin();
    let saved = tcgetattr(&stdin).map_err(|e| failed(e.into()))?;
    let mut quiet = saved.clone();
    quiet.local_modes.remove(LocalModes::ECHO);
    eprint!("{text}");
    tcsetattr(&stdin, OptionalActions::Now, &quiet).map_err(|e| failed(e.into()))?;
    let mut line = String::new();
    let read = stdin.lock().read_line(&mut line);
    let restored = tcsetattr(&stdin, OptionalActions::Now, &saved);
    eprintln!();
    read.map_err(failed)?;
    restored.map_err(|e| failed(e.into()))?;
    Ok(line)
}

/// `user add`: one credential per mechanism asked for.
pub async fn user_add(
    c: &mut JsonTcpClient,
    user: &str,
    mechanisms: &[ScramMechanism],
    password: Password,
    iterations: Option<u32>,
    as_json: bool,
) -> CmdResult {
    for &m in mechanisms {
        let stored = c
            .upsert_scram_credential(user, m, password.clone(), iterations)
            .await?;
        if as_json {
            say!(
                "{}",
                json!({"user": user, "mechanism": m.name(), "iterations": stored})
            );
        } else {
            say!(
                "user {user}: {} credential set ({stored} iterations)",
                m.name()
            );
        }
    }
    Ok(())
}

/// `user delete`: one mechanism, or every credential of the user.
pub async fn user_delete(
    c: &mut JsonTcpClient,
    user: &str,
    mechanism: Option<ScramMechanism>,
    as_json: bool,
) -> CmdResult {
    let deleted = c.delete_scram_credential(user, mechanism).await?;
    let names: Vec<&str> = deleted.iter().map(|m| m.name()).collect();
    if as_json {
        say!("{}", json!({"user": user, "deleted": names}));
    } else {
        say!("user {user}: deleted {}", names.join(", "));
    }
    Ok(())
}

/// `user list`: every SCRAM user with its mechanisms and iteration counts.
pub async fn user_list(c: &mut JsonTcpClient, as_json: bool) -> CmdResult {
    let users = c.describe_scram_credentials(None).await?;
    if as_json {
        let users: Vec<_> = users
            .iter()
            .map(|(user, info)| {
                let credentials: Vec<_> = info
                    .iter()
                    .map(|(m, i)| json!({"mechanism": m.name(), "iterations": i}))
                    .collect();
                json!({"user": user, "credentials": credentials})
            })
            .collect();
        say!("{}", json!({ "users": users }));
        return Ok(());
    }
    if users.is_empty() {
        say!("(no SCRAM users)");
    }
    for (user, info) in users {
        let credentials: Vec<String> = info
            .iter()
            .map(|(m, i)| format!("{} ({i} iterations)", m.name()))
            .collect();
        say!("{user}  {}", credentials.join(", "));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_password_is_the_first_line_without_its_ending() {
        assert_eq!(first_line("s3cret\n"), Some("s3cret"));
        assert_eq!(first_line("s3cret\r\nignored\n"), Some("s3cret"));
        assert_eq!(
            first_line("with spaces and , = \""),
            Some("with spaces and , = \"")
        );
        assert_eq!(first_line(""), None);
        assert_eq!(first_line("\nsecond"), None);
    }

    #[test]
    fn mechanisms_are_the_two_scram_names() {
        assert_eq!(parse_mechanism("SCRAM-SHA-512"), Ok(ScramMechanism::Sha512));
        assert_eq!(parse_mechanism("scram-sha-256"), Ok(ScramMechanism::Sha256));
        assert!(parse_mechanism("PLAIN").is_err());
    }
}
