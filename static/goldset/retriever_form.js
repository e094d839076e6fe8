// Add a retriever: show only the chosen kind's fields, and the chosen HTTP preset's
// method, body and paths. Without JavaScript every field stays visible and still works.
(function () {
  "use strict";
  const form = document.getElementById("retriever-form");
  if (!form) return;
  const kind = form.querySelector("select[name=kind]");
  const preset = form.querySelector("select[name=preset]");

  function update() {
    const chosen = kind ? kind.value : "";
    form.querySelectorAll("[data-kinds]").forEach(function (row) {
      const shown = row.dataset.kinds.split(" ").indexOf(chosen) !== -1;
      row.hidden = !shown;
    });
    form.querySelectorAll("[data-preset]").forEach(function (details) {
      const shown = chosen === "http" && preset && preset.value === details.dataset.preset;
      details.hidden = !shown;
      details.open = shown;
    });
  }

  if (kind) kind.addEventListener("change", update);
  if (preset) preset.addEventListener("change", update);
  update();
})();
