//! Runs one narrated lab on a temporary data directory:
//! `cargo run -p mk-labs --example lab -- leader_failure`
//! (labs: leader_failure, rebalance, divergent_tail, exactly_once; no name
//! runs them all). The same labs run as tests and as `mk-server lab <name>`.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use mk_labs::{LAB_NAMES, run_lab};
use std::process::ExitCode;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let names: Vec<String> = match std::env::args().nth(1) {
        Some(name) => vec![name],
        None => LAB_NAMES.iter().map(|s| s.to_string()).collect(),
    };
    for name in names {
        let dir = match tempfile::tempdir() {
            Ok(d) => d,
            Err(e) => {
                eprintln!("cannot create a temporary directory: {e}");
                return ExitCode::FAILURE;
            }
        };
        match run_lab(&name, dir.path()).await {
            Ok(report) => {
                println!("== lab {}", report.name);
                for step in &report.steps {
                    println!("{step}");
                }
                println!();
            }
            Err(e) => {
                eprintln!("lab {name}: {} {e}", e.code());
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}
