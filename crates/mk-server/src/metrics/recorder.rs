//! The process's recorder for the `metrics` facade the listeners count
//! with (requests, errors, latency, bytes): counters and gauges in atomics,
//! latencies in fixed-bucket histograms, every series kept in a sorted map
//! so a scrape lists them in a stable order.

use super::exposition::{Exposition, Labels};
use metrics::{Counter, Gauge, Histogram, HistogramFn, Key, KeyName, Metadata, SharedString, Unit};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

/// Upper bounds (seconds) of the latency buckets: from half a millisecond
/// (an ApiVersions) to ten seconds (a long-polling fetch or a transaction
/// waiting on its markers lands in the upper ones).
pub const LATENCY_BUCKETS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// One histogram series.
#[derive(Debug, Default)]
struct Buckets {
    /// Per bound, the observations at or below it (not cumulative).
    counts: [u64; LATENCY_BUCKETS.len()],
    sum: f64,
    count: u64,
}

#[derive(Debug, Default)]
struct HistogramCell(Mutex<Buckets>);

impl HistogramFn for HistogramCell {
    fn record(&self, value: f64) {
        let mut b = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(i) = LATENCY_BUCKETS.iter().position(|bound| value <= *bound) {
            b.counts[i] += 1;
        }
        b.sum += value;
        b.count += 1;
    }
}

/// Every series the facade registered.
#[derive(Debug, Default)]
pub struct Store {
    counters: Mutex<BTreeMap<Key, Arc<AtomicU64>>>,
    gauges: Mutex<BTreeMap<Key, Arc<AtomicU64>>>,
    histograms: Mutex<BTreeMap<Key, Arc<HistogramCell>>>,
}

fn labels_of(key: &Key) -> Labels {
    key.labels()
        .map(|l| (l.key().to_string(), l.value().to_string()))
        .collect()
}

impl Store {
    /// Adds every series to `e` (families are declared by the caller).
    pub fn write(&self, e: &mut Exposition) {
        for (key, v) in self
            .counters
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
        {
            e.sample(key.name(), labels_of(key), v.load(Ordering::Relaxed) as f64);
        }
        for (key, v) in self
            .gauges
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
        {
            e.sample(
                key.name(),
                labels_of(key),
                f64::from_bits(v.load(Ordering::Relaxed)),
            );
        }
        for (key, h) in self
            .histograms
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
        {
            let b = h.0.lock().unwrap_or_else(PoisonError::into_inner);
            let mut cumulative = [0u64; LATENCY_BUCKETS.len()];
            let mut running = 0;
            for (c, n) in cumulative.iter_mut().zip(b.counts) {
                running += n;
                *c = running;
            }
            e.histogram(
                key.name(),
                &labels_of(key),
                &LATENCY_BUCKETS,
                &cumulative,
                b.sum,
                b.count,
            );
        }
    }
}

/// The facade's recorder over a shared store.
#[derive(Debug)]
struct Recorder(Arc<Store>);

impl metrics::Recorder for Recorder {
    // Descriptions live in the catalog (`catalog.rs`), next to the
    // families the scrape computes, so one place names them all.
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        Counter::from_arc(series(&self.0.counters, key))
    }

    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::from_arc(series(&self.0.gauges, key))
    }

    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::from_arc(series(&self.0.histograms, key))
    }
}

/// The series `key` of one kind, created on first registration.
fn series<T: Default>(kind: &Mutex<BTreeMap<Key, Arc<T>>>, key: &Key) -> Arc<T> {
    let mut m = kind.lock().unwrap_or_else(PoisonError::into_inner);
    m.entry(key.clone()).or_default().clone()
}

/// The process-wide store, installing the recorder on first use: the
/// facade has one recorder per process, so a restarted (or second)
/// embedded broker shares it. Only a broker serving metrics calls this, so
/// without `--metrics-listen` every count of the listeners is a no-op.
pub fn store() -> Result<Arc<Store>, String> {
    static STORE: OnceLock<Result<Arc<Store>, String>> = OnceLock::new();
    STORE
        .get_or_init(|| {
            let store = Arc::new(Store::default());
            metrics::set_global_recorder(Recorder(store.clone()))
                .map_err(|e| format!("cannot install the metrics recorder: {e}"))?;
            Ok(store)
        })
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;
    use metrics::Recorder as _;

    #[test]
    fn series_are_written_sorted_with_cumulative_latency_buckets() {
        let store = Arc::new(Store::default());
        let r = Recorder(store.clone());
        let meta = Metadata::new("t", metrics::Level::INFO, None);
        let key =
            |api: &'static str| Key::from_parts("req_total", vec![metrics::Label::new("api", api)]);
        r.register_counter(&key("Produce"), &meta).increment(2);
        r.register_counter(&key("Fetch"), &meta).increment(1);
        let h = r.register_histogram(&Key::from_name("lat_seconds"), &meta);
        h.record(0.0004);
        h.record(0.003);
        h.record(60.0);
        let mut e = Exposition::default();
        store.write(&mut e);
        let text = e.render();
        let fetch = text.find("req_total{api=\"Fetch\"} 1").unwrap();
        let produce = text.find("req_total{api=\"Produce\"} 2").unwrap();
        assert!(fetch < produce, "{text}");
        assert!(
            text.contains("lat_seconds_bucket{le=\"0.0005\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("lat_seconds_bucket{le=\"0.005\"} 2\n"),
            "{text}"
        );
        assert!(text.contains("lat_seconds_bucket{le=\"10\"} 2\n"), "{text}");
        assert!(
            text.contains("lat_seconds_bucket{le=\"+Inf\"} 3\n"),
            "{text}"
        );
        assert!(text.contains("lat_seconds_count 3\n"), "{text}");
    }
}
