// The lead's answer adjudication, keyboard first, with the answer review's keys: each item the
// two reviews differ on is a row; j/k move between rows, g goes to the next row not decided
// yet, a row's keys (data-key on its radio buttons, several separated by spaces) decide it:
// f p n or 2 1 0 for a claim's support, 2 1 0 for a citation, y p n or 2 1 0 for a fact, y n for
// a refusal, 1 2 for whose groups of citations stand. A decision is posted at once; the page
// comes back on the next row still to decide (the URL's fragment names it). Keys typed into a
// field are text (static/goldset/keys.js decides); without this script, choose and press Decide.
//
// Interface: GoldsetAnswerAdjudication.actionFor(event, { dialogOpen }) -> null
//            | {move: 1 | -1} | {undecided: true} | {help: true} | {row: key}
(function () {
  "use strict";

  const PAGE_KEYS = {
    j: { move: 1 },
    ArrowDown: { move: 1 },
    k: { move: -1 },
    ArrowUp: { move: -1 },
    g: { undecided: true },
  };

  function actionFor(event, state) {
    const dialogOpen = Boolean(state && state.dialogOpen);
    if (event.ctrlKey || event.metaKey || event.altKey) return null;
    if (window.GoldsetKeys.isTyping(event)) return null;
    if (event.key === "?") return { help: true };
    if (dialogOpen) return null;
    if (Object.prototype.hasOwnProperty.call(PAGE_KEYS, event.key)) return Object.assign({}, PAGE_KEYS[event.key]);
    return event.key && event.key.length === 1 ? { row: event.key } : null;
  }

  window.GoldsetAnswerAdjudication = Object.freeze({ actionFor: actionFor });

  const doc = window.document;
  const root = doc && doc.getElementById && doc.getElementById("answer-items");
  if (!root) return;
  let current = 0;
  let sending = false;

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

  function nextUndecided() {
    const all = rows();
    for (let step = 1; step <= all.length; step += 1) {
      const index = (current + step) % all.length;
      if (all[index].classList.contains("undecided")) {
        setCurrent(index);
        return;
      }
    }
  }

  // A choice is one POST of the row's form; one at a time (the page reloads after it).
  function choose(key) {
    const row = rows()[current];
    if (!row || sending) return false;
    const target = row.querySelector('[data-key~="' + CSS.escape(key) + '"]');
    if (!target) return false;
    target.checked = true;
    sending = true;
    row.requestSubmit();
    return true;
  }

  doc.addEventListener("keydown", function (event) {
    const dialog = doc.getElementById("keys-help");
    const open = doc.querySelector("dialog[open]");
    const action = actionFor(event, { dialogOpen: Boolean(open) });
    if (!action || (open && open !== dialog)) return;
    if (action.row !== undefined) {
      if (choose(action.row)) event.preventDefault();
      return;
    }
    event.preventDefault();
    if (action.help) window.GoldsetKeys.toggleHelp();
    else if (action.undecided) nextUndecided();
    else setCurrent(current + action.move);
  });

  // Choosing with the mouse makes that row the current one.
  root.addEventListener("click", function (event) {
    const row = event.target.closest("[data-row]");
    const index = row ? rows().indexOf(row) : -1;
    if (index >= 0 && index !== current) setCurrent(index, false);
  });

  // The page opens on the row the fragment names, else on the first one still to decide.
  function start() {
    const all = rows();
    const target = window.location.hash && doc.getElementById(window.location.hash.slice(1));
    let index = target ? all.indexOf(target) : -1;
    if (index < 0) index = all.findIndex(function (row) { return row.classList.contains("undecided"); });
    setCurrent(Math.max(index, 0), index > 0);
  }

  start();
})();
