/* The analytics page: per-project GPUs, CPU and memory allocated, pending jobs and utilization
   over a chosen range. */
"use strict";
(function () {
  const SPANS = { "1h": 3600e3, "24h": 86400e3, "7d": 7 * 86400e3, "30d": 30 * 86400e3 };
  const form = document.getElementById("range");
  const status = document.getElementById("status");
  const csv = document.getElementById("csv");
  const problem = document.getElementById("range-error");
  const CHARTS = ["allocation-chart", "cpu-chart", "memory-chart", "pending-chart", "idle-chart", "utilization-chart"];
  const CONFIG = { displaylogo: false, responsive: true, modeBarButtonsToRemove: ["lasso2d", "select2d"] };
  const BASE = { margin: { l: 50, r: 20, t: 10, b: 40 }, hovermode: "x unified", paper_bgcolor: "rgba(0,0,0,0)",
                 plot_bgcolor: "rgba(0,0,0,0)", legend: { orientation: "h", y: -0.2 },
                 xaxis: { type: "date", gridcolor: "#eef1f5" } };
  let timer = null;

  const local = (date) => new Date(date.getTime() - date.getTimezoneOffset() * 60000).toISOString().slice(0, 16);

  function range() {
    const choice = form.elements.range.value;
    if (choice === "custom") {
      const from = form.elements.from.value, to = form.elements.to.value;
      if (!from || !to) return null;
      return { from: new Date(from), to: new Date(to), live: false };
    }
    const to = new Date();
    return { from: new Date(to.getTime() - SPANS[choice]), to, live: true };
  }

  function query(r) {
    return new URLSearchParams({ from: r.from.toISOString(), to: r.to.toISOString() });
  }

  // A range that cannot be shown clears the charts, so no chart of another range stays under
  // the message as if it answered this one (issue 24 item 7).
  function refuse(message) {
    clearTimeout(timer);
    CHARTS.forEach((id) => Plotly.purge(id));
    problem.textContent = message;
    problem.hidden = false;
    status.textContent = "";
  }

  async function load() {
    const r = range();
    if (!r) { refuse("Choose both ends of the custom range."); return; }
    if (r.from >= r.to) { refuse("The range ends before it starts: choose a From earlier than the To."); return; }
    csv.href = "/api/v1/analytics/allocation/?" + query(r) + "&format=csv";
    status.textContent = "loading…";
    const get = async (from) => {
      const response = await fetch("/api/v1/analytics/allocation/?" + query({ ...r, from }),
                                   { headers: { Accept: "application/json" } });
      return [response.ok, await response.json()];
    };
    let [ok, body] = await get(r.from);
    if (!ok) {
      refuse(Object.entries(body).map(([field, reasons]) => `${field}: ${[].concat(reasons).join(" ")}`).join("; "));
      return;
    }
    // Data younger than the range (a fresh install) is asked again from its first sample, so
    // the API picks a step fine enough to draw it, not one point per 5 minutes (issue 34 item 10).
    let first = sampled(body).indexOf(true);
    let since = "";
    if (first > 0) {
      const [again, finer] = await get(new Date(body.times[first]));
      if (again && sampled(finer).indexOf(true) >= 0) body = finer;
      const start = Math.max(0, sampled(body).indexOf(true));
      since = ` · data since ${new Date(body.times[start]).toLocaleString()}`;
    }
    problem.hidden = true;
    draw(body);
    const stepText = body.step_s >= 3600 ? body.step_s / 3600 + " h" : body.step_s >= 60 ? body.step_s / 60 + " min" : body.step_s + " s";
    status.textContent = first < 0 ? "no data yet" :
      `one point per ${stepText} · ${body.projects.length} project${body.projects.length === 1 ? "" : "s"}${since}`;
    clearTimeout(timer);
    if (r.live) timer = setTimeout(load, Math.max(10000, Math.min(body.step_s * 1000, 60000)));
  }

  // The steps that have a sample: a fresh install has none (an empty state, not empty axes),
  // and a range that begins before the first sample is drawn from that sample, not as a
  // sliver at the right of 24 empty hours (issue 34 item 10).
  function sampled(data) {
    const series = [...data.projects.map((p) => p.allocated), ...Object.values(data.cluster)];
    return data.times.map((_, i) => series.some((ys) => Array.isArray(ys) && ys[i] != null));
  }

  function draw(data) {
    const seen = sampled(data);
    const first = seen.indexOf(true);
    const empty = first < 0;
    document.getElementById("no-data").hidden = !empty;
    for (const id of CHARTS) document.getElementById(id).closest("section").hidden = empty;
    if (empty) { CHARTS.forEach((id) => Plotly.purge(id)); return; }
    const end = new Date(Date.parse(data.times[data.times.length - 1]) + data.step_s * 1000).toISOString();
    const span = first > 0 ? { range: [data.times[first], end] } : {};
    const xaxis = { ...BASE.xaxis, ...span };
    const x = data.times;
    // a series with few points gets markers, so a single sample still shows
    const mode = (ys) => (ys.filter((y) => y != null).length < 30 ? "lines+markers" : "lines");
    const allocation = [], pending = [], cpu = [], memory = [];
    data.projects.forEach((p, i) => {
      const color = window.Allot.colour(p.name, i); // the project's colour on every chart
      allocation.push({ type: "scatter", mode: mode(p.allocated), marker: { size: 4 }, name: p.name, x, y: p.allocated, line: { color, width: 2.5, shape: "hv" },
                        legendgroup: p.name, hovertemplate: `${p.name}: %{y} GPUs<extra></extra>` });
      allocation.push({ type: "scatter", mode: "lines", name: `${p.name} quota`, x, y: p.quota, legendgroup: p.name,
                        line: { color, width: 1.5, dash: "dot", shape: "hv" }, hovertemplate: `${p.name} quota: %{y}<extra></extra>` });
      // CPU and memory in the project's colour of the GPU chart (issue 26)
      cpu.push({ type: "scatter", mode: mode(p.cpu), marker: { size: 4 }, name: p.name, x, y: p.cpu, line: { color, width: 2, shape: "hv" },
                 hovertemplate: `${p.name}: %{y} cores<extra></extra>` });
      memory.push({ type: "scatter", mode: mode(p.memory), marker: { size: 4 }, name: p.name, x, y: p.memory, line: { color, width: 2, shape: "hv" },
                    hovertemplate: `${p.name}: %{y} GiB<extra></extra>` });
      pending.push({ type: "scatter", mode: mode(p.pending), marker: { size: 4 }, name: p.name, x, y: p.pending, line: { color, shape: "hv" },
                     hovertemplate: `${p.name}: %{y} pending<extra></extra>` });
    });
    pending.push({ type: "scatter", mode: "lines", name: "cluster", x, y: data.cluster.pending, line: { color: "#1b2430", width: 1, dash: "dash", shape: "hv" } });
    const utilization = [{ type: "scatter", mode: mode(data.cluster.utilization), marker: { size: 4 }, name: "allocated GPUs", x, y: data.cluster.utilization.map((u) => (u == null ? null : u * 100)),
                           line: { color: "#2a9d5c", shape: "hv" }, hovertemplate: "%{y:.0f} %<extra></extra>" }];
    Plotly.react("allocation-chart", allocation, { ...BASE, xaxis, height: 380, yaxis: { title: { text: "GPUs" }, rangemode: "tozero" } }, CONFIG);
    Plotly.react("cpu-chart", cpu, { ...BASE, xaxis, height: 300, yaxis: { title: { text: "CPU (cores)" }, rangemode: "tozero" } }, CONFIG);
    Plotly.react("memory-chart", memory, { ...BASE, xaxis, height: 300, yaxis: { title: { text: "memory (GiB)" }, rangemode: "tozero" } }, CONFIG);
    Plotly.react("pending-chart", pending, { ...BASE, xaxis, height: 260, yaxis: { title: { text: "jobs" }, rangemode: "tozero" } }, CONFIG);
    const idleNames = data.projects.map((p) => p.name);
    Plotly.react("idle-chart", [{ type: "bar", x: idleNames, y: data.projects.map((p) => p.idle_gpu_hours),
                                  marker: { color: data.projects.map((p, i) => window.Allot.colour(p.name, i)) },
                                  hovertemplate: "%{x}: %{y:.2f} GPU-hours idle<extra></extra>" }],
                 { ...BASE, height: 260, showlegend: false, xaxis: { type: "category" },
                   yaxis: { title: { text: "GPU-hours" }, rangemode: "tozero" } }, CONFIG);
    Plotly.react("utilization-chart", utilization, { ...BASE, xaxis, height: 260, showlegend: false,
                 yaxis: { title: { text: data.simulated ? "% (simulated)" : "%" }, range: [0, 100] } }, CONFIG);
  }

  form.addEventListener("change", (event) => {
    if (event.target.name === "range" && event.target.value !== "custom") load();
    if (event.target.name === "range" && event.target.value === "custom" && !form.elements.from.value) {
      const now = new Date();
      form.elements.to.value = local(now);
      form.elements.from.value = local(new Date(now.getTime() - 86400e3));
    }
  });
  form.addEventListener("submit", (event) => { event.preventDefault(); load(); });
  load();
  window.allotAnalytics = { reload: load };
})();
