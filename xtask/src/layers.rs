//! The layer check: reads `cargo metadata` and fails on any dependency edge
//! between workspace crates that the diagram of spec 00 does not allow, and on
//! any async runtime below mk-cluster; then scans the sources of those crates
//! for the wall clock, sleeps and threads (`sans_io.rs`).

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

/// Which workspace crates each crate may depend on (normal and build
/// dependencies; dev-dependencies are test scaffolding and may cross layers
/// only downward as well, so they are checked too).
pub fn allowed_edges() -> BTreeMap<&'static str, &'static [&'static str]> {
    BTreeMap::from([
        ("mk-core", &[][..]),
        ("mk-storage", &["mk-core"][..]),
        ("mk-log", &["mk-core", "mk-storage"][..]),
        ("mk-replication", &["mk-core", "mk-storage", "mk-log"][..]),
        ("mk-group", &["mk-core", "mk-storage", "mk-log"][..]),
        ("mk-txn", &["mk-core", "mk-storage", "mk-log"][..]),
        ("mk-auth", &["mk-core"][..]),
        // The core sits on every sans-IO domain crate, and on nothing else.
        ("mk-cluster", SANS_IO),
        ("mk-adapter-direct", &["mk-cluster"][..]),
        ("mk-listener", &[][..]),
        ("mk-adapter-jsontcp", &["mk-cluster", "mk-listener"][..]),
        // mk-protocol-gen is mk-adapter-kafka's build-time generator (a
        // build dependency): it depends on nothing in the workspace.
        ("mk-protocol-gen", &[][..]),
        (
            "mk-adapter-kafka",
            &["mk-cluster", "mk-listener", "mk-protocol-gen"][..],
        ),
        ("mk-adapter-console", &["mk-cluster"][..]),
        ("mk-runtime", &["mk-cluster"][..]),
        ("mk-client", &["mk-cluster"][..]),
        ("mk-labs", &["mk-cluster", "mk-client"][..]),
        (
            "mk-server",
            &[
                "mk-cluster",
                "mk-adapter-direct",
                "mk-adapter-jsontcp",
                "mk-adapter-kafka",
                "mk-adapter-console",
                "mk-runtime",
                "mk-labs",
            ][..],
        ),
    ])
}

use crate::sans_io::SANS_IO;

/// Crates that run in build scripts only: never linked into a crate.
const BUILD_ONLY: &[&str] = &["mk-protocol-gen"];

const RUNTIMES: &[&str] = &["tokio", "async-std", "smol", "futures-executor"];

/// One dependency edge as cargo metadata reports it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Edge {
    pub from: String,
    pub to: String,
    pub kind: String,
}

/// Checks edges among workspace members (`members`) against the diagram.
/// Returns every violation as a readable line.
pub fn violations(members: &BTreeSet<String>, edges: &[Edge]) -> Vec<String> {
    let allowed = allowed_edges();
    let mut out = Vec::new();
    for edge in edges {
        let Some(from_rules) = allowed.get(edge.from.as_str()) else {
            continue; // xtask and the acceptance package sit outside the diagram.
        };
        if edge.kind != "dev"
            && SANS_IO.contains(&edge.from.as_str())
            && RUNTIMES.contains(&edge.to.as_str())
        {
            out.push(format!(
                "{} depends on {} ({}): crates below mk-cluster are sans-IO state machines and may not use an async runtime",
                edge.from, edge.to, edge.kind
            ));
        }
        if !members.contains(&edge.to) || edge.from == edge.to {
            continue;
        }
        if BUILD_ONLY.contains(&edge.to.as_str()) && edge.kind != "build" {
            out.push(format!(
                "{} -> {} ({} dependency): {} runs at build time only, so it may only be a build dependency",
                edge.from, edge.to, edge.kind, edge.to
            ));
        }
        if !from_rules.contains(&edge.to.as_str()) {
            let may = if from_rules.is_empty() {
                "nothing in the workspace".to_string()
            } else {
                from_rules.join(", ")
            };
            out.push(format!(
                "{} -> {} ({} dependency) is not in the layer diagram of spec 00; {} may depend on: {}",
                edge.from, edge.to, edge.kind, edge.from, may
            ));
        }
    }
    for name in allowed.keys() {
        if !members.contains(*name) {
            out.push(format!(
                "crate {name} of the layer diagram is missing from the workspace"
            ));
        }
    }
    out
}

/// Parses `cargo metadata --format-version 1 --no-deps` output into members
/// and edges.
pub fn parse_metadata(json: &str) -> Result<(BTreeSet<String>, Vec<Edge>), String> {
    let v: serde_json::Value =
        serde_json::from_str(json).map_err(|e| format!("cargo metadata is not JSON: {e}"))?;
    let packages = v["packages"]
        .as_array()
        .ok_or("cargo metadata has no packages array")?;
    let mut members = BTreeSet::new();
    let mut edges = Vec::new();
    for p in packages {
        let name = p["name"]
            .as_str()
            .ok_or("package without a name")?
            .to_string();
        members.insert(name.clone());
        for d in p["dependencies"].as_array().into_iter().flatten() {
            let to = d["name"]
                .as_str()
                .ok_or("dependency without a name")?
                .to_string();
            let kind = d["kind"].as_str().unwrap_or("normal").to_string();
            edges.push(Edge {
                from: name.clone(),
                to,
                kind,
            });
        }
    }
    Ok((members, edges))
}

pub fn check_workspace() -> Result<(), String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps", "--locked"])
        .output()
        .map_err(|e| format!("cannot run cargo metadata: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let json = String::from_utf8(out.stdout).map_err(|e| format!("cargo metadata output: {e}"))?;
    let (members, edges) = parse_metadata(&json)?;
    let bad = violations(&members, &edges);
    if bad.is_empty() {
        let files = crate::sans_io::check(&crate::workspace_root())?;
        println!(
            "xtask: check-layers: {} crates, every edge is in the diagram; {files} sans-IO source files without wall clock, sleeps or threads",
            members.len()
        );
        Ok(())
    } else {
        Err(format!(
            "check-layers found {} violation(s):\n  {}",
            bad.len(),
            bad.join("\n  ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_members() -> BTreeSet<String> {
        allowed_edges().keys().map(|s| s.to_string()).collect()
    }

    fn edge(from: &str, to: &str) -> Edge {
        Edge {
            from: from.into(),
            to: to.into(),
            kind: "normal".into(),
        }
    }

    #[test]
    fn diagram_edges_pass() {
        let edges = vec![
            edge("mk-log", "mk-core"),
            edge("mk-log", "mk-storage"),
            edge("mk-replication", "mk-log"),
            edge("mk-labs", "mk-client"),
            edge("mk-server", "mk-runtime"),
            edge("mk-cluster", "mk-txn"),
            edge("mk-server", "mk-adapter-jsontcp"),
            edge("mk-log", "bytes"),
        ];
        assert_eq!(violations(&all_members(), &edges), Vec::<String>::new());
    }

    #[test]
    fn planted_bad_edge_is_reported_readably() {
        let edges = vec![
            edge("mk-replication", "mk-group"),
            edge("mk-adapter-jsontcp", "mk-log"),
            edge("mk-cluster", "mk-client"),
            edge("mk-storage", "mk-log"),
        ];
        let bad = violations(&all_members(), &edges);
        assert_eq!(bad.len(), 4, "{bad:?}");
        let expected = [
            "mk-replication -> mk-group",
            "mk-adapter-jsontcp -> mk-log",
            "mk-cluster -> mk-client",
            "mk-storage -> mk-log",
        ];
        for (found, edge) in bad.iter().zip(expected) {
            assert!(found.contains(edge), "{found} should name {edge}");
        }
        assert!(
            bad[0].contains("may depend on: mk-core, mk-storage, mk-log"),
            "{bad:?}"
        );
    }

    #[test]
    fn the_generator_is_a_build_dependency_only() {
        let build = Edge {
            kind: "build".into(),
            ..edge("mk-adapter-kafka", "mk-protocol-gen")
        };
        assert!(violations(&all_members(), &[build]).is_empty());
        let linked = edge("mk-adapter-kafka", "mk-protocol-gen");
        let bad = violations(&all_members(), &[linked]);
        assert_eq!(bad.len(), 1, "{bad:?}");
        assert!(bad[0].contains("only be a build dependency"), "{}", bad[0]);
        let bad = violations(&all_members(), &[edge("mk-server", "mk-protocol-gen")]);
        assert_eq!(bad.len(), 2, "{bad:?}");
    }

    #[test]
    fn runtime_below_cluster_is_reported() {
        let bad = violations(&all_members(), &[edge("mk-txn", "tokio")]);
        assert_eq!(bad.len(), 1);
        assert!(bad[0].contains("sans-IO"), "{}", bad[0]);
    }

    #[test]
    fn missing_crate_is_reported() {
        let mut members = all_members();
        members.remove("mk-group");
        let bad = violations(&members, &[]);
        assert_eq!(
            bad,
            vec!["crate mk-group of the layer diagram is missing from the workspace".to_string()]
        );
    }

    #[test]
    fn parses_cargo_metadata_shape() {
        let json = r#"{"packages":[{"name":"mk-log","dependencies":[{"name":"mk-core","kind":null},{"name":"proptest","kind":"dev"}]}]}"#;
        let (members, edges) = parse_metadata(json).unwrap();
        assert!(members.contains("mk-log"));
        assert_eq!(edges.len(), 2);
        assert_eq!(edges[0].kind, "normal");
        assert_eq!(edges[1].kind, "dev");
    }
}
