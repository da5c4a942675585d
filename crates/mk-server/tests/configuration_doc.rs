//! docs/configuration.md names every setting the code has: each flag of
//! `mk-server` (from clap's own description of `ServeArgs`), as a flag and
//! as its config-file key, and each topic config of the core.

use clap::Args;
use mk_server::ServeArgs;

fn page() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/configuration.md");
    std::fs::read_to_string(path).expect("docs/configuration.md")
}

#[test]
fn every_flag_and_its_file_key_is_on_the_configuration_page() {
    let page = page();
    let command = ServeArgs::augment_args(clap::Command::new("mk-server"));
    let longs: Vec<&str> = command
        .get_arguments()
        .filter_map(|a| a.get_long())
        .collect();
    // A floor, so an empty enumeration cannot pass.
    assert!(longs.len() >= 30, "clap lists only {longs:?}");
    assert!(longs.contains(&"console-listen"), "{longs:?}");
    let mut missing = Vec::new();
    for long in longs {
        if !page.contains(&format!("`--{long}")) {
            missing.push(format!("--{long}"));
        }
        // `--config` names the file itself; every other flag is a key in it.
        let key = long.replace('-', "_");
        if long != "config" && !page.contains(&format!("| `{key}` |")) {
            missing.push(format!("file key {key}"));
        }
    }
    assert!(
        missing.is_empty(),
        "docs/configuration.md lacks {missing:?}"
    );
}

#[test]
fn every_topic_config_is_on_the_configuration_page() {
    let page = page();
    let missing: Vec<&str> = mk_cluster::TOPIC_CONFIG_KEYS
        .iter()
        .copied()
        .filter(|k| !page.contains(&format!("| `{k}` |")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/configuration.md lacks {missing:?}"
    );
}
