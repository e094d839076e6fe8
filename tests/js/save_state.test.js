// static/goldset/save_state.js: the status bar's save state, the same words on the grading
// page and the answer review for the same state of the kept-action queue (actions.js).
"use strict";

const assert = require("node:assert/strict");
const { test } = require("node:test");
const { load, plain } = require("./fake_browser.js");

const window = load("save_state.js", {});
const { view, show, kept } = window.GoldsetSaveState;

function seen(waiting, held, online) {
  return plain(view({ waiting: waiting, held: held || null }, online !== false));
}

test("nothing waiting is 'All changes saved'; something on its way is 'Saving…'", () => {
  assert.deepEqual(seen(0), { state: "saved", text: "All changes saved" });
  assert.deepEqual(seen(2), { state: "saving", text: "Saving…" });
});

test("kept changes are counted, with why they are kept", () => {
  assert.deepEqual(seen(1, "offline"), {
    state: "offline",
    text: "Offline: 1 change kept; saved when the connection returns",
  });
  assert.deepEqual(seen(3, "session"), {
    state: "held",
    text: "Session expired: 3 changes kept until you log in again",
  });
  assert.equal(seen(2, "unavailable").text, "Server unavailable: 2 changes kept; trying again");
  assert.equal(
    seen(1, "other-account").text,
    "Another account is logged in: 1 change kept for this page's account",
  );
  assert.equal(seen(4, "stale-page").text, "Reload the page: 4 changes kept");
  assert.deepEqual(seen(2, "stored"), {
    state: "saving",
    text: "Saving 2 changes kept from an earlier visit…",
  });
});

test("offline with nothing kept yet says changes will be kept", () => {
  assert.deepEqual(seen(0, null, false), {
    state: "offline",
    text: "Offline: changes you make are kept and saved when the connection returns",
  });
});

test("kept() counts in words", () => {
  assert.equal(kept(0), "0 changes kept");
  assert.equal(kept(1), "1 change kept");
  assert.equal(kept(12), "12 changes kept");
});

test("show() writes the state and the words into the element, and skips a missing one", () => {
  const element = { dataset: {}, textContent: "" };
  show(element, { waiting: 1, held: "offline" });
  assert.equal(element.dataset.state, "offline");
  assert.equal(element.textContent, "Offline: 1 change kept; saved when the connection returns");
  show(null, { waiting: 0, held: null }); // a page without a status bar
});
