//! Prometheus' text exposition format (version 0.0.4), written by hand:
//! every family with `# HELP` and `# TYPE`, families in name order and each
//! family's series in the order its producer gives (every producer here
//! iterates sorted maps), so two scrapes of an unchanged broker are
//! byte-identical. Label values are escaped as the format asks.

use std::collections::BTreeMap;
use std::fmt::Write;

/// The type a family declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
}

impl Kind {
    pub const fn as_str(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        }
    }
}

/// One line of a family: `name{labels} value`, where a histogram's lines
/// add `_bucket`, `_sum` or `_count` to the name.
#[derive(Debug, Clone, PartialEq)]
struct Sample {
    suffix: &'static str,
    labels: Vec<(String, String)>,
    value: f64,
}

#[derive(Debug, Clone, PartialEq)]
struct Family {
    kind: Kind,
    help: String,
    samples: Vec<Sample>,
}

/// A scrape being assembled.
#[derive(Debug, Default)]
pub struct Exposition {
    families: BTreeMap<String, Family>,
}

/// The labels of one series, in the order they are written.
pub type Labels = Vec<(String, String)>;

/// Builds labels from `(name, value)` pairs.
pub fn labels<const N: usize>(pairs: [(&str, &str); N]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
        .collect()
}

impl Exposition {
    /// Declares a family; it is written (HELP and TYPE) even without a
    /// series, so a scrape always names every family the broker has.
    pub fn declare(&mut self, name: &str, kind: Kind, help: &str) {
        self.families
            .entry(name.to_string())
            .or_insert_with(|| Family {
                kind,
                help: help.to_string(),
                samples: Vec::new(),
            });
    }

    /// One series of a counter or gauge `name` (declared before).
    pub fn sample(&mut self, name: &str, labels: Labels, value: f64) {
        self.push(name, "", labels, value);
    }

    /// One series of the histogram `name`: cumulative counts per upper
    /// bound, then `+Inf`, the sum and the count.
    pub fn histogram(
        &mut self,
        name: &str,
        labels: &Labels,
        bounds: &[f64],
        cumulative: &[u64],
        sum: f64,
        count: u64,
    ) {
        for (bound, n) in bounds.iter().zip(cumulative) {
            let mut l = labels.clone();
            l.push(("le".to_string(), format_value(*bound)));
            self.push(name, "_bucket", l, *n as f64);
        }
        let mut l = labels.clone();
        l.push(("le".to_string(), "+Inf".to_string()));
        self.push(name, "_bucket", l, count as f64);
        self.push(name, "_sum", labels.clone(), sum);
        self.push(name, "_count", labels.clone(), count as f64);
    }

    fn push(&mut self, name: &str, suffix: &'static str, labels: Labels, value: f64) {
        // A series of an undeclared family still shows, typed by its use,
        // so nothing counted is lost; the metrics reference test finds it.
        let family = self
            .families
            .entry(name.to_string())
            .or_insert_with(|| Family {
                kind: if suffix.is_empty() {
                    Kind::Gauge
                } else {
                    Kind::Histogram
                },
                help: "Not described.".to_string(),
                samples: Vec::new(),
            });
        family.samples.push(Sample {
            suffix,
            labels,
            value,
        });
    }

    /// The names and types of the declared families, in name order.
    #[cfg(test)]
    pub fn families(&self) -> Vec<(&str, Kind)> {
        self.families
            .iter()
            .map(|(n, f)| (n.as_str(), f.kind))
            .collect()
    }

    /// The text of the scrape.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for (name, f) in &self.families {
            let _ = writeln!(out, "# HELP {name} {}", escape_help(&f.help));
            let _ = writeln!(out, "# TYPE {name} {}", f.kind.as_str());
            for s in &f.samples {
                out.push_str(name);
                out.push_str(s.suffix);
                if !s.labels.is_empty() {
                    out.push('{');
                    for (i, (k, v)) in s.labels.iter().enumerate() {
                        if i > 0 {
                            out.push(',');
                        }
                        let _ = write!(out, "{k}=\"{}\"", escape_label(v));
                    }
                    out.push('}');
                }
                let _ = writeln!(out, " {}", format_value(s.value));
            }
        }
        out
    }
}

/// A sample value as the format writes it.
fn format_value(v: f64) -> String {
    if v.is_nan() {
        "NaN".to_string()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.to_string()
    } else {
        // Rust's shortest form that reads back as the same value; whole
        // numbers without a fraction.
        format!("{v}")
    }
}

fn escape_label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn escape_help(v: &str) -> String {
    v.replace('\\', "\\\\").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_are_written_in_name_order_with_help_and_type() {
        let mut e = Exposition::default();
        e.declare("zeta", Kind::Gauge, "Last.");
        e.declare("alpha_total", Kind::Counter, "First.");
        e.sample("zeta", labels([("topic", "a\"b\\c\nd")]), 1.5);
        e.sample("alpha_total", Vec::new(), 3.0);
        assert_eq!(
            e.render(),
            "# HELP alpha_total First.\n# TYPE alpha_total counter\nalpha_total 3\n\
             # HELP zeta Last.\n# TYPE zeta gauge\nzeta{topic=\"a\\\"b\\\\c\\nd\"} 1.5\n"
        );
    }

    #[test]
    fn a_histogram_writes_cumulative_buckets_then_inf_sum_and_count() {
        let mut e = Exposition::default();
        e.declare("lat_seconds", Kind::Histogram, "Latency.");
        e.histogram(
            "lat_seconds",
            &labels([("api", "Fetch")]),
            &[0.1, 1.0],
            &[2, 3],
            1.25,
            4,
        );
        assert_eq!(
            e.render(),
            "# HELP lat_seconds Latency.\n# TYPE lat_seconds histogram\n\
             lat_seconds_bucket{api=\"Fetch\",le=\"0.1\"} 2\n\
             lat_seconds_bucket{api=\"Fetch\",le=\"1\"} 3\n\
             lat_seconds_bucket{api=\"Fetch\",le=\"+Inf\"} 4\n\
             lat_seconds_sum{api=\"Fetch\"} 1.25\n\
             lat_seconds_count{api=\"Fetch\"} 4\n"
        );
    }

    #[test]
    fn a_declared_family_without_series_still_shows_and_undeclared_ones_are_kept() {
        let mut e = Exposition::default();
        e.declare("empty", Kind::Counter, "Nothing yet.");
        e.sample("surprise", Vec::new(), 1.0);
        let text = e.render();
        assert!(text.contains("# TYPE empty counter\n"), "{text}");
        assert!(text.contains("# HELP surprise Not described.\n"), "{text}");
        assert_eq!(
            e.families(),
            vec![("empty", Kind::Counter), ("surprise", Kind::Gauge)]
        );
    }
}
