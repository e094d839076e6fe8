// The one rule for keyboard shortcuts: is this key press the labeller typing? Every page's key
// handler asks it first (grading, adjudication, answer review, re-check), so a "2" typed into a
// note is text, never a grade, while a focused checkbox, radio button or button leaves the
// page's keys working: they take no typing, and the answer review's rows are radio buttons.
//
// Interface: GoldsetKeys.isTyping(event) -> boolean
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

  window.GoldsetKeys = Object.freeze({ isTyping: isTyping });
})();
