//! `cargo xtask dist`: the release build of `mk-server` (cargo profile
//! `dist`: release without debug line tables) packed for this platform as
//! `target/dist/mk-server-<version>-<target>.tar.gz` (the binary, README,
//! licenses and docs/ under one top directory) with a SHA-256 checksum file
//! that `sha256sum -c` reads; then the Python wheel from the same binary
//! (`wheel.rs`). `cargo xtask test` also runs [`check`]: the tarball
//! unpacked into an empty directory, the broker started from there, a
//! produce/consume round trip through the unpacked binary's CLI, a clean
//! shutdown on SIGTERM.

use sha2::{Digest, Sha256};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The cargo profile of the release build (its output directory is
/// `target/dist/`, where the packages go too).
pub const PROFILE: &str = "dist";
/// Files of the repository that go into the tarball, beside the binary
/// and docs/.
const FILES: &[&str] = &["README.md", "LICENSE-MIT", "LICENSE-APACHE"];
const PATIENCE: Duration = Duration::from_secs(30);

/// What `cargo xtask dist` made.
#[derive(Debug)]
pub struct Dist {
    pub tarball: PathBuf,
    pub checksum: PathBuf,
    pub wheel: PathBuf,
}

/// `cargo xtask dist [--test]`: build and pack, then (with `--test`) what
/// `cargo xtask test` checks of the packages.
pub fn run(args: &[String]) -> Result<(), String> {
    let binary = build()?;
    let dist = package(&binary)?;
    println!(
        "xtask: dist: {}\nxtask: dist: {}\nxtask: dist: {}",
        dist.tarball.display(),
        dist.checksum.display(),
        dist.wheel.display()
    );
    if args.iter().any(|a| a == "--test") {
        check(&dist)?;
        crate::wheel::test(&dist.wheel)?;
    }
    Ok(())
}

/// The output directory of the `dist` profile.
pub fn dist_dir() -> Result<PathBuf, String> {
    Ok(crate::interop::target_dir()?.join(PROFILE))
}

/// Builds the release binary in the foreground; its path.
pub fn build() -> Result<PathBuf, String> {
    crate::cargo(&build_args())?;
    built_binary()
}

fn build_args() -> [&'static str; 8] {
    [
        "build",
        "--profile",
        PROFILE,
        "--locked",
        "-p",
        "mk-server",
        "--bin",
        "mk-server",
    ]
}

fn built_binary() -> Result<PathBuf, String> {
    let binary = dist_dir()?.join("mk-server");
    if binary.is_file() {
        Ok(binary)
    } else {
        Err(format!(
            "built mk-server but {} is missing",
            binary.display()
        ))
    }
}

/// The release build running in the background (at a lower priority, so
/// the suite it overlaps keeps the CPU), its output in a log file.
pub struct BackgroundBuild {
    child: Child,
    log: PathBuf,
    started: Instant,
}

pub fn start_build() -> Result<BackgroundBuild, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let log = crate::interop::target_dir()?.join("dist-build.log");
    let out =
        std::fs::File::create(&log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
    let err = out
        .try_clone()
        .map_err(|e| format!("cannot write {}: {e}", log.display()))?;
    let nice = Command::new("nice").arg("--version").output().is_ok();
    let mut command = if nice {
        let mut c = Command::new("nice");
        c.args(["-n", "10"]).arg(&cargo);
        c
    } else {
        Command::new(&cargo)
    };
    println!(
        "xtask: cargo {} (in the background, output in {})",
        build_args().join(" "),
        log.display()
    );
    let child = command
        .args(build_args())
        .stdout(out)
        .stderr(err)
        .spawn()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    Ok(BackgroundBuild {
        child,
        log,
        started: Instant::now(),
    })
}

impl BackgroundBuild {
    /// Waits for the build; the binary's path.
    pub fn finish(mut self) -> Result<PathBuf, String> {
        let waited = Instant::now();
        let status = self
            .child
            .wait()
            .map_err(|e| format!("cannot wait for cargo: {e}"))?;
        println!(
            "xtask: release build: {:.0}s in all, {:.0}s of it waited for after the suite it overlapped",
            self.started.elapsed().as_secs_f64(),
            waited.elapsed().as_secs_f64()
        );
        if status.success() {
            return built_binary();
        }
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(40).collect();
        Err(format!(
            "the release build failed ({status}); the end of {}:\n{}",
            self.log.display(),
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        ))
    }
}

/// The tarball, its checksum file and the wheel, from `binary`.
pub fn package(binary: &Path) -> Result<Dist, String> {
    let version = binary_version(binary)?;
    let triple = host_triple()?;
    let name = format!("mk-server-{version}-{triple}");
    let dir = dist_dir()?;
    let tarball = dir.join(format!("{name}.tar.gz"));
    write_tarball(&tarball, &name, binary)?;
    let checksum = dir.join(format!("{name}.tar.gz.sha256"));
    let digest = sha256_hex(&tarball)?;
    std::fs::write(&checksum, format!("{digest}  {name}.tar.gz\n"))
        .map_err(|e| format!("cannot write {}: {e}", checksum.display()))?;
    let wheel = crate::wheel::build(binary, &version, &dir)?;
    Ok(Dist {
        tarball,
        checksum,
        wheel,
    })
}

/// `mk-server --version` prints `mk-server <version>`.
fn binary_version(binary: &Path) -> Result<String, String> {
    let out = crate::interop::output(&binary.to_string_lossy(), &["--version"])?;
    out.split_whitespace()
        .nth(1)
        .map(str::to_string)
        .ok_or_else(|| format!("mk-server --version printed {out:?}"))
}

/// The target triple rustc builds for on this machine.
fn host_triple() -> Result<String, String> {
    let out = crate::interop::output("rustc", &["-vV"])?;
    out.lines()
        .find_map(|l| l.strip_prefix("host: "))
        .map(|h| h.trim().to_string())
        .ok_or_else(|| format!("rustc -vV names no host: {out:?}"))
}

fn write_tarball(path: &Path, name: &str, binary: &Path) -> Result<(), String> {
    let file = std::fs::File::create(path)
        .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    let gz = flate2::write::GzEncoder::new(file, flate2::Compression::default());
    let mut tar = tar::Builder::new(gz);
    // Owners and times left out: the same inputs make the same bytes.
    tar.mode(tar::HeaderMode::Deterministic);
    let add = |tar: &mut tar::Builder<_>, from: &Path, to: &str| {
        tar.append_path_with_name(from, format!("{name}/{to}"))
            .map_err(|e| format!("cannot add {} to the tarball: {e}", from.display()))
    };
    add(&mut tar, binary, "mk-server")?;
    for file in FILES {
        add(&mut tar, Path::new(file), file)?;
    }
    tar.append_dir_all(format!("{name}/docs"), "docs")
        .map_err(|e| format!("cannot add docs/ to the tarball: {e}"))?;
    let gz = tar
        .into_inner()
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    gz.finish()
        .and_then(|mut f| f.flush())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

pub fn sha256_hex(path: &Path) -> Result<String, String> {
    let mut file =
        std::fs::File::open(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = file
            .read(&mut buf)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex(&hasher.finalize()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// An empty directory of its own, removed when dropped.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(what: &str) -> Result<Scratch, String> {
        let dir = std::env::temp_dir().join(format!("mk-{what}-{}", std::process::id()));
        if dir.exists() {
            std::fs::remove_dir_all(&dir)
                .map_err(|e| format!("cannot empty {}: {e}", dir.display()))?;
        }
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        Ok(Scratch(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The tarball as a user gets it: checksum verified, unpacked into an
/// empty directory, the broker started from there and used through its
/// own CLI, stopped with SIGTERM.
pub fn check(dist: &Dist) -> Result<(), String> {
    let started = Instant::now();
    verify_checksum(&dist.tarball, &dist.checksum)?;
    let scratch = Scratch::new("dist-check")?;
    let top = unpack(&dist.tarball, &scratch.0)?;
    for file in FILES
        .iter()
        .chain(&["docs/operations.md", "docs/json-protocol.md"])
    {
        if !top.join(file).is_file() {
            return Err(format!("the tarball lacks {file}"));
        }
    }
    let binary = top.join("mk-server");
    let mut broker = UnpackedBroker::start(&binary, &scratch.0)?;
    let round_trip = broker.round_trip();
    let stopped = broker.stop();
    round_trip?;
    stopped?;
    println!(
        "xtask: dist check: {} unpacked into an empty directory: checksum, files, the broker's \
         startup line in {} ms, a produce/consume round trip through its CLI and a clean \
         SIGTERM shutdown: passed ({:.1}s)",
        dist.tarball.display(),
        broker.listening_ms,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

fn verify_checksum(tarball: &Path, checksum: &Path) -> Result<(), String> {
    let line = std::fs::read_to_string(checksum)
        .map_err(|e| format!("cannot read {}: {e}", checksum.display()))?;
    let name = tarball
        .file_name()
        .map(|n| n.to_string_lossy().into_owned());
    let expected = format!("{}  {}\n", sha256_hex(tarball)?, name.unwrap_or_default());
    if line == expected {
        Ok(())
    } else {
        Err(format!(
            "{} says {line:?}, the tarball hashes to {expected:?}",
            checksum.display()
        ))
    }
}

/// Unpacks into `into`; the one top directory it holds.
fn unpack(tarball: &Path, into: &Path) -> Result<PathBuf, String> {
    let file = std::fs::File::open(tarball)
        .map_err(|e| format!("cannot read {}: {e}", tarball.display()))?;
    tar::Archive::new(flate2::read::GzDecoder::new(file))
        .unpack(into)
        .map_err(|e| format!("cannot unpack {}: {e}", tarball.display()))?;
    let entries: Vec<PathBuf> = std::fs::read_dir(into)
        .map_err(|e| format!("cannot list {}: {e}", into.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    match entries.as_slice() {
        [top] if top.is_dir() => Ok(top.clone()),
        _ => Err(format!(
            "the tarball holds {entries:?}, not one top directory"
        )),
    }
}

/// The unpacked binary serving from the scratch directory.
struct UnpackedBroker {
    binary: PathBuf,
    child: Child,
    json: String,
    stderr_log: PathBuf,
    listening_ms: u128,
}

impl UnpackedBroker {
    fn start(binary: &Path, dir: &Path) -> Result<UnpackedBroker, String> {
        let stderr_log = dir.join("mk-server.log");
        let log = std::fs::File::create(&stderr_log)
            .map_err(|e| format!("cannot create {}: {e}", stderr_log.display()))?;
        let started = Instant::now();
        let mut child = Command::new(binary)
            .args(["--listen", "127.0.0.1:0", "--kafka-listen", "127.0.0.1:0"])
            .args(["--console-listen", "127.0.0.1:0"])
            .args(["--data-dir", "data"])
            .current_dir(dir)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("cannot run the unpacked {}: {e}", binary.display()))?;
        let line = first_line(&mut child);
        let listening_ms = started.elapsed().as_millis();
        let json = line.as_deref().and_then(json_addr);
        let Some(json) = json else {
            let _ = child.kill();
            let _ = child.wait();
            let log = std::fs::read_to_string(&stderr_log).unwrap_or_default();
            return Err(format!(
                "the unpacked broker printed {line:?}; stderr:\n{log}"
            ));
        };
        Ok(UnpackedBroker {
            binary: binary.to_path_buf(),
            child,
            json,
            stderr_log,
            listening_ms,
        })
    }

    /// `topic create`, `produce` and `consume` through the unpacked CLI.
    fn round_trip(&self) -> Result<(), String> {
        self.cli(&["topic", "create", "dist-check"], "")?;
        let produced = self.cli(&["produce", "dist-check"], "hello\nworld\n")?;
        let consumed = self.cli(&["consume", "dist-check"], "")?;
        let expected = (
            "dist-check-0 offset 0\ndist-check-0 offset 1\n",
            "dist-check-0@0 value=hello\ndist-check-0@1 value=world\n",
        );
        if (produced.as_str(), consumed.as_str()) == expected {
            Ok(())
        } else {
            Err(format!(
                "the round trip printed {produced:?} and {consumed:?}, expected {expected:?}"
            ))
        }
    }

    fn cli(&self, args: &[&str], stdin: &str) -> Result<String, String> {
        let mut child = Command::new(&self.binary)
            .args(args)
            .args(["--server", &self.json])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", self.binary.display()))?;
        if let Some(mut input) = child.stdin.take() {
            input
                .write_all(stdin.as_bytes())
                .map_err(|e| format!("cannot write to mk-server {args:?}: {e}"))?;
        }
        let out = child
            .wait_with_output()
            .map_err(|e| format!("mk-server {args:?}: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "mk-server {args:?} failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// SIGTERM; the broker must exit 0 and log its clean stop.
    fn stop(&mut self) -> Result<(), String> {
        crate::interop::output("kill", &["-TERM", &self.child.id().to_string()])?;
        let deadline = Instant::now() + PATIENCE;
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10));
                }
                _ => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    return Err("the unpacked broker did not stop on SIGTERM".to_string());
                }
            }
        };
        let log = std::fs::read_to_string(&self.stderr_log).unwrap_or_default();
        if status.success() && log.contains("stopped cleanly") {
            Ok(())
        } else {
            Err(format!(
                "the unpacked broker exited {status}; stderr:\n{log}"
            ))
        }
    }
}

impl Drop for UnpackedBroker {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The first stdout line, or `None` after `PATIENCE` or at EOF.
fn first_line(child: &mut Child) -> Option<String> {
    let stdout = child.stdout.take()?;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        let mut line = String::new();
        if matches!(reader.read_line(&mut line), Ok(n) if n > 0) {
            let _ = tx.send(line);
        }
        let _ = std::io::copy(&mut reader, &mut std::io::sink());
    });
    rx.recv_timeout(PATIENCE).ok()
}

/// The JSON-TCP address in the startup line (`... and ADDR (JSON-TCP),
/// data in ...`).
fn json_addr(line: &str) -> Option<String> {
    let head = line.split(" (JSON-TCP").next()?;
    let addr = head.split_whitespace().last()?;
    (line.starts_with("mk-server listening on ") && line.contains(" (JSON-TCP"))
        .then(|| addr.to_string())
}

#[cfg(test)]
mod tests {
    use super::{hex, json_addr};

    #[test]
    fn the_json_address_is_read_from_the_startup_line() {
        let line = "mk-server listening on 127.0.0.1:40001 (Kafka) and 127.0.0.1:40002 (JSON-TCP), \
                    data in data, brokers [1]\n";
        assert_eq!(json_addr(line).as_deref(), Some("127.0.0.1:40002"));
        assert_eq!(json_addr("mk-server: cannot start: cannot listen"), None);
        assert_eq!(hex(&[0, 0xab, 0x10]), "00ab10");
    }
}
