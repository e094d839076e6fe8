// The answer review's keys: j/k move between rows (a claim, a citation, a fact), a row's keys
// (data-key on its inputs) choose a grade, which htmx saves at once; d finishes the review.
(function () {
  "use strict";

  let current = 0;

  function rows() {
    return Array.from(document.querySelectorAll("#review [data-row]"));
  }

  function mark() {
    const all = rows();
    if (!all.length) return;
    current = Math.max(0, Math.min(current, all.length - 1));
    all.forEach(function (row, index) {
      row.classList.toggle("current", index === current);
    });
    all[current].scrollIntoView({ block: "nearest" });
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const target = event.target;
    if (target && (target.tagName === "TEXTAREA" || (target.tagName === "INPUT" && target.type === "text"))) return;
    const all = rows();
    if (event.key === "j" || event.key === "ArrowDown") {
      current += 1;
      mark();
      event.preventDefault();
    } else if (event.key === "k" || event.key === "ArrowUp") {
      current -= 1;
      mark();
      event.preventDefault();
    } else if (event.key === "d") {
      const finish = document.getElementById("finish-review");
      if (finish) finish.requestSubmit();
    } else if (event.key === "r") {
      const box = document.getElementById("refused-wrongly");
      if (box) box.click();
    } else if (all.length) {
      const input = all[current].querySelector('input[data-key="' + CSS.escape(event.key) + '"]');
      if (input && !input.checked) {
        input.click();
        event.preventDefault();
      }
    }
  });

  document.addEventListener("htmx:afterSettle", function (event) {
    if (!document.getElementById("review")) return;
    // A graded row moves the labeller on to the next one, as grading passages does.
    const config = event.detail && event.detail.requestConfig;
    const source = config ? config.elt : null;
    if (source && source.type === "radio" && event.detail.xhr && event.detail.xhr.status === 200) {
      current += 1;
    }
    mark();
  });

  document.addEventListener("DOMContentLoaded", mark);
})();
