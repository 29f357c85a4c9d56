/* A job page's log panel: polls the logs endpoint every 2 s while the page is open. */
"use strict";
(function () {
  const box = document.getElementById("logs");
  const state = document.getElementById("logs-state");
  if (!box) return;
  async function poll() {
    try {
      const response = await fetch(box.dataset.url, { headers: { Accept: "application/json" } });
      if (!response.ok) { state.textContent = `(${response.status})`; return; }
      const body = await response.json();
      const atEnd = box.scrollTop + box.clientHeight >= box.scrollHeight - 4;
      box.textContent = body.lines.join("\n") || "(no output yet)";
      if (atEnd) box.scrollTop = box.scrollHeight;
      state.textContent = body.simulated ? "simulated · live" : "live";
      document.getElementById("job-status").textContent = body.status;
    } catch (error) {
      state.textContent = "reconnecting…";
    } finally {
      setTimeout(poll, 2000);
    }
  }
  poll();
})();
