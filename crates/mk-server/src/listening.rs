//! Where a started broker listens, and the one line that says so: the
//! serve command prints it on stdout once every listener accepts, and a
//! program that starts the binary (the embedded broker's child-process
//! mode, the Python fixture, scripts) reads it back. Writing and parsing
//! live together so the two cannot drift apart.

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;

const PREFIX: &str = "mk-server listening on ";
const KAFKA_AND: &str = " (Kafka) and ";
const JSON_ONLY: &str = " (JSON-TCP; Kafka protocol off), data in ";
const JSON_AFTER_KAFKA: &str = " (JSON-TCP), data in ";
const BROKERS: &str = ", brokers [";
const ALSO: &str = ", also ";
const LAB: &str = ", lab mode (background drivers paused)";
const METRICS: &str = ", metrics on http://";
const CONSOLE: &str = ", console on http://";

/// The addresses of a running broker, as its startup line names them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listening {
    /// One Kafka listener per hosted broker, in the order of `brokers`, as
    /// Metadata advertises it (`host:port`); empty when the Kafka protocol
    /// is off.
    pub kafka: Vec<String>,
    /// The other Kafka listeners of `--kafka-listen`, one
    /// `PROTOCOL://host:port` per listener and broker.
    pub other_listeners: Vec<String>,
    /// The JSON-TCP listener.
    pub json: SocketAddr,
    /// The data directory as given.
    pub data_dir: PathBuf,
    /// The broker ids hosted by the process.
    pub brokers: Vec<i32>,
    /// Lab mode: background drivers paused.
    pub lab: bool,
    /// The Prometheus endpoint, when on.
    pub metrics: Option<SocketAddr>,
    /// The web console, when on.
    pub console: Option<SocketAddr>,
}

impl Listening {
    /// `bootstrap.servers` for a Kafka client: every broker's listener,
    /// comma separated.
    ///
    /// # Panics
    ///
    /// When the broker was started with the Kafka protocol off: a test
    /// that asks for a bootstrap address needs the listener.
    pub fn bootstrap(&self) -> String {
        assert!(
            !self.kafka.is_empty(),
            "this broker was started with the Kafka protocol off (--kafka-listen off)"
        );
        self.kafka.join(",")
    }

    /// The ports of the Kafka listeners, in broker order.
    pub fn kafka_ports(&self) -> Vec<u16> {
        self.kafka
            .iter()
            .filter_map(|a| a.rsplit(':').next()?.parse().ok())
            .collect()
    }

    /// Reads a startup line back; `None` for any other line.
    pub fn parse(line: &str) -> Option<Listening> {
        let rest = line.trim_end().strip_prefix(PREFIX)?;
        let (kafka, rest) = match rest.split_once(KAFKA_AND) {
            Some((kafka, rest)) => (
                kafka.split(", ").map(str::to_string).collect(),
                rest.split_once(JSON_AFTER_KAFKA)?,
            ),
            None => (Vec::new(), rest.split_once(JSON_ONLY)?),
        };
        let (json, rest) = rest;
        let (data_dir, rest) = rest.rsplit_once(BROKERS)?;
        let (brokers, rest) = rest.split_once(']')?;
        let brokers = brokers
            .split(", ")
            .map(|b| b.parse().ok())
            .collect::<Option<Vec<i32>>>()?;
        let (other_listeners, rest) = match rest.strip_prefix(ALSO) {
            Some(r) => {
                let (list, rest) = r.split_at(r.find(", ").unwrap_or(r.len()));
                (list.split(' ').map(str::to_string).collect(), rest)
            }
            None => (Vec::new(), rest),
        };
        let (lab, rest) = match rest.strip_prefix(LAB) {
            Some(rest) => (true, rest),
            None => (false, rest),
        };
        let (metrics, rest) = match rest.strip_prefix(METRICS) {
            Some(m) => {
                let (addr, rest) = m.split_once("/metrics")?;
                (Some(addr.parse().ok()?), rest)
            }
            None => (None, rest),
        };
        let console = match rest.strip_prefix(CONSOLE) {
            Some(c) => Some(c.strip_suffix('/')?.parse().ok()?),
            None if rest.is_empty() => None,
            None => return None,
        };
        Some(Listening {
            kafka,
            other_listeners,
            json: json.parse().ok()?,
            data_dir: PathBuf::from(data_dir),
            brokers,
            lab,
            metrics,
            console,
        })
    }
}

impl fmt::Display for Listening {
    /// The startup line, e.g. `mk-server listening on 127.0.0.1:9092
    /// (Kafka) and 127.0.0.1:9192 (JSON-TCP), data in ./data, brokers [1]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(PREFIX)?;
        if self.kafka.is_empty() {
            write!(f, "{}{JSON_ONLY}", self.json)?;
        } else {
            write!(
                f,
                "{}{KAFKA_AND}{}{JSON_AFTER_KAFKA}",
                self.kafka.join(", "),
                self.json
            )?;
        }
        write!(f, "{}{BROKERS}", self.data_dir.display())?;
        let ids: Vec<String> = self.brokers.iter().map(i32::to_string).collect();
        write!(f, "{}]", ids.join(", "))?;
        if !self.other_listeners.is_empty() {
            write!(f, "{ALSO}{}", self.other_listeners.join(" "))?;
        }
        if self.lab {
            f.write_str(LAB)?;
        }
        if let Some(m) = self.metrics {
            write!(f, "{METRICS}{m}/metrics")?;
        }
        if let Some(c) = self.console {
            write!(f, "{CONSOLE}{c}/")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example() -> Listening {
        Listening {
            kafka: vec!["127.0.0.1:9092".into(), "127.0.0.1:9093".into()],
            other_listeners: Vec::new(),
            json: "127.0.0.1:9192".parse().unwrap(),
            data_dir: PathBuf::from("/tmp/a dir, brokers [x]/data"),
            brokers: vec![1, 2],
            lab: false,
            metrics: None,
            console: None,
        }
    }

    /// The startup line of `l`, after checking that it parses back to `l`.
    fn round_trip(l: Listening) -> String {
        let line = l.to_string();
        assert_eq!(Listening::parse(&line), Some(l), "{line}");
        line
    }

    #[test]
    fn the_line_reads_as_before_and_parses_back() {
        let l = example();
        assert_eq!(
            l.to_string(),
            "mk-server listening on 127.0.0.1:9092, 127.0.0.1:9093 (Kafka) and \
             127.0.0.1:9192 (JSON-TCP), data in /tmp/a dir, brokers [x]/data, brokers [1, 2]"
        );
        assert_eq!(Listening::parse(&format!("{l}\n")), Some(l.clone()));
        assert_eq!(l.bootstrap(), "127.0.0.1:9092,127.0.0.1:9093");
        assert_eq!(l.kafka_ports(), vec![9092, 9093]);
    }

    #[test]
    fn kafka_off_lab_and_metrics_round_trip() {
        let line = round_trip(Listening {
            kafka: Vec::new(),
            lab: true,
            metrics: Some("127.0.0.1:9464".parse().unwrap()),
            ..example()
        });
        assert!(
            line.starts_with(
                "mk-server listening on 127.0.0.1:9192 (JSON-TCP; Kafka protocol off)"
            ) && line.ends_with(
                ", lab mode (background drivers paused), metrics on http://127.0.0.1:9464/metrics"
            ),
            "{line}"
        );
    }

    #[test]
    fn the_console_comes_last_with_or_without_metrics() {
        let console = Some("127.0.0.1:9080".parse().unwrap());
        let line = round_trip(Listening {
            console,
            ..example()
        });
        assert!(
            line.ends_with(", console on http://127.0.0.1:9080/"),
            "{line}"
        );
        let line = round_trip(Listening {
            console,
            metrics: Some("127.0.0.1:9464".parse().unwrap()),
            ..example()
        });
        assert!(
            line.ends_with(
                "metrics on http://127.0.0.1:9464/metrics, console on http://127.0.0.1:9080/"
            ),
            "{line}"
        );
    }

    #[test]
    fn other_listeners_follow_the_brokers() {
        let line = round_trip(Listening {
            other_listeners: vec![
                "SASL_SSL://127.0.0.1:9094".into(),
                "SASL_SSL://127.0.0.1:9095".into(),
            ],
            lab: true,
            ..example()
        });
        assert!(
            line.ends_with(
                "brokers [1, 2], also SASL_SSL://127.0.0.1:9094 SASL_SSL://127.0.0.1:9095, \
                 lab mode (background drivers paused)"
            ),
            "{line}"
        );
    }

    #[test]
    fn other_lines_are_not_a_startup_line() {
        for line in [
            "",
            "mk-server: cannot start: cannot listen on 127.0.0.1:9192",
            "mk-server listening on nowhere (JSON-TCP), data in x, brokers [1]",
            "mk-server listening on 127.0.0.1:1 (JSON-TCP; Kafka protocol off), data in x, brokers [one]",
            "mk-server listening on 127.0.0.1:1 (JSON-TCP; Kafka protocol off), data in x, brokers [1], and more",
            "mk-server listening on 127.0.0.1:1 (JSON-TCP; Kafka protocol off), data in x, brokers [1], console on http://nowhere/",
        ] {
            assert_eq!(Listening::parse(line), None, "{line:?}");
        }
    }
}
