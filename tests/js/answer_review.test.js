// static/goldset/answer_review.js: the answer review's keys, as on the grading page (rows with
// j/k and g, a row's own keys, ? for the list, d to finish), asking static/goldset/keys.js first
// whether the labeller is typing. (The keys in a real page are tests/e2e/test_answer_review_page.py's.)
"use strict";

const assert = require("node:assert/strict");
const { test } = require("node:test");
const { load, plain } = require("./fake_browser.js");

const { GoldsetKeys } = load("keys.js", {});
const { actionFor } = load("answer_review.js", { GoldsetKeys: GoldsetKeys }).GoldsetReview;

const BODY = { tagName: "BODY" };

function press(key, extra, state) {
  const event = Object.assign({ key: key, target: BODY, isComposing: false }, extra);
  return plain(actionFor(event, state || {}));
}

test("j and k (or the arrows) move between rows, g to the next row not decided", () => {
  assert.deepEqual(press("j"), { move: 1 });
  assert.deepEqual(press("ArrowDown"), { move: 1 });
  assert.deepEqual(press("k"), { move: -1 });
  assert.deepEqual(press("ArrowUp"), { move: -1 });
  assert.deepEqual(press("g"), { ungraded: true });
});

test("J and K (Shift) move to the next and previous claim", () => {
  assert.deepEqual(press("J", { shiftKey: true }), { claim: 1 });
  assert.deepEqual(press("K", { shiftKey: true }), { claim: -1 });
});

test("d finishes, e marks evidence, r marks a refusal wrong, ? lists the keys", () => {
  assert.deepEqual(press("d"), { finish: true });
  assert.deepEqual(press("e"), { evidence: true });
  assert.deepEqual(press("r"), { refused: true });
  assert.deepEqual(press("?"), { help: true });
});

test("every other key is the current row's: claims, citations, facts and groups", () => {
  for (const key of ["f", "p", "n", "y", "0", "1", "2", "3", "9"]) {
    assert.deepEqual(press(key), { row: key }, key);
  }
  assert.deepEqual(press("Enter"), { row: "Enter" }); // adds a group of citations
  for (const key of ["Tab", "Shift", "PageDown", "F5"]) assert.equal(press(key), null, key);
});

test("Enter on a focused button or link is the browser's", () => {
  assert.equal(press("Enter", { target: { tagName: "BUTTON" } }), null);
  assert.equal(press("Enter", { target: { tagName: "A" } }), null);
  assert.deepEqual(press("Enter", { target: { tagName: "INPUT", type: "checkbox" } }), { row: "Enter" });
});

test("keys typed into a field are text; Escape leaves the field", () => {
  for (const target of [{ tagName: "TEXTAREA" }, { tagName: "INPUT", type: "text" }, { tagName: "SELECT" }]) {
    for (const key of ["j", "d", "f", "2", "?", "Enter"]) {
      assert.equal(press(key, { target: target }), null, target.tagName + " " + key);
    }
    assert.deepEqual(press("Escape", { target: target }), { leave: true });
  }
  assert.equal(press("f", { isComposing: true }), null); // an input method's composition
});

test("a focused radio button or checkbox leaves the keys working", () => {
  for (const target of [{ tagName: "INPUT", type: "radio" }, { tagName: "INPUT", type: "checkbox" }]) {
    assert.deepEqual(press("n", { target: target }), { row: "n" });
    assert.deepEqual(press("j", { target: target }), { move: 1 });
  }
});

test("with a modifier a key is the browser's (Ctrl+R reloads, Ctrl+D bookmarks)", () => {
  for (const extra of [{ ctrlKey: true }, { metaKey: true }, { altKey: true }]) {
    for (const key of ["r", "d", "f", "j", "?"]) assert.equal(press(key, extra), null, key);
  }
});

test("with the keys list open only ? (to close it) works", () => {
  const open = { dialogOpen: true };
  assert.deepEqual(press("?", {}, open), { help: true });
  for (const key of ["j", "f", "d", "2", "Enter"]) assert.equal(press(key, {}, open), null, key);
});

test("the script loads without a page to wire (no #review): only the rule is there", () => {
  const window = load("answer_review.js", { GoldsetKeys: GoldsetKeys, document: { getElementById: () => null } });
  assert.equal(typeof window.GoldsetReview.actionFor, "function");
});
