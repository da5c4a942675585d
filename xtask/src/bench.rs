//! `cargo xtask bench`: runs the release-build benchmark binaries, prints one
//! JSON line per figure and rewrites the measured table in
//! docs/benchmarks.md (between the `bench:begin` / `bench:end` markers);
//! `cargo xtask bench <group>` replaces only the rows of the figures it
//! measured (and adds new ones at the end). Benchmarks measure and report;
//! nothing here asserts a time.

use std::path::Path;
use std::process::{Command, Stdio};

/// (package, bench target) pairs, in the order they appear in the table.
const BENCHES: &[(&str, &str)] = &[
    ("mk-log", "log"),
    ("mk-adapter-kafka", "records"),
    ("mk-group", "offset_commits"),
    ("mk-cluster", "direct"),
    ("mk-runtime", "acks_all"),
    ("mk-server", "server"),
    ("mk-server", "kafka"),
    ("mk-server", "fetch_memory"),
    ("mk-server", "startup"),
];

const BEGIN: &str = "<!-- bench:begin -->";
const END: &str = "<!-- bench:end -->";

pub fn run(args: &[String]) -> Result<(), String> {
    let only: Vec<&str> = args.iter().map(String::as_str).collect();
    // Absolute, because cargo runs each benchmark in its package directory.
    let scratch = std::env::current_dir()
        .map_err(|e| format!("no current directory: {e}"))?
        .join("target")
        .join("bench-data");
    std::fs::create_dir_all(&scratch)
        .map_err(|e| format!("cannot create {}: {e}", scratch.display()))?;
    let mut rows = Vec::new();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    for (package, bench) in BENCHES {
        if !only.is_empty() && !only.contains(bench) && !only.contains(package) {
            continue;
        }
        let mut cmd = Command::new(&cargo);
        if *bench == "kafka" {
            cmd.env("MK_KAFKA_LOAD", kafka_load_generator(&cargo)?);
        }
        eprintln!("xtask: cargo bench -p {package} --bench {bench}");
        let out = cmd
            .args(["bench", "--locked", "-p", package, "--bench", bench])
            .env("MK_BENCH_DIR", &scratch)
            .stderr(Stdio::inherit())
            .output()
            .map_err(|e| format!("cannot run cargo bench: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "benchmark {package}/{bench} failed ({})",
                out.status
            ));
        }
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            if v.get("figure").is_some() {
                println!("{line}");
                rows.push(v);
            }
        }
    }
    write_table(&rows, !only.is_empty())?;
    Ok(())
}

/// Builds the librdkafka load generator (bench/kafka-load, its own
/// workspace: librdkafka is compiled from source only for benchmarks) and
/// returns its path.
fn kafka_load_generator(cargo: &str) -> Result<std::path::PathBuf, String> {
    let target = std::env::current_dir()
        .map_err(|e| format!("no current directory: {e}"))?
        .join("target")
        .join("kafka-load");
    eprintln!("xtask: building the librdkafka load generator (bench/kafka-load)");
    let status = Command::new(cargo)
        .args([
            "build",
            "--release",
            "--locked",
            "--manifest-path",
            "bench/kafka-load/Cargo.toml",
        ])
        .env("CARGO_TARGET_DIR", &target)
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !status.success() {
        return Err(format!("building bench/kafka-load failed ({status})"));
    }
    Ok(target.join("release").join("mk-kafka-load"))
}

fn write_table(rows: &[serde_json::Value], merge: bool) -> Result<(), String> {
    let path = Path::new("docs").join("benchmarks.md");
    let doc = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let (Some(b), Some(e)) = (doc.find(BEGIN), doc.find(END)) else {
        return Err(format!(
            "{} lacks the {BEGIN} / {END} markers",
            path.display()
        ));
    };
    let mut lines: Vec<String> = if merge {
        table_rows(&doc[b + BEGIN.len()..e])
    } else {
        Vec::new()
    };
    for r in rows {
        let name = r["figure"].as_str().unwrap_or("?");
        let value = r["value"].as_f64().unwrap_or(f64::NAN);
        let line = format!(
            "| {name} | {} | {} | {} |",
            format_value(value),
            r["unit"].as_str().unwrap_or(""),
            r["workload"].as_str().unwrap_or("")
        );
        match lines.iter_mut().find(|l| row_name(l) == Some(name)) {
            Some(old) => *old = line,
            None => lines.push(line),
        }
    }
    let mut table =
        String::from("\n| figure | value | unit | workload |\n| --- | ---: | --- | --- |\n");
    for line in lines {
        table.push_str(&line);
        table.push('\n');
    }
    let new = format!("{}{BEGIN}{table}{}", &doc[..b], &doc[e..]);
    std::fs::write(&path, new).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    eprintln!("xtask: wrote {} figures to {}", rows.len(), path.display());
    Ok(())
}

/// The data rows of the measured table (no header, no separator).
fn table_rows(table: &str) -> Vec<String> {
    table
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| figure |") && !l.starts_with("| ---"))
        .map(str::to_string)
        .collect()
}

/// The figure a table row is about.
fn row_name(row: &str) -> Option<&str> {
    row.strip_prefix("| ")?.split(" | ").next()
}

fn format_value(v: f64) -> String {
    if v >= 100.0 {
        let s = format!("{v:.0}");
        // Thousands separators keep large figures readable.
        let mut out = String::new();
        for (i, c) in s.chars().enumerate() {
            if i > 0 && (s.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(c);
        }
        out
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::{format_value, row_name, table_rows};

    #[test]
    fn a_group_replaces_its_own_rows_and_keeps_the_others() {
        let table = "\n| figure | value | unit | workload |\n| --- | ---: | --- | --- |\n\
                     | log.read | 4.2 | GB/s | x |\n| startup.listening_ms | 9.000 | ms | y |\n";
        let rows = table_rows(table);
        assert_eq!(rows.len(), 2);
        assert_eq!(row_name(&rows[1]), Some("startup.listening_ms"));
    }

    #[test]
    fn values_are_formatted_for_humans() {
        assert_eq!(format_value(1_234_567.8), "1,234,568");
        assert_eq!(format_value(3.94), "3.940");
        assert_eq!(format_value(0.156), "0.156");
        assert_eq!(format_value(12.34), "12.3");
        assert_eq!(format_value(100.0), "100");
    }
}
