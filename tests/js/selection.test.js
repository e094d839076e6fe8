// static/goldset/selection.js: refusals come as codes, with each page's own words by code; and
// word snapping on code points. (Offsets in a real DOM are tests/e2e/test_selection.py's.)
"use strict";

const assert = require("node:assert/strict");
const { test } = require("node:test");
const { load, plain } = require("./fake_browser.js");

// A window whose selection the test sets: null, collapsed, or a range meeting some views.
function page(selection) {
  return load("selection.js", { getSelection: () => selection }).GoldsetSelection;
}

function scopeWith(views) {
  return { querySelectorAll: () => views };
}

function rangeMeeting(views) {
  return { intersectsNode: (node) => views.includes(node) };
}

function selecting(range) {
  return { isCollapsed: false, rangeCount: 1, getRangeAt: () => range };
}

test("nothing selected is refused with the code 'empty' and the grading page's words", () => {
  for (const selection of [null, { isCollapsed: true, rangeCount: 1 }, { isCollapsed: false, rangeCount: 0 }]) {
    assert.deepEqual(plain(page(selection).fromSelection(scopeWith([]), {})), {
      error: "empty",
      message: "Select some text in a passage first, then press s.",
    });
  }
});

test("a selection in no view, or across two, is refused with the code 'several'", () => {
  const one = { id: "one" };
  const two = { id: "two" };
  for (const met of [[], [one, two]]) {
    const Selection = page(selecting(rangeMeeting(met)));
    assert.deepEqual(plain(Selection.fromSelection(scopeWith([one, two]), {})), {
      error: "several",
      message: "Select text within one passage at a time.",
    });
  }
});

test("a page gives its own words for a code; the others keep the table's", () => {
  const Selection = page(null);
  const own = { messages: { empty: "Select some text in the new text first." } };
  assert.equal(Selection.fromSelection(scopeWith([]), own).message, "Select some text in the new text first.");
  const across = page(selecting(rangeMeeting([]))).fromSelection(scopeWith([]), own);
  assert.equal(across.error, "several");
  assert.equal(across.message, Selection.MESSAGES.several);
});

test("the message table has one sentence per code and cannot be changed by a page", () => {
  const { MESSAGES } = page(null);
  assert.deepEqual(Object.keys(MESSAGES).sort(), ["empty", "several"]);
  assert.equal(Object.isFrozen(MESSAGES), true);
});

test("a selection snaps to whole words, joined by apostrophes, hyphens and dots", () => {
  const { snapToWords } = page(null);
  const chars = Array.from("The Corporate Credit Card (FIN-PROC-030) don't");
  const text = chars.join("");
  const at = (word) => text.indexOf(word);
  assert.deepEqual(plain(snapToWords(chars, at("rporate"), at("rporate") + 3)), [at("Corporate"), at("Corporate") + 9]);
  assert.deepEqual(plain(snapToWords(chars, at("PROC") + 1, at("PROC") + 2)), [at("FIN"), at("FIN") + 12]);
  assert.deepEqual(plain(snapToWords(chars, at("don") + 1, at("don") + 2)), [at("don"), chars.length]);
  assert.deepEqual(plain(snapToWords(chars, 3, 4)), [4, 4], "white space alone is nothing");
});

test("offsets count code points, as Python does, not UTF-16 units", () => {
  const { snapToWords } = page(null);
  const chars = Array.from("𝔄𝔅 word");
  assert.deepEqual(plain(snapToWords(chars, 1, 2)), [0, 2]);
});

// Rendered Markdown (labelling/passage_html.py) keeps its syntax in hidden segments of class
// md-syntax: the view's text is still the stored text, and the syntax never ends a span.
function segment(start, text, classes) {
  const names = new Set((classes || "").split(" ").filter(Boolean));
  return { dataset: { start: String(start) }, textContent: text, classList: { contains: (name) => names.has(name) } };
}

function markdownView(pieces) {
  const segments = pieces.map(([start, text, classes]) => segment(start, text, classes));
  return { querySelectorAll: () => segments };
}

// "# Leave\n**five** days" from offset 40, as the server cuts it.
const RENDERED = [
  [40, "# ", "md-hide md-syntax"],
  [42, "Leave", ""],
  [47, "\n", "md-hide"],
  [48, "**", "md-hide md-syntax"],
  [50, "five", "md-strong"],
  [54, "**", "md-hide md-syntax"],
  [56, " days", ""],
];

test("a rendered view's text is the stored text, hidden syntax and all, from its first offset", () => {
  const { textOf } = page(null);
  const text = textOf(markdownView(RENDERED));
  assert.equal(text.base, 40);
  assert.equal(text.chars.join(""), "# Leave\n**five** days");
});

test("hidden syntax at either end of a selection is left out of the span", () => {
  const { clearOfSyntax } = page(null);
  const chars = Array.from("# Leave\n**five** days");
  const hidden = [[0, 2], [8, 10], [14, 16]];
  const quote = (range) => chars.slice(range[0], range[1]).join("");
  // From the start of "# " to the end of "Leave": the heading's word only.
  assert.equal(quote(clearOfSyntax(chars, hidden, 0, 7)), "Leave");
  // "**five**" with both marks: the bold word.
  assert.equal(quote(clearOfSyntax(chars, hidden, 8, 16)), "five");
  // From inside the line break to the middle of the closing mark: past the white space too.
  assert.equal(quote(clearOfSyntax(chars, hidden, 7, 15)), "five");
  // Syntax inside a selection stays: offsets are the stored text's.
  assert.equal(quote(clearOfSyntax(chars, hidden, 2, 21)), "Leave\n**five** days");
  // Only syntax selected: nothing.
  const [start, end] = clearOfSyntax(chars, hidden, 8, 10);
  assert.ok(end <= start);
});

test("with no syntax it only trims white space", () => {
  const { clearOfSyntax } = page(null);
  const chars = Array.from("  plain text ");
  assert.deepEqual(plain(clearOfSyntax(chars, [], 0, chars.length)), [2, 12]);
});
