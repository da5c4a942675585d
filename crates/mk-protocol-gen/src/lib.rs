//! The Kafka protocol layer's generator: reads the schema files of
//! crates/mk-adapter-kafka/schema/ (one per API, our own format, described
//! in that folder's README.md) and `served.list` beside them, and writes the
//! Rust made of them — one module per API (structs and their codecs), the
//! table of every schema (`messages/mod.rs`), the served APIs' table and
//! router (`messages/served.rs`) and the tests' sample values
//! (`samples.rs`).
//!
//! mk-adapter-kafka's build.rs runs it into `OUT_DIR` ([`write_out_dir`]),
//! as Kafka's build generates its message classes: the generated code is
//! not committed. `cargo xtask codegen --print <module>` shows one module as
//! a formatted source file ([`Generated::source`]).
//!
//! A build-time crate: no dependencies, no I/O but reading the schema
//! folder and writing the output folder.

mod rust;
mod samples;
mod schema;
mod served;
mod table;

use std::path::Path;

/// One generated module: its name (`produce`, `mod`, `served`,
/// `samples`) and its text as a stand-alone source file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generated {
    pub name: String,
    pub source: String,
}

impl Generated {
    /// The leading inner doc comments and inner attributes (`//!`,
    /// `#![...]`) as outer ones (`///`, `#[...]`), blank lines left out, for
    /// the declaration of a module whose body is `include!`d (an included
    /// file cannot hold inner attributes), and the body after them.
    pub fn split(&self) -> (String, String) {
        let mut head = String::new();
        let mut depth = 0i32;
        let mut lines = self.source.lines().peekable();
        while let Some(line) = lines.peek() {
            let t = line.trim_start();
            let outer = if depth > 0 {
                t.to_string()
            } else if let Some(rest) = t.strip_prefix("//!") {
                format!("///{rest}")
            } else if let Some(rest) = t.strip_prefix("#![") {
                format!("#[{rest}")
            } else if t.is_empty() || (t.starts_with("//") && !t.starts_with("///")) {
                t.to_string()
            } else {
                break;
            };
            if depth > 0 || t.starts_with("#![") {
                depth += bracket_balance(t);
            }
            // A blank line between a doc comment and its item is a lint.
            if !outer.is_empty() {
                head.push_str(&outer);
                head.push('\n');
            }
            lines.next();
        }
        let body: Vec<&str> = lines.collect();
        (head, body.join("\n") + "\n")
    }
}

fn bracket_balance(line: &str) -> i32 {
    line.chars().fold(0, |n, c| match c {
        '[' | '(' => n + 1,
        ']' | ')' => n - 1,
        _ => n,
    })
}

/// Every schema file of `dir`, parsed and checked, and `served.list`:
/// every generated module, the table (`mod`) first, then `served`, one
/// per API by key, and the test samples last. `decl` writes the table's
/// declaration of each submodule.
pub fn generate(dir: &Path, decl: &dyn Fn(&Generated) -> String) -> Result<Vec<Generated>, String> {
    let apis = load(dir)?;
    let list = dir.join("served.list");
    let src = std::fs::read_to_string(&list)
        .map_err(|e| format!("cannot read {}: {e}", list.display()))?;
    let served = served::parse(&src, &apis)?;
    let one = |name: &str, source: String| Generated {
        name: name.to_string(),
        source,
    };
    let mut subs = vec![one("served", served::module(&apis, &served))];
    subs.extend(apis.iter().map(|a| one(&a.module, rust::module(a))));
    let decls: Vec<String> = subs.iter().map(decl).collect();
    let mut out = vec![one("mod", table::module(&apis, &decls))];
    out.extend(subs);
    out.push(one("samples", samples::module(&apis)));
    Ok(out)
}

/// What the build writes into `out`: `messages/mod.rs` (the table, each
/// submodule declared with its docs and attributes and its body included
/// from `messages/<name>.rs`), the bodies, and `samples_mod.rs` declaring
/// `mod samples` the same way (its body in `samples.rs`), for the tests to
/// include. Files already holding their text are left untouched.
pub fn write_out_dir(schema_dir: &Path, out: &Path) -> Result<(), String> {
    let include = |g: &Generated, vis: &str, file: &str| {
        format!(
            "{}{vis}mod {} {{ include!(concat!(env!(\"OUT_DIR\"), \"/{file}\")); }}\n",
            g.split().0,
            g.name
        )
    };
    let decl = |g: &Generated| include(g, "pub ", &format!("messages/{}.rs", g.name));
    let messages = out.join("messages");
    std::fs::create_dir_all(&messages)
        .map_err(|e| format!("cannot create {}: {e}", messages.display()))?;
    for g in generate(schema_dir, &decl)? {
        let body = g.split().1;
        if g.name == "samples" {
            write_if_changed(&out.join("samples_mod.rs"), &include(&g, "", "samples.rs"))?;
            write_if_changed(&out.join("samples.rs"), &body)?;
        } else {
            write_if_changed(&messages.join(format!("{}.rs", g.name)), &body)?;
        }
    }
    Ok(())
}

fn write_if_changed(path: &Path, text: &str) -> Result<(), String> {
    if std::fs::read_to_string(path).ok().as_deref() == Some(text) {
        return Ok(());
    }
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_turns_inner_docs_and_attributes_into_outer_ones() {
        let g = Generated {
            name: "x".into(),
            source: "//! Doc.\n//!\n\n// Why.\n#![allow(\n    a,\n    b\n)]\n\nuse y;\n/// Item.\nfn f() {}\n"
                .into(),
        };
        let (head, body) = g.split();
        assert_eq!(head, "/// Doc.\n///\n// Why.\n#[allow(\na,\nb\n)]\n");
        assert_eq!(body, "use y;\n/// Item.\nfn f() {}\n");
    }

    #[test]
    fn the_schema_folder_generates_every_module() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../mk-adapter-kafka/schema");
        let files = generate(&dir, &|g| format!("pub mod {};", g.name)).unwrap();
        let names: Vec<&str> = files.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(names[..2], ["mod", "served"]);
        assert_eq!(names.last(), Some(&"samples"));
        assert!(names.contains(&"produce") && names.contains(&"fetch"));
        assert!(files[0].source.contains("pub mod produce;"));
        for g in &files {
            let (head, body) = g.split();
            assert!(!body.contains("//!") && !body.contains("#!["), "{}", g.name);
            assert!(head.contains("/// "), "{} has its docs", g.name);
        }
    }
}
