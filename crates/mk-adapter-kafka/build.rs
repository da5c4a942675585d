//! Generates the protocol layer from `schema/` into `OUT_DIR`, as Kafka's
//! build generates its message classes: the messages and their codecs, the
//! table of every schema, the served APIs' table and router
//! (`src/messages/mod.rs` includes them) and the tests' sample values.
//! `cargo xtask codegen --print <module>` shows one of them formatted.

use std::path::PathBuf;

fn main() -> Result<(), String> {
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR").ok_or("CARGO_MANIFEST_DIR is not set")?;
    let out = std::env::var_os("OUT_DIR").ok_or("OUT_DIR is not set")?;
    let schema = PathBuf::from(manifest).join("schema");
    // Cargo re-runs this when any file below schema/ changes (the folder
    // is watched as a whole), or when mk-protocol-gen changes.
    rerun_if_changed(&schema);
    mk_protocol_gen::write_out_dir(&schema, &PathBuf::from(out))
}

// A build script talks to Cargo through its standard output.
#[allow(clippy::print_stdout)]
fn rerun_if_changed(path: &std::path::Path) {
    println!("cargo:rerun-if-changed={}", path.display());
}
