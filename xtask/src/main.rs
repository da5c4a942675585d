//! `cargo xtask`: every piece of project automation, in Rust.
//!
//! Subcommands: `test` (everything CI checks), `check-layers` (dependency
//! edges and the sans-IO source rules), `test-parity`, `test-snapshots`,
//! `interop` (the live interop suite with real Kafka clients),
//! `console-test` (the web console in a real browser), `dist` (the
//! release tarball and the Python wheel), `bench`, `codegen` (the Kafka
//! messages from their schemas). It changes to the workspace root first,
//! so it works from any folder.

#![allow(clippy::print_stdout, clippy::print_stderr)]

mod bench;
mod codegen;
mod console_test;
mod dist;
mod fuzz;
mod interop;
mod layers;
mod sans_io;
mod wheel;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    let root = workspace_root();
    if let Err(e) = std::env::set_current_dir(&root) {
        eprintln!("xtask: cannot enter workspace root {}: {e}", root.display());
        return ExitCode::FAILURE;
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("test") => test_all(),
        Some("check-layers") => layers::check_workspace(),
        Some("test-parity") => test_parity(),
        Some("test-snapshots") => test_snapshots(),
        Some("interop") => interop::run(&args[1..]),
        Some("console-test") => console_test::run(&args[1..]),
        Some("dist") => dist::run(&args[1..]),
        Some("bench") => bench::run(&args[1..]),
        Some("codegen") => codegen::run(&args[1..]),
        Some("fuzz") => fuzz::run(&args[1..]),
        _ => {
            eprintln!(
                "usage: cargo xtask <command>\n\n\
                 commands:\n  \
                 test            fmt check, clippy -D warnings, check-layers, every workspace test, interop,\n                  the release tarball unpacked and run, the Python wheel's pytest suite\n  \
                 check-layers    fail on any crate dependency not in the layer diagram, or on the\n                  wall clock, sleeps or threads in the sources below mk-cluster\n  \
                 test-parity     the Direct-vs-JSON-TCP parity corpus\n  \
                 test-snapshots  insta snapshots of byte layouts and wire shapes\n  \
                 interop         live interop suite: real mk-server, pinned kcat/confluent-kafka/kafka-python/aiokafka/kafkajs\n  \
                 console-test    the web console in headless Chromium (selenium), screenshots in target/console-screenshots\n  \
                 dist            release build: target/dist/mk-server-<version>-<target>.tar.gz, its .sha256, the Python\n                  wheel; --test also runs the checks `test` runs on them\n  \
                 bench           release-build benchmarks; prints JSON lines, writes docs/benchmarks.md\n  \
                 codegen         the Kafka messages from crates/mk-adapter-kafka/schema/ (--check: fail if stale)\n  \
                 fuzz            every cargo-fuzz target for a bounded time (--seconds N, default 20)"
            );
            Err("no command given".to_string())
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::FAILURE
        }
    }
}

pub(crate) fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// Runs `cargo <args>` and fails with a readable message if it fails.
pub(crate) fn cargo(args: &[&str]) -> Result<(), String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    println!("xtask: cargo {}", args.join(" "));
    let status = Command::new(&cargo)
        .args(args)
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`cargo {}` failed ({status})", args.join(" ")))
    }
}

fn test_all() -> Result<(), String> {
    codegen::run(&["--check".to_string()])?;
    cargo(&["fmt", "--all", "--", "--check"])?;
    cargo(&[
        "clippy",
        "--workspace",
        "--all-targets",
        "--locked",
        "--",
        "-D",
        "warnings",
    ])?;
    layers::check_workspace()?;
    cargo(&["test", "--workspace", "--locked"])?;
    // Request and batch decoding under libFuzzer, for a bounded time.
    fuzz::fuzz_all(fuzz::TEST_SECONDS)?;
    // The release build (minutes) runs in the background, at a lower
    // priority, while the interop suite mostly waits on its clients; it
    // starts once the debug binary the suite runs is built, since the two
    // builds share cargo's lock on the target directory.
    let built = interop::build()?;
    let server = built.server().to_path_buf();
    let release = dist::start_build()?;
    let interop = interop::suite(built, &[]);
    // The console's browser scenarios run on the same debug binary, still
    // beside the release build.
    let console = console_test::suite(&server, &[]);
    let binary = release.finish();
    interop?;
    console?;
    let dist = dist::package(&binary?)?;
    dist::check(&dist)?;
    wheel::test(&dist.wheel)?;
    println!("xtask: all checks passed");
    Ok(())
}

fn test_parity() -> Result<(), String> {
    cargo(&[
        "test",
        "--locked",
        "-p",
        "mk-acceptance",
        "--test",
        "parity",
    ])
}

fn test_snapshots() -> Result<(), String> {
    cargo(&["test", "--locked", "--workspace", "snapshot"])
}
