//! `cargo xtask codegen [--check | --print <module>]`: the Kafka protocol
//! layer is generated when mk-adapter-kafka is built (its build.rs runs
//! mk-protocol-gen over crates/mk-adapter-kafka/schema/ into `OUT_DIR`), so
//! nothing generated is committed. This command checks the schemas and
//! served.list on their own (a readable error before any compiling), checks
//! that no generated file has crept back into the tree, and prints one
//! generated module formatted by rustfmt for reading (`--print produce`,
//! `--print served`, `--print mod` for the table, `--print samples`).
//! `cargo xtask test` runs `--check` first.

use mk_protocol_gen::Generated;
use std::path::Path;
use std::process::{Command, Stdio};

const CRATE: &str = "crates/mk-adapter-kafka";

/// Where the generated files used to be committed; they must stay gone.
const NO_LONGER_COMMITTED: &[&str] = &["src/messages/served.rs", "tests/generated"];

pub fn run(args: &[String]) -> Result<(), String> {
    let usage = "usage: cargo xtask codegen [--check | --print <module>]";
    let print = match args {
        [] => None,
        [a] if a == "--check" => None,
        [a, m] if a == "--print" => Some(m.as_str()),
        _ => return Err(usage.into()),
    };
    let schema = Path::new(CRATE).join("schema");
    let files = mk_protocol_gen::generate(&schema, &|g| format!("pub mod {};", g.name))?;
    if let Some(name) = print {
        let g = files.iter().find(|g| g.name == name).ok_or_else(|| {
            let names: Vec<&str> = files.iter().map(|g| g.name.as_str()).collect();
            format!(
                "no generated module `{name}`; there are: {}",
                names.join(", ")
            )
        })?;
        print!("{}", rustfmt(&g.source)?);
        return Ok(());
    }
    let committed = committed_output(&files);
    if !committed.is_empty() {
        return Err(format!(
            "generated code is built into OUT_DIR, not committed; remove: {}",
            committed.join(", ")
        ));
    }
    println!(
        "xtask: codegen: the schemas and served.list make {} modules (generated at build time)",
        files.len()
    );
    Ok(())
}

/// Generated files found in the source tree.
fn committed_output(files: &[Generated]) -> Vec<String> {
    let messages = Path::new(CRATE).join("src").join("messages");
    let mut paths: Vec<_> = files
        .iter()
        .filter(|g| g.name != "mod" && g.name != "samples")
        .map(|g| messages.join(format!("{}.rs", g.name)))
        .collect();
    paths.extend(NO_LONGER_COMMITTED.iter().map(|p| Path::new(CRATE).join(p)));
    paths.sort();
    paths.dedup();
    paths
        .into_iter()
        .filter(|p| p.exists())
        .map(|p| p.display().to_string())
        .collect()
}

/// Formats Rust source with the toolchain's rustfmt, as `cargo fmt` would.
fn rustfmt(src: &str) -> Result<String, String> {
    use std::io::Write;
    let mut child = Command::new("rustfmt")
        .args(["--edition", "2024", "--emit", "stdout"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run rustfmt: {e}"))?;
    let mut stdin = child.stdin.take().ok_or("rustfmt has no stdin")?;
    let input = src.to_string();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child
        .wait_with_output()
        .map_err(|e| format!("rustfmt failed: {e}"))?;
    let _ = writer.join();
    if !out.status.success() {
        return Err(format!(
            "rustfmt refused generated code: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    String::from_utf8(out.stdout).map_err(|e| format!("rustfmt wrote non-UTF-8: {e}"))
}
