// static/goldset/decision.js: the keys of a lead's decision pages (grades, verdicts, ?, and
// Ctrl+Enter), asking static/goldset/keys.js first whether the lead is typing. (The keys in a
// real page are tests/e2e/test_decision_keys.py's.)
"use strict";

const assert = require("node:assert/strict");
const { test } = require("node:test");
const { load, plain } = require("./fake_browser.js");

const { GoldsetKeys } = load("keys.js", {});
const { actionFor } = load("decision.js", { GoldsetKeys: GoldsetKeys }).GoldsetDecision;

const BODY = { tagName: "BODY" };

function press(key, extra, state) {
  const event = Object.assign({ key: key, target: BODY, isComposing: false }, extra);
  return plain(actionFor(event, state || {}));
}

test("0, 1 and 2 choose the final grade; a and u the verdict, as on the grading page", () => {
  for (const grade of ["0", "1", "2"]) assert.deepEqual(press(grade), { choose: grade });
  assert.deepEqual(press("a"), { choose: "answerable" });
  assert.deepEqual(press("u"), { choose: "unanswerable" });
});

test("? shows the keys, Ctrl+Enter (or Cmd+Enter) records the decision", () => {
  assert.deepEqual(press("?"), { help: true });
  assert.deepEqual(press("Enter", { ctrlKey: true }), { record: true });
  assert.deepEqual(press("Enter", { metaKey: true }), { record: true });
  assert.equal(press("Enter"), null); // a plain Enter is the browser's
});

test("keys typed into the note or the offsets are text, but Ctrl+Enter records from there", () => {
  for (const target of [{ tagName: "TEXTAREA" }, { tagName: "INPUT", type: "text" }, { tagName: "SELECT" }]) {
    for (const key of ["0", "1", "2", "a", "u", "?"]) {
      assert.equal(press(key, { target: target }), null, target.tagName + " " + key);
    }
    assert.deepEqual(press("Enter", { target: target, ctrlKey: true }), { record: true });
  }
  assert.equal(press("2", { isComposing: true }), null); // an input method's composition
});

test("a focused radio button or button leaves the keys working", () => {
  for (const target of [{ tagName: "INPUT", type: "radio" }, { tagName: "BUTTON" }]) {
    assert.deepEqual(press("1", { target: target }), { choose: "1" });
  }
});

test("with a modifier a key is the browser's; other keys are not this page's", () => {
  for (const extra of [{ ctrlKey: true }, { metaKey: true }, { altKey: true }]) {
    assert.equal(press("2", extra), null, JSON.stringify(extra));
  }
  for (const key of ["s", "x", "3", "Enter", "Escape", "j"]) assert.equal(press(key), null, key);
});

test("with the keys list open only ? (to close it) works", () => {
  const open = { dialogOpen: true };
  assert.deepEqual(press("?", {}, open), { help: true });
  assert.equal(press("2", {}, open), null);
  assert.equal(press("Enter", { ctrlKey: true }, open), null);
});
