/* Behaviour the templates ask for with data attributes, since the Content-Security-Policy allows
   no inline handlers or style attributes: data-confirm on a form or button asks before it
   submits, data-copy="id" copies that input's value, data-height="n" sets a bar's height to n%. */
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
  document.addEventListener("DOMContentLoaded", () => {
    for (const bar of document.querySelectorAll("[data-height]")) bar.style.height = `${bar.dataset.height}%`;
  });
})();
