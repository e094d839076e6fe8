// static/goldset/grading_view.js: the grading page opens the next question or its other view
// only once every action made on it has been answered, and says why it waits when actions are
// kept; the question view offers "show all" only for a passage taller than its clipped rows.
"use strict";

const assert = require("node:assert/strict");
const { test } = require("node:test");
const { load } = require("./fake_browser.js");

const saveState = load("save_state.js", {}).GoldsetSaveState;
const { leaveAfterSaving, isClipped, otherView } = load("grading_view.js", {
  GoldsetSaveState: saveState,
}).GoldsetGradingView;

function fakeQueue(state) {
  let resolve;
  const idle = new Promise(function (done) { resolve = done; });
  return { state: () => state, whenIdle: () => idle, answerAll: () => resolve() };
}

test("the page goes only once the queue is idle, and says nothing when nothing is kept", async () => {
  const queue = fakeQueue({ waiting: 1, held: null });
  const said = [];
  let gone = 0;
  const leaving = leaveAfterSaving(queue, () => { gone += 1; }, (...args) => said.push(args),
    "the other view");
  await Promise.resolve();
  assert.equal(gone, 0); // the grade is still on its way
  queue.answerAll();
  await leaving;
  assert.equal(gone, 1);
  assert.deepEqual(said, []);
});

test("kept actions (offline) are counted in the status bar's words while the page waits", async () => {
  const queue = fakeQueue({ waiting: 2, held: "offline" });
  const said = [];
  let gone = false;
  const leaving = leaveAfterSaving(queue, () => { gone = true; }, (...args) => said.push(args),
    "the other view");
  assert.deepEqual(said, [
    ["Your changes are not saved yet (2 changes kept); the other view opens once they are.", "error"],
  ]);
  await Promise.resolve();
  assert.equal(gone, false);
  queue.answerAll();
  await leaving;
  assert.equal(gone, true);
});

test("a passage is clipped when its text is taller than its box, with a pixel of slack", () => {
  assert.equal(isClipped({ scrollHeight: 200, clientHeight: 77 }), true);
  assert.equal(isClipped({ scrollHeight: 78, clientHeight: 77 }), false);
  assert.equal(isClipped({ scrollHeight: 40, clientHeight: 40 }), false);
  assert.equal(isClipped(null), false);
});

test("the other view is the switch's link that is not the current one", () => {
  const asked = [];
  const root = { querySelector: (selector) => { asked.push(selector); return "link"; } };
  assert.equal(otherView(root), "link");
  assert.deepEqual(asked, [".view-switch a:not([aria-current])"]);
  assert.equal(otherView(null), null);
});
