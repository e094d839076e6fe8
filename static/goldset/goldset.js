// Goldset's small amount of page behaviour; htmx does the rest.
(function () {
  "use strict";

  // Actions a page could not save yet are kept in this browser under the account that made
  // them (static/goldset/actions.js). Logging out drops them: they must never be saved later
  // into whichever account logs in next, nor stay readable in a shared browser.
  document.addEventListener("submit", function (event) {
    const form = event.target;
    if (!form.matches || !form.matches("form[data-logout]")) return;
    const key = "goldset.kept-actions." + form.dataset.user;
    let kept = [];
    try {
      kept = JSON.parse(window.localStorage.getItem(key) || "[]");
    } catch {
      kept = [];
    }
    if (Array.isArray(kept) && kept.length) {
      const what = kept.length === 1 ? "1 change is" : kept.length + " changes are";
      if (!window.confirm(what + " not saved yet (the server could not be reached). Logging " +
        "out now loses them. Log out anyway?")) {
        event.preventDefault();
        return;
      }
    }
    document.dispatchEvent(new CustomEvent("goldset:logout", { detail: { user: form.dataset.user } }));
    try {
      window.localStorage.removeItem(key);
      window.localStorage.removeItem(key + ".pages");
    } catch { /* nothing can have been kept without storage */ }
  });

  // A link to a closed <details> (a question's drill-down on the Evaluation page) opens it.
  function openTarget() {
    const id = decodeURIComponent(window.location.hash.slice(1));
    const target = id && document.getElementById(id);
    if (target && target.tagName === "DETAILS") target.open = true;
  }
  window.addEventListener("hashchange", openTarget);
  openTarget();
})();
