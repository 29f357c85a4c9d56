/* One spelling per quantity kind on the live pages, by the rules of portal/core/formats.py,
   which spells the server-rendered ones (issue 34 item 11: 0.63, 0.62 and 0.625 for one
   request on one page). Loaded first, without defer, so every page's script may use it. */
window.Allot = window.Allot || {};
/* A project's colour, the same on every chart (portal/web/colours.py hands the map to the page
   as #project-colours); a key without one (a user, a department) takes the palette in turn. */
window.Allot.colour = (function () {
  "use strict";
  const PALETTE = ["#2f6fbd", "#e07a1f", "#2a9d5c", "#b3261e", "#6b3fa0", "#8c564b", "#d6489f", "#5f6b7a", "#a39b00", "#17a2b8"];
  let map = null;
  return (name, index) => {
    if (map === null) {
      const node = document.getElementById("project-colours");
      map = node ? JSON.parse(node.textContent) : {};
    }
    return map[name] || PALETTE[(index || 0) % PALETTE.length];
  };
})();
window.Allot.format = (function () {
  "use strict";
  // half up on the decimal digits as written: "1.005e2" is 100.5, where 1.005 * 100 is 100.49...
  const round2 = (x) => Number(Math.round(Number(`${x}e2`)) + "e-2");
  // memory as scheduler/quantity.py's memory_text says it: the binary unit unless only the
  // decimal one says the size exactly (to two decimals); none is "0 GiB" (portal/core/formats.py)
  const BINARY = [[2 ** 30, "GiB"], [2 ** 20, "MiB"], [2 ** 10, "KiB"]];
  const DECIMAL = [[1e9, "GB"], [1e6, "MB"], [1e3, "kB"]];
  function inWords(size, units) {
    for (const [unit, name] of units) {
      if (size >= unit) {
        const shown = (size / unit).toFixed(2).replace(/\.?0+$/, "");
        return [`${shown} ${name}`, (size * 100) % unit === 0];
      }
    }
    return [`${size} bytes`, true];
  }
  function memory(size) {
    if (!size) return "0 GiB";
    const binary = inWords(size, BINARY), decimal = inWords(size, DECIMAL);
    return decimal[1] && !binary[1] ? decimal[0] : binary[0];
  }
  return {
    gpus: (x) => (x == null ? "\u2013" : String(round2(Number(x)))),                // 0.625 -> 0.63
    gpusText: (x) => { const t = String(round2(Number(x))); return Number(t) <= 1 ? `${t} GPU` : `${t} GPUs`; },
    gpuHours: (x) => (x == null ? "\u2013" : round2(Number(x)).toFixed(2)),         // 0 -> 0.00
    cores: (millis) => (millis === 1000 ? "1 core" : `${Math.round(millis) / 1000} cores`),
    memory,  // bytes, exactly (issue 33): "64 GiB", "1.5 GiB", "50 MB"
  };
})();
