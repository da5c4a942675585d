//! The version `mk-server --version` prints: the package version and, when
//! the build runs in a git checkout with git on PATH, the commit it was
//! built from. Without git or without `.git` (a source archive, a copy
//! without history) the commit is left out; the build never fails for it.

// Cargo reads a build script's instructions from its stdout.
#![allow(clippy::print_stdout)]

use std::path::Path;
use std::process::Command;

fn main() {
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    let full = match git(&["rev-parse", "--short=12", "HEAD"]) {
        Some(commit) => format!("{version} (commit {commit})"),
        None => version,
    };
    println!("cargo:rustc-env=MK_VERSION={full}");
    println!("cargo:rerun-if-changed=build.rs");
    // Build again when HEAD moves: a checkout changes HEAD, a commit the
    // branch it points to (a loose ref, or packed-refs once packed).
    let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
    watched.extend(git(&["symbolic-ref", "-q", "HEAD"]));
    for name in watched {
        if let Some(path) = git(&["rev-parse", "--git-path", &name])
            && Path::new(&path).exists()
        {
            println!("cargo:rerun-if-changed={path}");
        }
    }
}

/// The trimmed output of a successful `git` command, if any.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}
