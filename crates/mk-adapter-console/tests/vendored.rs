//! The vendored uPlot files are exactly the ones VENDOR.md names: each
//! file's SHA-256 is checked against the note, so an edited or swapped
//! file cannot pass for the published package.

use sha2::{Digest, Sha256};
use std::path::Path;

#[test]
fn every_vendored_file_matches_the_hash_in_its_note() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/vendor/uplot");
    let note = std::fs::read_to_string(dir.join("VENDOR.md")).unwrap();
    assert!(
        note.contains("`uplot` version 1.6.32"),
        "the note names the version"
    );
    let mut checked = Vec::new();
    for line in note
        .lines()
        .filter(|l| l.starts_with("- `") && l.contains("`: `"))
    {
        let mut parts = line.split('`');
        let (file, hash) = (parts.nth(1).unwrap(), parts.nth(1).unwrap());
        let bytes = std::fs::read(dir.join(file)).unwrap();
        let actual = hex(&Sha256::digest(&bytes));
        assert_eq!(actual, hash, "{file} differs from the published package");
        checked.push(file.to_string());
    }
    checked.sort();
    assert_eq!(checked, ["LICENSE", "uPlot.iife.min.js", "uPlot.min.css"]);
    let mut present: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n != "VENDOR.md")
        .collect();
    present.sort();
    assert_eq!(present, checked, "every vendored file is in the note");
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
