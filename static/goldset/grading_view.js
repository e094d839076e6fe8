// Leaving a grading page, and the question view's clipped passages.
//
// The grading page has two views of one question (the passage cards, and one question on one
// page: compact rows); grading.js runs both. What this file adds is small and kept apart so
// Node's test runner can check it (tests/js/grading_view.test.js):
//
// - leaveAfterSaving: the next question (`n`) and the other view (`v`) open only once every
//   action made on this page has been answered, so nothing is in flight when the page goes;
//   actions kept while offline say so and wait (they are kept in the browser either way). The
//   words are the status bar's (save_state.js, loaded before this file).
// - isClipped: whether a passage's text is taller than the few lines the question view shows,
//   so its row offers "Show all of the passage".
//
// Interface: GoldsetGradingView.leaveAfterSaving(queue, go, say, what)
//              queue: actions.js's; go(): opens the page; say(text, kind): shows a message;
//              what: the page that will open ("the next question")
//            GoldsetGradingView.isClipped(element) -> boolean
//            GoldsetGradingView.otherView(root) -> the link to the view not shown, or null
(function () {
  "use strict";

  function leaveAfterSaving(queue, go, say, what) {
    const state = queue.state();
    if (state.held) {
      say("Your changes are not saved yet (" + window.GoldsetSaveState.kept(state.waiting) + "); " + what +
        " opens once they are.", "error");
    }
    return queue.whenIdle().then(function () { go(); });
  }

  function isClipped(element) {
    // One pixel of slack: rounding of line heights must not offer "show all" for nothing.
    return Boolean(element) && element.scrollHeight > element.clientHeight + 1;
  }

  function otherView(root) {
    return root ? root.querySelector(".view-switch a:not([aria-current])") : null;
  }

  window.GoldsetGradingView = Object.freeze({
    leaveAfterSaving: leaveAfterSaving,
    isClipped: isClipped,
    otherView: otherView,
  });
})();
