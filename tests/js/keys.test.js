// The one "is the labeller typing" rule (static/goldset/keys.js) every page's keys ask first.
"use strict";

const assert = require("node:assert/strict");
const { test } = require("node:test");
const { load } = require("./fake_browser.js");

const { isTyping } = load("keys.js", {}).GoldsetKeys;

function key(target, extra) {
  return Object.assign({ key: "2", target: target, isComposing: false }, extra);
}

test("text fields take their keys: a 2 typed in a note is text, not a grade", () => {
  for (const target of [
    { tagName: "TEXTAREA" },
    { tagName: "SELECT" },
    { tagName: "INPUT", type: "text" },
    { tagName: "INPUT", type: "number" },
    { tagName: "INPUT", type: "search" },
    { tagName: "DIV", isContentEditable: true },
  ]) {
    assert.equal(isTyping(key(target)), true, JSON.stringify(target));
  }
});

test("checkboxes, radio buttons and buttons leave the page's keys working", () => {
  for (const type of ["checkbox", "radio", "button", "submit", "reset", "image"]) {
    assert.equal(isTyping(key({ tagName: "INPUT", type: type })), false, type);
  }
  for (const target of [{ tagName: "BUTTON" }, { tagName: "BODY" }, { tagName: "LI", isContentEditable: false }]) {
    assert.equal(isTyping(key(target)), false, target.tagName);
  }
});

test("a key with no element behind it is not typing", () => {
  assert.equal(isTyping(key(null)), false);
  assert.equal(isTyping(key({})), false); // the document itself
});

test("a key that is part of an input method's composition is typing", () => {
  assert.equal(isTyping(key({ tagName: "BODY" }, { isComposing: true })), true);
});
