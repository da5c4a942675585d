//! What the benchmarks of mk-server share: the directory a run works in,
//! one JSON line per figure, a process's memory as /proc reports it, and a
//! child process that says where it listens and is killed when dropped.

#![allow(dead_code)]

/// A fresh directory for one run, under `MK_BENCH_DIR` when it is set (a
/// disk chosen for the measurement), else under the system's temp dir.
pub fn bench_dir() -> tempfile::TempDir {
    match std::env::var_os("MK_BENCH_DIR") {
        Some(base) => {
            std::fs::create_dir_all(&base).unwrap();
            tempfile::tempdir_in(base).unwrap()
        }
        None => tempfile::tempdir().unwrap(),
    }
}

/// Prints one figure as a JSON line (what `cargo xtask bench` collects).
#[allow(clippy::print_stdout, reason = "a benchmark reports on stdout")]
pub fn figure(name: &str, value: f64, unit: &str, workload: &str) {
    println!(
        "{}",
        serde_json::json!({"figure": name, "value": value, "unit": unit, "workload": workload})
    );
}

/// A memory line of /proc/<pid>/status (`VmHWM:`, `VmRSS:`) in bytes; 0
/// where the system has no /proc.
pub fn proc_memory_bytes(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// Bytes in MiB.
pub fn mib(bytes: u64) -> f64 {
    bytes as f64 / 1_048_576.0
}

/// The peak resident set size (VmHWM) of process `pid` in MiB.
pub fn peak_rss_mib(pid: u32) -> f64 {
    mib(proc_memory_bytes(pid, "VmHWM:"))
}

/// A child process a benchmark started, killed when dropped.
pub struct Spawned {
    child: std::process::Child,
}

impl Spawned {
    /// Starts `command` with its stdout piped (`what` names it in a
    /// failure); returns it and the first line it printed, which says
    /// where it listens.
    pub fn spawn(command: &mut std::process::Command, what: &str) -> (Spawned, String) {
        use std::io::BufRead;
        let mut child = command
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("start {what}: {e}"));
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().expect("piped stdout"))
            .read_line(&mut line)
            .expect("the child prints where it listens");
        (Spawned { child }, line)
    }

    /// The process id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
