//! `cargo xtask bench`: runs the release-build benchmark binaries, prints one
//! JSON line per figure and rewrites the table in docs/benchmarks.md.

pub fn run(_args: &[String]) -> Result<(), String> {
    Err("no benchmarks are built yet".to_string())
}
