// The keys of a lead's decision pages (adjudication: "Decide a passage", "Resolve the
// question's verdict"), as on the grading page: 0 1 2 choose the final grade, a / u the verdict,
// ? shows the keys, Ctrl+Enter records the decision (from the note too). The `s` key (evidence
// from a selection) is static/goldset/adjudication.js's. Keys typed into a field are text
// (static/goldset/keys.js decides); the page works without this script, by mouse and Tab.
//
// Interface: GoldsetDecision.actionFor(event, { dialogOpen }) -> null | {choose: value}
//            | {help: true} | {record: true}
(function () {
  "use strict";

  const CHOICES = {
    0: "0",
    1: "1",
    2: "2",
    a: "answerable",
    u: "unanswerable",
  };

  function actionFor(event, state) {
    const dialogOpen = Boolean(state && state.dialogOpen);
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      return dialogOpen ? null : { record: true };
    }
    if (event.ctrlKey || event.metaKey || event.altKey) return null;
    if (window.GoldsetKeys.isTyping(event)) return null;
    if (event.key === "?") return { help: true };
    if (dialogOpen) return null;
    const value = Object.prototype.hasOwnProperty.call(CHOICES, event.key) ? CHOICES[event.key] : null;
    return value === null ? null : { choose: value };
  }

  window.GoldsetDecision = Object.freeze({ actionFor: actionFor });

  const doc = window.document;
  const form = doc && doc.querySelector("form.decision");
  if (!form) return;
  const dialog = doc.getElementById("keys-help");

  doc.addEventListener("keydown", function (event) {
    const action = actionFor(event, { dialogOpen: Boolean(dialog && dialog.open) });
    if (!action) return;
    if (action.help) {
      event.preventDefault();
      window.GoldsetKeys.toggleHelp(); // static/goldset/keys.js, which also wires the "keys" buttons
      return;
    }
    if (action.record) {
      event.preventDefault();
      form.requestSubmit();
      return;
    }
    // Only a choice this page offers: the verdict page has no grades, the passage page no verdict.
    const radio = form.querySelector('input[type=radio][value="' + action.choose + '"]');
    if (!radio) return;
    event.preventDefault();
    radio.checked = true;
    radio.focus();
  });
})();
