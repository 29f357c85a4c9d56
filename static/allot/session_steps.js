/* The job page's Jupyter steps (#session-steps): ask the portal how far the session is every
   150 ms. The answer is always JSON with status 200 (never the proxy's 503), so waiting logs
   nothing in the console. When the lab answers, open it if the user launched it (data-open),
   else say that "Open Jupyter" works now. */
(function () {
  const card = document.getElementById("session-steps");
  if (!card) return;
  const note = document.getElementById("session-note");
  const badge = document.getElementById("job-status");

  function show(state) {
    for (const step of state.steps) {
      const item = card.querySelector(`[data-step="${step.key}"]`);
      if (!item) continue;
      item.dataset.state = step.state;
      item.querySelector(".step-detail").textContent = step.detail;
    }
    if (badge && badge.textContent !== state.status) {
      badge.textContent = state.status;
      badge.className = `badge status-${state.status}`;
    }
  }

  function poll() {
    fetch(card.dataset.progress, { credentials: "same-origin", cache: "no-store",
                                   headers: { Accept: "application/json" } })
      .then((response) => {
        if (!response.ok) throw new Error(`status ${response.status}`);
        return response.json();
      })
      .then((state) => {
        show(state);
        if (state.answering) {
          if (card.dataset.open) {
            note.textContent = "JupyterLab answers: opening it.";
            location.assign(card.dataset.open);
          } else {
            note.textContent = "JupyterLab answers: \u201cOpen Jupyter\u201d opens it.";
          }
        } else if (state.ended) {
          note.textContent = state.ended;
        } else {
          setTimeout(poll, 150);
        }
      })
      .catch(() => { note.textContent = "The portal does not answer; trying again."; setTimeout(poll, 2000); });
  }
  setTimeout(poll, 150);
})();
