// The Re-check page's "Mark it again": the labeller selects the evidence in the new version's
// text, as on the grading page (static/goldset/selection.js turns a selection into offsets,
// snapped to whole words unless Alt is held), and the offsets and quote go into the form, which
// the server checks against the stored text. Without this script the fields can be typed.
(function () {
  "use strict";

  const form = document.getElementById("remark-form");
  const view = document.getElementById("remark-text");
  if (!form || !view || !window.GoldsetSelection || !window.GoldsetKeys) return;
  const Selection = window.GoldsetSelection;
  const message = document.getElementById("selection-message");
  const shown = document.getElementById("chosen-quote");

  // This page's words for selection.js's refusal codes, where the grading page's do not fit.
  const REFUSALS = { empty: "Select some text in the new text first." };

  function use(exact) {
    const span = Selection.fromSelection(view.parentElement, {
      exact: exact,
      views: "#remark-text",
      messages: REFUSALS,
    });
    if (span.error) {
      message.textContent = span.message;
      message.hidden = false;
      return;
    }
    message.hidden = true;
    form.elements.start.value = span.start;
    form.elements.end.value = span.end;
    form.elements.quote.value = span.quote;
    shown.textContent = span.quote;
  }

  document.getElementById("use-selection").addEventListener("mousedown", function (event) {
    event.preventDefault(); // keep the selection
  });
  document.getElementById("use-selection").addEventListener("click", function (event) {
    use(event.altKey);
  });
  document.addEventListener("keydown", function (event) {
    if (event.key.toLowerCase() !== "s" || event.ctrlKey || event.metaKey) return;
    if (window.GoldsetKeys.isTyping(event)) return;
    event.preventDefault();
    use(event.altKey);
  });
})();
