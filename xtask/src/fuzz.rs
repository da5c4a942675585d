//! `cargo xtask fuzz [--seconds N]`: every cargo-fuzz target of the
//! workspace, each for a bounded time (default 20 s, or `MK_FUZZ_SECONDS`),
//! from the corpus it has grown so far. `cargo xtask test` runs it after the
//! workspace tests. cargo-fuzz needs a nightly toolchain (`rustup toolchain
//! install nightly`, `cargo install cargo-fuzz`); without one this fails and
//! says so rather than skipping the targets. The builds share
//! `target/fuzz`.

use std::process::Command;

/// Every fuzz target: the crate whose `fuzz/` holds it, and its name.
pub const TARGETS: &[(&str, &str)] = &[
    ("crates/mk-log", "decode_batch"),
    ("crates/mk-adapter-kafka", "decode_request"),
    ("crates/mk-adapter-kafka", "decode_records"),
];

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
    let probe = Command::new("cargo")
        .args(["+nightly", "fuzz", "--version"])
        .output();
    if !probe.is_ok_and(|o| o.status.success()) {
        return Err("the fuzz targets need cargo-fuzz on a nightly toolchain: \
             `rustup toolchain install nightly` and `cargo install cargo-fuzz`"
            .into());
    }
    let root = crate::workspace_root();
    let target_dir = root.join("target").join("fuzz");
    for (krate, target) in TARGETS {
        println!("xtask: fuzzing {krate} {target} for {seconds} s");
        let status = Command::new("cargo")
            .current_dir(root.join(krate))
            .args(["+nightly", "fuzz", "run", target, "--target-dir"])
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
