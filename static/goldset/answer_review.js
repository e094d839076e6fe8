// The answer review's keys: j/k move between rows (a claim, a citation, a fact), a row's keys
// (data-key on its inputs) choose a grade, saved at once through the passages' kept-action
// queue (static/goldset/actions.js: in order, one at a time; kept in this browser when offline
// or logged out, and resent by themselves, from here or from the queue page); r marks a
// refusal wrong, d finishes the review. The page keeps what was chosen; each reply brings back
// the status line, with the reason when a grade was refused.
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
    if (window.GoldsetKeys.isTyping(event)) return; // static/goldset/keys.js
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

  // This page's words for selection.js's refusal codes: one sentence fits them all here.
  const EVIDENCE_REFUSALS = {
    empty: "Select some words of a context passage first, then press e.",
    several: "Select some words of a context passage first, then press e.",
  };

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
    const span = window.GoldsetSelection.fromSelection(context, { messages: EVIDENCE_REFUSALS });
    if (span.error) {
      status.textContent = span.message;
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

  // Every grade is an action of the kept-action queue: a grade sets a value, so sending it
  // twice does no harm (kind "grade", which the queue resends after a broken connection).
  let queue = null;

  function say(text, kind) {
    const status = document.getElementById("review-status");
    if (!status) return;
    status.textContent = text;
    status.className = kind === "ok" ? "flash" : "error";
  }

  function subjectOf(form) {
    const value = function (name) {
      return form.elements[name] ? form.elements[name].value : "";
    };
    return ["answer", value("kind"), value("claim"), value("passage"), value("fact")].join("-");
  }

  function fieldsOf(form) {
    const fields = {};
    new FormData(form).forEach(function (value, name) {
      if (name !== "csrfmiddlewaretoken") fields[name] = String(value);
    });
    return fields;
  }

  document.addEventListener("change", function (event) {
    const form = event.target.closest && event.target.closest("form[data-grade]");
    if (!form || !queue) return;
    queue.send({ url: form.action, fields: fieldsOf(form), subject: subjectOf(form), kind: "grade" });
  });

  function startQueue() {
    const root = document.getElementById("review");
    if (!root || !window.GoldsetActions || !window.htmx) return;
    queue = window.GoldsetActions.create({
      source: root,
      user: root.dataset.user,
      page: window.location.pathname,
      loginUrl: root.dataset.loginUrl || "/accounts/login/",
      onMessage: say,
    });
    window.GoldsetAnswerQueue = queue; // for the browser tests: whenIdle(), state()
  }

  document.addEventListener("DOMContentLoaded", function () {
    startQueue();
    fromHash();
    mark();
  });
})();
