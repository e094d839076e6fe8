// The kept-action queue (static/goldset/actions.js): what its header promises, against a fake
// htmx.ajax (tests/js/fake_browser.js) and a clock the tests move.
"use strict";

const assert = require("node:assert/strict");
const { test } = require("node:test");
const { FakeBrowser, plain } = require("./fake_browser.js");

const GRADING = "/p/acme/grade/1/2/";
const KEPT = "goldset.kept-actions.7";
const OFFLINE_UNDO =
  "The connection broke while undoing, so the undo may or may not have been saved. Check the " +
  "page when the connection returns, and press z again if needed.";

// A page of account 7 with a queue on it, recording what the queue tells the page.
function open(tab, path, user) {
  const page = tab.open(path || GRADING);
  const window = page.load("actions.js");
  const seen = { messages: [], done: [], states: [] };
  page.queue = window.GoldsetActions.create({
    source: new EventTarget(),
    user: user || 7,
    page: page.path,
    loginUrl: "/accounts/login/",
    onMessage: (text, kind) => seen.messages.push([text, kind]),
    onDone: (action, status) => seen.done.push([action.id, status]),
    onState: (state) => seen.states.push(plain(state)),
  });
  page.seen = seen;
  return page;
}

function grade(page, candidate, value, revision) {
  return page.queue.send({
    url: "/p/acme/grade/1/2/candidates/" + candidate + "/grade/",
    fields: { grade: String(value), revision: String(revision === undefined ? 3 : revision), seconds: "1.0" },
    subject: "candidate-" + candidate,
    kind: "grade",
  });
}

function undo(page) {
  return page.queue.send({ url: "/p/acme/grade/1/2/undo/", fields: {}, subject: null, kind: "undo" });
}

function lastMessage(page) {
  return page.seen.messages[page.seen.messages.length - 1] || null;
}

function stored(browser) {
  return browser.localStorage.json(KEPT) || [];
}

test("an action goes out as one htmx POST with its fields, the account and its revision", () => {
  const browser = new FakeBrowser();
  const page = open(browser.tab());
  const action = grade(page, 11, 2, 3);
  assert.equal(page.htmx.sent.length, 1);
  const request = page.htmx.sent[0];
  assert.equal(request.verb, "post");
  assert.equal(request.url, "/p/acme/grade/1/2/candidates/11/grade/");
  assert.deepEqual(request.values, { grade: "2", seconds: "1.0", labeller: "7", revision: "3" });
  assert.equal(request.id, action.id);
  assert.deepEqual(plain(page.queue.state()), { waiting: 1, held: null, reason: null });
  assert.equal(page.queue.pending("candidate-11"), 1);

  request.answer(200);
  assert.equal(request.swapped, true);
  assert.deepEqual(page.seen.done, [[action.id, 200]]);
  assert.deepEqual(plain(page.queue.state()), { waiting: 0, held: null, reason: null });
  assert.equal(page.queue.pending("candidate-11"), 0);
  assert.equal(browser.localStorage.getItem(KEPT), null, "nothing kept once answered");
  assert.deepEqual(page.seen.messages, [], "a plain save says nothing");
});

test("actions go out one at a time, in the order they were made", () => {
  const browser = new FakeBrowser();
  const page = open(browser.tab());
  grade(page, 11, 2);
  grade(page, 12, 0);
  grade(page, 13, 1);
  assert.equal(page.htmx.sent.length, 1, "the next waits for the answer to the first");
  page.htmx.pending.answer(200);
  assert.equal(page.htmx.sent.length, 2);
  page.htmx.pending.answer(200);
  page.htmx.pending.answer(200);
  assert.deepEqual(
    page.htmx.sent.map((request) => request.values.grade),
    ["2", "0", "1"],
  );
  assert.equal(page.queue.state().waiting, 0);
});

test("whenIdle resolves once every action is answered", async () => {
  const browser = new FakeBrowser();
  const page = open(browser.tab());
  await page.queue.whenIdle(); // nothing waiting: at once
  grade(page, 11, 2);
  let idle = false;
  const waiting = page.queue.whenIdle().then(() => (idle = true));
  await Promise.resolve();
  assert.equal(idle, false);
  page.htmx.pending.answer(200);
  await waiting;
  assert.equal(idle, true);
});

test("the labeller's own change moves a waiting action onto the revision it made", () => {
  const browser = new FakeBrowser();
  const page = open(browser.tab());
  grade(page, 11, 2, 3);
  grade(page, 11, 0, 3); // a quick "2 then 0" on the page's revision 3
  grade(page, 12, 1, 8);
  page.htmx.pending.answer(200, { "X-Goldset-Subject": "candidate-11", "X-Goldset-Revision": "4" });
  assert.equal(page.htmx.pending.values.revision, "4", "saved as a second change, not refused");
  page.htmx.pending.answer(200, { "X-Goldset-Subject": "candidate-11", "X-Goldset-Revision": "5" });
  assert.equal(page.htmx.pending.values.revision, "8", "another passage's revision is its own");
});

test("a 409 (an edit elsewhere) moves nothing, and a refusal is shown, not kept", () => {
  const browser = new FakeBrowser();
  const page = open(browser.tab());
  const first = grade(page, 11, 2, 3);
  grade(page, 11, 0, 3);
  const request = page.htmx.pending;
  request.answer(409, { "X-Goldset-Subject": "candidate-11", "X-Goldset-Revision": "6" });
  assert.equal(request.swapped, true, "the refusal's message and the saved state are shown");
  assert.deepEqual(page.seen.done[0], [first.id, 409]);
  assert.equal(page.htmx.pending.values.revision, "3", "made against the old state: refused as well");
  for (const status of [400, 404]) {
    page.htmx.pending.answer(status);
    if (status === 400) grade(page, 12, 1);
  }
  assert.equal(page.queue.state().waiting, 0);
  assert.equal(page.queue.state().held, null);
  assert.equal(browser.localStorage.getItem(KEPT), null);
});

test("a kept action refused because the question is someone else's now is final and said so", () => {
  const browser = new FakeBrowser();
  const page = open(browser.tab());
  browser.setOnline(false);
  const first = grade(page, 11, 2);
  grade(page, 12, 0);
  assert.equal(stored(browser).length, 2);
  browser.setOnline(true);
  page.htmx.pending.answer(409, { "X-Goldset-Refused": "lease-lost" });
  page.htmx.pending.answer(409, { "X-Goldset-Refused": "lease-lost" });
  assert.deepEqual(page.seen.done.map((d) => d[1]), [409, 409]);
  assert.equal(page.seen.done[0][0], first.id);
  assert.deepEqual(lastMessage(page), [
    "2 kept changes were not saved: this question is no longer yours.",
    "error",
  ]);
  assert.deepEqual(plain(page.queue.state()), { waiting: 0, held: null, reason: null });
  assert.equal(browser.localStorage.getItem(KEPT), null, "nothing is kept to be sent again");
  browser.tick(120000);
  assert.equal(page.htmx.sent.length, 2, "and nothing is retried");
});

test("an action the server cannot be reached for is kept with every later one, and resent in order", () => {
  const browser = new FakeBrowser();
  const page = open(browser.tab());
  const first = grade(page, 11, 2);
  page.htmx.pending.fail();
  assert.deepEqual(lastMessage(page), [
    "The server cannot be reached. 1 change is kept in this browser and will be saved when the connection returns.",
    "error",
  ]);
  assert.equal(page.queue.state().held, "offline");
  const second = grade(page, 12, 0);
  assert.equal(page.htmx.sent.length, 1, "nothing overtakes a kept action");
  assert.deepEqual(
    stored(browser).map((entry) => [entry.id, entry.kind, entry.reason]),
    [
      [first.id, "grade", "offline"],
      [second.id, "grade", "offline"],
    ],
  );

  browser.tick(1000); // the first retry
  assert.equal(page.htmx.pending.id, first.id);
  page.htmx.pending.answer(200);
  assert.equal(page.htmx.pending.id, second.id);
  page.htmx.pending.answer(200);
  assert.deepEqual(lastMessage(page), ["Back online: saved 2 changes made while offline.", "ok"]);
  assert.deepEqual(plain(page.queue.state()), { waiting: 0, held: null, reason: null });
  assert.equal(browser.localStorage.getItem(KEPT), null, "a success clears what was kept");
});

test("a request htmx had queued behind a failure waits for the resend, in its place", () => {
  const browser = new FakeBrowser();
  const page = open(browser.tab());
  const first = grade(page, 11, 2);
  const second = grade(page, 12, 0); // queued in htmx (hx-sync queue all)
  page.htmx.pending.fail();
  assert.deepEqual(page.htmx.cancelled, [second.id], "held back when htmx took it from its queue");
  assert.equal(page.htmx.sent.length, 1);
  browser.tick(1000);
  page.htmx.pending.answer(200);
  page.htmx.pending.answer(200);
  assert.deepEqual(
    page.htmx.sent.map((request) => request.id),
    [first.id, first.id, second.id],
  );
});

test("retries back off while the server stays unreachable", () => {
  const browser = new FakeBrowser();
  const page = open(browser.tab());
  grade(page, 11, 2);
  page.htmx.pending.fail();
  for (const wait of [1000, 2000, 5000, 10000]) {
    const before = page.htmx.sent.length;
    browser.tick(wait - 1);
    assert.equal(page.htmx.sent.length, before, "not before " + wait + " ms");
    browser.tick(1);
    assert.equal(page.htmx.sent.length, before + 1, "again after " + wait + " ms");
    page.htmx.pending.fail();
  }
  assert.equal(page.queue.state().waiting, 1);
});

test("offline when made: kept with a message, and sent as soon as the connection returns", () => {
  const browser = new FakeBrowser();
  const page = open(browser.tab());
  browser.setOnline(false);
  grade(page, 11, 2);
  assert.equal(page.htmx.sent.length, 0);
  assert.deepEqual(lastMessage(page), [
    "You are offline. 1 change is kept in this browser and will be saved when the connection returns.",
    "error",
  ]);
  assert.equal(stored(browser).length, 1);
  browser.tick(60000); // retries do not send while the browser says it is offline
  assert.equal(page.htmx.sent.length, 0);
  browser.setOnline(true);
  assert.equal(page.htmx.sent.length, 1, "the online event resends at once");
  page.htmx.pending.answer(200);
  assert.deepEqual(lastMessage(page), ["Back online: saved 1 change made while offline.", "ok"]);
});

test("a server error keeps the action and waits at least what Retry-After asks", () => {
  const browser = new FakeBrowser();
  const page = open(browser.tab());
  grade(page, 11, 2);
  const request = page.htmx.pending;
  request.answer(503, { "Retry-After": "7" });
  assert.equal(request.swapped, false, "an error page is not swapped into the grading page");
  assert.deepEqual(lastMessage(page), [
    "The server is unavailable. 1 change is kept; trying again by itself.",
    "error",
  ]);
  assert.equal(page.queue.state().held, "unavailable");
  browser.tick(6999);
  assert.equal(page.htmx.sent.length, 1);
  browser.tick(1);
  page.htmx.pending.answer(200);
  assert.deepEqual(lastMessage(page), ["The server is back: saved 1 change.", "ok"]);
});

test("a kept action survives a reload and is sent first by the next page of the tab", () => {
  const browser = new FakeBrowser();
  const tab = browser.tab();
  const before = open(tab);
  const kept = grade(before, 11, 2, 3);
  before.htmx.pending.fail();

  const after = open(tab); // reload: a new page, the same storage
  browser.tick(0);
  assert.equal(after.htmx.sent.length, 1);
  const request = after.htmx.pending;
  assert.equal(request.id, kept.id, "the same action, so the server can tell a repeat");
  assert.equal(request.values.revision, "3");
  assert.equal(request.values.grade, "2");
  request.answer(200);
  assert.deepEqual(lastMessage(after), ["Back online: saved 1 change made while offline.", "ok"]);
  assert.equal(browser.localStorage.getItem(KEPT), null);
});

test("kept actions older than a day are dropped, not sent", () => {
  const browser = new FakeBrowser();
  const tab = browser.tab();
  const before = open(tab);
  grade(before, 11, 2);
  before.htmx.pending.fail();
  tab.close();
  browser.tick(24 * 3600 * 1000 + 1);
  const later = open(browser.tab());
  browser.tick(0);
  assert.equal(later.htmx.sent.length, 0);
  assert.equal(later.queue.state().waiting, 0);
});

test("another account's kept actions are never sent from this one's page", () => {
  const browser = new FakeBrowser();
  const tab = browser.tab();
  const mine = open(tab);
  grade(mine, 11, 2);
  mine.htmx.pending.fail();
  tab.close();
  browser.tick(60000);
  const other = open(browser.tab(), GRADING, 8);
  browser.tick(60000);
  assert.equal(other.htmx.sent.length, 0);
  assert.equal(stored(browser).length, 1, "still kept for account 7");
});

test("another tab's kept actions are left to it while it is open, then taken over", () => {
  const browser = new FakeBrowser();
  const first = browser.tab();
  const owner = open(first);
  const kept = grade(owner, 11, 2);
  owner.htmx.pending.answer(503, { "Retry-After": "3600" });

  const second = open(browser.tab());
  browser.tick(9000);
  assert.equal(second.htmx.sent.length, 0, "its owner is alive and will send it");

  first.close(); // the owner says no more that it is alive
  browser.tick(15000);
  assert.equal(second.htmx.sent.length, 1);
  assert.equal(second.htmx.pending.id, kept.id);
  second.htmx.pending.answer(200);
  assert.deepEqual(lastMessage(second), ["The server is back: saved 1 change.", "ok"]);
  assert.equal(browser.localStorage.getItem(KEPT), null);
});

test("an answer meant for another page is not swapped into this one", () => {
  const browser = new FakeBrowser();
  const tab = browser.tab();
  const grading = open(tab);
  grade(grading, 11, 2);
  grading.htmx.pending.fail();
  const queuePage = open(tab, "/p/acme/queue/");
  browser.tick(0);
  const request = queuePage.htmx.pending;
  request.answer(200);
  assert.equal(request.swapped, false);
  assert.equal(queuePage.queue.state().waiting, 0);
});

test("an undo that may have reached the server is not resent, and the page says so once", () => {
  const browser = new FakeBrowser();
  const page = open(browser.tab());
  undo(page);
  page.htmx.pending.fail();
  // The undo's warning is the last word: not a "1 change is kept" about an undo that is gone.
  assert.deepEqual(page.seen.messages, [[OFFLINE_UNDO, "error"]]);
  assert.equal(page.queue.state().waiting, 0);
  assert.equal(browser.localStorage.getItem(KEPT), null);
  browser.tick(120000);
  assert.equal(page.htmx.sent.length, 1, "never sent again");
});

test("an undo lost with changes after it: one message, counting only what is kept", () => {
  const browser = new FakeBrowser();
  const page = open(browser.tab());
  undo(page);
  const after = grade(page, 11, 2);
  page.htmx.pending.fail();
  assert.deepEqual(page.seen.messages, [
    [
      OFFLINE_UNDO +
        " The server cannot be reached. 1 change is kept in this browser and will be saved when the connection returns.",
      "error",
    ],
  ]);
  assert.deepEqual(
    stored(browser).map((entry) => entry.id),
    [after.id],
  );
  browser.tick(1000);
  assert.equal(page.htmx.pending.id, after.id);
  page.htmx.pending.answer(200);
  assert.equal(page.queue.state().waiting, 0);
});

test("an undo made while offline never left, so it is kept and sent later", () => {
  const browser = new FakeBrowser();
  const page = open(browser.tab());
  browser.setOnline(false);
  const action = undo(page);
  assert.deepEqual(
    stored(browser).map((entry) => [entry.id, entry.kind]),
    [[action.id, "undo"]],
  );
  browser.setOnline(true);
  assert.equal(page.htmx.pending.id, action.id);
});

test("an expired session keeps the actions and reloads through the login page, once", () => {
  const browser = new FakeBrowser();
  const tab = browser.tab();
  const page = open(tab);
  const kept = grade(page, 11, 2);
  page.htmx.pending.answer(401);
  assert.deepEqual(lastMessage(page), [
    "Your session has expired. 1 change is kept in this browser; log in again and they will be saved.",
    "error",
  ]);
  assert.equal(page.queue.state().held, "session");
  browser.tick(0);
  assert.equal(page.reloads, 1);

  // Back from the login page: the kept action goes out first.
  const back = open(tab);
  browser.tick(0);
  assert.equal(back.htmx.pending.id, kept.id);
  // Refused again at once (the browser refuses the session cookie): no reload loop.
  back.htmx.pending.answer(200, {}, "http://goldset.test/accounts/login/?next=/p/acme/grade/1/2/");
  browser.tick(0);
  assert.equal(back.reloads, 0);
  assert.equal(back.queue.state().held, "stale-page");
  assert.deepEqual(lastMessage(back), [
    "Your changes could not be saved: the session is not accepted. 1 change is kept in this " +
      "browser; log in again in a new tab, then reload this page.",
    "error",
  ]);
  browser.tick(120000);
  assert.equal(back.htmx.sent.length, 1, "a stale page waits for a reload");
});

test("an action refused for another account is held until the page is reloaded", () => {
  const browser = new FakeBrowser();
  const page = open(browser.tab());
  grade(page, 11, 2);
  const request = page.htmx.pending;
  request.answer(403, { "X-Goldset-Refused": "other-account" });
  assert.equal(request.swapped, true, "the server's explanation is shown");
  assert.equal(page.queue.state().held, "other-account");
  page.queue.resume();
  browser.tick(120000);
  assert.equal(page.htmx.sent.length, 1);
  assert.equal(stored(browser).length, 1, "kept for this page's account");
});

test("logging out drops the account's kept actions on its pages too", () => {
  const browser = new FakeBrowser();
  const tab = browser.tab();
  const page = open(tab);
  grade(page, 11, 2);
  page.htmx.pending.fail();
  // goldset.js removes the stored list and says so to the page.
  browser.localStorage.removeItem(KEPT);
  page.document.dispatchEvent(new CustomEvent("goldset:logout", { detail: { user: "7" } }));
  browser.tick(120000);
  tab.leave(); // pagehide must not write them back
  assert.equal(page.htmx.sent.length, 1);
  assert.equal(browser.localStorage.getItem(KEPT), null);
});

test("the list kept before actions had an owner is removed", () => {
  const browser = new FakeBrowser();
  browser.localStorage.setItem("goldset.pending-actions", "[]");
  open(browser.tab());
  assert.equal(browser.localStorage.getItem("goldset.pending-actions"), null);
});

test("two tabs writing their kept actions at once: the one whose entries were lost writes them back", () => {
  const browser = new FakeBrowser();
  const first = open(browser.tab());
  const second = open(browser.tab());
  browser.setOnline(false);
  const a = grade(first, 11, 2);
  const b = grade(second, 12, 1);
  const entries = () => stored(browser).map((entry) => entry.owner + " " + entry.id);
  const both = entries();
  assert.equal(both.length, 2);
  assert.equal(new Set(stored(browser).map((entry) => entry.owner)).size, 2);
  assert.ok(a.id && b.id);
  // The second tab wrote over the list the first had just read: the first tab's entry is lost.
  const firstOwner = stored(browser)[0].owner;
  browser.localStorage.setItem(
    KEPT,
    JSON.stringify(stored(browser).filter((entry) => entry.owner !== firstOwner)),
  );
  assert.equal(entries().length, 1);
  // The browser tells the other tabs that the list changed; the first tab puts its entry back.
  const event = new Event("storage");
  event.key = KEPT;
  first.window.dispatchEvent(event);
  assert.deepEqual(entries().sort(), both.slice().sort());
  // A change to another key, or nothing missing, writes nothing.
  const before = browser.localStorage.getItem(KEPT);
  second.window.dispatchEvent(event);
  const other = new Event("storage");
  other.key = "something.else";
  first.window.dispatchEvent(other);
  assert.equal(browser.localStorage.getItem(KEPT), before);
});
