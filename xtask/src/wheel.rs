//! The Python wheel `mk_server` (python/: the `mk_server` package, its
//! pytest plugin and README) with the release `mk-server` binary in the
//! wheel's scripts, as maturin's `bindings = "bin"` lays it out, so pip
//! puts it on the environment's PATH. It is written here from the same
//! build as the tarball instead of by maturin, which would build the
//! workspace a second time.
//!
//! [`test`] is the user's view: a fresh venv under the target directory,
//! the wheel and the pinned clients of python/tests/requirements.txt
//! installed into it, and python/tests run with pytest and nothing else.

use base64::Engine;
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

const NAME: &str = "mk_server";
const SOURCES: &str = "python/mk_server";
const README: &str = "python/README.md";
const TESTS: &str = "python/tests";
const REQUIREMENTS: &str = "python/tests/requirements.txt";
const SUMMARY: &str =
    "The MiniKafka broker (the mk-server binary) and pytest fixtures that run it for tests";

/// Writes `mk_server-<version>-py3-none-<platform>.whl` into `out_dir`.
pub fn build(binary: &Path, version: &str, out_dir: &Path) -> Result<PathBuf, String> {
    let tag = format!("py3-none-{}", platform_tag()?);
    let path = out_dir.join(format!("{NAME}-{version}-{tag}.whl"));
    let mut files: Vec<(String, Vec<u8>, u32)> = Vec::new();
    for source in python_sources()? {
        let name = source
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        files.push((format!("{NAME}/{name}"), read(&source)?, 0o644));
    }
    files.push((
        format!("{NAME}-{version}.data/scripts/mk-server"),
        read(binary)?,
        0o755,
    ));
    let info = format!("{NAME}-{version}.dist-info");
    files.push((format!("{info}/METADATA"), metadata(version)?, 0o644));
    let wheel =
        format!("Wheel-Version: 1.0\nGenerator: cargo-xtask\nRoot-Is-Purelib: false\nTag: {tag}\n");
    files.push((format!("{info}/WHEEL"), wheel.into_bytes(), 0o644));
    let entry_points = format!("[pytest11]\n{NAME} = {NAME}.pytest_plugin\n");
    files.push((
        format!("{info}/entry_points.txt"),
        entry_points.into_bytes(),
        0o644,
    ));
    for license in ["LICENSE-MIT", "LICENSE-APACHE"] {
        files.push((
            format!("{info}/licenses/{license}"),
            read(Path::new(license))?,
            0o644,
        ));
    }
    let record = record(&files, &format!("{info}/RECORD"));
    files.push((format!("{info}/RECORD"), record.into_bytes(), 0o644));
    write_zip(&path, &files)?;
    Ok(path)
}

/// The wheel platform tag of this machine. Linux only: the binary links
/// this machine's glibc, so the honest tag is `linux_<arch>` (installable
/// here and on like machines, not a manylinux wheel for PyPI).
fn platform_tag() -> Result<String, String> {
    match std::env::consts::OS {
        "linux" => Ok(format!("linux_{}", std::env::consts::ARCH)),
        os => Err(format!("no wheel platform tag is known here for {os}")),
    }
}

fn python_sources() -> Result<Vec<PathBuf>, String> {
    let mut sources: Vec<PathBuf> = std::fs::read_dir(SOURCES)
        .map_err(|e| format!("cannot list {SOURCES}: {e}"))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "py"))
        .collect();
    sources.sort();
    if sources.is_empty() {
        return Err(format!("{SOURCES} holds no .py file"));
    }
    Ok(sources)
}

fn read(path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// Core metadata 2.1, the package README as its description.
fn metadata(version: &str) -> Result<Vec<u8>, String> {
    let readme = read(Path::new(README))?;
    let mut out = format!(
        "Metadata-Version: 2.1\nName: mk-server\nVersion: {version}\nSummary: {SUMMARY}\n\
         License: MIT OR Apache-2.0\nRequires-Python: >=3.8\nClassifier: Framework :: Pytest\n\
         Description-Content-Type: text/markdown\n\n"
    )
    .into_bytes();
    out.extend_from_slice(&readme);
    Ok(out)
}

/// RECORD: every file with its SHA-256 (urlsafe base64 without padding)
/// and size; RECORD itself without either.
fn record(files: &[(String, Vec<u8>, u32)], record_name: &str) -> String {
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let mut out = String::new();
    for (name, bytes, _) in files {
        let digest = b64.encode(Sha256::digest(bytes));
        out.push_str(&format!("{name},sha256={digest},{}\n", bytes.len()));
    }
    out.push_str(&format!("{record_name},,\n"));
    out
}

fn write_zip(path: &Path, files: &[(String, Vec<u8>, u32)]) -> Result<(), String> {
    let fail = |e: &dyn std::fmt::Display| format!("cannot write {}: {e}", path.display());
    let file = std::fs::File::create(path).map_err(|e| fail(&e))?;
    let mut zip = zip::ZipWriter::new(file);
    for (name, bytes, mode) in files {
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated)
            .unix_permissions(*mode);
        zip.start_file(name.as_str(), options)
            .map_err(|e| fail(&e))?;
        zip.write_all(bytes).map_err(|e| fail(&e))?;
    }
    zip.finish().map_err(|e| fail(&e))?;
    Ok(())
}

/// The wheel as a user's project gets it: a fresh venv, `pip install` of
/// the wheel and the pinned clients, python/tests run by pytest with the
/// plugin from the entry point and the binary from the wheel.
pub fn test(wheel: &Path) -> Result<(), String> {
    let started = Instant::now();
    check_pins_agree_with_interop()?;
    let venv = crate::interop::target_dir()?.join("wheel-venv");
    if venv.exists() {
        std::fs::remove_dir_all(&venv)
            .map_err(|e| format!("cannot remove the old {}: {e}", venv.display()))?;
    }
    crate::interop::run_quiet(
        Command::new("python3").arg("-m").arg("venv").arg(&venv),
        "python3 -m venv",
    )?;
    let python = venv.join("bin").join("python");
    crate::interop::run_quiet(
        Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
            ])
            .args(["--no-input", "--only-binary", ":all:", "-r", REQUIREMENTS])
            .arg(wheel),
        "pip install the wheel and python/tests/requirements.txt",
    )?;
    let install_s = started.elapsed().as_secs_f64();
    println!("xtask: wheel: pytest {TESTS} in {}", venv.display());
    let status = crate::interop::run_pytest(
        crate::interop::pytest(&python, TESTS, &["--import-mode=importlib", "."])
            .env_remove("MK_SERVER_BIN"),
    )?;
    println!(
        "xtask: wheel summary: venv and install {install_s:.0}s, suite {:.0}s: {}",
        started.elapsed().as_secs_f64() - install_s,
        crate::interop::outcome(status)
    );
    crate::interop::verdict("the wheel's suite", status)
}

/// Every package pinned both here and in interop/requirements.txt has the
/// same version in both.
fn check_pins_agree_with_interop() -> Result<(), String> {
    let ours = pins(&String::from_utf8_lossy(&read(Path::new(REQUIREMENTS))?));
    let interop = pins(&String::from_utf8_lossy(&read(Path::new(
        "interop/requirements.txt",
    ))?));
    let differ: Vec<String> = ours
        .iter()
        .filter_map(|(name, v)| {
            let other = interop.iter().find(|(n, _)| n == name)?;
            (other.1 != *v).then(|| format!("{name}: {v} here, {} in interop", other.1))
        })
        .collect();
    if differ.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{REQUIREMENTS} and interop/requirements.txt pin different versions: {}",
            differ.join("; ")
        ))
    }
}

/// `name==version` lines, names lowercased.
fn pins(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| l.split('#').next()?.trim().split_once("=="))
        .map(|(n, v)| (n.trim().to_lowercase(), v.trim().to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{pins, record};

    #[test]
    fn record_lines_hash_each_file_and_leave_record_itself_blank() {
        let files = vec![("a/b.py".to_string(), b"hello".to_vec(), 0o644)];
        assert_eq!(
            record(&files, "x.dist-info/RECORD"),
            "a/b.py,sha256=LPJNul-wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ,5\nx.dist-info/RECORD,,\n"
        );
    }

    #[test]
    fn pins_are_read_without_comments() {
        assert_eq!(
            pins("# c\nPytest==9.2.0  # runner\n\nfoo>=1\n"),
            vec![("pytest".to_string(), "9.2.0".to_string())]
        );
    }
}
