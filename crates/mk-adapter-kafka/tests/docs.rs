//! docs/kafka-wire.md stays true: its API table is exactly the advertised
//! table, and its error table is exactly the code mapping.

use mk_adapter_kafka::api::APIS;
use mk_adapter_kafka::errors::kafka_code;
use mk_adapter_kafka::mk_cluster::ErrorCode;
use std::collections::BTreeMap;

fn doc() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/kafka-wire.md");
    std::fs::read_to_string(path).expect("docs/kafka-wire.md exists")
}

/// The rows of the markdown table whose header row starts with `first`.
fn table(doc: &str, first: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut inside = false;
    for line in doc.lines() {
        let cells: Vec<String> = line
            .trim()
            .trim_matches('|')
            .split('|')
            .map(|c| c.trim().to_string())
            .collect();
        if !line.trim_start().starts_with('|') {
            if inside {
                break;
            }
            continue;
        }
        if cells.first().map(String::as_str) == Some(first) {
            inside = true;
            continue;
        }
        if inside && !cells[0].starts_with("---") {
            rows.push(cells);
        }
    }
    rows
}

#[test]
fn the_api_table_in_the_docs_is_the_advertised_table() {
    let rows = table(&doc(), "API");
    let documented: Vec<(String, i16, String, i16)> = rows
        .iter()
        .filter(|r| r.len() == 4)
        .map(|r| {
            (
                r[0].clone(),
                r[1].parse().unwrap(),
                r[2].clone(),
                r[3].parse().unwrap(),
            )
        })
        .collect();
    let advertised: Vec<(String, i16, String, i16)> = APIS
        .iter()
        .map(|a| {
            (
                a.name.to_string(),
                a.key,
                format!("{}-{}", a.min_version, a.max_version),
                a.flexible_from.min(a.max_version + 1),
            )
        })
        .collect();
    assert_eq!(documented, advertised);
}

#[test]
fn the_error_table_in_the_docs_is_the_mapping() {
    let rows = table(&doc(), "core code");
    let documented: BTreeMap<String, i16> = rows
        .iter()
        .map(|r| (r[0].clone(), r[1].parse().unwrap()))
        .collect();
    let mapped: BTreeMap<String, i16> = ErrorCode::ALL
        .iter()
        .map(|c| (c.as_str().to_string(), kafka_code(*c).0))
        .collect();
    assert_eq!(documented, mapped);
}
