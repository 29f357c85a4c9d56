/* The accounting page: GPU-hours allocated per period, stacked by group (the page's JSON). */
"use strict";
(function () {
  const NONE = { project: "-", department: "(no department)", user: "(no user)" };
  const data = JSON.parse(document.getElementById("accounting-data").textContent);
  const group = data.group_by;
  const x = data.periods.map((p) => p.period);
  const keys = data.totals.map((t) => t[group]);
  const traces = keys.map((key, i) => {
    const byPeriod = new Map(data.rows.filter((r) => r[group] === key).map((r) => [r.period, r]));
    const label = key == null ? NONE[group] : key;
    return {
      type: "bar", name: label, x,
      y: x.map((p) => (byPeriod.has(p) ? byPeriod.get(p).allocated_gpu_hours : 0)),
      customdata: x.map((p) => (byPeriod.has(p) ? byPeriod.get(p).over_quota_gpu_hours : 0)),
      marker: { color: group === "project" ? window.Allot.colour(key, i) : window.Allot.colour(null, i) },
      hovertemplate: `${label}: %{y:.2f} GPU-h (over quota %{customdata:.2f})<extra></extra>`,
    };
  });
  const layout = {
    barmode: "stack", height: 380, margin: { l: 60, r: 20, t: 10, b: 50 }, hovermode: "x unified",
    paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)", legend: { orientation: "h", y: -0.2 },
    xaxis: { type: "category", title: { text: data.period } },
    yaxis: { title: { text: "GPU-hours allocated" }, rangemode: "tozero", gridcolor: "#eef1f5" },
  };
  Plotly.newPlot("accounting-chart", traces, layout, { displaylogo: false, responsive: true });
})();
