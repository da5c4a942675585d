//! docs/json-protocol.md cannot drift from the server: every example
//! exchange in it (a `> request` line followed by its `< response` line in
//! a code block) must appear byte for byte in a wire snapshot of this
//! crate's suite (which records what a live server answers), and every
//! operation of `Operation::ALL` must have its own section.

use mk_adapter_jsontcp::Operation;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn doc() -> String {
    std::fs::read_to_string(root().join("docs/json-protocol.md")).unwrap()
}

/// Every recorded `> request\n< response` pair of the snapshot files.
fn snapshot_text() -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots");
    let mut all = String::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "snap") {
            all.push_str(&std::fs::read_to_string(path).unwrap());
            all.push('\n');
        }
    }
    all
}

/// The example pairs of the doc: inside fenced blocks, a `> ` line and the
/// `< ` line right after it.
fn examples(doc: &str) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    let mut in_block = false;
    let lines: Vec<&str> = doc.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        if line.starts_with("```") {
            in_block = !in_block;
            continue;
        }
        if in_block && line.starts_with("> ") {
            let answer = lines.get(i + 1).copied().unwrap_or_default();
            assert!(
                answer.starts_with("< "),
                "docs/json-protocol.md line {}: a request without its response",
                i + 1
            );
            pairs.push((line.to_string(), answer.to_string()));
        }
    }
    pairs
}

#[test]
fn every_example_of_the_json_protocol_doc_is_a_recorded_exchange() {
    let doc = doc();
    let recorded = snapshot_text();
    let pairs = examples(&doc);
    assert!(pairs.len() > 60, "only {} examples", pairs.len());
    let missing: Vec<String> = pairs
        .iter()
        .filter(|(request, response)| !recorded.contains(&format!("{request}\n{response}\n")))
        .map(|(request, response)| format!("{request}\n{response}"))
        .collect();
    assert!(
        missing.is_empty(),
        "examples of docs/json-protocol.md that no wire snapshot recorded:\n{}",
        missing.join("\n\n")
    );
}

#[test]
fn every_operation_has_a_section_with_an_example() {
    let doc = doc();
    let pairs = examples(&doc);
    let mut missing = Vec::new();
    for op in Operation::ALL {
        let heading = format!("### `{}`", op.name());
        let Some(at) = doc.find(&heading) else {
            missing.push(format!("{}: no section {heading}", op.name()));
            continue;
        };
        let section = &doc[at + heading.len()..];
        let section = &section[..section.find("\n#").unwrap_or(section.len())];
        let op_field = format!("\"operation\":\"{}\"", op.name());
        if !section
            .lines()
            .any(|l| l.starts_with("> ") && l.contains(&op_field))
        {
            missing.push(format!("{}: its section has no example", op.name()));
        }
    }
    assert!(missing.is_empty(), "{missing:#?}");
    // The check above is only as good as the pair parser: it must see the
    // examples the doc has.
    assert!(
        pairs
            .iter()
            .any(|(r, _)| r.contains("\"operation\":\"produce\""))
    );
}

#[test]
fn the_example_parser_pairs_requests_with_their_responses() {
    let doc = "text\n```text\n> {\"a\":1}\n< {\"ok\":true}\n```\n> outside\n";
    assert_eq!(
        examples(doc),
        vec![("> {\"a\":1}".to_string(), "< {\"ok\":true}".to_string())]
    );
}
