//! The source half of the layer check: no crate below mk-cluster reads the
//! wall clock, sleeps or starts a thread in its non-test code. Time arrives
//! as `now_ms` or through the injected `Clock`; background work is a step
//! that mk-cluster drives. The dependency half (no async runtime) lives in
//! `layers.rs`.
//!
//! The scan reads each `src/**/*.rs` of those crates with comments, string
//! and character literals blanked out and every `#[cfg(test)]` item removed,
//! then looks for the words that name the forbidden things. It is a lint,
//! not a proof: a determined author can hide a thread behind a macro, but
//! an accidental `Instant::now()` or `thread::sleep` is caught.

use std::path::Path;

/// Crates that must stay synchronous and deterministic.
pub const SANS_IO: &[&str] = &[
    "mk-core",
    "mk-storage",
    "mk-log",
    "mk-replication",
    "mk-group",
    "mk-txn",
    "mk-auth",
];

/// Words that name the wall clock, sleeping or threads, and why each is
/// refused.
const FORBIDDEN: &[(&str, &str)] = &[
    ("SystemTime", "reads the wall clock; take a Clock or now_ms"),
    (
        "Instant",
        "reads the monotonic clock; take a Clock or now_ms",
    ),
    ("thread", "threads belong to mk-cluster and the server"),
    (
        "sleep",
        "waiting is a step driven from above, never a sleep",
    ),
];

/// The one exception: `SystemClock`, the real implementation of the
/// injected clock, has to read the wall clock.
const ALLOWED: &[(&str, &str, &str)] = &[("mk-core", "src/clock.rs", "SystemTime")];

/// Every forbidden word in the non-test code of one source file, as
/// readable lines (`crate/path:line: word ...`).
pub fn violations_in(crate_name: &str, rel_path: &str, source: &str) -> Vec<String> {
    let code = without_test_items(&blank_comments_and_literals(source));
    let mut out = Vec::new();
    for (n, line) in code.lines().enumerate() {
        for word in words(line) {
            let Some((_, why)) = FORBIDDEN.iter().find(|(w, _)| *w == word) else {
                continue;
            };
            if ALLOWED.contains(&(crate_name, rel_path, word)) {
                continue;
            }
            out.push(format!(
                "{crate_name}/{rel_path}:{}: `{word}` {why} (crates below mk-cluster are sans-IO)",
                n + 1
            ));
        }
    }
    out
}

/// Scans every sans-IO crate under `root/crates`.
pub fn check(root: &Path) -> Result<usize, String> {
    let mut files = 0;
    let mut bad = Vec::new();
    for name in SANS_IO {
        let dir = root.join("crates").join(name);
        let mut sources = Vec::new();
        collect_rs(&dir.join("src"), &mut sources)?;
        for path in sources {
            let source = std::fs::read_to_string(&path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            let rel = path
                .strip_prefix(&dir)
                .map_err(|e| format!("{}: {e}", path.display()))?
                .to_string_lossy()
                .replace('\\', "/");
            bad.extend(violations_in(name, &rel, &source));
            files += 1;
        }
    }
    if bad.is_empty() {
        Ok(files)
    } else {
        Err(format!(
            "check-layers found {} sans-IO violation(s):\n  {}",
            bad.len(),
            bad.join("\n  ")
        ))
    }
}

fn collect_rs(dir: &Path, out: &mut Vec<std::path::PathBuf>) -> Result<(), String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries {
        let path = entry.map_err(|e| format!("{}: {e}", dir.display()))?.path();
        if path.is_dir() {
            collect_rs(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out.sort();
    Ok(())
}

/// The identifiers of a line of blanked code.
fn words(line: &str) -> impl Iterator<Item = &str> {
    line.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
}

/// `source` with every comment, string literal and character literal
/// replaced by spaces (newlines are kept, so line numbers stay).
fn blank_comments_and_literals(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            // Block comments nest in Rust.
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
        } else if let Some(hashes) = raw_string_start(&chars, i) {
            // r"..." or r#"..."#: no escapes, ends at a quote and the hashes.
            let open = 2 + hashes;
            out.extend(std::iter::repeat_n(' ', open));
            i += open;
            while i < chars.len() {
                let closes =
                    chars[i] == '"' && (1..=hashes).all(|k| chars.get(i + k) == Some(&'#'));
                if closes {
                    out.extend(std::iter::repeat_n(' ', 1 + hashes));
                    i += 1 + hashes;
                    break;
                }
                out.push(blank(chars[i]));
                i += 1;
            }
        } else if c == '"' || c == '\'' && is_char_literal(&chars, i) {
            i = blank_quoted(&chars, i, &mut out);
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// Blanks the string or character literal whose opening quote is at
/// `start` (escapes included) and returns the index after its closing quote.
fn blank_quoted(chars: &[char], start: usize, out: &mut String) -> usize {
    let quote = chars[start];
    out.push(' ');
    let mut i = start + 1;
    while i < chars.len() && chars[i] != quote {
        // An escape hides the character after the backslash.
        let width = if chars[i] == '\\' { 2 } else { 1 };
        for c in chars.iter().skip(i).take(width) {
            out.push(if *c == '\n' { '\n' } else { ' ' });
        }
        i += width;
    }
    out.push(' ');
    i + 1
}

/// The number of `#`s if a raw string (`r"`, `r#"`, `br"`...) starts at `i`.
fn raw_string_start(chars: &[char], i: usize) -> Option<usize> {
    if chars[i] != 'r' || i > 0 && (chars[i - 1].is_alphanumeric() && chars[i - 1] != 'b') {
        return None;
    }
    let mut j = i + 1;
    while chars.get(j) == Some(&'#') {
        j += 1;
    }
    (chars.get(j) == Some(&'"')).then_some(j - i - 1)
}

/// A quote starts a character literal (`'a'`, `'\n'`), not a lifetime
/// (`'a`), when the literal closes right after its one character.
fn is_char_literal(chars: &[char], i: usize) -> bool {
    match chars.get(i + 1) {
        Some('\\') => true,
        Some(_) => chars.get(i + 2) == Some(&'\''),
        None => false,
    }
}

/// Blanked code with every item marked `#[cfg(test)]` removed: from the
/// attribute to the end of the item (its closing brace or semicolon).
fn without_test_items(code: &str) -> String {
    const MARK: &str = "#[cfg(test)]";
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find(MARK) {
        out.push_str(&rest[..at]);
        let item = &rest[at..];
        let end = item_end(item).unwrap_or(item.len());
        out.extend(
            item[..end]
                .chars()
                .map(|c| if c == '\n' { '\n' } else { ' ' }),
        );
        rest = &item[end..];
    }
    out.push_str(rest);
    out
}

/// The byte length of the item that starts at the beginning of `item`.
fn item_end(item: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in item.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            ';' if depth == 0 => return Some(i + 1),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wall_clock_sleeps_and_threads_are_reported_with_their_line() {
        let src = "use std::time::Instant;\nfn f() {\n    let t = Instant::now();\n    std::thread::sleep(d);\n}\n";
        let found: Vec<String> = violations_in("mk-log", "src/log.rs", src)
            .iter()
            .map(|v| v.split(" (").next().unwrap_or_default().to_string())
            .collect();
        assert_eq!(
            found,
            [
                "mk-log/src/log.rs:1: `Instant` reads the monotonic clock; take a Clock or now_ms",
                "mk-log/src/log.rs:3: `Instant` reads the monotonic clock; take a Clock or now_ms",
                "mk-log/src/log.rs:4: `thread` threads belong to mk-cluster and the server",
                "mk-log/src/log.rs:4: `sleep` waiting is a step driven from above, never a sleep",
            ]
        );
    }

    #[test]
    fn comments_literals_and_test_items_do_not_count() {
        let src = r##"
//! No `Instant::now()` here: time arrives as now_ms.
/* a /* nested */ SystemTime */
fn f(x: &'static str) -> char {
    let _ = "std::thread::spawn";
    let _ = r#"sleep " Instant"#;
    let _ = '"';
    let _ = b"thread";
    'x'
}
#[cfg(test)]
mod tests {
    fn g() { std::thread::sleep(std::time::Duration::ZERO); let _ = "}"; }
}
#[cfg(test)]
use std::time::SystemTime;
fn after() {}
"##;
        assert_eq!(
            violations_in("mk-txn", "src/x.rs", src),
            Vec::<String>::new()
        );
        let planted = format!("{src}fn late() {{ let _ = std::time::SystemTime::now(); }}\n");
        let bad = violations_in("mk-txn", "src/x.rs", &planted);
        assert_eq!(bad.len(), 1, "{bad:#?}");
        assert!(
            bad[0].contains("`SystemTime` reads the wall clock"),
            "{bad:#?}"
        );
    }

    #[test]
    fn only_the_system_clock_may_read_the_wall_clock() {
        let src = "fn now() -> i64 { SystemTime::now(); 0 }\n";
        assert!(violations_in("mk-core", "src/clock.rs", src).is_empty());
        assert_eq!(violations_in("mk-core", "src/tp.rs", src).len(), 1);
        assert_eq!(violations_in("mk-log", "src/clock.rs", src).len(), 1);
    }
}
