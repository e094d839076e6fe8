// The one rule for keyboard shortcuts: is this key press the labeller typing? Every page's key
// handler asks it first (grading, adjudication, answer review, re-check), so a "2" typed into a
// note is text, never a grade, while a focused checkbox, radio button or button leaves the
// page's keys working: they take no typing, and the answer review's rows are radio buttons.
//
// The same pages list their keys in one <dialog id="keys-help">: `?` (each page's handler calls
// toggleHelp) and every "keys" button (class show-keys, wired here once) open it and close it.
//
// Interface: GoldsetKeys.isTyping(event) -> boolean
//            GoldsetKeys.toggleHelp() -> opens or closes the page's list of keys, if it has one
(function () {
  "use strict";

  // Inputs that take no text: their keys are the page's.
  const NOT_TYPED = ["checkbox", "radio", "button", "submit", "reset", "image"];

  function takesTyping(element) {
    if (!element) return false;
    if (element.isContentEditable) return true;
    const tag = element.tagName;
    if (tag === "TEXTAREA" || tag === "SELECT") return true;
    return tag === "INPUT" && NOT_TYPED.indexOf(element.type) < 0;
  }

  function isTyping(event) {
    // A key that is part of an input method's composition (Japanese, Chinese, accents) is text.
    return Boolean(event.isComposing) || takesTyping(event.target);
  }

  function toggleHelp() {
    const dialog = window.document ? window.document.getElementById("keys-help") : null;
    if (!dialog) return;
    if (dialog.open) dialog.close();
    else dialog.showModal();
  }

  window.GoldsetKeys = Object.freeze({ isTyping: isTyping, toggleHelp: toggleHelp });

  if (window.document) {
    window.document.addEventListener("click", function (event) {
      if (event.target.closest && event.target.closest(".show-keys")) toggleHelp();
    });
  }
})();
