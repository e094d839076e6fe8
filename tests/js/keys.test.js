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

// A page's list of keys: `?` and every "keys" button open and close the one <dialog id="keys-help">.
function page(withDialog) {
  const listeners = {};
  const dialog = {
    open: false,
    showModal() {
      this.open = true;
    },
    close() {
      this.open = false;
    },
  };
  const document = {
    getElementById: (id) => (withDialog && id === "keys-help" ? dialog : null),
    addEventListener: (name, listener) => (listeners[name] = listener),
  };
  const { GoldsetKeys } = load("keys.js", { document: document });
  const button = { closest: (selector) => (selector === ".show-keys" ? button : null) };
  const elsewhere = { closest: () => null };
  return { GoldsetKeys, dialog, click: (target) => listeners.click({ target: target }), button, elsewhere };
}

test("toggleHelp opens the list of keys, and closes it again", () => {
  const { GoldsetKeys, dialog } = page(true);
  GoldsetKeys.toggleHelp();
  assert.equal(dialog.open, true);
  GoldsetKeys.toggleHelp();
  assert.equal(dialog.open, false);
});

test("a 'keys' button opens and closes the list; other clicks leave it alone", () => {
  const { dialog, click, button, elsewhere } = page(true);
  click(button);
  assert.equal(dialog.open, true);
  click(elsewhere);
  assert.equal(dialog.open, true);
  click(button);
  assert.equal(dialog.open, false);
});

test("a page without a list of keys ignores ? and the button", () => {
  const { GoldsetKeys, click, button } = page(false);
  GoldsetKeys.toggleHelp();
  click(button);
});
