// The status bar's "save state" (#save-state) of every page whose changes go through the
// kept-action queue (static/goldset/actions.js): the grading page and the answer review say the
// same words for the same queue state, "All changes saved", "Saving…", or why changes are kept
// and how many.
//
// Interface: GoldsetSaveState.view(state, online) -> {state, text}
//              state: queue.state() ({waiting, held}); online: navigator.onLine
//            GoldsetSaveState.show(element, state)   writes view() into the element
//            GoldsetSaveState.kept(n) -> "1 change kept" / "n changes kept"
(function () {
  "use strict";

  function kept(n) {
    return n + (n === 1 ? " change kept" : " changes kept");
  }

  // Why actions are held (actions.js's reasons) -> the bar's state and words.
  const HELD = {
    offline: function (n) { return ["offline", "Offline: " + kept(n) + "; saved when the connection returns"]; },
    session: function (n) { return ["held", "Session expired: " + kept(n) + " until you log in again"]; },
    unavailable: function (n) { return ["held", "Server unavailable: " + kept(n) + "; trying again"]; },
    "other-account": function (n) { return ["held", "Another account is logged in: " + kept(n) + " for this page's account"]; },
    "stale-page": function (n) { return ["held", "Reload the page: " + kept(n)]; },
    stored: function (n) { return ["saving", "Saving " + kept(n) + " from an earlier visit…"]; },
  };

  function view(state, online) {
    let pair;
    if (state.held && HELD[state.held]) pair = HELD[state.held](state.waiting);
    else if (!online) pair = ["offline", "Offline: changes you make are kept and saved when the connection returns"];
    else if (state.waiting) pair = ["saving", "Saving…"];
    else pair = ["saved", "All changes saved"];
    return { state: pair[0], text: pair[1] };
  }

  function show(element, state) {
    if (!element) return;
    const shown = view(state, window.navigator ? window.navigator.onLine : true);
    element.dataset.state = shown.state;
    element.textContent = shown.text;
  }

  window.GoldsetSaveState = Object.freeze({ view: view, show: show, kept: kept });
})();
