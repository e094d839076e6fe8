// static/goldset/answer_adjudication.js: the keys of the lead's answer adjudication (j/k, g,
// ?, and each row's own keys), asking static/goldset/keys.js first whether the lead is typing.
// (The keys in a real page are tests/e2e/test_answer_item_adjudication.py's.)
"use strict";

const assert = require("node:assert/strict");
const { test } = require("node:test");
const { load, plain } = require("./fake_browser.js");

const { GoldsetKeys } = load("keys.js", {});
const { actionFor } = load("answer_adjudication.js", { GoldsetKeys: GoldsetKeys }).GoldsetAnswerAdjudication;

const BODY = { tagName: "BODY" };

function press(key, extra, state) {
  const event = Object.assign({ key: key, target: BODY, isComposing: false }, extra);
  return plain(actionFor(event, state || {}));
}

test("j and k move between items, g goes to the next undecided one, ? shows the keys", () => {
  assert.deepEqual(press("j"), { move: 1 });
  assert.deepEqual(press("ArrowDown"), { move: 1 });
  assert.deepEqual(press("k"), { move: -1 });
  assert.deepEqual(press("ArrowUp"), { move: -1 });
  assert.deepEqual(press("g"), { undecided: true });
  assert.deepEqual(press("?"), { help: true });
});

test("any other single key is the current row's to choose with (f p n, 2 1 0, y p n)", () => {
  for (const key of ["f", "p", "n", "2", "1", "0", "y"]) assert.deepEqual(press(key), { row: key });
  assert.equal(press("Enter"), null);
});

test("keys typed into a field are text; a focused radio button leaves them working", () => {
  for (const target of [{ tagName: "TEXTAREA" }, { tagName: "INPUT", type: "text" }]) {
    assert.equal(press("f", { target: target }), null);
  }
  assert.deepEqual(press("f", { target: { tagName: "INPUT", type: "radio" } }), { row: "f" });
  assert.equal(press("2", { isComposing: true }), null);
});

test("with a modifier or the keys list open, a key is not this page's", () => {
  for (const extra of [{ ctrlKey: true }, { metaKey: true }, { altKey: true }]) {
    assert.equal(press("j", extra), null);
  }
  assert.equal(press("f", {}, { dialogOpen: true }), null);
  assert.deepEqual(press("?", {}, { dialogOpen: true }), { help: true });
});
