// The grading page, keyboard first: keys, the state of the page around htmx's swaps, and what
// the labeller sees while their actions are saved. `?` on the page lists every key.
//
// Transport is htmx's (static/goldset/actions.js: one ordered queue of actions, kept when they
// cannot be sent); selection -> offsets is static/goldset/selection.js. A reply re-renders a
// passage out of band; this file carries over what the server cannot know: which passage is
// current, an opened context or whole document and where it was scrolled, a selection, a note
// being typed, the question's terms highlighted.
//
// The same script runs both views of the page: the passage cards, and one question on one page
// (`.question-view`: compact rows in the labeller's own order, each passage clipped to a few
// lines; grading_view.js). Both send the same actions to the same endpoints, whose replies
// re-render a passage as a card; the stylesheet lays it out as a row, and this file keeps the
// row's own state (its number in this order, the passage shown whole).
(function () {
  "use strict";

  const root = document.getElementById("grading");
  if (!root || !window.htmx || !window.GoldsetActions || !window.GoldsetSelection || !window.GoldsetKeys ||
    !window.GoldsetSaveState || !window.GoldsetGradingView) return;
  // Classes on this page are the page's own state (the current passage): htmx must not put a
  // swapped element's old classes back a moment after the swap.
  window.htmx.config.attributesToSettle = ["style", "width", "height"];

  const PREFS_KEY = "goldset.grading-prefs";
  const page = window.location.pathname;
  const guideline = root.dataset.guideline || "0";
  const saveState = document.getElementById("save-state");
  const questionView = root.classList.contains("question-view");
  const views = window.GoldsetGradingView;

  let current = 0;
  let currentSince = performance.now();
  const lastActionAt = new Map();
  const carried = new Map(); // element id -> what to restore after its swap

  // --- preferences ---------------------------------------------------------------------------

  function readPrefs() {
    try {
      return Object.assign({ autoAdvance: false, terms: true },
        JSON.parse(window.localStorage.getItem(PREFS_KEY) || "{}"));
    } catch {
      return { autoAdvance: false, terms: true };
    }
  }

  const prefs = readPrefs();

  function savePrefs() {
    try {
      window.localStorage.setItem(PREFS_KEY, JSON.stringify(prefs));
    } catch { /* preferences are a convenience */ }
  }

  // --- small helpers -------------------------------------------------------------------------

  function cards() {
    return Array.from(root.querySelectorAll(".candidate"));
  }

  function currentCard() {
    return cards()[current] || null;
  }

  function subjectOf(card) {
    return "candidate-" + card.dataset.candidate;
  }

  function cardBySubject(subject) {
    if (!subject || subject.indexOf("candidate-") !== 0) return null;
    return document.getElementById(subject);
  }

  // A message on the passage it concerns (when there is one) and in the status bar.
  function say(text, kind, card) {
    const flash = document.getElementById("flash"); // replaced by every reply
    if (flash) {
      flash.textContent = text;
      flash.className = "flash" + (kind ? " " + kind : "");
    }
    const slot = card ? card.querySelector(".card-message") : null;
    if (slot) {
      slot.textContent = text;
      slot.className = "card-message" + (kind ? " " + kind : "");
    }
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

  function isGraded(card) {
    return card.classList.contains("graded") || card.hasAttribute("data-pending-grade");
  }

  // --- the status bar: "All changes saved", or what is kept (static/goldset/save_state.js) ---

  function showState(state) {
    window.GoldsetSaveState.show(saveState, state);
  }

  const queue = window.GoldsetActions.create({
    source: root,
    user: root.dataset.user,
    page: page,
    loginUrl: root.dataset.loginUrl || "/accounts/login/",
    onState: showState,
    onMessage: function (text, kind, action) {
      say(text, kind, action ? cardBySubject(action.subject) : null);
    },
    // Read at the moment the request goes out: a passage may have been opened since. The
    // reply then shows the passage it changed as it is on the page (an undo may change any).
    beforeSend: function (action, parameters) {
      parameters.whole = Array.from(root.querySelectorAll(".candidate .doc-view.whole"))
        .map(function (view) { return view.closest(".candidate").dataset.candidate; })
        .join(",");
    },
  });

  function send(card, kind, url, fields) {
    const base = { guideline: guideline };
    if (card) {
      base.revision = card.dataset.revision;
      base.seconds = secondsOn(card);
    }
    return queue.send({
      url: url,
      fields: Object.assign(base, fields),
      subject: card ? subjectOf(card) : kind === "verdict" ? "verdict" : null,
      kind: kind,
    });
  }

  // --- actions -------------------------------------------------------------------------------

  function grade(value, card) {
    card = card || currentCard();
    if (!card) return;
    card.setAttribute("data-pending-grade", String(value));
    send(card, "grade", card.dataset.gradeUrl, { grade: String(value) });
    if (prefs.autoAdvance && card === currentCard()) {
      const index = cards().indexOf(card);
      if (index < cards().length - 1) setCurrent(index + 1);
    }
  }

  function verdict(outcome) {
    const section = document.getElementById("verdict");
    if (!section) return;
    const reason = section.querySelector("textarea[name=reason]");
    queue.send({
      url: section.dataset.url,
      fields: {
        guideline: guideline,
        outcome: outcome,
        reason: reason ? reason.value : "",
        revision: section.dataset.revision,
      },
      subject: "verdict",
      kind: "verdict",
    });
  }

  function cantTell() {
    const section = document.getElementById("verdict");
    if (!section) return;
    const reason = section.querySelector("textarea[name=reason]");
    if (reason && reason.value.trim()) {
      verdict("cant_tell");
      return;
    }
    const slot = section.querySelector("#verdict-message");
    if (slot) {
      slot.textContent = "Type why you can't tell, then press Ctrl+Enter.";
      slot.className = "card-message";
    }
    if (reason) {
      reason.scrollIntoView({ block: "center" });
      reason.focus();
    }
  }

  function undo() {
    queue.send({ url: root.dataset.undoUrl, fields: { guideline: guideline }, subject: null, kind: "undo" });
  }

  function nextQuestion() {
    const form = document.getElementById("next-question-form");
    if (!form) return;
    views.leaveAfterSaving(queue, function () { form.submit(); }, say, "the next question");
  }

  // The other view of this question (the choice is remembered by the server).
  function switchView() {
    const link = views.otherView(root);
    if (!link) return;
    views.leaveAfterSaving(queue, function () { window.location.assign(link.href); }, say,
      "the other view");
  }

  // The question view clips each passage to a few lines; "Show all of the passage" (x) opens it.
  function markClipped(card) {
    if (!questionView || !card) return;
    const view = card.querySelector(".doc-view");
    // Opened, with its context, or in its whole document: not clipped (it may still scroll).
    const clamped = view && !view.classList.contains("whole") &&
      !card.classList.contains("open") && !card.classList.contains("expanded");
    card.classList.toggle("clipped", Boolean(clamped) && views.isClipped(view));
  }

  function toggleClip(card) {
    if (!questionView || !card) return;
    const open = card.classList.toggle("open");
    const button = card.querySelector(".toggle-clip");
    if (button) button.textContent = open ? "Clip the passage again" : "Show all of the passage";
    markClipped(card);
  }

  function nextUngraded() {
    const all = cards();
    for (let step = 1; step <= all.length; step += 1) {
      const index = (current + step) % all.length;
      if (!isGraded(all[index])) {
        setCurrent(index);
        return;
      }
    }
    say("Every passage is graded. Give the question a verdict (u, a or c), then n.", "ok");
  }

  let restOpenings = 0;

  function gradeRestZero() {
    const rest = cards().filter(function (card) { return !isGraded(card); });
    if (!rest.length) {
      say("Every passage is graded already.", "ok");
      return;
    }
    const dialog = document.getElementById("confirm-rest");
    const text = document.getElementById("confirm-rest-text");
    if (!dialog || !text) return;
    text.textContent = (rest.length === 1 ? "The passage" : "The " + rest.length + " passages") +
      " not graded yet will be graded 0 (not relevant). You can still change each one, or undo.";
    dialog.returnValue = "";
    restOpenings += 1;
    const opening = restOpenings;
    dialog.showModal();
    dialog.addEventListener("close", function onClose() {
      // A close event is queued, not dispatched at once: the one of an earlier opening (closed
      // with Escape) can arrive after the dialog was opened again. It is not this one's.
      if (dialog.open) return;
      dialog.removeEventListener("close", onClose);
      if (opening !== restOpenings || dialog.returnValue !== "yes") return;
      rest.forEach(function (card) {
        if (document.body.contains(card) && !isGraded(card)) grade(0, card);
      });
    });
  }

  function toggleContext(card) {
    if (!card) return;
    const expanded = card.classList.toggle("expanded");
    const button = card.querySelector(".toggle-context");
    if (button) button.textContent = expanded ? "Hide surrounding text" : "Show surrounding text";
    markClipped(card); // the context lifts the clipping; hiding it may bring it back
  }

  // The whole document opens where the passage is and stays there; asked through the same
  // ordered queue (a read), so it never crosses a write's reply.
  function toggleDocument(card) {
    if (!card) return;
    const view = card.querySelector(".doc-view");
    if (!view) return;
    const whole = view.classList.contains("whole");
    // The passage's first shown segment: hidden Markdown syntax has no place on the screen.
    const passage = view.querySelector(".seg.passage:not(.md-hide)");
    carried.set(view.id, {
      opening: !whole,
      anchor: passage ? passage.getBoundingClientRect().top - view.getBoundingClientRect().top : 0,
    });
    const url = card.dataset.documentUrl + (whole ? "?view=passage" : "");
    window.htmx.ajax("GET", url, { source: root, swap: "none" }).catch(function () {});
  }

  // --- evidence from a selection (static/goldset/selection.js) -------------------------------

  function markSpan(exact) {
    const span = window.GoldsetSelection.fromSelection(root, { exact: exact });
    if (span.error) {
      say(span.message, "error", span.error === "empty" ? currentCard() : null);
      return;
    }
    const card = span.view.closest(".candidate");
    const index = cards().indexOf(card);
    if (index >= 0 && index !== current) setCurrent(index, false);
    window.getSelection().removeAllRanges();
    send(card, "span", card.dataset.spanUrl, {
      version: span.version,
      start: String(span.start),
      end: String(span.end),
      quote: span.quote,
    });
  }

  // --- the question's terms, highlighted in the passages -------------------------------------

  const STOPWORDS = new Set(("a about after all also an and any are as at be been before but by " +
    "can could did do does doing during each for from get got had has have how i if in into is it " +
    "its just me more most my no nor not of off on once only or other our out over own same she " +
    "should so some such than that the their them then there these they this those through to " +
    "too under until up very was we were what when where which while who whom why will with " +
    "would you your").split(" "));
  const SUFFIXES = ["ing", "ied", "ies", "ed", "es", "s", "ly", "y", "e"];

  function stem(word) {
    for (const suffix of SUFFIXES) {
      if (word.length - suffix.length >= 3 && word.endsWith(suffix)) {
        return word.slice(0, -suffix.length);
      }
    }
    return word;
  }

  function termPattern() {
    const question = document.getElementById("question-text");
    const words = (question ? question.textContent : "").match(/[\p{L}\p{N}]+/gu) || [];
    const stems = new Set();
    words.forEach(function (word) {
      const lower = word.toLowerCase();
      const code = /\d/u.test(word) || (word.length >= 2 && word === word.toUpperCase() && /\p{L}/u.test(word));
      if (STOPWORDS.has(lower) || (lower.length < 3 && !code)) return;
      stems.add(stem(lower).replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
    });
    if (!stems.size) return null;
    const sorted = Array.from(stems).sort(function (a, b) { return b.length - a.length; });
    return new RegExp("(?<![\\p{L}\\p{N}])(?:" + sorted.join("|") + ")[\\p{L}\\p{N}]*", "giu");
  }

  const TERMS = termPattern();

  function markTerms(scope) {
    if (!TERMS || !scope) return;
    scope.querySelectorAll(".doc-view [data-start]").forEach(function (segment) {
      if (segment.querySelector("mark.term")) return;
      const walker = document.createTreeWalker(segment, NodeFilter.SHOW_TEXT);
      const nodes = [];
      for (let node = walker.nextNode(); node; node = walker.nextNode()) nodes.push(node);
      nodes.forEach(function (node) {
        const text = node.data;
        TERMS.lastIndex = 0;
        if (!TERMS.test(text)) return;
        TERMS.lastIndex = 0;
        const fragment = document.createDocumentFragment();
        let last = 0;
        for (let match = TERMS.exec(text); match; match = TERMS.exec(text)) {
          if (match.index > last) fragment.appendChild(document.createTextNode(text.slice(last, match.index)));
          const mark = document.createElement("mark");
          mark.className = "term";
          mark.textContent = match[0];
          fragment.appendChild(mark);
          last = match.index + match[0].length;
        }
        if (last < text.length) fragment.appendChild(document.createTextNode(text.slice(last)));
        node.parentNode.replaceChild(fragment, node);
      });
    });
  }

  function showTerms(on) {
    prefs.terms = on;
    savePrefs();
    root.classList.toggle("terms-on", on);
    const box = document.getElementById("highlight-terms");
    if (box) box.checked = on;
  }

  // --- carrying page state across swaps ------------------------------------------------------

  document.addEventListener("htmx:oobBeforeSwap", function (event) {
    const old = event.detail.target;
    const fresh = event.detail.fragment && event.detail.fragment.firstElementChild;
    if (!old || !fresh) return;
    if (old.classList.contains("candidate")) {
      ["current", "expanded", "open"].forEach(function (name) {
        if (old.classList.contains(name)) fresh.classList.add(name);
      });
      if (old.classList.contains("open")) {
        const button = fresh.querySelector(".toggle-clip");
        if (button) button.textContent = "Clip the passage again";
      }
      // A reply numbers the passage in the cards' order; a row keeps its number in this one.
      const label = old.querySelector(".passage-label");
      const freshLabel = fresh.querySelector(".passage-label");
      if (questionView && label && freshLabel) freshLabel.textContent = label.textContent;
      if (old.hasAttribute("aria-current")) fresh.setAttribute("aria-current", "true");
      if (old.classList.contains("expanded")) {
        const button = fresh.querySelector(".toggle-context");
        if (button) button.textContent = "Hide surrounding text";
      }
      const note = old.querySelector("textarea[name=note]");
      const freshNote = fresh.querySelector("textarea[name=note]");
      const state = {};
      if (note && freshNote && (note.value !== note.defaultValue || document.activeElement === note)) {
        // Typing in progress: the reply must not wipe it (it is saved when the field is left).
        if (note.value !== note.defaultValue) freshNote.value = note.value;
        state.focusNote = document.activeElement === note;
        state.noteSelection = [note.selectionStart, note.selectionEnd];
      }
      const view = old.querySelector(".doc-view");
      if (view) {
        state.scrollTop = view.scrollTop;
        const selection = window.GoldsetSelection.fromSelection(old, { exact: true });
        if (!selection.error) state.selection = [selection.start, selection.end];
      }
      carried.set(old.id, Object.assign(carried.get(old.id) || {}, state));
    } else if (old.id === "verdict") {
      const reason = old.querySelector("textarea[name=reason]");
      const freshReason = fresh.querySelector("textarea[name=reason]");
      if (reason && freshReason && reason.value !== reason.defaultValue) {
        freshReason.value = reason.value;
      }
      if (reason && document.activeElement === reason) carried.set("verdict", { focusReason: true });
    } else if (old.classList.contains("doc-view")) {
      const state = carried.get(old.id) || {};
      state.scrollTop = old.scrollTop;
      carried.set(old.id, state);
    }
  });

  // A pool whose order learns from the text (cal) sends, with the answer to a grade of 1 or 2,
  // the question's passages in the order to judge them now. The passages not graded yet after
  // the one in hand take that order among their own places; nothing graded, and not the
  // passage in hand, moves. Each keeps the number of its new place.
  function reorder(order) {
    const list = document.getElementById("candidates");
    if (!list) return;
    const all = cards();
    const here = currentCard();
    const rank = new Map(order.map(function (pk, index) { return ["candidate-" + pk, index]; }));
    const start = here ? all.indexOf(here) + 1 : 0;
    const places = [];
    const moving = [];
    all.forEach(function (card, index) {
      if (index >= start && !card.classList.contains("graded") && rank.has(card.id)) {
        places.push(index);
        moving.push(card);
      }
    });
    const sorted = moving.slice().sort(function (a, b) { return rank.get(a.id) - rank.get(b.id); });
    if (sorted.every(function (card, index) { return card === moving[index]; })) return;
    const next = all.slice();
    places.forEach(function (place, index) { next[place] = sorted[index]; });
    next.forEach(function (card, index) {
      list.appendChild(card);
      const label = card.querySelector(".passage-label");
      if (label) label.textContent = "Passage " + (index + 1) + " of " + next.length;
    });
    if (here) current = next.indexOf(here);
  }

  document.addEventListener("htmx:oobAfterSwap", function (event) {
    const element = event.target;
    if (element && element.id === "question-progress" && element.dataset.order) {
      reorder(element.dataset.order.split(","));
      return;
    }
    if (!element || !element.id || !carried.has(element.id)) {
      if (element && (element.classList.contains("candidate") || element.classList.contains("doc-view"))) {
        markTerms(element.classList.contains("doc-view") ? element.parentNode : element);
        markClipped(element.closest(".candidate"));
      }
      return;
    }
    const state = carried.get(element.id);
    carried.delete(element.id);
    if (element.id === "verdict") {
      const reason = element.querySelector("textarea[name=reason]");
      if (state.focusReason && reason) reason.focus();
      return;
    }
    const card = element.classList.contains("candidate") ? element : element.closest(".candidate");
    markTerms(card);
    markClipped(card);
    const view = element.classList.contains("doc-view") ? element : element.querySelector(".doc-view");
    if (view) {
      if (state.opening !== undefined) placeDocument(card, view, state);
      else if (state.scrollTop) view.scrollTop = state.scrollTop;
      if (state.selection) window.GoldsetSelection.select(view, state.selection[0], state.selection[1]);
    }
    const note = element.querySelector && element.querySelector("textarea[name=note]");
    if (note && state.focusNote) {
      note.focus();
      if (state.noteSelection) note.setSelectionRange(state.noteSelection[0], state.noteSelection[1]);
    }
  });

  function placeDocument(card, view, state) {
    const button = card && card.querySelector(".toggle-document");
    if (button) button.textContent = state.opening ? "Show the passage only" : "Show the whole document";
    const passage = view.querySelector(".seg.passage:not(.md-hide)");
    if (!passage) return;
    if (state.opening) {
      // Where the passage was in the short view, so the eye does not have to look for it.
      const offset = passage.getBoundingClientRect().top - view.getBoundingClientRect().top;
      view.scrollTop = Math.max(0, offset - Math.min(state.anchor, view.clientHeight / 3));
    } else if (card) {
      card.scrollIntoView({ block: "nearest" });
    }
  }

  // Reads (a whole document) that fail say so; writes are actions.js's.
  root.addEventListener("htmx:afterRequest", function (event) {
    const config = event.detail.requestConfig || {};
    if (config.verb !== "get" || event.detail.successful) return;
    const status = event.detail.xhr.status;
    say(status === 0 ? "The document cannot be loaded while offline." : status === 401
      ? "Your session has expired: log in again to open the document."
      : "The document could not be opened (" + status + ").", "error");
  });

  // --- wiring --------------------------------------------------------------------------------

  const KEYS = {
    j: function () { setCurrent(current + 1); },
    k: function () { setCurrent(current - 1); },
    g: nextUngraded,
    0: function () { grade(0); },
    1: function () { grade(1); },
    2: function () { grade(2); },
    r: gradeRestZero,
    s: function () { markSpan(false); },
    S: function () { markSpan(true); },
    e: function () { toggleContext(currentCard()); },
    x: function () { toggleClip(currentCard()); },
    v: switchView,
    d: function () { toggleDocument(currentCard()); },
    h: function () { showTerms(!prefs.terms); },
    u: function () { verdict("unanswerable"); },
    a: function () { verdict("answerable"); },
    c: cantTell,
    n: nextQuestion,
    z: undo,
    "?": window.GoldsetKeys.toggleHelp, // static/goldset/keys.js
  };

  // Fields that take typing keep their keys (static/goldset/keys.js says which).
  document.addEventListener("keydown", function (event) {
    const target = event.target;
    if (window.GoldsetKeys.isTyping(event)) {
      if (event.key === "Escape") target.blur();
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey) && target.name === "reason") {
        event.preventDefault();
        verdict("cant_tell");
      }
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const open = document.querySelector("dialog[open]");
    if (open && !(open.id === "keys-help" && event.key === "?")) return;
    const action = KEYS[event.key];
    if (!action) return;
    event.preventDefault();
    action();
  });

  // Buttons and forms take the same path as the keys (and work without JavaScript too).
  root.addEventListener("submit", function (event) {
    const form = event.target;
    if (form.id === "next-question-form") {
      event.preventDefault();
      nextQuestion(); // after what was already sent
      return;
    }
    const kind = form.dataset.action;
    if (!kind) return;
    event.preventDefault();
    const fields = Object.fromEntries(new FormData(form, event.submitter));
    if (kind === "verdict") {
      verdict(fields.outcome || "");
      return;
    }
    const card = form.closest(".candidate");
    if (!card) return;
    setCurrent(cards().indexOf(card), false);
    if (kind === "grade") {
      grade(Number(fields.grade), card);
    } else if (kind === "note") {
      send(card, "note", form.action, { note: fields.note || "" });
    } else if (kind === "remove-span") {
      send(card, "remove-span", form.action, {});
    }
  });

  // A note is saved when the labeller leaves the field.
  root.addEventListener("change", function (event) {
    const field = event.target;
    if (field.name === "note" && field.form) field.form.requestSubmit();
  });

  // The mark button must not take the selection away before it is read.
  root.addEventListener("mousedown", function (event) {
    if (event.target.closest(".mark-span")) event.preventDefault();
  });

  root.addEventListener("click", function (event) {
    const target = event.target;
    if (target.closest(".toggle-clip")) {
      toggleClip(target.closest(".candidate"));
      return;
    }
    if (target.closest(".view-switch a") && !target.closest("[aria-current]")) {
      event.preventDefault(); // after what was already sent, as the key does
      switchView();
      return;
    }
    if (target.closest(".toggle-context")) {
      toggleContext(target.closest(".candidate"));
      return;
    }
    if (target.closest(".toggle-document")) {
      toggleDocument(target.closest(".candidate"));
      return;
    }
    if (target.closest(".mark-span")) {
      markSpan(event.shiftKey);
      return;
    }
    const card = target.closest(".candidate");
    if (card && window.getSelection().isCollapsed) {
      const index = cards().indexOf(card);
      if (index !== current) setCurrent(index, false);
    }
  });

  const autoAdvance = document.getElementById("auto-advance");
  if (autoAdvance) {
    autoAdvance.checked = prefs.autoAdvance;
    autoAdvance.addEventListener("change", function () {
      prefs.autoAdvance = autoAdvance.checked;
      savePrefs();
    });
  }
  const highlightBox = document.getElementById("highlight-terms");
  if (highlightBox) {
    highlightBox.addEventListener("change", function () { showTerms(highlightBox.checked); });
  }

  markTerms(root);
  cards().forEach(markClipped);
  // A narrower window wraps a passage onto more lines: whether it is clipped changes with it.
  let resizing = null;
  window.addEventListener("resize", function () {
    window.clearTimeout(resizing);
    resizing = window.setTimeout(function () { cards().forEach(markClipped); }, 150);
  });
  showTerms(prefs.terms);
  showState(queue.state());
  setCurrent(0, false);
})();
