/* Behaviour the templates ask for with data attributes, since the Content-Security-Policy allows
   no inline handlers or style attributes: data-confirm on a form or button asks before it
   submits, data-copy="id" copies that input's value, data-height="n" sets a bar's height to n%,
   and the cells of a table.stack carry their column's name for the phone layout. */
(function () {
  "use strict";
  document.addEventListener("submit", (event) => {
    const question = event.target.dataset.confirm;
    if (question && !confirm(question)) event.preventDefault();
  });
  document.addEventListener("click", (event) => {
    const button = event.target.closest("button[data-confirm], button[data-copy]");
    if (!button) return;
    if (button.dataset.confirm && !confirm(button.dataset.confirm)) event.preventDefault();
    if (button.dataset.copy) navigator.clipboard.writeText(document.getElementById(button.dataset.copy).value);
  });
  // table.stack: every cell names its column (data-label), for the phone layout of allot.css;
  // rows drawn later (the overview's live tables) are labelled as they come.
  function label(table) {
    const heads = [...table.querySelectorAll("thead th")].map((th) => th.textContent.trim());
    for (const row of table.querySelectorAll("tbody tr")) {
      if (row.children.length === 1 && row.children[0].colSpan > 1) continue; // "none yet" rows
      [...row.children].forEach((cell, i) => { if (heads[i] && !cell.dataset.label) cell.dataset.label = heads[i]; });
    }
  }
  document.addEventListener("DOMContentLoaded", () => {
    for (const bar of document.querySelectorAll("[data-height]")) bar.style.height = `${bar.dataset.height}%`;
    for (const table of document.querySelectorAll("table.stack")) {
      label(table);
      new MutationObserver(() => label(table)).observe(table, { childList: true, subtree: true });
    }
  });
})();
