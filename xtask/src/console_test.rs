//! `cargo xtask console-test`: the web console's scenarios in a real
//! browser. Builds mk-server, installs selenium (a venv under the target
//! directory from interop/console/requirements.txt, cached like the
//! interop venv), checks Debian's chromium and chromium-driver (.ci/run
//! installs them), then runs interop/console with pytest against the real
//! binary; screenshots of every step land in target/console-screenshots/.
//! A missing browser or a failed install is an error, never a skip.
//! Arguments after `console-test` go to pytest (e.g. `-k lag`).

use std::path::{Path, PathBuf};
use std::time::Instant;

const REQUIREMENTS: &str = "interop/console/requirements.txt";
const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

pub fn run(pytest_args: &[String]) -> Result<(), String> {
    let built = crate::interop::build()?;
    suite(built.server(), pytest_args)
}

/// Runs the scenarios against `server` (a built mk-server binary).
pub fn suite(server: &Path, pytest_args: &[String]) -> Result<(), String> {
    let started = Instant::now();
    let target_dir = crate::interop::target_dir()?;
    let venv = target_dir.join("console-venv");
    let venv_state = crate::interop::ensure_venv_from(&venv, REQUIREMENTS)?;
    let browser = check_browser()?;
    let screenshots = fresh_dir(target_dir.join("console-screenshots"))?;
    let install_s = started.elapsed().as_secs_f64();

    let step = Instant::now();
    println!(
        "xtask: console-test: pytest interop/console ({browser}, mk-server {})",
        server.display()
    );
    let python = venv.join("bin").join("python");
    let status = crate::interop::run_pytest(
        crate::interop::pytest(&python, "interop", &["-c", "console/pytest.ini", "console"])
            .args(pytest_args)
            .env("MK_SERVER_BIN", server)
            .env("MK_CHROMIUM", CHROMIUM)
            .env("MK_CHROMEDRIVER", CHROMEDRIVER)
            .env("MK_CONSOLE_SCREENSHOTS", &screenshots),
    )?;
    println!(
        "xtask: console-test summary: setup {install_s:.0}s (venv {venv_state}), scenarios {:.0}s, \
         screenshots in {}: {}",
        step.elapsed().as_secs_f64(),
        screenshots.display(),
        crate::interop::outcome(status)
    );
    crate::interop::verdict("console-test", status)
}

/// Chromium and its driver from Debian, of one version (a driver drives
/// only the browser version it was built for).
fn check_browser() -> Result<String, String> {
    let install = "install them: apt-get install chromium chromium-driver (.ci/run does)";
    let browser =
        crate::interop::output(CHROMIUM, &["--version"]).map_err(|e| format!("{e} ({install})"))?;
    let driver = crate::interop::output(CHROMEDRIVER, &["--version"])
        .map_err(|e| format!("{e} ({install})"))?;
    let version = |text: &str, name: &str| -> Result<String, String> {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .map(str::to_string)
            .ok_or_else(|| format!("cannot read the {name}version from {text:?}"))
    };
    let (b, d) = (
        version(&browser, "Chromium ")?,
        version(&driver, "ChromeDriver ")?,
    );
    if b != d {
        return Err(format!(
            "chromium {b} and chromedriver {d} differ; {install} from one release"
        ));
    }
    Ok(format!("chromium {b}"))
}

/// An empty `dir` (the screenshots of an earlier run removed).
fn fresh_dir(dir: PathBuf) -> Result<PathBuf, String> {
    if dir.exists() {
        std::fs::remove_dir_all(&dir)
            .map_err(|e| format!("cannot clear {}: {e}", dir.display()))?;
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    Ok(dir)
}
