/* The what-if preview (issue 37): a "Preview" button asks POST /api/v1/what-if/ what its change
   would do (a button with data-url and data-form posts its whole form there instead, as the
   booking form does: the page checks the form as it would book it and answers the same shape,
   or {"errors": {field: [reason]}} to show beside the boxes), then draws each project's GPUs over the next hours without (dotted) and with the
   change (solid), a table of start moves and the jobs the change would stop now. */
"use strict";
(function () {
  const box = document.getElementById("whatif");
  if (!box) return;

  function when(stamp, now) {
    if (stamp == null) return "not within 6 h";
    const minutes = Math.round((Date.parse(stamp) - Date.parse(now)) / 60000);
    if (minutes < 1) return "now";
    const h = Math.floor(minutes / 60), m = minutes % 60;
    return h ? `in ${h} h ${String(m).padStart(2, "0")} min` : `in ${m} min`;
  }

  function change(button) {
    if (button.dataset.node) return { kind: button.dataset.kind, node: button.dataset.node };
    const quota = document.querySelector(button.dataset.input);
    return { kind: "quota", project: button.dataset.project, quota: Number(quota.value) };
  }

  function cell(row, text, kind) {
    const td = document.createElement("td");
    if (kind) td.className = kind;
    td.textContent = text;
    row.appendChild(td);
  }

  function draw(answer) {
    const names = answer.projects.map((p) => p.project);
    const traces = [];
    names.forEach((name, i) => {
      for (const [side, dash] of [["before", "dot"], ["after", "solid"]]) {
        const points = answer.series[side];
        traces.push({
          type: "scatter", mode: "lines", line: { shape: "hv", dash, color: window.Allot.colour(name, i) },
          name: `${name} ${side === "before" ? "now" : "with the change"}`,
          x: points.map((p) => p.at), y: points.map((p) => p.gpus[name] || 0),
        });
      }
    });
    const layout = {
      height: 340, margin: { l: 60, r: 20, t: 10, b: 40 }, hovermode: "x unified",
      paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)", legend: { orientation: "h", y: -0.2 },
      yaxis: { title: { text: "GPUs held" }, rangemode: "tozero", gridcolor: "#eef1f5" },
    };
    Plotly.newPlot("whatif-chart", traces, layout, { displaylogo: false, responsive: true });
    const body = document.querySelector("#whatif-table tbody");
    body.replaceChildren();
    for (const p of answer.projects) {
      if (!p.pending && !p.stopped) continue;
      const row = document.createElement("tr");
      row.dataset.project = p.project;
      const th = document.createElement("th");
      th.scope = "row";
      th.textContent = p.project;
      row.appendChild(th);
      cell(row, p.pending, "num");
      cell(row, p.stopped, "num");
      for (const key of ["first", "last"]) {  // "-": no work waits on that side
        cell(row, p.pending ? when(p.before[key], answer.now) : "-");
        cell(row, p.pending + p.stopped ? when(p.after[key], answer.now) : "-");
      }
      body.appendChild(row);
    }
    const list = document.getElementById("whatif-preempted");
    list.replaceChildren();
    for (const job of answer.preempted) {
      const li = document.createElement("li");
      li.textContent = `${job.project}/${job.job}: ${job.reason}`;
      list.appendChild(li);
    }
    if (!answer.preempted.length) list.innerHTML = "<li>none</li>";
  }

  function clearFieldErrors(form) {
    for (const old of form.querySelectorAll(".field p.error")) old.remove();
    for (const field of form.querySelectorAll(".field.invalid")) {
      field.classList.remove("invalid");
      for (const input of field.querySelectorAll("[aria-invalid]")) input.removeAttribute("aria-invalid");
    }
  }

  /* Each reason under its box, as the page prints them after a refused booking; reasons for no
     box of the form go to the preview's own error line. */
  function showFieldErrors(form, errors) {
    const elsewhere = [];
    for (const [name, reasons] of Object.entries(errors)) {
      const input = form.querySelector(`#id_${name}`);
      const field = input && input.closest(".field");
      if (!field) { elsewhere.push(...reasons); continue; }
      field.classList.add("invalid");
      input.setAttribute("aria-invalid", "true");
      for (const old of field.querySelectorAll(`#err_${name}`)) old.remove();
      const p = document.createElement("p");
      p.className = "error whatif-field-error";
      p.id = `err_${name}`;
      p.textContent = reasons.join(" ");
      input.setAttribute("aria-describedby", p.id);
      field.appendChild(p);
    }
    return elsewhere;
  }

  function ask(button, token) {
    if (button.dataset.form) {
      return fetch(button.dataset.url, {
        method: "POST", credentials: "same-origin",
        headers: { Accept: "application/json", "X-CSRFToken": token },
        body: new FormData(document.querySelector(button.dataset.form)),
      });
    }
    return fetch("/api/v1/what-if/", {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": token },
      body: JSON.stringify({ changes: [change(button)], hours: 6 }),
    });
  }

  async function preview(button) {
    const error = document.getElementById("whatif-error");
    const form = button.dataset.form ? document.querySelector(button.dataset.form) : null;
    error.hidden = true;
    if (form) clearFieldErrors(form);
    document.getElementById("whatif-what").textContent = button.dataset.label;
    const token = document.querySelector("input[name=csrfmiddlewaretoken]").value;
    const response = await ask(button, token);
    const answer = await response.json();
    if (!response.ok) {
      const rest = form && answer.errors ? showFieldErrors(form, answer.errors) : [JSON.stringify(answer)];
      box.hidden = !rest.length;
      error.textContent = rest.join(" ");
      error.hidden = !rest.length;
      return;
    }
    box.hidden = false;
    draw(answer);
    box.scrollIntoView({ block: "nearest" });
  }

  for (const button of document.querySelectorAll(".whatif-preview")) {
    button.addEventListener("click", () => preview(button));
  }
})();
