// The queue page saves actions a grading page kept in this browser (offline, or the session
// expired) before the labeller came here, so they do not wait for that question to be opened.
(function () {
  "use strict";

  const account = document.querySelector("form[data-logout]");
  const box = document.getElementById("kept-status");
  if (!account || !box || !window.GoldsetActions || !window.htmx) return;
  let stored = null;
  try {
    stored = window.localStorage.getItem(window.GoldsetActions.PREFIX + account.dataset.user);
  } catch {
    return;
  }
  if (!stored) return;
  box.textContent = "Saving changes kept in this browser…";
  window.GoldsetActions.create({
    source: box,
    user: account.dataset.user,
    page: window.location.pathname,
    loginUrl: box.dataset.loginUrl || "/accounts/login/",
    onMessage: function (text, kind) {
      box.textContent = text;
      box.className = "flash" + (kind ? " " + kind : "");
    },
  });
})();
