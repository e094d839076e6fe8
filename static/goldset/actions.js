// A labeller's actions as one ordered sequence, sent by htmx, kept when they cannot be sent.
//
// Transport is htmx's: every action is an htmx request from one element (`source`, which has
// hx-sync="this:queue all", so requests go out one at a time in the order they were made) with
// `swap: none`; the server answers with out-of-band fragments. This file decides only what
// htmx cannot: which revision each action carries, and what to keep.
//
// - Revisions. An action is made against the revision the page shows. The reply to the action
//   before it may change that revision (the labeller's own change: the server says so in
//   X-Goldset-Subject / X-Goldset-Revision), and then the waiting action is moved on top of it,
//   so a quick "2 then 0" is saved as two changes, not refused. A 409 (an edit from another tab
//   or window) moves nothing: what was made against the old state is refused as well. A 409
//   with X-Goldset-Refused: lease-lost (the question went back to the pool and another
//   labeller has it) is as final: never resent.
// - Kept actions. An action that cannot be sent (offline, session expired, server unavailable)
//   is kept, and so is every action after it, in order; they are resent by themselves when the
//   connection returns (the `online` event, and a retry that backs off), after logging in again,
//   or on the next page load. Until then nothing overtakes them.
// - Accounts. Actions are stored in localStorage under the account that made them
//   ("goldset.kept-actions.<user id>"), carry that account's id (the server refuses an action
//   whose account is not the session's), are sent only from a page of that account, and are
//   dropped when it logs out (goldset.js). They expire after a day.
// - Tabs. Each page owns its stored entries and, while it has some, says every few seconds
//   that it is alive ("goldset.kept-actions.<user id>.pages"); the next page in the same tab,
//   or any page once the owner has gone quiet (a closed tab), takes them over and sends them.
//
// Interface: GoldsetActions.create(options) -> queue
//   options: {source, user, page, loginUrl, onState(state), onMessage(text, kind, action),
//             onDone(action, status)}
//   queue.send({url, fields, subject, kind}) -> action   fields.revision, if any, is the base
//   queue.pending(subject) -> number of actions for it not answered yet
//   queue.whenIdle() -> Promise resolved when nothing is waiting
//   queue.state() -> {waiting, held, reason}
(function () {
  "use strict";

  const PREFIX = "goldset.kept-actions.";
  const LEGACY_KEY = "goldset.pending-actions"; // before kept actions had an owner
  const PAGE_KEY = "goldset.kept-actions-page"; // sessionStorage: this tab's previous page
  const MAX_AGE_MS = 24 * 3600 * 1000;
  // Several tabs of one account share the stored list; each page owns its entries and says it
  // is alive. Entries of a page that stopped saying so (closed, navigated away) are adopted.
  const HEARTBEAT_MS = 3000;
  const STALE_MS = 10000;
  const RETRY_MS = [1000, 2000, 5000, 10000, 30000, 60000];
  const ANSWERED = [400, 404, 409]; // refused with a message; nothing to resend
  // Actions that may be sent twice without harm (the server answers a repeat of what is saved
  // with "nothing changed"); an undo is kept only if it surely never reached the server.
  const REPEATABLE = { grade: true, span: true, note: true, "remove-span": true, verdict: true };

  const SUMMARY = {
    offline: function (n) { return "Back online: saved " + plural(n, "change") + " made while offline."; },
    session: function (n) { return "Saved " + plural(n, "change") + " kept from before you logged in again."; },
    unavailable: function (n) { return "The server is back: saved " + plural(n, "change") + "."; },
    stored: function (n) { return "Saved " + plural(n, "change") + " kept in this browser from an earlier visit."; },
  };

  function plural(n, word) {
    return n + " " + word + (n === 1 ? "" : "s");
  }

  function storageKey(user) {
    return PREFIX + user;
  }

  function readJSON(key, empty) {
    try {
      const value = JSON.parse(window.localStorage.getItem(key) || "null");
      return value && typeof value === "object" ? value : empty;
    } catch {
      return empty;
    }
  }

  function writeJSON(key, value, keep) {
    try {
      if (keep) window.localStorage.setItem(key, JSON.stringify(value));
      else window.localStorage.removeItem(key);
    } catch { /* a full or disabled storage: the actions are still in memory */ }
  }

  function fresh(entry) {
    return entry && entry.url && Date.now() - entry.at < MAX_AGE_MS;
  }

  function newId() {
    return Date.now().toString(36) + "-" + Math.random().toString(36).slice(2, 10);
  }

  function create(options) {
    const source = options.source;
    const user = String(options.user);
    const onState = options.onState || function () {};
    const onMessage = options.onMessage || function () {};
    const onDone = options.onDone || function () {};
    let counter = 0;
    let actions = []; // made and not answered yet, in order
    let held = null; // why actions are being kept instead of sent, or null
    let pumping = false; // resending kept actions, one at a time
    let retry = 0;
    let retryTimer = null;
    let resent = { count: 0, refused: 0, reasons: {}, leaseLost: false };
    let idle = [];

    try {
      window.localStorage.removeItem(LEGACY_KEY);
    } catch { /* storage may be unavailable; nothing was kept there then */ }

    let loggedOut = false;
    const owner = newId(); // this page
    let previous = null; // the page this tab showed before, whose entries are ours to take
    try {
      // Per account: another account's page in this tab (after a new login) is not ours.
      previous = window.sessionStorage.getItem(PAGE_KEY + "." + user);
      window.sessionStorage.setItem(PAGE_KEY + "." + user, owner);
    } catch { /* without session storage, a reload waits for the staleness instead */ }
    const listKey = storageKey(user);
    const adopted = new Set(); // ids of entries taken over from another page
    const beatKey = storageKey(user) + ".pages";

    function persist() {
      if (loggedOut) return;
      const others = readJSON(listKey, []).filter(function (a) {
        return fresh(a) && a.owner !== owner && !adopted.has(a.id);
      });
      const mine = actions
        .filter(function (a) { return REPEATABLE[a.kind] || !a.sent; })
        .map(function (a) {
          return {
            id: a.id, url: a.url, fields: a.fields, subject: a.subject, base: a.base,
            kind: a.kind, page: a.page, at: a.at, reason: a.reason || "stored", owner: owner,
          };
        });
      const all = others.concat(mine);
      writeJSON(listKey, all, all.length > 0);
      beat();
    }

    function beat() {
      if (loggedOut) return;
      const beats = readJSON(beatKey, {});
      const now = Date.now();
      Object.keys(beats).forEach(function (page) {
        if (now - beats[page] > STALE_MS) delete beats[page];
      });
      const stored = readJSON(listKey, []);
      if (stored.some(function (a) { return a.owner === owner; })) beats[owner] = now;
      else delete beats[owner];
      writeJSON(beatKey, beats, Object.keys(beats).length > 0);
    }

    // Entries no living page owns: this page's predecessor in the tab, or a page that has not
    // said it is alive for a while (a closed tab). They are sent from here, after ours.
    function adopt() {
      if (loggedOut) return;
      const beats = readJSON(beatKey, {});
      const now = Date.now();
      const orphans = readJSON(listKey, []).filter(function (a) {
        if (!fresh(a) || a.owner === owner) return false;
        if (a.owner === previous) return true;
        // An undo is taken only from this tab's own previous page: two pages picking up the
        // same orphan at once would undo twice.
        return REPEATABLE[a.kind] && (!beats[a.owner] || now - beats[a.owner] > STALE_MS);
      });
      if (!orphans.length) return;
      const known = new Set(actions.map(function (a) { return a.id; }));
      orphans.forEach(function (a) {
        adopted.add(a.id);
        if (known.has(a.id)) return;
        actions.push(Object.assign({}, a, { inFlight: false, sent: false, reason: a.reason || "stored" }));
      });
      changed();
      if (!held && !pumping) {
        held = "stored";
        window.setTimeout(resume, 0);
      }
    }

    function state() {
      return { waiting: actions.length, held: held, reason: held };
    }

    function changed() {
      persist();
      onState(state());
      if (!actions.length) {
        const waiting = idle;
        idle = [];
        waiting.forEach(function (resolve) { resolve(); });
      }
    }

    function find(id) {
      return actions.find(function (a) { return a.id === id; }) || null;
    }

    function values(action) {
      const fields = Object.assign({}, action.fields, { labeller: user });
      if (action.base !== null && action.base !== undefined) fields.revision = String(action.base);
      return fields;
    }

    function dispatch(action) {
      action.inFlight = true;
      // The outcome is read from htmx's events (below); the promise only reports it again.
      window.htmx.ajax("POST", action.url, {
        source: source,
        values: values(action),
        swap: "none",
        headers: { "X-Goldset-Action": action.id },
      }).catch(function () {});
    }

    function send(spec) {
      counter += 1;
      const action = {
        id: user + "-" + Date.now().toString(36) + "-" + counter,
        url: spec.url,
        fields: Object.assign({}, spec.fields),
        subject: spec.subject || null,
        kind: spec.kind,
        page: options.page,
        at: Date.now(),
        base: spec.fields && spec.fields.revision !== undefined ? Number(spec.fields.revision) : null,
        inFlight: false,
      };
      delete action.fields.revision;
      actions.push(action);
      if (held || pumping) {
        if (held) action.reason = held;
      } else if (!navigator.onLine) {
        hold("offline");
        onMessage("You are offline. " + keptCount() + " kept in this browser and will be " +
          "saved when the connection returns.", "error", null);
        scheduleRetry(0);
      } else {
        dispatch(action);
      }
      changed();
      return action;
    }

    function hold(reason) {
      held = reason;
      actions.forEach(function (a) { if (!a.reason) a.reason = reason; });
    }

    function scheduleRetry(atLeastMs) {
      if (retryTimer) return;
      const wait = Math.max(RETRY_MS[Math.min(retry, RETRY_MS.length - 1)], atLeastMs || 0);
      retry += 1;
      retryTimer = window.setTimeout(function () {
        retryTimer = null;
        resume();
      }, wait);
    }

    // Send kept actions again, one at a time, in order.
    function resume() {
      if (!held && !pumping) return;
      if (held === "other-account" || held === "stale-page") return; // needs a reload
      if (held === "offline" && !navigator.onLine) {
        scheduleRetry(0);
        return;
      }
      held = null;
      pumping = true;
      next();
    }

    function next() {
      const action = actions[0];
      if (!action) {
        pumping = false;
        retry = 0;
        report();
        changed();
        return;
      }
      if (!action.inFlight) dispatch(action);
    }

    function report() {
      if (!resent.count && !resent.refused) return;
      const reasons = Object.keys(resent.reasons);
      const summary = (reasons.length === 1 && SUMMARY[reasons[0]]) || SUMMARY.stored;
      let text = resent.count ? summary(resent.count) : "";
      if (resent.refused) {
        text += (text ? " " : "") + plural(resent.refused, "kept change") +
          (resent.refused === 1 ? " was" : " were") + " not saved: " +
          (resent.leaseLost ? "this question is no longer yours." : "see the message on the passage.");
      }
      onMessage(text, resent.refused ? "error" : "ok", null);
      resent = { count: 0, refused: 0, reasons: {}, leaseLost: false };
    }

    // `message` (a function, or null) says what is kept; see below for why it is a function.
    function keepFrom(action, reason, message) {
      action.inFlight = false;
      action.sent = false;
      let undoLost = false;
      if (!REPEATABLE[action.kind] && reason === "offline" && navigator.onLine) {
        // The undo may have reached the server before the connection broke: sending it again
        // could undo a second change. Let the labeller look and press z again if needed.
        actions = actions.filter(function (a) { return a !== action; });
        undoLost = true;
      }
      hold(reason);
      pumping = false;
      // Worded only now, so the count leaves out a dropped undo; and said in one message, since
      // a second would replace the first on the page at once.
      const kept = message && actions.length ? message() : "";
      if (undoLost) {
        onMessage("The connection broke while undoing, so the undo may or may not have been " +
          "saved. Check the page when the connection returns, and press z again if needed." +
          (kept ? " " + kept : ""), "error", action);
      } else if (kept) {
        onMessage(kept, "error", null);
      }
      changed();
    }

    // Reload (through the login page when logged out), unless that was just tried: a browser
    // that refuses the session cookie would otherwise reload for ever.
    function reloadOnce() {
      const key = "goldset.reloaded-for-session";
      let last = 0;
      try {
        last = Number(window.sessionStorage.getItem(key) || 0);
        window.sessionStorage.setItem(key, String(Date.now()));
      } catch { /* without session storage, reload once per page */ }
      if (Date.now() - last < 30000) {
        held = "stale-page";
        changed();
        onMessage("Your changes could not be saved: the session is not accepted. " + keptCount() +
          " kept in this browser; log in again in a new tab, then reload this page.", "error", null);
        return;
      }
      window.setTimeout(function () { window.location.reload(); }, 0);
    }

    function keptCount() {
      return plural(actions.length, "change") + (actions.length === 1 ? " is" : " are");
    }

    // --- htmx events on the source element -------------------------------------------------

    function actionId(detail) {
      const headers = (detail.requestConfig || detail).headers || {};
      return headers["X-Goldset-Action"] || null;
    }

    function ours(detail) {
      const id = actionId(detail);
      return id ? find(id) : null;
    }

    source.addEventListener("htmx:configRequest", function (event) {
      const action = ours(event.detail);
      if (!action) {
        // An action answered already (or dropped at logout) never goes out again: a second
        // copy htmx replays from its queue would write twice and its answer swap over the first.
        if (actionId(event.detail)) event.preventDefault();
        return;
      }
      // A request htmx queued before a failure: keep it for the resend, in its place.
      if (held || (pumping && actions[0] !== action)) {
        action.inFlight = false;
        if (held) action.reason = held;
        event.preventDefault();
        changed();
        return;
      }
      action.sent = true;
      const fields = values(action);
      Object.keys(fields).forEach(function (name) { event.detail.parameters[name] = fields[name]; });
      if (options.beforeSend) options.beforeSend(action, event.detail.parameters);
    });

    source.addEventListener("htmx:beforeSwap", function (event) {
      const action = ours(event.detail);
      if (!action) {
        if (actionId(event.detail)) event.detail.shouldSwap = false; // see configRequest
        return;
      }
      const status = event.detail.xhr.status;
      const html = (event.detail.xhr.getResponseHeader("Content-Type") || "").indexOf("text/html") === 0;
      // Refusals come with the saved state and a message: show them like any answer.
      const ownRefusal = status === 403 && event.detail.xhr.getResponseHeader("X-Goldset-Refused");
      const shows = status < 300 || ANSWERED.indexOf(status) >= 0 || Boolean(ownRefusal);
      event.detail.shouldSwap = html && shows && action.page === options.page;
      event.detail.isError = !(status < 300 || ANSWERED.indexOf(status) >= 0);
    });

    source.addEventListener("htmx:afterRequest", function (event) {
      const action = ours(event.detail);
      if (!action || !action.sent) return;
      action.sent = false;
      const xhr = event.detail.xhr;
      const status = xhr.status;
      if (status === 0) {
        keepFrom(action, "offline", function () {
          return "The server cannot be reached. " + keptCount() +
            " kept in this browser and will be saved when the connection returns.";
        });
        scheduleRetry(0);
        return;
      }
      const toLogin = xhr.responseURL && new URL(xhr.responseURL).pathname === options.loginUrl;
      if (status === 403 && xhr.getResponseHeader("X-Goldset-Refused") === "other-account") {
        keepFrom(action, "other-account", null);
        return;
      }
      if (status === 401 || status === 403 || toLogin) {
        // 401: the session expired. 403: the page's CSRF token is no longer valid (the cookies
        // were cleared, or the account logged in again elsewhere). Either way a reload goes
        // through the login page if needed and comes back here, where the kept actions are sent.
        keepFrom(action, "session", function () {
          return "Your session has expired. " + keptCount() + " kept in this browser; log in again and they will be saved.";
        });
        reloadOnce();
        return;
      }
      if (status >= 500) {
        const after = parseInt(xhr.getResponseHeader("Retry-After"), 10) || 0;
        keepFrom(action, "unavailable", function () {
          return "The server is unavailable. " + keptCount() + " kept; trying again by itself.";
        });
        scheduleRetry(after * 1000);
        return;
      }
      // Answered: saved, or refused with a message (the page now shows the saved state).
      actions = actions.filter(function (a) { return a !== action; });
      const subject = xhr.getResponseHeader("X-Goldset-Subject");
      const revision = xhr.getResponseHeader("X-Goldset-Revision");
      if (subject && revision !== null && status !== 409) {
        actions.forEach(function (a) {
          if (a.subject === subject) a.base = Number(revision);
        });
      }
      if (action.reason) {
        if (status < 300) resent.count += 1;
        else resent.refused += 1;
        resent.reasons[action.reason] = true;
        // A question whose lease lapsed and that another labeller took: final, and its answer
        // carries no passage to show a message on (the status bar says where to go next).
        if (xhr.getResponseHeader("X-Goldset-Refused") === "lease-lost") resent.leaseLost = true;
      }
      onDone(action, status);
      changed();
      if (pumping) next();
    });

    window.addEventListener("online", function () {
      onState(state());
      if (held === "offline") {
        retry = 0;
        if (retryTimer) window.clearTimeout(retryTimer);
        retryTimer = null;
        resume();
      }
    });
    window.addEventListener("offline", function () { onState(state()); });
    // Logging out (goldset.js) drops this account's kept actions, here too.
    document.addEventListener("goldset:logout", function (event) {
      if (String(event.detail.user) !== user) return;
      loggedOut = true;
      actions = [];
    });
    // Leaving the page (next question, reload): what was not answered is in storage already,
    // except an undo in flight, which is not resent (see REPEATABLE).
    window.addEventListener("pagehide", persist);
    // Two tabs of one account write the same list, each reading the other's entries first;
    // browsers do not lock localStorage across tabs, so two writes at the same moment can drop
    // one tab's entries. Each write tells the other tabs (a storage event): a tab that finds
    // its own entries missing writes them back.
    window.addEventListener("storage", function (event) {
      if (loggedOut || event.key !== listKey) return;
      // By owner and id: two tabs' ids can be equal (made in the same millisecond).
      const stored = new Set(
        readJSON(listKey, []).map(function (a) { return a.owner + " " + a.id; })
      );
      const missing = actions.some(function (a) {
        return (REPEATABLE[a.kind] || !a.sent) && !stored.has(owner + " " + a.id);
      });
      if (missing) persist();
    });

    // Actions kept from an earlier visit of this account: send them first, in order; and
    // keep looking for those a tab closed meanwhile left behind.
    adopt();
    window.setInterval(function () {
      beat();
      adopt();
    }, HEARTBEAT_MS);

    return {
      send: send,
      pending: function (subject) {
        return actions.filter(function (a) { return a.subject === subject; }).length;
      },
      whenIdle: function () {
        if (!actions.length) return Promise.resolve();
        return new Promise(function (resolve) { idle.push(resolve); });
      },
      state: state,
      resume: resume,
    };
  }

  window.GoldsetActions = Object.freeze({ create: create, PREFIX: PREFIX });
})();
