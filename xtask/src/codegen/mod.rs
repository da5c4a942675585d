//! `cargo xtask codegen [--check]`: the Kafka protocol layer generated from
//! the schema files in crates/mk-adapter-kafka/schema/ (one per API, our
//! own format, described in that folder's README.md). It writes
//! `src/messages/` (one module per API, the table in `mod.rs`, and the
//! served APIs' table and router in `served.rs`, from `served.list`) and the
//! test support file `tests/generated/samples.rs`, all formatted by
//! rustfmt; with `--check` it writes nothing and fails if any of them is
//! not what the schemas make (`cargo xtask test` runs the check first).

mod rust;
mod samples;
mod schema;
mod served;
mod table;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const CRATE: &str = "crates/mk-adapter-kafka";

pub fn run(args: &[String]) -> Result<(), String> {
    let check = match args {
        [] => false,
        [a] if a == "--check" => true,
        _ => return Err("usage: cargo xtask codegen [--check]".into()),
    };
    let dir = Path::new(CRATE).join("schema");
    let apis = load(&dir)?;
    let list = dir.join("served.list");
    let src = std::fs::read_to_string(&list)
        .map_err(|e| format!("cannot read {}: {e}", list.display()))?;
    let served = served::parse(&src, &apis)?;
    let files = generate(&apis, &served)?;
    let dir = Path::new(CRATE).join("src").join("messages");
    let stale = stale_files(&dir, &files)?;
    if check {
        let mut differ: Vec<String> = files
            .iter()
            .filter(|(p, text)| std::fs::read_to_string(p).ok().as_deref() != Some(text))
            .map(|(p, _)| p.display().to_string())
            .collect();
        differ.extend(stale.iter().map(|p| p.display().to_string()));
        if !differ.is_empty() {
            return Err(format!(
                "generated Kafka messages are stale (run `cargo xtask codegen`): {}",
                differ.join(", ")
            ));
        }
        println!("xtask: codegen is up to date ({} APIs)", apis.len());
        return Ok(());
    }
    for (path, text) in &files {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        if std::fs::read_to_string(path).ok().as_deref() != Some(text) {
            std::fs::write(path, text)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        }
    }
    for p in stale {
        std::fs::remove_file(&p).map_err(|e| format!("cannot remove {}: {e}", p.display()))?;
    }
    println!("xtask: generated {} APIs", apis.len());
    Ok(())
}

/// Every schema file of `dir`, parsed and checked, by API key.
fn load(dir: &Path) -> Result<Vec<schema::Api>, String> {
    let mut apis = Vec::new();
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    for entry in entries {
        let path = entry.map_err(|e| e.to_string())?.path();
        if path.extension().is_none_or(|e| e != "schema") {
            continue;
        }
        let module = path
            .file_stem()
            .and_then(|s| s.to_str())
            .ok_or_else(|| format!("bad file name {}", path.display()))?
            .to_string();
        let src = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let api = schema::parse(&module, &src).map_err(|e| format!("{}: {e}", path.display()))?;
        apis.push(api);
    }
    apis.sort_by_key(|a| a.key);
    for w in apis.windows(2) {
        if w[0].key == w[1].key {
            return Err(format!(
                "{} and {} have the same key",
                w[0].module, w[1].module
            ));
        }
    }
    Ok(apis)
}

/// Every generated file and its formatted text.
fn generate(
    apis: &[schema::Api],
    served: &[served::Served],
) -> Result<Vec<(PathBuf, String)>, String> {
    let dir = Path::new(CRATE).join("src").join("messages");
    let mut files = vec![
        (dir.join("mod.rs"), rustfmt(&table::module(apis))?),
        (
            dir.join("served.rs"),
            rustfmt(&served::module(apis, served))?,
        ),
    ];
    for api in apis {
        let path = dir.join(format!("{}.rs", api.module));
        files.push((path, rustfmt(&rust::module(api))?));
    }
    let samples = Path::new(CRATE)
        .join("tests")
        .join("generated")
        .join("samples.rs");
    files.push((samples, rustfmt(&samples::module(apis))?));
    Ok(files)
}

/// Rust files in the generated folder that no schema makes any more.
fn stale_files(dir: &Path, files: &[(PathBuf, String)]) -> Result<Vec<PathBuf>, String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| e.to_string())?.path();
        if path.extension().is_some_and(|e| e == "rs") && !files.iter().any(|(p, _)| *p == path) {
            out.push(path);
        }
    }
    Ok(out)
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
