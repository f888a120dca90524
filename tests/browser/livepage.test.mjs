// The live leaderboard page (`/?board=<id>`) in headless Chromium, on what it tells besides the
// rows: a board's tournament (its state, the time left counting down, its participants, followed
// from not started through open to ended); a bucketed board's picker bounded by the season's
// last bucket (a bucket past it says so, and the bound moves when a new bucket opens); and the
// connection badge while the server's Redis does not answer (paused, SIGSTOP), back to `open`
// once it does, with the board live again.

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import {
  addScore,
  newPage,
  putBoard,
  screenshot,
  useStackAndBrowser,
  waitConnState,
  withDiagnostics,
} from "./harness.mjs";

const DEGRADED = "Redis unavailable — retrying";

describe("live page: tournament, bounded buckets, Redis down", { timeout: 180_000 }, () => {
  let paused = false;
  const env = useStackAndBrowser({
    beforeStop: ({ stack }) => {
      if (paused) stack?.redis.resume();
    },
  });
  const pages = [];
  const diag = () => ({ stack: env.stack, pages });
  const open = async (viewport) => {
    const p = await newPage(env.browser, viewport ? { viewport } : {});
    pages.push(p);
    return p;
  };
  const text = (page, id) => page.evaluate((id) => document.getElementById(id).textContent, id);

  /// A one-off tournament opening in a few seconds: "not started" with a countdown that ticks,
  /// then "open" once it starts, "ending soon" near its end, then "ended" with the participant
  /// who scored meanwhile. A board without a tournament shows none of it.
  test("a board's tournament: state, time left counting down, participants", () =>
    withDiagnostics(diag, async () => {
      const base = env.stack.base;
      await putBoard(base, "plain", {});
      await addScore(base, "plain", "pat", 5);
      const start = Date.now() + 5000;
      const end = start + 6000;
      await putBoard(base, "cup", {
        op: "best",
        submit_limit: null,
        tournament: { schedule: { start_ms: start, end_ms: end }, max_size: 50, ending_soon_ms: 2500 },
      });

      const page = await open();
      await page.goto(`${base}/?board=plain`);
      await waitConnState(page, "open");
      await page.waitForSelector('#rows tr[data-player="pat"]');
      assert.equal(await page.isHidden("#tournament"), true, "no tournament, nothing said of one");

      await page.goto(`${base}/?board=cup`);
      await waitConnState(page, "open");
      await page.waitForFunction(() => !document.getElementById("tournament").hidden);
      assert.equal(await text(page, "tournament-state"), "not started");
      assert.match(await text(page, "tournament-left"), /^starts in 00:0\d$/);
      assert.equal(await text(page, "tournament-entrants"), "0 participants of 50");
      // The countdown ticks by itself.
      const first = Number(await page.getAttribute("#tournament-left", "data-left-ms"));
      await page.waitForFunction(
        (first) => Number(document.getElementById("tournament-left").dataset.leftMs) <= first - 1000,
        first,
        { timeout: 5000 },
      );
      await screenshot(page, "livepage-1-tournament-upcoming");

      // It opens: the state says so and the time left is the time to the end.
      await page.waitForFunction(() => document.getElementById("tournament-state").dataset.state === "running", null, { timeout: 10_000 });
      assert.match(await text(page, "tournament-left"), /^ends in 00:0\d$/);
      await addScore(base, "cup", "tina", 42);
      // Near the end it is ending soon, and the participant shows (read again on the live
      // `ending_soon` event or at the latest when it ends).
      await page.waitForFunction(() => document.getElementById("tournament-state").textContent === "ending soon", null, { timeout: 10_000 });
      await page.waitForFunction(() => document.getElementById("tournament").textContent.includes("1 participant of 50"), null, { timeout: 10_000 });
      await page.waitForFunction(() => document.getElementById("tournament-state").textContent === "ended", null, { timeout: 10_000 });
      assert.match(await text(page, "tournament-left"), /^ended \d{4}-\d\d-\d\d \d\d:\d\d UTC/);
      assert.equal(await text(page, "tournament-entrants"), "1 participant of 50");
      await page.waitForSelector('#rows tr[data-player="tina"]');

      // On a phone the tournament line fits: nothing sticks out sideways.
      await page.setViewportSize({ width: 375, height: 812 });
      assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth));
      await screenshot(page, "livepage-2-tournament-ended-phone");
    }));

  /// Buckets of three, seven players: buckets 1–3. The picker's max is 3 and "next" stops at 3;
  /// bucket 9 says there is no such bucket (not an empty table, not an error), and "previous"
  /// from it goes to the last. Three more players open bucket 4: the page learns it live.
  test("a bucketed board's picker is bounded by the season's last bucket", () =>
    withDiagnostics(diag, async () => {
      const base = env.stack.base;
      const BOARD = "leaguebound";
      await putBoard(base, BOARD, { op: "best", bucket_size: 3, submit_limit: null });
      for (let i = 1; i <= 7; i++) await addScore(base, BOARD, `b${i}`, 10 * i);
      const bucketShown = (n) =>
        page.waitForFunction((n) => new RegExp(`bucket ${n}$`).test(document.getElementById("season").textContent), n);

      const page = await open();
      await page.goto(`${base}/?board=${BOARD}`);
      await waitConnState(page, "open");
      await bucketShown(1);
      await page.waitForFunction(() => document.getElementById("bucket-picker").max === "3");
      assert.equal(await page.isDisabled("#bucket-next"), false);
      await page.click("#bucket-next");
      await bucketShown(2);
      await page.click("#bucket-next");
      await bucketShown(3);
      await page.waitForFunction(() => document.getElementById("bucket-next").disabled);
      assert.deepEqual(await page.$$eval("#rows tr[data-player]", (t) => t.map((tr) => tr.dataset.player)), ["b7"]);

      // Past the last: said in words, no table, no error, "next" disabled.
      await page.fill("#bucket-picker", "9");
      await page.press("#bucket-picker", "Enter");
      await page.waitForFunction(() => !document.getElementById("bucket-empty").hidden);
      assert.equal(await text(page, "bucket-empty"), "No bucket 9 yet: this board has buckets 1–3.");
      assert.equal(await page.$$eval("#rows tr[data-player]", (t) => t.length), 0);
      assert.equal(await page.isHidden("#error"), true);
      assert.equal(await page.isDisabled("#bucket-next"), true);
      await screenshot(page, "livepage-3-no-such-bucket");
      // Back from past the last goes to the last.
      await page.click("#bucket-prev");
      await bucketShown(3);
      assert.match(page.url(), /[?&]bucket=3$/);
      assert.equal(await page.isDisabled("#bucket-next"), true);

      // Bucket 3 fills (b8, b9) and b10 opens bucket 4: "next" comes back, the max follows.
      for (let i = 8; i <= 10; i++) await addScore(base, BOARD, `b${i}`, 10 * i);
      await page.waitForFunction(
        () => !document.getElementById("bucket-next").disabled && document.getElementById("bucket-picker").max === "4",
        null,
        { timeout: 10_000 },
      );
      await page.click("#bucket-next");
      await bucketShown(4);
      assert.deepEqual(await page.$$eval("#rows tr[data-player]", (t) => t.map((tr) => tr.dataset.player)), ["b10"]);
      await page.waitForFunction(() => document.getElementById("bucket-next").disabled);

      // On a phone the picker fits.
      await page.setViewportSize({ width: 375, height: 812 });
      assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth));
    }));

  /// Redis paused under an open page: the badge stops saying `open` and says Redis is
  /// unavailable; a page opened meanwhile (on a phone) says the same instead of an error. Redis
  /// back: both say `open`, and both show a score made after it came back, live.
  test("the badge says when Redis does not answer, and comes back with it", () =>
    withDiagnostics(diag, async () => {
      const base = env.stack.base;
      const BOARD = "outage";
      await putBoard(base, BOARD, {});
      await addScore(base, BOARD, "olga", 10);
      const before = await open();
      await before.goto(`${base}/?board=${BOARD}`);
      await waitConnState(before, "open");
      await before.waitForSelector('#rows tr[data-player="olga"]');

      env.stack.redis.pause();
      paused = true;
      // The page's own check finds Redis silent (a read answered 503 after the server's timeout).
      await waitConnState(before, DEGRADED, 40_000);
      assert.equal(await before.getAttribute("#conn-state", "data-state"), "degraded");

      // Opened while Redis does not answer: its view is refused `unavailable`, said by the badge.
      const during = await open({ width: 375, height: 812 });
      await during.goto(`${base}/?board=${BOARD}`, { waitUntil: "commit" });
      await waitConnState(during, DEGRADED, 40_000);
      assert.equal(await during.isHidden("#error"), true, "not an error: the badge says it");
      assert.equal(await during.textContent("#total"), "waiting for Redis…", "not \"loading…\" forever");
      assert.ok(await during.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth));
      await screenshot(during, "livepage-4-redis-unavailable-phone");

      env.stack.redis.resume();
      paused = false;
      await waitConnState(before, "open", 40_000);
      await waitConnState(during, "open", 40_000);
      await during.waitForSelector('#rows tr[data-player="olga"]', { timeout: 20_000 });
      // Live again on both.
      await addScore(base, BOARD, "omar", 20);
      for (const p of [before, during]) {
        await p.waitForFunction(() => document.querySelector('#rows tr[data-player="omar"] .rank')?.textContent === "#1", null, { timeout: 10_000 });
      }
    }));
});
