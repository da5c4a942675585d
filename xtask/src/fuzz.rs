//! `cargo xtask fuzz [--seconds N]`: every cargo-fuzz target of the
//! workspace, each for a bounded time (default 20 s, or `MK_FUZZ_SECONDS`),
//! from the corpus it has grown so far. `cargo xtask test` runs them for
//! [`TEST_SECONDS`] each after the workspace tests.
//!
//! The targets build with the pinned stable toolchain: cargo-fuzz needs a
//! nightly compiler only for its sanitizers, and `--sanitizer none` keeps
//! libFuzzer's coverage-guided mutation (the sanitizer-coverage passes are
//! stable codegen options) while the fuzzed crates keep their overflow
//! checks and debug assertions. What a sanitizer would add — finding memory
//! errors — matters little for crates without `unsafe`. cargo-fuzz itself is
//! installed from crates.io at a pinned version into `target/tools` the
//! first time, like the other tools the checks need. The builds share
//! `target/fuzz`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Every fuzz target: the crate whose `fuzz/` holds it, and its name.
pub const TARGETS: &[(&str, &str)] = &[
    ("crates/mk-log", "decode_batch"),
    ("crates/mk-adapter-kafka", "decode_request"),
    ("crates/mk-adapter-kafka", "decode_records"),
];

/// How long `cargo xtask test` fuzzes each target.
pub const TEST_SECONDS: u32 = 15;

/// The cargo-fuzz release that is installed when the machine has none.
const CARGO_FUZZ_VERSION: &str = "0.13.2";

pub fn run(args: &[String]) -> Result<(), String> {
    let seconds = match args {
        [flag, n] if flag == "--seconds" => n
            .parse::<u32>()
            .map_err(|e| format!("--seconds {n}: {e}"))?,
        [] => std::env::var("MK_FUZZ_SECONDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(20),
        _ => return Err("usage: cargo xtask fuzz [--seconds N]".into()),
    };
    fuzz_all(seconds)
}

/// Runs every target for `seconds`; the first crash fails the run and
/// names where libFuzzer left the input.
pub fn fuzz_all(seconds: u32) -> Result<(), String> {
    let root = crate::workspace_root();
    let cargo_fuzz = cargo_fuzz(&root)?;
    let target_dir = root.join("target").join("fuzz");
    for (krate, target) in TARGETS {
        println!("xtask: fuzzing {krate} {target} for {seconds} s");
        let status = Command::new(&cargo_fuzz)
            .current_dir(root.join(krate))
            .args(["fuzz", "run", target, "--sanitizer", "none", "--target-dir"])
            .arg(&target_dir)
            .args(["--", &format!("-max_total_time={seconds}")])
            .env_remove("CARGO")
            .env_remove("RUSTUP_TOOLCHAIN")
            .status()
            .map_err(|e| format!("cannot run cargo fuzz: {e}"))?;
        if !status.success() {
            return Err(format!(
                "fuzz target {target} of {krate} failed ({status}); the crashing input is under {krate}/fuzz/artifacts/{target}/"
            ));
        }
    }
    Ok(())
}

/// The cargo-fuzz binary: one already on the machine, else the pinned
/// release installed once into `target/tools`.
fn cargo_fuzz(root: &Path) -> Result<PathBuf, String> {
    let on_path = Command::new("cargo-fuzz").arg("--version").output();
    if on_path.is_ok_and(|o| {
        o.status.success() && String::from_utf8_lossy(&o.stdout).contains(CARGO_FUZZ_VERSION)
    }) {
        return Ok(PathBuf::from("cargo-fuzz"));
    }
    let tools = root.join("target").join("tools");
    let installed = tools.join("bin").join("cargo-fuzz");
    if !installed.exists() {
        println!(
            "xtask: installing cargo-fuzz {CARGO_FUZZ_VERSION} into {}",
            tools.display()
        );
        let status = Command::new("cargo")
            .args([
                "install",
                "cargo-fuzz",
                "--locked",
                "--version",
                CARGO_FUZZ_VERSION,
                "--root",
            ])
            .arg(&tools)
            .env_remove("CARGO_TARGET_DIR")
            .status()
            .map_err(|e| format!("cannot run cargo install: {e}"))?;
        if !status.success() {
            return Err(format!(
                "cargo install cargo-fuzz {CARGO_FUZZ_VERSION} failed ({status})"
            ));
        }
    }
    Ok(installed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fuzz_target_of_the_workspace_is_run() {
        let root = crate::workspace_root();
        let mut found = Vec::new();
        for entry in std::fs::read_dir(root.join("crates")).unwrap() {
            let krate = entry.unwrap().path();
            let Ok(targets) = std::fs::read_dir(krate.join("fuzz").join("fuzz_targets")) else {
                continue;
            };
            for t in targets {
                let path = t.unwrap().path();
                let name = path.file_stem().unwrap().to_string_lossy().into_owned();
                let krate = krate
                    .strip_prefix(&root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                found.push((krate, name));
            }
        }
        found.sort();
        let mut listed: Vec<_> = TARGETS
            .iter()
            .map(|(k, t)| (k.to_string(), t.to_string()))
            .collect();
        listed.sort();
        assert_eq!(found, listed);
    }
}
