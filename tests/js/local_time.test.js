// Server times (UTC) shown in the reader's zone (static/goldset/local_time.js).
"use strict";

const assert = require("node:assert/strict");
const { test } = require("node:test");
const { load } = require("./fake_browser.js");

const { text } = load("local_time.js", {}).GoldsetLocalTime;

test("a lease's end in the reader's zone, 24-hour clock", () => {
  const iso = "2026-12-06T14:05:00+00:00";
  assert.equal(text(iso, "time", "UTC"), "14:05");
  assert.equal(text(iso, "time", "Europe/Paris"), "15:05");
  assert.equal(text(iso, "time", "America/New_York"), "09:05");
  assert.equal(text(iso, "time", "Asia/Kolkata"), "19:35");
  assert.equal(text("2026-12-06T00:30:00+00:00", "time", "UTC"), "00:30");
});

test("with the date when the day can differ", () => {
  assert.equal(text("2026-12-06T23:30:00+00:00", "datetime", "UTC"), "Dec 6, 23:30");
  assert.equal(text("2026-12-06T23:30:00+00:00", "datetime", "Europe/Berlin"), "Dec 7, 00:30");
});

test("anything else leaves the server's text alone", () => {
  assert.equal(text("", "time", "UTC"), null);
  assert.equal(text("not a date", "time", "UTC"), null);
  assert.equal(text("2026-12-06T14:05:00+00:00", "weekday", "UTC"), null);
});
