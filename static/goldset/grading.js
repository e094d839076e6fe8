// The grading page, keyboard first (j/k move, 0/1/2 grade, s span (S: exact selection),
// u unanswerable, a answerable, e context, n next question, z undo, ? keys). Every action is sent at once, in order; the
// server answers with the re-rendered pieces, each replacing the element with the same id.
// If the session has expired, the action is kept in localStorage and sent again after login.
(function () {
  "use strict";

  const root = document.getElementById("grading");
  if (!root) return;

  const PENDING_KEY = "goldset.pending-actions";
  const RETRIES_ON_503 = 3;
  const PENDING_MAX_AGE_MS = 24 * 3600 * 1000;
  const LOGIN_URL = root.dataset.loginUrl || "/accounts/login/";
  const page = window.location.pathname;

  let current = 0;
  let currentSince = performance.now();
  const lastActionAt = new Map();
  let queue = Promise.resolve();

  // --- small helpers -----------------------------------------------------------------------

  function csrfToken() {
    try {
      return JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"] || "";
    } catch (error) {
      return "";
    }
  }

  function cards() {
    return Array.from(root.querySelectorAll(".candidate"));
  }

  function say(text, kind) {
    const flash = document.getElementById("flash");
    if (!flash) return;
    flash.textContent = text;
    flash.className = "flash" + (kind ? " " + kind : "");
  }

  function secondsOn(card) {
    const now = performance.now();
    const since = Math.max(currentSince, lastActionAt.get(card.id) || 0);
    lastActionAt.set(card.id, now);
    return ((now - since) / 1000).toFixed(1);
  }

  function setCurrent(index, scroll) {
    const all = cards();
    if (!all.length) return;
    current = Math.max(0, Math.min(index, all.length - 1));
    all.forEach(function (card, i) {
      card.classList.toggle("current", i === current);
      if (i === current) card.setAttribute("aria-current", "true");
      else card.removeAttribute("aria-current");
    });
    currentSince = performance.now();
    if (scroll !== false) all[current].scrollIntoView({ block: "nearest", behavior: "smooth" });
  }

  // --- talking to the server ---------------------------------------------------------------

  function pending() {
    try {
      const list = JSON.parse(window.localStorage.getItem(PENDING_KEY) || "[]");
      return Array.isArray(list) ? list : [];
    } catch (error) {
      return [];
    }
  }

  function keep(url, fields) {
    const list = pending();
    list.push({ url: url, fields: fields, page: page, at: Date.now() });
    window.localStorage.setItem(PENDING_KEY, JSON.stringify(list));
  }

  function swap(html) {
    const template = document.createElement("template");
    template.innerHTML = html;
    Array.from(template.content.children).forEach(function (fresh) {
      if (!fresh.id) return;
      const old = document.getElementById(fresh.id);
      if (!old) return;
      ["current", "expanded"].forEach(function (name) {
        if (old.classList.contains(name)) fresh.classList.add(name);
      });
      if (old.hasAttribute("aria-current")) fresh.setAttribute("aria-current", "true");
      const wholeDocument = old.querySelector(".doc-view.whole");
      old.replaceWith(fresh);
      if (window.htmx) window.htmx.process(fresh);
      // Keep the whole document open if the labeller had opened it: ask for it again.
      if (wholeDocument) {
        const button = fresh.querySelector("[hx-get]");
        if (button) button.click();
      }
    });
  }

  async function post(url, fields, options) {
    options = options || {};
    let response;
    try {
      response = await fetch(url, {
        method: "POST",
        body: new URLSearchParams(fields),
        credentials: "same-origin",
        headers: { "X-CSRFToken": csrfToken(), "HX-Request": "true" },
      });
    } catch (error) {
      keep(url, fields);
      say("The server cannot be reached. Your action is kept and will be saved when you reload the page.", "error");
      return false;
    }
    const sentToLogin = response.redirected && new URL(response.url).pathname === LOGIN_URL;
    if (response.status === 401 || response.status === 403 || sentToLogin) {
      if (options.replay) {
        say("An action kept from before you logged in could not be saved: you may no longer have access.", "error");
        return false;
      }
      keep(url, fields);
      say("Your session has expired. Log in again; your action is kept and will be saved.", "error");
      window.location.assign(LOGIN_URL + "?next=" + encodeURIComponent(page));
      return false;
    }
    // 503: the database went away mid-request and the server rolled the whole action back, so
    // sending the same action again (same revision) is safe. Try a few times, then keep it.
    if (response.status === 503) {
      const attempt = (options.attempt || 0) + 1;
      if (attempt <= RETRIES_ON_503) {
        const wait = (parseInt(response.headers.get("Retry-After"), 10) || 1) * 1000 * attempt;
        say("The server is briefly unavailable; trying again…", "error");
        await new Promise(function (resolve) { window.setTimeout(resolve, wait); });
        return post(url, fields, Object.assign({}, options, { attempt: attempt }));
      }
      if (!options.replay) keep(url, fields);
      say("The server is unavailable. Your action is kept and will be saved when you reload the page.", "error");
      return false;
    }
    const contentType = response.headers.get("Content-Type") || "";
    const body = await response.text();
    if (contentType.indexOf("text/html") === 0) swap(body);
    else if (!response.ok) say(body || "Something went wrong (" + response.status + ").", "error");
    if (response.ok && options.attempt) say("Saved.", "ok");
    return response.ok;
  }

  // Actions go out one after the other, so a grade and the span that follows it arrive in order.
  function send(url, fields, options) {
    queue = queue.then(function () {
      return post(url, fields, options);
    });
    return queue;
  }

  async function replayPending() {
    const all = pending().filter(function (action) {
      return Date.now() - action.at < PENDING_MAX_AGE_MS;
    });
    const mine = all.filter(function (action) {
      return action.page === page;
    });
    const others = all.filter(function (action) {
      return action.page !== page;
    });
    window.localStorage.setItem(PENDING_KEY, JSON.stringify(others));
    if (!mine.length) return;
    let saved = 0;
    for (const action of mine) {
      if (await send(action.url, action.fields, { replay: true })) saved += 1;
    }
    if (saved) say("Saved " + saved + " action" + (saved === 1 ? "" : "s") + " kept from before you logged in.", "ok");
  }

  // --- actions -----------------------------------------------------------------------------

  function currentCard() {
    return cards()[current] || null;
  }

  function grade(value) {
    const card = currentCard();
    if (!card) return;
    send(card.dataset.gradeUrl, {
      grade: String(value),
      revision: card.dataset.revision,
      seconds: secondsOn(card),
    });
  }

  function verdict(outcome) {
    const section = document.getElementById("verdict");
    if (!section) return;
    const reason = section.querySelector("textarea[name=reason]");
    send(section.dataset.url, {
      outcome: outcome,
      reason: reason ? reason.value : "",
      revision: section.dataset.revision,
    });
  }

  function undo() {
    send(root.dataset.undoUrl, {});
  }

  function nextQuestion() {
    const form = document.getElementById("next-question-form");
    if (!form) return;
    // Let every action already sent finish first; then leave the page.
    queue.then(function () {
      form.submit();
    });
  }

  function toggleContext(card) {
    if (!card) return;
    const expanded = card.classList.toggle("expanded");
    const button = card.querySelector(".toggle-context");
    if (button) button.textContent = expanded ? "Hide surrounding text" : "Show surrounding text";
  }

  function showKeys() {
    const dialog = document.getElementById("keys-help");
    if (!dialog) return;
    if (dialog.open) dialog.close();
    else dialog.showModal();
  }

  // --- turning a selection into a span (static/goldset/selection.js) ----------------------

  function markSpan(exact) {
    const span = window.GoldsetSelection.fromSelection(root, { exact: exact });
    if (span.error) {
      say(span.message, "error");
      return;
    }
    const card = span.view.closest(".candidate");
    const index = cards().indexOf(card);
    if (index >= 0 && index !== current) setCurrent(index, false);
    window.getSelection().removeAllRanges();
    send(card.dataset.spanUrl, {
      version: span.version,
      start: String(span.start),
      end: String(span.end),
      quote: span.quote,
      revision: card.dataset.revision,
      seconds: secondsOn(card),
    });
  }

  // --- wiring ------------------------------------------------------------------------------

  const KEYS = {
    j: function () { setCurrent(current + 1); },
    k: function () { setCurrent(current - 1); },
    0: function () { grade(0); },
    1: function () { grade(1); },
    2: function () { grade(2); },
    s: function () { markSpan(false); },
    S: function () { markSpan(true); },
    u: function () { verdict("unanswerable"); },
    a: function () { verdict("answerable"); },
    e: function () { toggleContext(currentCard()); },
    n: nextQuestion,
    z: undo,
    "?": showKeys,
  };

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || event.isComposing) return;
    const target = event.target;
    if (target.closest && target.closest("textarea, input, select, [contenteditable]")) {
      if (event.key === "Escape") target.blur();
      return;
    }
    const dialog = document.getElementById("keys-help");
    if (dialog && dialog.open && event.key !== "?") return;
    const action = KEYS[event.key];
    if (!action) return;
    event.preventDefault();
    action();
  });

  // Buttons and forms use the same path as the keys (and work without JavaScript too).
  root.addEventListener("submit", function (event) {
    const form = event.target;
    if (!form.hasAttribute("data-fetch")) return;
    event.preventDefault();
    const fields = Object.fromEntries(new FormData(form, event.submitter));
    const card = form.closest(".candidate");
    if (card) {
      setCurrent(cards().indexOf(card), false);
      fields.revision = card.dataset.revision;
      fields.seconds = secondsOn(card);
    } else if (form.closest("#verdict")) {
      fields.revision = document.getElementById("verdict").dataset.revision;
    }
    send(form.action, fields);
  });

  // A note is saved when the labeller leaves the field.
  root.addEventListener("change", function (event) {
    const field = event.target;
    if (field.name === "note" && field.form) field.form.requestSubmit();
  });

  root.addEventListener("click", function (event) {
    const toggle = event.target.closest(".toggle-context");
    if (toggle) {
      toggleContext(toggle.closest(".candidate"));
      return;
    }
    if (event.target.closest(".show-keys")) {
      showKeys();
      return;
    }
    const card = event.target.closest(".candidate");
    if (card && window.getSelection().isCollapsed) {
      const index = cards().indexOf(card);
      if (index !== current) setCurrent(index, false);
    }
  });

  setCurrent(0, false);
  replayPending();
})();
