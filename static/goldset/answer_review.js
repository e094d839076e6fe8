// The answer review, keyboard first, like the grading page (`?` on the page lists every key).
//
// Rows are the page's decisions: a claim's support, a citation's grade, a group of partial
// citations, a reference fact. j/k move between rows, J/K (Shift) between claims, g goes to the
// next row not decided yet; a
// row's keys (data-key on its inputs, several keys separated by spaces) choose: f p n or 2 1 0
// for a claim, 2 1 0 for a citation, y p n or 2 1 0 for a fact, a citation's number to tick it
// in a group and Enter to add the group. A choice moves on to the next row, as grading does.
// r marks a refusal wrong, e makes the selected context words the claim's evidence, d finishes.
//
// Every grade is an action of the kept-action queue (static/goldset/actions.js: in order, one
// at a time, kept in this browser when they cannot be sent, resent by themselves); the status
// bar says what is saved (static/goldset/save_state.js) and what the last reply said. Keys
// typed into a field are text (static/goldset/keys.js decides).
//
// Interface: GoldsetReview.actionFor(event, { dialogOpen }) -> null | {move: 1 | -1}
//            | {claim: 1 | -1} | {ungraded: true} | {help: true} | {finish: true} | {evidence: true}
//            | {refused: true} | {leave: true} | {row: key}
(function () {
  "use strict";

  const PAGE_KEYS = {
    j: { move: 1 },
    ArrowDown: { move: 1 },
    k: { move: -1 },
    ArrowUp: { move: -1 },
    J: { claim: 1 },
    K: { claim: -1 },
    g: { ungraded: true },
    d: { finish: true },
    e: { evidence: true },
    r: { refused: true },
  };

  function actionFor(event, state) {
    const dialogOpen = Boolean(state && state.dialogOpen);
    if (event.ctrlKey || event.metaKey || event.altKey) return null;
    if (window.GoldsetKeys.isTyping(event)) return event.key === "Escape" ? { leave: true } : null;
    if (event.key === "?") return { help: true };
    if (dialogOpen) return null;
    if (Object.prototype.hasOwnProperty.call(PAGE_KEYS, event.key)) return Object.assign({}, PAGE_KEYS[event.key]);
    // Enter adds a group of citations, but only when no button or link has the focus: theirs
    // is the browser's.
    if (event.key === "Enter") {
      const tag = event.target && event.target.tagName;
      return !tag || tag === "BODY" || tag === "INPUT" ? { row: "Enter" } : null;
    }
    return event.key && event.key.length === 1 ? { row: event.key } : null;
  }

  window.GoldsetReview = Object.freeze({ actionFor: actionFor });

  const doc = window.document;
  const root = doc && doc.getElementById && doc.getElementById("review");
  if (!root) return;

  let current = 0;
  let queue = null;

  function rows() {
    return Array.from(root.querySelectorAll("[data-row]"));
  }

  function setCurrent(index, scroll) {
    const all = rows();
    if (!all.length) return;
    current = Math.max(0, Math.min(index, all.length - 1));
    all.forEach(function (row, i) {
      row.classList.toggle("current", i === current);
      if (i === current) row.setAttribute("aria-current", "true");
      else row.removeAttribute("aria-current");
    });
    if (scroll !== false) all[current].scrollIntoView({ block: "nearest" });
  }

  // A row still to decide: it offers a choice (radio buttons) and none is made.
  function undecided(row) {
    return Boolean(row.querySelector("input[type=radio]")) && !row.querySelector("input[type=radio]:checked");
  }

  // What the last reply or key said, in the status bar (the server's replies replace it too).
  function say(text, kind) {
    const status = doc.getElementById("review-status");
    if (!status) return;
    status.textContent = text;
    status.className = kind === "ok" ? "flash" : "error";
  }

  // The next (or previous) claim's row, skipping its citations and groups.
  function nextClaim(step) {
    const all = rows();
    for (let index = current + step; index >= 0 && index < all.length; index += step) {
      if (all[index].dataset.claim !== undefined) {
        setCurrent(index);
        return;
      }
    }
  }

  function nextUndecided() {
    const all = rows();
    for (let step = 1; step <= all.length; step += 1) {
      const index = (current + step) % all.length;
      if (undecided(all[index])) {
        setCurrent(index);
        return;
      }
    }
    say("Everything is decided. Press d to finish the review.", "ok");
  }

  function choose(key) {
    const row = rows()[current];
    if (!row) return false;
    const target = row.querySelector('[data-key~="' + CSS.escape(key) + '"]');
    if (!target) return false;
    if (target.type === "radio") {
      if (!target.checked) target.click(); // a change: saved through the queue (below)
      setCurrent(current + 1);
    } else {
      target.click(); // a citation ticked for a group, or the group added
    }
    return true;
  }

  // Finishing waits for every grade made before it, as the grading page's next question does.
  function finish() {
    const form = doc.getElementById("finish-review");
    if (!form) return;
    const state = queue ? queue.state() : { waiting: 0, held: null };
    if (state.held) {
      say("Your changes are not saved yet (" + window.GoldsetSaveState.kept(state.waiting) +
        "); the review finishes once they are.", "error");
    }
    (queue ? queue.whenIdle() : Promise.resolve()).then(function () { form.submit(); });
  }

  // This page's words for selection.js's refusal codes: one sentence fits them all here.
  const EVIDENCE_REFUSALS = {
    empty: "Select some words of a context passage first, then press e.",
    several: "Select some words of a context passage first, then press e.",
  };

  // The selected words of a context passage become the current claim's evidence
  // (static/goldset/selection.js gives their code-point offsets, snapped to words). It waits for
  // the grades made before it: the page it leads to shows them.
  function addEvidence() {
    const row = rows()[current];
    const form = doc.getElementById("evidence-form");
    const context = doc.getElementById("review-context");
    if (!form || !context || !window.GoldsetSelection) return;
    if (!row || row.dataset.claim === undefined) {
      say("Move to a claim (j/k) before marking its evidence.", "error");
      return;
    }
    const span = window.GoldsetSelection.fromSelection(context, { messages: EVIDENCE_REFUSALS });
    if (span.error) {
      say(span.message, "error");
      return;
    }
    form.elements.claim.value = row.dataset.claim;
    form.elements.version.value = span.version;
    form.elements.start.value = span.start;
    form.elements.end.value = span.end;
    form.elements.quote.value = span.quote;
    (queue ? queue.whenIdle() : Promise.resolve()).then(function () { form.submit(); });
  }

  function markRefusal() {
    const box = doc.getElementById("refused-wrongly");
    if (box) box.click();
  }

  const ACTIONS = {
    move: function (action) { setCurrent(current + action.move); },
    claim: function (action) { nextClaim(action.claim); },
    ungraded: nextUndecided,
    help: window.GoldsetKeys.toggleHelp, // static/goldset/keys.js, which also wires the "keys" buttons
    finish: finish,
    evidence: addEvidence,
    refused: markRefusal,
    leave: function (action, event) { event.target.blur(); },
  };

  doc.addEventListener("keydown", function (event) {
    const dialog = doc.getElementById("keys-help");
    const open = doc.querySelector("dialog[open]");
    const action = actionFor(event, { dialogOpen: Boolean(open) });
    if (!action || (open && open !== dialog)) return;
    if (action.row !== undefined) {
      if (choose(action.row)) event.preventDefault();
      return;
    }
    const name = Object.keys(ACTIONS).find(function (key) { return action[key] !== undefined; });
    if (!name) return;
    event.preventDefault();
    ACTIONS[name](action, event);
  });

  // A claim's colour follows its support as soon as it is chosen.
  function colour(input) {
    const row = input.closest("form[data-row]");
    if (!row || input.type !== "radio" || !/^claim-/.test(input.id)) return;
    row.classList.remove("claim-ungraded", "claim-full", "claim-partial", "claim-none");
    row.classList.add("claim-" + input.value);
  }

  // --- saving: every grade is an action of the kept-action queue -----------------------------

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

  // A saved grade is shown on its row: one kept from before a reload is sent by the next page,
  // which showed the row as the server had it until then.
  function showSaved(action, status) {
    if (status >= 300 || action.kind !== "grade") return;
    const form = Array.from(root.querySelectorAll("form[data-grade]")).find(function (candidate) {
      return subjectOf(candidate) === action.subject;
    });
    if (!form) return;
    const value = action.fields.value;
    form.querySelectorAll("input[name=value]").forEach(function (input) {
      if (input.type === "checkbox") input.checked = value === "1";
      else if (input.value === value && !input.checked) {
        input.checked = true;
        colour(input);
      }
    });
  }

  root.addEventListener("change", function (event) {
    const input = event.target;
    colour(input);
    const form = input.closest("form[data-grade]");
    if (!form || !queue) return;
    queue.send({ url: form.action, fields: fieldsOf(form), subject: subjectOf(form), kind: "grade" });
  });

  // Choosing with the mouse makes that row the current one.
  root.addEventListener("click", function (event) {
    const row = event.target.closest("[data-row]");
    const index = row ? rows().indexOf(row) : -1;
    if (index >= 0 && index !== current) setCurrent(index, false);
  });

  doc.addEventListener("submit", function (event) {
    if (event.target.id !== "finish-review") return;
    event.preventDefault();
    finish(); // after what was already sent
  });

  function startQueue() {
    if (!window.GoldsetActions || !window.htmx || !window.GoldsetSaveState) return;
    const saveState = doc.getElementById("save-state");
    queue = window.GoldsetActions.create({
      source: root,
      user: root.dataset.user,
      page: window.location.pathname,
      loginUrl: root.dataset.loginUrl || "/accounts/login/",
      onState: function (state) { window.GoldsetSaveState.show(saveState, state); },
      onMessage: say,
      onDone: showSaved,
    });
    window.GoldsetSaveState.show(saveState, queue.state());
    window.GoldsetAnswerQueue = queue; // for the browser tests: whenIdle(), state()
  }

  // After marking evidence the page comes back on the claim it was for.
  function fromHash() {
    const target = window.location.hash && doc.getElementById(window.location.hash.slice(1));
    const index = target ? rows().indexOf(target) : -1;
    return index >= 0 ? index : 0;
  }

  startQueue();
  setCurrent(fromHash(), false);
})();
