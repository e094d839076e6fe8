// The answer review's keys: j/k move between rows (a claim, a citation, a fact), a row's keys
// (data-key on its inputs) choose a grade, which htmx saves at once (in order, one at a time);
// r marks a refusal wrong, d finishes the review. The page keeps what was chosen; each reply
// brings back the status line, with the reason when a grade was refused.
(function () {
  "use strict";

  let current = 0;

  function rows() {
    return Array.from(document.querySelectorAll("#review [data-row]"));
  }

  function mark() {
    const all = rows();
    if (!all.length) return;
    current = Math.max(0, Math.min(current, all.length - 1));
    all.forEach(function (row, index) {
      row.classList.toggle("current", index === current);
    });
    all[current].scrollIntoView({ block: "nearest" });
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const target = event.target;
    if (target && (target.tagName === "TEXTAREA" || target.tagName === "SELECT" || (target.tagName === "INPUT" && target.type === "text"))) return;
    const all = rows();
    if (event.key === "j" || event.key === "ArrowDown") {
      current += 1;
      mark();
      event.preventDefault();
    } else if (event.key === "k" || event.key === "ArrowUp") {
      current -= 1;
      mark();
      event.preventDefault();
    } else if (event.key === "d") {
      const finish = document.getElementById("finish-review");
      if (finish) finish.requestSubmit();
    } else if (event.key === "e") {
      addEvidence(all[current]);
      event.preventDefault();
    } else if (event.key === "r") {
      const box = document.getElementById("refused-wrongly");
      if (box) box.click();
    } else if (all.length) {
      const input = all[current].querySelector('input[data-key="' + CSS.escape(event.key) + '"]');
      if (input && !input.checked) {
        input.click();
        // A grade given with a key moves on to the next row, as grading passages does.
        current += 1;
        mark();
        event.preventDefault();
      }
    }
  });

  // The selected words of a context passage become the current claim's evidence
  // (static/goldset/selection.js gives their code-point offsets, snapped to words).
  function addEvidence(row) {
    const status = document.getElementById("review-status");
    const form = document.getElementById("evidence-form");
    const context = document.getElementById("review-context");
    if (!form || !context || !window.GoldsetSelection) return;
    if (!row || row.dataset.claim === undefined) {
      status.textContent = "Move to a claim (j/k) before marking its evidence.";
      status.className = "error";
      return;
    }
    const span = window.GoldsetSelection.fromSelection(context, {});
    if (span.error) {
      status.textContent = "Select some words of a context passage first, then press e.";
      status.className = "error";
      return;
    }
    form.elements.claim.value = row.dataset.claim;
    form.elements.version.value = span.version;
    form.elements.start.value = span.start;
    form.elements.end.value = span.end;
    form.elements.quote.value = span.quote;
    form.submit();
  }

  // After marking evidence the page comes back on the claim it was for.
  function fromHash() {
    const target = window.location.hash && document.getElementById(window.location.hash.slice(1));
    const index = target ? rows().indexOf(target) : -1;
    if (index >= 0) current = index;
  }

  // A claim's colour follows its support as soon as it is chosen.
  document.addEventListener("change", function (event) {
    const input = event.target;
    const row = input.closest && input.closest("form[data-row]");
    if (!row || input.type !== "radio" || !/^claim-/.test(input.id)) return;
    row.classList.remove("claim-ungraded", "claim-full", "claim-partial", "claim-none");
    row.classList.add("claim-" + input.value);
  });

  // A refused grade is answered 400 with the status line saying why: show it.
  document.addEventListener("htmx:beforeSwap", function (event) {
    if (event.detail.xhr.status === 400) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });

  // A grade that never reached the server must not look saved.
  function notSaved(text) {
    const status = document.getElementById("review-status");
    if (!status) return;
    status.textContent = text;
    status.className = "error";
  }
  document.addEventListener("htmx:sendError", function () {
    notSaved("Not saved: the server could not be reached. Choose the grade again once you are back online.");
  });
  document.addEventListener("htmx:responseError", function (event) {
    if (event.detail.xhr.status === 403 || event.detail.xhr.status === 302) {
      notSaved("Not saved: you are logged out. Log in again in another tab, then choose the grade again.");
    } else if (event.detail.xhr.status !== 400) {
      notSaved("Not saved (the server answered " + event.detail.xhr.status + "). Choose the grade again.");
    }
  });

  document.addEventListener("DOMContentLoaded", function () {
    fromHash();
    mark();
  });
})();
