/* The overview page: renders the overview JSON (first from the page, then from the websocket). */
"use strict";
(function () {
  const COLORS = { in: "#2f6fbd", over: "#e07a1f", free: "#dfe6ef", fair: "#1b2430" };
  let skew = 0; // browser clock minus server clock, so run and wait times tick correctly
  let current = null;

  const gpus = window.Allot.format.gpus; // one spelling on every page (portal/core/formats.py)
  const pct = (x) => (x == null ? "–" : Math.round(x * 100) + " %");
  function duration(seconds) {
    const s = Math.max(0, Math.round(seconds));
    const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), r = s % 60;
    if (h >= 24) return Math.floor(h / 24) + "d " + (h % 24) + "h";
    if (h) return h + "h " + String(m).padStart(2, "0") + "m";
    if (m) return m + "m " + String(r).padStart(2, "0") + "s";
    return r + "s";
  }
  function eta(iso, kind) { // "in 12m"; "≥ 12m" a lower bound; "never as submitted"
    if (kind === "never") return "cannot start";
    if (!iso) return "not known";
    const left = (Date.parse(iso) - (Date.now() - skew)) / 1000;
    if (kind === "not_before") return left <= 60 ? "any time" : "not before " + duration(left);
    return left <= 60 ? "next cycles" : "in " + duration(left);
  }
  const since = (iso) => (Date.now() - skew - Date.parse(iso)) / 1000;
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (key === "class") node.className = value;
      else if (key === "data") Object.assign(node.dataset, value);
      else if (key === "style") node.style.cssText = value; // CSSOM: the CSP refuses style attributes
      else node.setAttribute(key, value);
    }
    for (const child of children) node.append(child == null ? "" : child);
    return node;
  }
  const cell = (text, cls) => el("td", cls ? { class: cls } : null, text);

  // CPU and memory beside GPUs (issue 26): millicores as cores, bytes (issue 33) in words
  const { cores, memory } = window.Allot.format;
  function held(used, total, say) { return total == null ? say(used) : `${say(used)} / ${say(total)}`; }

  function tile(name, value, sub) {
    const box = document.querySelector(`[data-tile="${name}"]`);
    box.querySelector(".value").textContent = value;
    if (sub !== undefined) box.querySelector(".sub").textContent = sub;
  }

  function renderTiles(ov) {
    const c = ov.cluster;
    tile("nodes", c.nodes, `${c.ready_nodes} ready`);
    // in service: a failed GPU is not counted as one the cluster has (issue 34 item 11)
    tile("gpus", gpus(c.gpus - (c.failed_gpus || 0)), `${gpus(c.ready_gpus)} on ready nodes` +
      (c.failed_gpus ? `; ${c.failed_gpus} failed, out of service (${gpus(c.gpus)} installed)` : "") +
      (c.outside_gpus ? `, ${c.outside_gpus} used outside Allot` : ""));
    const inService = c.gpus - (c.failed_gpus || 0);
    tile("allocated", gpus(c.allocated_gpus),
      inService ? `${Math.round((100 * c.allocated_gpus) / inService)} % of the GPUs in service` : "");
    tile("idle", gpus(c.idle_allocated_gpus));
    tile("utilization", pct(c.utilization),
      c.utilization == null ? "not measured" : (c.utilization_simulated ? "simulated" : "all GPUs, idle ones at 0"));
    const mine = yours(ov);
    tile("running", c.running_jobs, mine.partial ? `in the cluster; ${mine.running} in your projects` : "in the cluster");
    tile("pending", c.pending_jobs, mine.partial ? `in the cluster; ${mine.pending} in your projects` : "in the cluster");
  }

  // The tiles count the whole cluster; the lists show the jobs of the user's projects. When the
  // two differ (a researcher of one team), every count says which it is (issue 24 item 3).
  function yours(ov) {
    const sum = (key) => ov.projects.reduce((total, p) => total + p[key], 0);
    const running = sum("running_jobs"), pending = sum("pending_jobs");
    return { running, pending,
             partial: running !== ov.cluster.running_jobs || pending !== ov.cluster.pending_jobs };
  }

  function counted(id, ov, key) {
    const mine = yours(ov);
    document.getElementById(id).textContent = mine.partial
      ? `(${mine[key]} in your projects, ${ov.cluster[key + "_jobs"]} in the cluster)`
      : `(${ov.cluster[key + "_jobs"]})`;
    return mine;
  }

  function renderProjects(ov) {
    const projects = ov.projects.slice().reverse(); // plotly draws the first category at the bottom
    const names = projects.map((p) => p.name);
    const within = projects.map((p) => Math.min(p.allocated_gpus, p.quota));
    const over = projects.map((p) => p.over_quota_gpus);
    const free = projects.map((p) => Math.max(p.quota - p.allocated_gpus, 0));
    const label = projects.map((p) => `${gpus(p.allocated_gpus)} / ${gpus(p.quota)}`);
    const bar = (name, x, color, extra) => Object.assign(
      { type: "bar", orientation: "h", name, y: names, x, marker: { color },
        hovertemplate: `%{y}: %{x} GPUs ${name}<extra></extra>` }, extra || {});
    const traces = [
      bar("within quota", within, COLORS.in),
      bar("over quota", over, COLORS.over),
      bar("unused quota", free, COLORS.free, { marker: { color: COLORS.free, line: { color: "#b8c4d3", width: 1 } } }),
      { type: "scatter", mode: "markers", name: "fair share", y: names, x: projects.map((p) => p.fair_share),
        marker: { symbol: "line-ns", size: 26, line: { width: 3, color: COLORS.fair } },
        hovertemplate: "%{y}: fair share %{x} GPUs<extra></extra>" },
      { type: "scatter", mode: "text", y: names,
        x: projects.map((p) => Math.max(p.allocated_gpus, p.quota, p.fair_share)),
        text: label, textposition: "middle right", hoverinfo: "skip", showlegend: false,
        textfont: { size: 13, color: COLORS.fair } },
    ];
    const most = Math.max(1, ...projects.map((p) => Math.max(p.allocated_gpus, p.quota, p.fair_share)));
    const layout = {
      barmode: "stack", height: 70 + 40 * Math.max(projects.length, 1), showlegend: false,
      margin: { l: 90, r: 20, t: 10, b: 36 }, bargap: 0.35,
      xaxis: { title: { text: "GPUs" }, range: [0, most * 1.2], zeroline: false, gridcolor: "#eef1f5" },
      yaxis: { automargin: true }, paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)",
    };
    Plotly.react("project-chart", traces, layout, { displayModeBar: false, responsive: true });

    const body = document.querySelector("#projects tbody");
    // Grouped by department (issue 34 item 9): a heading row before each department's projects,
    // when there are departments; the server sends them in that order.
    const grouped = ov.projects.some((p) => p.department);
    const rows = [];
    let current;
    ov.projects.forEach((p) => {
      if (grouped && p.department !== current) {
        current = p.department;
        rows.push(el("tr", { class: "group", data: { department: current || "" } },
          el("th", { scope: "rowgroup", colspan: "8" }, current ? `Department ${current}` : "No department")));
      }
      rows.push(p);
    });
    body.replaceChildren(...rows.map((p) => p instanceof Node ? p : el("tr", { data: { project: p.name } },
      el("th", { scope: "row" }, p.name),
      el("td", { class: "num alloc" + (p.over_quota_gpus > 0 ? " over" : "") }, `${gpus(p.allocated_gpus)} / ${gpus(p.quota)}`),
      cell(gpus(p.fair_share), "num"),
      cell(p.limit == null ? "none" : gpus(p.limit), "num"),
      cell(`${held(p.allocated_cpu_millis, p.cpu_limit_millis, cores)}, ${held(p.allocated_memory_bytes, p.memory_limit_bytes, memory)}`, "num cpu-memory"),
      cell(p.running_jobs, "num"), cell(p.pending_jobs, "num"),
      cell(pct(p.utilization) + (p.utilization != null && p.utilization_simulated ? " (sim)" : ""), "num"))));
  }

  // The running and pending tables show PAGE_ROWS rows at a time and say which (issue 23):
  // a scroll box hid most of them. The page shown stays put across live updates.
  const PAGE_ROWS = 25;
  const pages = { running: 0, pending: 0 };
  function paged(key, rows, total) {
    const last = Math.max(0, Math.ceil(rows.length / PAGE_ROWS) - 1);
    pages[key] = Math.min(pages[key], last);
    const start = pages[key] * PAGE_ROWS, shown = rows.slice(start, start + PAGE_ROWS);
    const pager = document.getElementById(key + "-pager");
    pager.hidden = rows.length <= PAGE_ROWS;
    pager.querySelector(".range").textContent = `Rows ${start + 1}–${start + shown.length} of ${rows.length}` +
      (total > rows.length ? ` (the first ${rows.length} of ${total}; the Jobs page lists them all)` : "");
    pager.querySelector(".prev").disabled = pages[key] === 0;
    pager.querySelector(".next").disabled = pages[key] >= last;
    return shown;
  }
  for (const [key, draw] of [["running", () => renderRunning(current)], ["pending", () => renderPending(current)]]) {
    const pager = document.getElementById(key + "-pager");
    pager.querySelector(".prev").addEventListener("click", () => { pages[key] -= 1; draw(); });
    pager.querySelector(".next").addEventListener("click", () => { pages[key] += 1; draw(); });
  }

  function renderRunning(ov) {
    const mine = counted("running-count", ov, "running");
    const body = document.querySelector("#running tbody");
    const rows = paged("running", ov.running, mine.partial ? mine.running : ov.cluster.running_jobs);
    body.replaceChildren(...rows.map((j) => el("tr", { data: { job: `${j.project}/${j.name}` } },
      el("th", { scope: "row" }, j.name), cell(j.project), cell(j.user || "–"), cell(j.type),
      cell(j.nodes.join(", ")), cell(gpus(j.allocated_gpus), "num"),
      el("td", { class: "num", data: { since: j.started_at } }, duration(since(j.started_at))),
      el("td", { class: "status-" + j.status }, j.status, j.stuck ? el("span", { class: "badge warn" }, " Stuck") : null),
      cell(pct(j.utilization) + (j.utilization != null && j.utilization_simulated ? " (sim)" : ""), "num"),
      cell(j.gpu_memory_used_bytes == null ? "–" : memory(j.gpu_memory_used_bytes), "num gpu-memory"))));
    const empty = body.closest(".card").querySelector(".empty");
    empty.hidden = ov.running.length > 0;
    empty.textContent = mine.partial ? `No job of your projects holds GPUs; other projects have ${ov.cluster.running_jobs} running.` : "No jobs hold GPUs.";
  }

  // "… (R9.2)": each rule code links to its explanation on /rules/ (issue 24 item 7)
  function withRuleLinks(text) {
    return text.split(/\b(R\d{1,2}\.\d{1,2})\b/).map((part, i) =>
      (i % 2 ? el("a", { class: "rule", href: `/rules/#${part}` }, part) : part));
  }

  function renderPending(ov) {
    const mine = counted("pending-count", ov, "pending");
    const body = document.querySelector("#pending tbody");
    const rows = paged("pending", ov.pending, mine.partial ? mine.pending : ov.cluster.pending_jobs);
    body.replaceChildren(...rows.map((j) => el("tr", { data: { job: `${j.project}/${j.name}` } },
      el("th", { scope: "row" }, j.name), cell(j.project), cell(gpus(j.gpus * j.pods), "num"),
      el("td", { class: "num", data: { since: j.submitted_at } }, duration(since(j.submitted_at))),
      cell(`${j.queue_position} of ${j.queue_length}`, "num"),
      el("td", { class: "num", title: j.expected_start || "" }, eta(j.eta, j.eta_kind)),
      el("td", { class: "reason" }, ...withRuleLinks(j.pending_reason || "waiting for the next scheduling cycle")))));
    const empty = body.closest(".card").querySelector(".empty");
    empty.hidden = ov.pending.length > 0;
    empty.textContent = mine.partial ? `Nothing of your projects is waiting; other projects have ${ov.cluster.pending_jobs} pending.` : "Nothing is waiting.";
  }

  function stack(jobs) { // one segment per job on the device, bottom up: fractions stay visible
    let bottom = 0;
    return jobs.map((j) => {
      const segment = el("div", { class: "fill" + (j.share < 1 ? " part" : ""),
                                  style: `bottom:${bottom * 100}%;height:${j.share * 100}%` });
      bottom += j.share;
      return segment;
    });
  }

  function renderNodes(ov) {
    const box = document.getElementById("nodes");
    box.replaceChildren(...ov.nodes.map((n) => {
      const devices = n.devices.map((d) => {
        const names = d.jobs.map((j) => (j.name ? `${j.project}/${j.name}` : "another project's job") +
          (j.share < 1 ? ` (${gpus(j.share)})` : ""));
        const title = `GPU ${d.index}: ` + (d.failed ? "FAILED, out of service; " : "") +
          (d.outside ? "used outside Allot (a pod another scheduler placed); " : "") + `${gpus(d.allocated)} allocated` +
          (d.utilization == null ? "" : `, ${pct(d.utilization)} utilization`) +
          (d.memory_used_bytes == null ? "" : `, ${memory(d.memory_used_bytes)} memory used`) +
          (names.length ? "\n" + names.join("\n") : "");
        return el("div", { class: "device" + (d.failed ? " failed" : "") + (d.outside ? " outside" : ""), title, role: "img", "aria-label": title,
                           data: { allocated: d.allocated } },
          ...stack(d.jobs),
          el("span", null, String(d.index))); // its index always; a fraction's share is in the title
      });
      const state = !n.ready ? "not ready" : (!n.schedulable ? "cordoned" : "ready");
      return el("article", { class: "node" + (!n.ready ? " down" : (n.schedulable ? "" : " cordoned")), data: { node: n.name } },
        el("header", null,
          el("b", null, n.name),
          el("span", null, `pool ${n.pool}`),
          el("span", { class: "used" }, `${gpus(n.allocated_gpus)} / ${n.gpus} GPUs`),
          el("span", { class: "cpu-memory" }, `CPU ${held(n.allocated_cpu_millis, n.cpu_millis, cores)}, memory ${held(n.allocated_memory_bytes, n.memory_bytes, memory)}`),
          el("span", null, `util ${pct(n.utilization)}${n.utilization != null && n.utilization_simulated ? " (sim)" : ""}`),
          el("span", { class: !n.ready ? "error" : (n.schedulable ? "status-Running" : "warn") }, state)),
        el("div", { class: "devices" }, ...devices));
    }));
  }

  function renderAttention(ov) {
    const idle = ov.attention.idle, troubled = ov.attention.troubled;
    const idleBody = document.querySelector("#idle-jobs tbody");
    idleBody.replaceChildren(...idle.map((j) => el("tr", { data: { job: `${j.project}/${j.name}` } },
      el("th", { scope: "row" }, j.name), cell(j.project), cell(j.user || "–"),
      cell(gpus(j.allocated_gpus), "num"),
      cell(pct(j.utilization) + (j.utilization_simulated ? " (sim)" : ""), "num"))));
    document.getElementById("idle-count").textContent = `(${idle.length})`;
    idleBody.closest("div").querySelector(".empty").hidden = idle.length > 0;
    const troubledBody = document.querySelector("#troubled-jobs tbody");
    troubledBody.replaceChildren(...troubled.map((j) => el("tr", { data: { job: `${j.project}/${j.name}` } },
      el("th", { scope: "row" }, j.name), cell(j.project), cell(j.stuck ? "Stuck" : j.status),
      cell(j.problem, "reason"))));
    document.getElementById("troubled-count").textContent = `(${troubled.length})`;
    troubledBody.closest("div").querySelector(".empty").hidden = troubled.length > 0;
  }

  function render(ov) {
    current = ov;
    skew = Date.now() - Date.parse(ov.generated_at);
    const problem = document.getElementById("cluster-problem");
    problem.hidden = !ov.cluster_problem;
    problem.textContent = ov.cluster_problem
      ? ov.cluster_problem + " · Allot keeps accepting and planning jobs; the cluster catches up when it answers."
      : "";
    renderTiles(ov);
    renderProjects(ov);
    renderRunning(ov);
    renderPending(ov);
    renderAttention(ov);
    renderNodes(ov);
    const updated = document.getElementById("updated");
    updated.dateTime = ov.generated_at;
    updated.textContent = new Date(ov.generated_at).toLocaleTimeString();
  }

  function tick() { // run and wait times move every second between updates
    for (const td of document.querySelectorAll("td[data-since]")) td.textContent = duration(since(td.dataset.since));
  }

  render(JSON.parse(document.getElementById("overview-data").textContent));
  setInterval(tick, 1000);
  window.allotOverview = { current: () => current };
  const TOASTS_SHOWN = 3; // a burst (a whole scenario starting) must not cover the page
  function toast(notice) { // one of my jobs changed: say so for 8 s
    let box = document.getElementById("toasts");
    if (!box) {
      box = el("div", { id: "toasts", class: "toasts", role: "status", "aria-live": "polite" });
      document.body.append(box);
    }
    const item = el("div", { class: "toast toast-" + notice.kind.replace(" ", "-") },
      el("b", null, `${notice.project}/${notice.job} ${notice.event}`), el("span", null, notice.message));
    box.append(item);
    setTimeout(() => { item.remove(); summarise(box); }, 8000);
    summarise(box);
  }
  function summarise(box) { // the newest TOASTS_SHOWN stay; the rest fold into "+ n more"
    const items = [...box.querySelectorAll(".toast")];
    items.forEach((item, i) => { item.hidden = i < items.length - TOASTS_SHOWN; });
    let more = box.querySelector(".toast-more");
    const hidden = Math.max(0, items.length - TOASTS_SHOWN);
    if (!hidden) { if (more) more.remove(); return; }
    if (!more) {
      more = el("div", { class: "toast toast-more" });
      box.prepend(more);
    }
    more.textContent = `+ ${hidden} more change${hidden > 1 ? "s" : ""} to your jobs (see Jobs)`;
  }

  window.allotLive("/ws/overview/", (message) => {
    if (message.type === "overview") render(message.overview);
    else if (message.type === "toast") toast(message.notice);
  }, document.getElementById("live"));
})();
