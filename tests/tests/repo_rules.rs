//! Repository rules that keep the docs true: every crate is on the chapter
//! map and in the architecture codemap, every test the behavior matrix names
//! exists, and the README shows the two commands.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn crates() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root().join("crates"))
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.path().join("Cargo.toml").exists())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn mentions(doc: &str, word: &str) -> bool {
    doc.match_indices(word).any(|(i, _)| {
        let before = doc[..i].chars().next_back();
        let after = doc[i + word.len()..].chars().next();
        let boundary =
            |c: Option<char>| c.is_none_or(|c| !(c.is_alphanumeric() || c == '-' || c == '_'));
        boundary(before) && boundary(after)
    })
}

#[test]
fn every_crate_is_on_the_chapter_map() {
    let doc = read("docs/chapters.md");
    let missing: Vec<String> = crates()
        .into_iter()
        .filter(|c| !mentions(&doc, c))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/chapters.md does not mention {missing:?}"
    );
    assert!(
        crates().len() >= 9,
        "the layer diagram has at least nine crates"
    );
}

#[test]
fn every_crate_is_in_the_architecture_codemap() {
    let doc = read("docs/ARCHITECTURE.md");
    let missing: Vec<String> = crates()
        .into_iter()
        .filter(|c| !mentions(&doc, c))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/ARCHITECTURE.md does not mention {missing:?}"
    );
}

fn rust_sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            if name != "target" && !name.starts_with('.') {
                rust_sources(&path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_test_named_in_the_behavior_matrix_exists() {
    let doc = read("docs/behavior-matrix.md");
    let mut sources = Vec::new();
    for dir in ["crates", "tests", "xtask"] {
        rust_sources(&root().join(dir), &mut sources);
    }
    let code: String = sources
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    let mut named = 0;
    let mut missing = Vec::new();
    for line in doc.lines().filter(|l| l.starts_with('|')) {
        let Some(tests) = line.trim_end_matches('|').rsplit('|').next() else {
            continue;
        };
        for quoted in tests.split('`').skip(1).step_by(2) {
            let Some(name) = quoted.rsplit("::").next() else {
                continue;
            };
            if !quoted.contains("::") {
                continue;
            }
            named += 1;
            if !code.contains(&format!("fn {name}(")) {
                missing.push(quoted.to_string());
            }
        }
    }
    assert!(named > 20, "the matrix names only {named} tests");
    assert!(
        missing.is_empty(),
        "behavior-matrix.md names tests that do not exist: {missing:#?}"
    );
}

#[test]
fn readme_shows_the_two_commands() {
    let readme = read("README.md");
    assert!(readme.contains("cargo run -p mk-server"));
    assert!(readme.contains("cargo xtask test"));
    assert!(read(".ci/run").contains("cargo xtask test"));
}
