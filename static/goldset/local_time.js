// Times the server writes in its own zone (UTC), shown in the reader's: every
// <time datetime="…" data-local="time|datetime"> on a page, and in what htmx swaps in later (a
// lease's "Yours until" is re-sent with each grade). The server's text stays until this runs,
// and the element's title keeps the server's wording with its zone, so nothing is lost without
// JavaScript and a lead comparing with a colleague abroad can still read the same instant.
//
// Interface: GoldsetLocalTime.text(iso, style, timeZone?) -> "14:05" | "Dec 6, 14:05" | null
//            GoldsetLocalTime.render(root) -> rewrites root's <time data-local> elements
(function () {
  "use strict";

  const STYLES = {
    time: { hour: "2-digit", minute: "2-digit", hourCycle: "h23" },
    datetime: { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", hourCycle: "h23" },
  };

  function text(iso, style, timeZone) {
    const options = STYLES[style];
    const when = new Date(iso);
    if (!options || !iso || Number.isNaN(when.getTime())) return null;
    const format = new Intl.DateTimeFormat("en-US", Object.assign({ timeZone: timeZone }, options));
    const parts = {};
    for (const part of format.formatToParts(when)) parts[part.type] = part.value;
    const hhmm = parts.hour + ":" + parts.minute;
    return style === "time" ? hhmm : parts.month + " " + parts.day + ", " + hhmm;
  }

  function render(root) {
    if (!root || !root.querySelectorAll) return;
    for (const element of root.querySelectorAll("time[datetime][data-local]")) {
      const local = text(element.getAttribute("datetime"), element.dataset.local);
      if (local === null || element.dataset.localDone === "1") continue;
      if (!element.title) element.title = element.textContent + " UTC";
      element.textContent = local;
      element.dataset.localDone = "1";
    }
  }

  window.GoldsetLocalTime = Object.freeze({ text: text, render: render });

  if (window.document) {
    const document = window.document;
    if (document.readyState === "loading") {
      document.addEventListener("DOMContentLoaded", function () { render(document); });
    } else {
      render(document);
    }
    document.addEventListener("htmx:afterSettle", function (event) { render(event.target); });
    document.addEventListener("htmx:oobAfterSwap", function (event) { render(event.target.parentNode || document); });
  }
})();
