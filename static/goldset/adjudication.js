// The adjudication page: a lead selects evidence in the document text, as labellers do on the
// grading page (static/goldset/selection.js turns a selection into offsets, snapped to whole
// words unless Alt is held). Each chosen span is shown as its quote and written into the form's
// offsets field, which the server checks against the stored text; the page works without this
// script too (type the offsets, or take a labeller's vote).
(function () {
  "use strict";

  const form = document.getElementById("resolve-form");
  const view = document.getElementById("resolve-text");
  if (!form || !view || !window.GoldsetSelection || !window.GoldsetKeys) return;
  const Selection = window.GoldsetSelection;
  const offsets = form.querySelector("[name=custom_spans]");
  const source = form.querySelector("[name=spans_from]");
  const list = document.getElementById("chosen-spans");
  const message = document.getElementById("selection-message");
  const addButton = document.getElementById("add-selection");
  const help = form.querySelector(".selection-help");
  let spans = [];

  function quoteOf(start, end) {
    const text = Selection.textOf(view);
    const from = start - text.base;
    const to = end - text.base;
    if (from < 0 || to > text.chars.length) return null; // outside the text shown
    return text.chars.slice(from, to).join("");
  }

  function readOffsets() {
    spans = [];
    for (const part of offsets.value.split(/[,;]/)) {
      const match = part.trim().match(/^(\d+)\s*-\s*(\d+)$/);
      if (match) spans.push({ start: Number(match[1]), end: Number(match[2]) });
    }
  }

  function say(text) {
    message.textContent = text;
    message.hidden = !text;
  }

  function render() {
    list.replaceChildren();
    spans.forEach(function (span, index) {
      const item = document.createElement("li");
      const quote = quoteOf(span.start, span.end);
      const mark = document.createElement("mark");
      mark.className = "layer-r";
      mark.textContent = quote === null ? "[" + span.start + "–" + span.end + ")" : "“" + quote + "”";
      const remove = document.createElement("button");
      remove.type = "button";
      remove.className = "link";
      remove.textContent = "remove";
      remove.setAttribute("aria-label", "Remove this span");
      remove.addEventListener("click", function () {
        spans.splice(index, 1);
        write();
      });
      item.append(mark, " ", remove);
      list.append(item);
    });
    highlightChosen();
  }

  // The chosen spans, shown in the text itself where the browser can highlight a range
  // without touching the DOM (the segments must stay as the server cut them).
  function highlightChosen() {
    if (!window.CSS || !CSS.highlights || typeof Highlight === "undefined") return;
    const ranges = spans
      .map(function (s) { return Selection.rangeOf(view, s.start, s.end); })
      .filter(Boolean);
    CSS.highlights.set("chosen-evidence", new Highlight(...ranges));
  }

  function write() {
    offsets.value = spans.map(function (s) { return s.start + "-" + s.end; }).join(", ");
    if (spans.length) source.value = "custom";
    render();
  }

  // This page's words for selection.js's refusal codes, where the grading page's do not fit.
  const REFUSALS = { empty: "Select some text in the document first." };

  function addSelection(exact) {
    const span = Selection.fromSelection(document, { views: "#resolve-text", exact: exact, messages: REFUSALS });
    if (span.error) {
      say(span.message);
      return;
    }
    say("");
    if (!spans.some(function (s) { return s.start === span.start && s.end === span.end; })) {
      spans.push({ start: span.start, end: span.end });
      spans.sort(function (a, b) { return a.start - b.start; });
    }
    window.getSelection().removeAllRanges();
    write();
  }

  help.hidden = false;
  addButton.addEventListener("click", function (event) { addSelection(event.altKey); });
  // A mouse press on the button would clear the selection before the click arrives.
  addButton.addEventListener("mousedown", function (event) { event.preventDefault(); });
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || window.GoldsetKeys.isTyping(event)) return;
    if (document.querySelector("dialog[open]")) return; // the keys list is open
    if (event.key === "s" || event.key === "S" || event.code === "KeyS") {
      event.preventDefault();
      addSelection(event.altKey);
    }
  });
  offsets.addEventListener("change", function () {
    readOffsets();
    if (spans.length) source.value = "custom";
    render();
  });
  readOffsets();
  render();
})();
