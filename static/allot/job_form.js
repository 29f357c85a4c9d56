/* The submit form (issue 34 item 5): it shows the one GPU field the "Ask for" choice names (the
   API takes GPUs or GPU memory, never both; the server drops the other), and the CPU and memory
   hints follow the chosen project's defaults (each option carries them: data-cpu,
   data-memory and their hints). */
(function () {
  "use strict";
  function showGpuField(form) {
    const chosen = form.querySelector("input[name=gpus_by]:checked");
    for (const block of form.querySelectorAll("[data-gpus-by]")) {
      block.hidden = !chosen || block.dataset.gpusBy !== chosen.value;
    }
  }
  function showDefaults(select) {
    const option = select.selectedOptions[0];
    if (!option) return;
    for (const name of ["cpu", "memory"]) {
      const input = document.getElementById(`id_${name}`);
      const help = document.getElementById(`help_${name}`);
      if (!input || option.dataset[name] === undefined) continue;
      input.placeholder = option.dataset[name];
      const hint = option.dataset[`${name}Hint`];
      if (help) help.textContent = help.textContent.replace(/Empty: .*$/, `Empty: ${hint}.`);
    }
  }
  document.addEventListener("DOMContentLoaded", () => {
    const select = document.getElementById("id_project");
    const form = select && select.form;
    if (!form) return;
    showGpuField(form);
    showDefaults(select);
    form.addEventListener("change", (event) => {
      if (event.target.name === "gpus_by") showGpuField(form);
      if (event.target === select) showDefaults(select);
    });
  });
})();
