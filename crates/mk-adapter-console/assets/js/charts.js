// Time-series plots on uPlot (vendored, loaded as the global `uPlot`):
// one helper that makes a responsive line chart for a set of named series.

export const COLORS = {
  blue: "#3b5bdb",
  teal: "#0ca678",
  amber: "#f08c00",
  red: "#e03131",
  violet: "#7048e8",
  grey: "#868e96",
  cyan: "#1098ad",
  pink: "#d6336c",
};

// What a plot shows: the last five minutes.
const WINDOW_S = 300;
// Tick steps of count plots (no half partitions).
const INTEGER_STEPS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 1e5, 1e6, 1e7, 1e8, 1e9];

const PALETTE = [COLORS.blue, COLORS.teal, COLORS.amber, COLORS.violet, COLORS.cyan, COLORS.pink, COLORS.red, COLORS.grey];

export function paletteColor(i) {
  return PALETTE[i % PALETTE.length];
}

// A line chart in `container`. `series` is [{label, color, fill, step}].
// Returns {update(xs, ys[]), destroy()}; xs are unix seconds.
export function lineChart(container, series, opts = {}) {
  const width = () => Math.max(240, container.clientWidth - 4);
  const fmtY = opts.formatY || ((v) => (v === null ? "—" : String(Math.round(v * 100) / 100)));
  const config = {
    width: width(),
    height: opts.height || 180,
    legend: { live: true },
    cursor: { drag: { x: false, y: false } },
    scales: {
      // A fixed window ending at the newest sample, so a fresh page does
      // not stretch two samples over the whole width.
      x: { time: true, range: (u, min, max) => [max - WINDOW_S, max] },
      y: { range: (u, min, max) => [Math.min(0, min), Math.max(opts.integer ? 4 : 1, max * 1.15)] },
    },
    axes: [
      { stroke: "#868e96", grid: { stroke: "#f1f3f5" }, ticks: { stroke: "#e9ecef" } },
      { stroke: "#868e96", grid: { stroke: "#f1f3f5" }, ticks: { stroke: "#e9ecef" },
        size: 64, incrs: opts.integer ? INTEGER_STEPS : undefined,
        values: (u, vals) => vals.map((v) => fmtY(v)) },
    ],
    series: [
      {},
      ...series.map((s) => ({
        label: s.label,
        stroke: s.color,
        width: 2,
        fill: s.fill ? s.color + "22" : undefined,
        paths: s.step ? uPlot.paths.stepped({ align: 1 }) : undefined,
        // Points only while there are too few samples for a line.
        points: { show: (u) => u.data[0].length <= 3, size: 6 },
        value: (u, v) => fmtY(v),
      })),
    ],
  };
  // With no hover, the legend shows the newest values.
  let settingLegend = false;
  config.hooks = {
    setLegend: [(u) => {
      const last = u.data[0].length - 1;
      if (settingLegend || u.legend.idx !== null || last < 0) return;
      settingLegend = true;
      u.setLegend({ idx: last });
      settingLegend = false;
    }],
  };
  const now = Date.now() / 1000;
  const plot = new uPlot(config, padded([now], series.map(() => [null])), container);
  const resize = () => plot.setSize({ width: width(), height: config.height });
  const observer = new ResizeObserver(resize);
  observer.observe(container);
  return {
    update(xs, ys) {
      if (xs.length === 0) return;
      plot.setData(padded(xs, ys));
      if (plot.cursor.left < 0) plot.setLegend({ idx: plot.data[0].length - 1 });
    },
    destroy() {
      observer.disconnect();
      plot.destroy();
    },
  };
}

// uPlot labels the dates of a time axis wrongly when a series has one
// point, so a lone sample gets an empty point one second before it.
function padded(xs, ys) {
  if (xs.length !== 1) return [xs, ...ys];
  return [[xs[0] - 1, xs[0]], ...ys.map((y) => [null, y[0]])];
}

// Per-second rates from samples of a counter: [xs, rates] aligned to the
// later sample of each pair; a counter that went down (a deleted topic)
// counts as no traffic.
export function rates(samples, counter) {
  const xs = [];
  const ys = [];
  if (samples.length === 1) return [[samples[0].sampled_at], [0]];
  for (let i = 1; i < samples.length; i++) {
    const dt = samples[i].sampled_at - samples[i - 1].sampled_at;
    const dv = counter(samples[i]) - counter(samples[i - 1]);
    xs.push(samples[i].sampled_at);
    ys.push(dt > 0 ? Math.max(0, dv) / dt : 0);
  }
  return [xs, ys];
}
