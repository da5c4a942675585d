//! `cargo xtask interop`: the live interop suite. Builds mk-server, installs
//! the pinned Kafka clients (a Python venv under the target directory from
//! interop/requirements.txt, interop/js/node_modules from the npm lockfile,
//! the Java client's jars and our Java driver: interop/java.rs) and the
//! applications (a second venv from interop/apps/requirements.txt), checks
//! kcat, then runs interop/tests with pytest against the real binary.
//!
//! Installs are cached: each install writes a stamp holding a hash of the
//! files it was made from and of the interpreter's version, and is redone
//! only when that hash changes. A missing tool or a failed install is an
//! error, never a skip. Arguments after `interop` go to pytest (e.g.
//! `cargo xtask interop -k kcat`).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::Instant;

mod java;

const REQUIREMENTS: &str = "interop/requirements.txt";
/// The applications' own pins (Quix Streams needs an older confluent-kafka
/// than the client suite tests, so they get a venv of their own).
const APPS_REQUIREMENTS: &str = "interop/apps/requirements.txt";
const JS_DIR: &str = "interop/js";
const STAMP: &str = ".mk-interop-stamp";
const KCAT_VERSION: &str = "Version 1.7.1 ";

pub fn run(pytest_args: &[String]) -> Result<(), String> {
    let built = build()?;
    suite(built, pytest_args)
}

/// The debug mk-server the suite runs, built.
pub struct Built {
    server: PathBuf,
    started: Instant,
    build_s: f64,
}

impl Built {
    /// The built binary.
    pub fn server(&self) -> &Path {
        &self.server
    }
}

/// Builds the debug mk-server (`cargo xtask test` then builds the release
/// binary in the background while [`suite`] runs).
pub fn build() -> Result<Built, String> {
    let started = Instant::now();
    crate::cargo(&["build", "--locked", "-p", "mk-server"])?;
    let server = target_dir()?.join("debug").join("mk-server");
    if !server.is_file() {
        return Err(format!(
            "built mk-server but {} is missing",
            server.display()
        ));
    }
    Ok(Built {
        server,
        started,
        build_s: started.elapsed().as_secs_f64(),
    })
}

/// Installs the clients and runs the suite against `built`.
pub fn suite(built: Built, pytest_args: &[String]) -> Result<(), String> {
    let Built {
        server,
        started,
        build_s,
    } = built;
    let target_dir = target_dir()?;
    let step = Instant::now();
    let venv = target_dir.join("interop-venv");
    let venv_state = ensure_venv(&venv)?;
    let apps_venv = target_dir.join("apps-venv");
    let apps_state = ensure_venv_from(&apps_venv, APPS_REQUIREMENTS)?;
    let node_state = ensure_node_modules(Path::new(JS_DIR))?;
    let java = java::ensure(&target_dir, &venv.join("bin").join("python"))?;
    let kcat = check_kcat()?;
    let install_s = step.elapsed().as_secs_f64();

    let step = Instant::now();
    println!(
        "xtask: interop: pytest interop/tests (mk-server {})",
        server.display()
    );
    let status = run_pytest(
        pytest(
            &venv.join("bin").join("python"),
            "interop",
            &["-c", "pytest.ini"],
        )
        .args(pytest_args)
        .env("MK_SERVER_BIN", &server)
        .env("MK_JAVA_CLASSPATH", &java.classpath)
        .env("MK_JAVA_ARCHIVE", &java.archive)
        .env("MK_APPS_PYTHON", apps_venv.join("bin").join("python")),
    )?;
    let suite_s = step.elapsed().as_secs_f64();

    println!(
        "xtask: interop summary: build {build_s:.0}s, clients {install_s:.0}s (venv {venv_state}, \
         apps venv {apps_state}, node_modules {node_state}, {}, {kcat}), suite {suite_s:.0}s, \
         total {:.0}s: {}",
        java.summary,
        started.elapsed().as_secs_f64(),
        outcome(status)
    );
    verdict("interop suite", status)
}

/// `python -m pytest` with `args`, to be run in `dir`; Python writes no
/// bytecode into the checkout.
pub(crate) fn pytest(python: &Path, dir: &str, args: &[&str]) -> Command {
    let mut command = Command::new(python);
    command
        .args(["-m", "pytest"])
        .args(args)
        .current_dir(dir)
        .env("PYTHONDONTWRITEBYTECODE", "1");
    command
}

/// Runs a [`pytest`] command to its end.
pub(crate) fn run_pytest(command: &mut Command) -> Result<ExitStatus, String> {
    command
        .status()
        .map_err(|e| format!("cannot run pytest: {e}"))
}

/// "passed" or "FAILED", for a summary line.
pub(crate) fn outcome(status: ExitStatus) -> &'static str {
    if status.success() { "passed" } else { "FAILED" }
}

/// pytest's exit status as the verdict on `suite` (named in the error).
pub(crate) fn verdict(suite: &str, status: ExitStatus) -> Result<(), String> {
    match status.code() {
        Some(0) => Ok(()),
        // pytest's exit code 5: nothing was collected, which is no pass.
        Some(5) => Err(format!("{suite} collected no tests")),
        _ => Err(format!("{suite} failed ({status})")),
    }
}

/// The target directory cargo uses (CARGO_TARGET_DIR or the workspace's).
pub(crate) fn target_dir() -> Result<PathBuf, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps", "--locked"])
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run cargo metadata: {e}"))?;
    if !out.status.success() {
        return Err(format!("cargo metadata failed ({})", out.status));
    }
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("cargo metadata printed no JSON: {e}"))?;
    meta["target_directory"]
        .as_str()
        .map(PathBuf::from)
        .ok_or_else(|| "cargo metadata has no target_directory".to_string())
}

/// Creates or refreshes the interop venv; returns "cached" or "installed".
fn ensure_venv(venv: &Path) -> Result<&'static str, String> {
    ensure_venv_from(venv, REQUIREMENTS)
}

/// Creates or refreshes `venv` from the pinned `requirements` file (a path
/// from the workspace root); returns "cached" or "installed".
pub(crate) fn ensure_venv_from(venv: &Path, requirements: &str) -> Result<&'static str, String> {
    let requirements_file = requirements;
    let requirements = std::fs::read(requirements_file)
        .map_err(|e| format!("cannot read {requirements_file}: {e}"))?;
    let python_version = output("python3", &["--version"])?;
    let hash = stamp_of(&[&requirements, python_version.as_bytes()]);
    let python = venv.join("bin").join("python");
    if python.is_file() && read_stamp(venv) == Some(hash.clone()) {
        return Ok("cached");
    }
    println!(
        "xtask: creating {} from {requirements_file} ({})",
        venv.display(),
        python_version.trim()
    );
    if venv.exists() {
        std::fs::remove_dir_all(venv)
            .map_err(|e| format!("cannot remove the old {}: {e}", venv.display()))?;
    }
    run_quiet(
        Command::new("python3").arg("-m").arg("venv").arg(venv),
        "python3 -m venv",
    )?;
    run_quiet(
        Command::new(&python).args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-input",
            "--only-binary",
            ":all:",
            "-r",
            requirements_file,
        ]),
        &format!("pip install -r {requirements_file}"),
    )?;
    run_quiet(
        Command::new(&python).args(["-m", "pip", "check", "--disable-pip-version-check"]),
        "pip check",
    )?;
    write_stamp(venv, &hash)?;
    Ok("installed")
}

/// Runs `npm ci` when package.json, the lockfile or node changed; returns
/// "cached" or "installed".
fn ensure_node_modules(js_dir: &Path) -> Result<&'static str, String> {
    let read = |name: &str| {
        std::fs::read(js_dir.join(name))
            .map_err(|e| format!("cannot read {}: {e}", js_dir.join(name).display()))
    };
    let manifest = read("package.json")?;
    let lockfile = read("package-lock.json")?;
    let node_version = output("node", &["--version"])?;
    let hash = stamp_of(&[&manifest, &lockfile, node_version.as_bytes()]);
    let modules = js_dir.join("node_modules");
    if modules.join("kafkajs").is_dir() && read_stamp(&modules) == Some(hash.clone()) {
        return Ok("cached");
    }
    println!(
        "xtask: interop: npm ci in {} (node {})",
        js_dir.display(),
        node_version.trim()
    );
    // Nothing here needs an install script; refusing them keeps native
    // builds out.
    run_quiet(
        Command::new("npm")
            .args([
                "ci",
                "--ignore-scripts",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
            ])
            .current_dir(js_dir),
        "npm ci",
    )?;
    write_stamp(&modules, &hash)?;
    Ok("installed")
}

/// kcat comes from Debian (.ci/run installs it); the suite needs 1.7.1.
fn check_kcat() -> Result<String, String> {
    let version =
        output("kcat", &["-V"]).map_err(|e| format!("{e} (install it: apt-get install kcat)"))?;
    let line = version
        .lines()
        .find(|l| l.starts_with("Version "))
        .unwrap_or("")
        .to_string();
    if !line.starts_with(KCAT_VERSION) {
        return Err(format!(
            "kcat -V says {line:?}; the suite is pinned to kcat {}",
            KCAT_VERSION.trim()
        ));
    }
    Ok(format!(
        "kcat {}",
        line.split_whitespace().nth(1).unwrap_or("?")
    ))
}

/// Runs a command, showing its output only if it fails.
pub(crate) fn run_quiet(cmd: &mut Command, what: &str) -> Result<(), String> {
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {what}: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    Err(format!(
        "{what} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    ))
}

/// The stdout of a command that must succeed.
pub(crate) fn output(program: &str, args: &[&str]) -> Result<String, String> {
    let out = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "`{program} {}` failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    // Some tools print their version on stderr.
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    Ok(text)
}

/// A 64-bit FNV-1a hash of the inputs, as hex: enough to notice that a
/// pinned file changed (it guards a cache, not against an adversary).
fn stamp_of(parts: &[&[u8]]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for b in part.iter().chain((part.len() as u64).to_le_bytes().iter()) {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{h:016x}")
}

fn read_stamp(dir: &Path) -> Option<String> {
    std::fs::read_to_string(dir.join(STAMP))
        .ok()
        .map(|s| s.trim().to_string())
}

fn write_stamp(dir: &Path, hash: &str) -> Result<(), String> {
    std::fs::write(dir.join(STAMP), format!("{hash}\n"))
        .map_err(|e| format!("cannot write {}: {e}", dir.join(STAMP).display()))
}

#[cfg(test)]
mod tests {
    use super::stamp_of;

    #[test]
    fn the_stamp_changes_with_any_input_and_with_how_inputs_split() {
        let a = stamp_of(&[b"confluent-kafka==2.16.1\n", b"Python 3.11.7"]);
        assert_eq!(
            a,
            stamp_of(&[b"confluent-kafka==2.16.1\n", b"Python 3.11.7"])
        );
        assert_ne!(
            a,
            stamp_of(&[b"confluent-kafka==2.16.0\n", b"Python 3.11.7"])
        );
        assert_ne!(
            a,
            stamp_of(&[b"confluent-kafka==2.16.1\n", b"Python 3.12.0"])
        );
        assert_ne!(stamp_of(&[b"ab", b"c"]), stamp_of(&[b"a", b"bc"]));
    }
}
