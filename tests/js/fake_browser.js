// A browser just big enough for static/goldset/*.js under Node's test runner: storage, timers
// on a clock the test moves, window/document events, navigator.onLine, and an htmx.ajax that
// queues requests per source element as hx-sync="this:queue all" does and fires the same events
// (configRequest, beforeSwap, afterRequest) with the same details actions.js reads.
//
// Each page runs the scripts in its own V8 context whose globals are that page's window,
// document and navigator, exactly as a browser loads them: the files need no Node-only code,
// and two tabs in one test do not share a `window`. Objects made by a script belong to that
// context, so tests compare them field by field (or through plain()), not by prototype.
// Nothing here waits on the real clock: `browser.tick(ms)` runs the timers that are due.
"use strict";

const fs = require("node:fs");
const path = require("node:path");
const vm = require("node:vm");

const STATIC = path.join(__dirname, "..", "..", "static", "goldset");

// A script's result as plain data of this realm, for deepStrictEqual.
function plain(value) {
  return JSON.parse(JSON.stringify(value));
}

// Run static/goldset/<name> in `context` as a <script> would.
function runScript(context, name) {
  const file = path.join(STATIC, name);
  vm.runInContext(fs.readFileSync(file, "utf8"), context, { filename: file });
}

// A context with only the given globals (and JavaScript's own), for the files that need little.
function load(name, globals) {
  const window = Object.assign({}, globals);
  const context = vm.createContext(Object.assign({ window: window }, globals));
  runScript(context, name);
  return window;
}

class FakeStorage {
  constructor() {
    this.items = new Map();
  }
  getItem(key) {
    return this.items.has(key) ? this.items.get(key) : null;
  }
  setItem(key, value) {
    this.items.set(key, String(value));
  }
  removeItem(key) {
    this.items.delete(key);
  }
  json(key) {
    return JSON.parse(this.getItem(key) || "null");
  }
}

// The server's side of one request: the test answers it (or breaks the connection).
class FakeRequest {
  constructor(htmx, config) {
    this.htmx = htmx;
    this.config = config;
    this.url = config.path;
    this.verb = config.verb;
    this.headers = config.headers;
    this.values = Object.assign({}, config.parameters);
    this.id = config.headers["X-Goldset-Action"] || null;
    this.answered = false;
    this.swapped = null;
  }

  xhr(status, headers, responseURL) {
    const all = Object.assign({ "Content-Type": "text/html; charset=utf-8" }, headers);
    const lower = new Map(Object.entries(all).map(([name, value]) => [name.toLowerCase(), String(value)]));
    return {
      status: status,
      responseURL: responseURL || "http://goldset.test" + this.url,
      getResponseHeader: (name) => (lower.has(name.toLowerCase()) ? lower.get(name.toLowerCase()) : null),
    };
  }

  // An answer from the server: htmx fires beforeSwap, then afterRequest, then takes the next
  // queued request.
  answer(status, headers, responseURL) {
    this.settle();
    const xhr = this.xhr(status, headers, responseURL);
    const swap = { xhr: xhr, requestConfig: this.config, shouldSwap: status < 300, isError: status >= 400 };
    this.htmx.fire("htmx:beforeSwap", swap);
    this.swapped = swap.shouldSwap;
    this.htmx.fire("htmx:afterRequest", { xhr: xhr, requestConfig: this.config, successful: status < 400 });
    this.htmx.release();
  }

  // No answer at all (the connection broke): htmx reports status 0 and no swap.
  fail() {
    this.settle();
    const xhr = this.xhr(0, {}, "");
    this.htmx.fire("htmx:afterRequest", { xhr: xhr, requestConfig: this.config, successful: false });
    this.htmx.release();
  }

  settle() {
    if (this.answered) throw new Error("request answered twice: " + this.url);
    this.answered = true;
  }
}

class FakeHtmx {
  constructor() {
    this.source = null;
    this.current = null; // the request on the wire
    this.queued = []; // issued while one was on the wire (hx-sync queue all)
    this.sent = []; // every request that went out, in order
    this.cancelled = []; // ids of requests htmx:configRequest cancelled
  }

  ajax(verb, path, context) {
    this.source = context.source;
    const issue = () => this.issue(verb, path, context);
    if (this.current) this.queued.push(issue);
    else issue();
    return Promise.resolve();
  }

  issue(verb, path, context) {
    const config = {
      verb: verb.toLowerCase(),
      path: path,
      headers: Object.assign({}, context.headers),
      parameters: Object.assign({}, context.values),
      elt: context.source,
    };
    this.current = { config };
    if (!this.fire("htmx:configRequest", config)) {
      this.cancelled.push(config.headers["X-Goldset-Action"] || null);
      this.release();
      return;
    }
    const request = new FakeRequest(this, config);
    this.current = request;
    this.sent.push(request);
  }

  release() {
    this.current = null;
    const next = this.queued.shift();
    if (next) next();
  }

  fire(name, detail) {
    const event = new CustomEvent(name, { detail: detail, cancelable: true });
    return this.source.dispatchEvent(event);
  }

  // The request on the wire now, which the test answers.
  get pending() {
    return this.current instanceof FakeRequest && !this.current.answered ? this.current : null;
  }
}

// One browser (shared localStorage), whose tabs (own sessionStorage) show pages one after the
// other; a page's timers die with it, as a navigation's do.
class FakeBrowser {
  constructor() {
    this.now = Date.UTC(2025, 0, 6, 9, 0, 0);
    this.localStorage = new FakeStorage();
    this.timers = [];
    this.nextTimer = 1;
    this.online = true;
  }

  tick(ms) {
    const until = this.now + ms;
    for (;;) {
      const due = this.timers
        .filter((timer) => timer.at <= until)
        .sort((a, b) => a.at - b.at || a.id - b.id)[0];
      if (!due) break;
      this.now = Math.max(this.now, due.at);
      if (due.every) due.at += due.every;
      else this.timers = this.timers.filter((timer) => timer !== due);
      due.callback();
    }
    this.now = until;
  }

  schedule(page, callback, ms, every) {
    const timer = { id: this.nextTimer++, page, callback, at: this.now + Math.max(0, ms || 0), every };
    this.timers.push(timer);
    return timer.id;
  }

  clear(id) {
    this.timers = this.timers.filter((timer) => timer.id !== id);
  }

  tab() {
    return new FakeTab(this);
  }

  setOnline(online) {
    this.online = online;
    for (const page of this.pages()) page.window.dispatchEvent(new Event(online ? "online" : "offline"));
  }

  pages() {
    return this.openTabs.map((tab) => tab.page).filter(Boolean);
  }

  get openTabs() {
    if (!this._tabs) this._tabs = [];
    return this._tabs;
  }
}

class FakeTab {
  constructor(browser) {
    this.browser = browser;
    this.sessionStorage = new FakeStorage();
    this.page = null;
    browser.openTabs.push(this);
  }

  // Show a page in this tab: the one before it is gone (its timers and listeners with it).
  open(path) {
    this.leave();
    this.page = new FakePage(this, path);
    return this.page;
  }

  leave() {
    if (!this.page) return;
    this.page.window.dispatchEvent(new Event("pagehide"));
    this.page.close();
    this.page = null;
  }

  close() {
    this.leave();
    this.browser._tabs = this.browser.openTabs.filter((tab) => tab !== this);
  }
}

class FakePage {
  constructor(tab, path) {
    const browser = tab.browser;
    this.browser = browser;
    this.path = path;
    this.htmx = new FakeHtmx();
    this.reloads = 0;
    const window = new EventTarget();
    window.localStorage = browser.localStorage;
    window.sessionStorage = tab.sessionStorage;
    window.htmx = this.htmx;
    window.setTimeout = (callback, ms) => browser.schedule(this, callback, ms);
    window.setInterval = (callback, ms) => browser.schedule(this, callback, ms, ms);
    window.clearTimeout = (id) => browser.clear(id);
    window.clearInterval = (id) => browser.clear(id);
    window.location = { pathname: path, reload: () => (this.reloads += 1) };
    this.window = window;
    this.document = new EventTarget();
    this.navigator = {
      get onLine() {
        return browser.online;
      },
    };
    this.context = vm.createContext({
      window: window,
      document: this.document,
      navigator: this.navigator,
      URL: URL,
      clock: () => browser.now,
    });
    vm.runInContext("Date.now = function () { return clock(); };", this.context);
  }

  load(name) {
    runScript(this.context, name);
    return this.window;
  }

  close() {
    this.browser.timers = this.browser.timers.filter((timer) => timer.page !== this);
  }
}

module.exports = { FakeBrowser, FakeStorage, load, plain };
