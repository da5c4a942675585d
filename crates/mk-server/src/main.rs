//! The MiniKafka broker binary. It will serve the JSON-TCP protocol over a
//! `BrokerCluster`, drive the background steps and offer client subcommands.
//!
//! It must never implement broker semantics itself.

use std::process::ExitCode;

#[allow(clippy::print_stderr)]
fn main() -> ExitCode {
    eprintln!(
        "mk-server: the broker is not built yet. The workspace and the mk-log crate exist; \
         the server arrives with the mk-cluster and JSON-TCP issues."
    );
    ExitCode::from(2)
}
