//! Repository rules that keep the docs true: every crate is on the chapter
//! map and in the architecture codemap, every source file is named in its
//! crate's codemap paragraph (and every file named there exists), every test
//! the behavior matrix names exists, and the README shows the two commands.

use std::collections::BTreeMap;
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

/// Fails unless the document at `rel` mentions every crate.
fn assert_mentions_every_crate(rel: &str) {
    let doc = read(rel);
    let missing: Vec<String> = crates()
        .into_iter()
        .filter(|c| !mentions(&doc, c))
        .collect();
    assert!(missing.is_empty(), "{rel} does not mention {missing:?}");
}

#[test]
fn every_crate_is_on_the_chapter_map() {
    assert_mentions_every_crate("docs/chapters.md");
    assert!(
        crates().len() >= 9,
        "the layer diagram has at least nine crates"
    );
}

#[test]
fn every_crate_is_in_the_architecture_codemap() {
    assert_mentions_every_crate("docs/ARCHITECTURE.md");
}

/// The codemap of docs/ARCHITECTURE.md, one paragraph per `**name**`.
fn codemap_paragraphs() -> BTreeMap<String, String> {
    let doc = read("docs/ARCHITECTURE.md");
    let start = doc.find("## Codemap").expect("a Codemap section");
    let section = &doc[start..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |i| i + 3)];
    let mut out = BTreeMap::new();
    for paragraph in section.split("\n**").skip(1) {
        if let Some((name, text)) = paragraph.split_once("**") {
            out.insert(name.to_string(), text.to_string());
        }
    }
    out
}

/// The names a paragraph writes in backticks.
fn backticked(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

/// Source files of a crate relative to its `src/`, without the crate root
/// (`lib.rs`, `main.rs`), which the crate's paragraph as a whole describes.
fn module_files(krate: &str) -> Vec<String> {
    let src = root().join("crates").join(krate).join("src");
    let mut files = Vec::new();
    rust_sources(&src, &mut files);
    let mut out: Vec<String> = files
        .iter()
        .map(|p| {
            p.strip_prefix(&src)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/")
        })
        .filter(|rel| rel != "lib.rs" && rel != "main.rs")
        .collect();
    out.sort();
    out
}

#[test]
fn every_source_file_is_named_in_its_crates_codemap_paragraph() {
    let codemap = codemap_paragraphs();
    let mut missing = Vec::new();
    let mut checked = 0;
    for krate in crates() {
        let named = codemap
            .get(&krate)
            .map(|p| backticked(p))
            .unwrap_or_default();
        for file in module_files(&krate) {
            checked += 1;
            if !named.contains(&file.as_str()) {
                missing.push(format!("crates/{krate}/src/{file}"));
            }
        }
    }
    assert_none_missing(
        checked,
        50,
        &missing,
        "source files the codemap of docs/ARCHITECTURE.md does not name (in backticks, in the crate's own paragraph)",
    );
}

#[test]
fn every_file_the_codemap_names_exists() {
    let mut stale = Vec::new();
    let codemap = codemap_paragraphs();
    for krate in crates() {
        let Some(paragraph) = codemap.get(&krate) else {
            continue;
        };
        let files = module_files(&krate);
        for name in backticked(paragraph) {
            let is_source = name.ends_with(".rs") && !name.contains(' ');
            let is_root = name == "lib.rs" || name == "main.rs";
            if is_source && !is_root && !files.iter().any(|f| f == name) {
                stale.push(format!("{krate}: {name}"));
            }
        }
    }
    assert!(
        stale.is_empty(),
        "docs/ARCHITECTURE.md names files that do not exist: {stale:#?}"
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
    assert_none_missing(
        named,
        20,
        &missing,
        "tests behavior-matrix.md names that do not exist",
    );
}

/// Fails when a rule checked fewer than `min` items (it would prove
/// nothing) or found any `missing`.
fn assert_none_missing(checked: usize, min: usize, missing: &[String], what: &str) {
    assert!(checked > min, "only {checked} items checked for: {what}");
    assert!(missing.is_empty(), "{what}: {missing:#?}");
}

#[test]
fn readme_shows_the_two_commands() {
    let readme = read("README.md");
    assert!(readme.contains("cargo run -p mk-server"));
    assert!(readme.contains("cargo xtask test"));
    assert!(read(".ci/run").contains("cargo xtask test"));
}
