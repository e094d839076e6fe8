// Text selection <-> character offsets, for pages that show document text cut into segments
// (the grading page, the adjudication page).
//
// A document view is an element with `data-version` (a DocumentVersion id) whose text is cut
// into segments: elements with `data-start`, the offset of their first character in the
// version's text. Segments may hold other elements (highlighted terms) and may be hidden (the
// context around a passage); hidden ones still count, so a word cut at the edge of what is
// shown can be completed. Offsets are Python str indices: code points, not UTF-16 units.
//
// The text may be rendered Markdown (labelling/passage_html.py): its syntax (`# `, `**`, a
// list's `- `) stays in the view in hidden segments of class `md-syntax`, so the segments still
// spell the stored text and offsets stay exact; hidden syntax never starts or ends a span.
//
// By default a selection is snapped to whole words (a drag that starts in the middle of
// "Corporate" takes the whole word); `exact: true` keeps the characters as selected. Leading
// and trailing white space is never evidence, in either mode.
//
// Interface (keep it stable: several pages load this file):
//   GoldsetSelection.fromSelection(scope, options) -> span | problem
//       the current window selection, which must lie in one document view inside `scope`
//       options: {exact: false, views: ".doc-view", messages: {}}
//   GoldsetSelection.fromRange(view, range, options) -> span | problem
//       span = {view, version, start, end, quote}; problem = {error, message}
//       error is a code, the one thing callers test: "empty" (nothing selected, or only white
//       space) or "several" (more than one view, or none). message is what to show: the page's
//       own words for that code (options.messages, keyed by code) or else MESSAGES[code].
//   GoldsetSelection.snapToWords(chars, start, end) -> [start, end]
//       chars: an array of code points; start/end index into it
//   GoldsetSelection.clearOfSyntax(chars, hidden, start, end) -> [start, end]
//       hidden: [from, to) stretches of hidden syntax; all indices into chars
//   GoldsetSelection.rangeOf(view, start, end) -> Range | null
//   GoldsetSelection.select(view, start, end) -> boolean   (makes it the window selection)
//   GoldsetSelection.textOf(view) -> {chars, base}   (the view's text and its first offset)
(function () {
  "use strict";

  // What a refusal says, by code: the grading page's words, which other pages replace code by
  // code (options.messages) rather than by rewriting these sentences.
  const MESSAGES = Object.freeze({
    empty: "Select some text in a passage first, then press s.",
    several: "Select text within one passage at a time.",
  });
  // A "word" longer than this (a URL, a hash) is not worth completing.
  const MAX_SNAP = 64;
  const WORD = /[\p{L}\p{N}\p{M}]/u;
  // Joined to the letters on both sides: don't, FIN-PROC-030, 3.5, snake_case.
  const JOINER = /['\u2019\-_.]/u;
  const SPACE = /\s/u;

  function problem(error, options) {
    const own = options && options.messages;
    return { error: error, message: (own && own[error]) || MESSAGES[error] };
  }

  function codePoints(text) {
    return Array.from(text);
  }

  function segmentsOf(view) {
    return Array.from(view.querySelectorAll("[data-start]"));
  }

  function shown(element) {
    return element.getClientRects().length > 0;
  }

  function lengthOf(segment) {
    return codePoints(segment.textContent).length;
  }

  function textOf(view) {
    const segments = segmentsOf(view);
    if (!segments.length) return { chars: [], base: 0 };
    return {
      chars: codePoints(segments.map(function (s) { return s.textContent; }).join("")),
      base: Number(segments[0].dataset.start),
    };
  }

  // Move the ends of [start, end) out of hidden syntax (inwards), and off white space: a
  // selection of "bold" in "**bold**" is "bold", whatever the browser's range held.
  function clearOfSyntax(chars, hidden, start, end) {
    let moved = true;
    while (moved && start < end) {
      moved = false;
      [start, end] = trim(chars, start, end);
      for (const [from, to] of hidden) {
        if (from <= start && start < to) {
          start = to;
          moved = true;
        }
        if (from < end && end <= to) {
          end = from;
          moved = true;
        }
      }
    }
    return start < end ? [start, end] : [start, start];
  }

  // The hidden syntax of a view, as [from, to) indices into textOf(view).chars.
  function syntaxOf(view, base) {
    return segmentsOf(view)
      .filter(function (s) { return s.classList.contains("md-syntax"); })
      .map(function (s) {
        const from = Number(s.dataset.start) - base;
        return [from, from + lengthOf(s)];
      });
  }

  function isWordAt(chars, i) {
    if (i < 0 || i >= chars.length) return false;
    if (WORD.test(chars[i])) return true;
    return JOINER.test(chars[i]) && i > 0 && i + 1 < chars.length &&
      WORD.test(chars[i - 1]) && WORD.test(chars[i + 1]);
  }

  function trim(chars, start, end) {
    while (start < end && SPACE.test(chars[start])) start += 1;
    while (end > start && SPACE.test(chars[end - 1])) end -= 1;
    return [start, end];
  }

  // Widen [start, end) so that it neither starts nor ends inside a word.
  function snapToWords(chars, start, end) {
    [start, end] = trim(chars, start, end);
    if (end <= start) return [start, end];
    let from = start;
    let steps = 0;
    while (from > 0 && isWordAt(chars, from - 1) && isWordAt(chars, from) && steps < MAX_SNAP) {
      from -= 1;
      steps += 1;
    }
    if (steps < MAX_SNAP) start = from;
    let to = end;
    steps = 0;
    while (to < chars.length && isWordAt(chars, to) && isWordAt(chars, to - 1) && steps < MAX_SNAP) {
      to += 1;
      steps += 1;
    }
    if (steps < MAX_SNAP) end = to;
    return [start, end];
  }

  // The text offset of a DOM boundary point inside a document view.
  function offsetAt(view, node, offset) {
    const element = node.nodeType === Node.TEXT_NODE ? node.parentElement : node;
    const segment = element && element.closest("[data-start]");
    if (segment && view.contains(segment)) {
      const range = document.createRange();
      range.selectNodeContents(segment);
      range.setEnd(node, offset);
      return Number(segment.dataset.start) + codePoints(range.toString()).length;
    }
    // A point between segments: the start of the first segment at or after it.
    const probe = document.createRange();
    probe.setStart(node, offset);
    probe.collapse(true);
    const segments = segmentsOf(view);
    for (const candidate of segments) {
      if (probe.comparePoint(candidate, 0) >= 0) return Number(candidate.dataset.start);
    }
    const last = segments[segments.length - 1];
    return Number(last.dataset.start) + lengthOf(last);
  }

  function fromRange(view, range, options) {
    options = options || {};
    const visible = segmentsOf(view).filter(shown);
    if (!visible.length) return problem("several", options);
    const first = visible[0];
    const last = visible[visible.length - 1];
    // Clamp a selection that starts or ends outside the view to the text that is shown.
    let start = range.comparePoint(first, 0) === 0
      ? Number(first.dataset.start)
      : offsetAt(view, range.startContainer, range.startOffset);
    let end = range.comparePoint(last, last.childNodes.length) === 0
      ? Number(last.dataset.start) + lengthOf(last)
      : offsetAt(view, range.endContainer, range.endOffset);
    const text = textOf(view);
    const hidden = syntaxOf(view, text.base);
    let relative = clearOfSyntax(text.chars, hidden, start - text.base, end - text.base);
    if (!options.exact) {
      relative = clearOfSyntax(text.chars, hidden, ...snapToWords(text.chars, relative[0], relative[1]));
    }
    start = relative[0] + text.base;
    end = relative[1] + text.base;
    if (end <= start) return problem("empty", options);
    return {
      view: view,
      version: view.dataset.version,
      start: start,
      end: end,
      quote: text.chars.slice(start - text.base, end - text.base).join(""),
    };
  }

  function fromSelection(scope, options) {
    options = options || {};
    const selection = window.getSelection();
    if (!selection || selection.isCollapsed || !selection.rangeCount) return problem("empty", options);
    const range = selection.getRangeAt(0);
    const views = Array.from(scope.querySelectorAll(options.views || ".doc-view")).filter(
      function (view) { return range.intersectsNode(view); }
    );
    if (views.length !== 1) return problem("several", options);
    return fromRange(views[0], range, options);
  }

  // The DOM point of a text offset: inside the segment holding it (the one ending there, for
  // the end of a range), counted in code points through the segment's text nodes.
  function pointAt(view, offset, isEnd) {
    for (const segment of segmentsOf(view)) {
      const from = Number(segment.dataset.start);
      const to = from + lengthOf(segment);
      const inside = isEnd ? from < offset && offset <= to : from <= offset && offset < to;
      if (!inside) continue;
      let left = offset - from;
      const walker = document.createTreeWalker(segment, NodeFilter.SHOW_TEXT);
      let node = walker.nextNode();
      while (node) {
        const chars = codePoints(node.data);
        if (left < chars.length || (isEnd && left === chars.length)) {
          return [node, chars.slice(0, left).join("").length];
        }
        left -= chars.length;
        node = walker.nextNode();
      }
    }
    return null;
  }

  function rangeOf(view, start, end) {
    if (!(end > start)) return null;
    const from = pointAt(view, start, false);
    const to = pointAt(view, end, true);
    if (!from || !to) return null;
    const range = document.createRange();
    range.setStart(from[0], from[1]);
    range.setEnd(to[0], to[1]);
    return range;
  }

  function select(view, start, end) {
    const range = rangeOf(view, start, end);
    if (!range) return false;
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    return true;
  }

  window.GoldsetSelection = Object.freeze({
    fromSelection: fromSelection,
    fromRange: fromRange,
    snapToWords: snapToWords,
    clearOfSyntax: clearOfSyntax,
    rangeOf: rangeOf,
    select: select,
    textOf: textOf,
    MESSAGES: MESSAGES,
  });
})();
