// The live leaderboard page (`/?board=demo`) in headless Chromium: it shows the top, and scores
// submitted by another client (admin HTTP) appear live with the right score, rank and highlight;
// on a bucketed board it shows one bucket, ranked within it, live, steps through the buckets and
// opens on the signed-in player's own, pinning their row when it is below the bucket's top.

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import {
  addScore,
  admin,
  get,
  newPage,
  putBoard,
  screenshot,
  useStackAndBrowser,
  waitConnState,
  withDiagnostics,
} from "./harness.mjs";

const BOARD = "demo";

describe("live leaderboard page", { timeout: 120_000 }, () => {
  const env = useStackAndBrowser();
  let page;
  const diag = () => ({ stack: env.stack, pages: [page] });

  /** The rows of the top table as [{player, rank, score, dataScore, changed}]. */
  const rows = () =>
    page.$$eval("#rows tr[data-player]", (trs) =>
      trs.map((tr) => ({
        player: tr.dataset.player,
        rank: tr.querySelector(".rank").textContent,
        score: tr.querySelector(".score").textContent,
        dataScore: tr.querySelector(".score").dataset.score,
        changed: tr.classList.contains("changed"),
      })),
    );

  /** Waits until the row of `player` shows `score` (raw, from data-score) and `rank` (text). */
  const waitRow = (player, score, rank, timeout = 10_000) =>
    page.waitForFunction(
      ([player, score, rank]) => {
        const tr = document.querySelector(`#rows tr[data-player="${player}"]`);
        return (
          tr &&
          tr.querySelector(".score")?.dataset.score === String(score) &&
          tr.querySelector(".rank")?.textContent === rank
        );
      },
      [player, score, rank],
      { timeout },
    );

  test("shows the top, then scores from another client appear live", () =>
    withDiagnostics(diag, async () => {
      const base = env.stack.base;
      await putBoard(base, BOARD, { order: "desc", op: "incr" });
      // The article's example, before the page opens.
      await addScore(base, BOARD, "alice", 120);
      await addScore(base, BOARD, "bob", 95);
      await addScore(base, BOARD, "carol", 150);

      page = await newPage(env.browser);
      const res = await page.goto(`${base}/?board=${BOARD}`);
      assert.equal(res.status(), 200);
      await waitConnState(page, "open");

      // The snapshot: carol 150, alice 120, bob 95, in that order.
      await waitRow("bob", 95, "#3");
      assert.deepEqual(
        (await rows()).map((r) => [r.rank, r.player, r.dataScore]),
        [
          ["#1", "carol", "150"],
          ["#2", "alice", "120"],
          ["#3", "bob", "95"],
        ],
      );
      // Numbers on screen are formatted by the wasm module.
      assert.equal((await rows())[0].score, await page.evaluate(() => import("/sdk/scorecast.js").then((m) => m.formatThousands(150))));
      await screenshot(page, "leaderboard-1-snapshot");

      // Record every row that gets the `changed` highlight (it is removed again after a moment,
      // so a poll alone could miss it).
      await page.evaluate(() => {
        window.__flashed = [];
        const seen = (el) => el instanceof HTMLElement && el.matches("tr[data-player].changed") && window.__flashed.push(el.dataset.player);
        new MutationObserver((records) => {
          for (const r of records) {
            if (r.type === "attributes") seen(r.target);
            for (const n of r.addedNodes ?? []) seen(n);
          }
        }).observe(document.getElementById("rows"), { subtree: true, childList: true, attributes: true, attributeFilter: ["class"] });
      });

      // bob +60 → 155: from third to first, the article's example.
      const bob = await addScore(base, BOARD, "bob", 60);
      assert.equal(bob.score, 155);
      await waitRow("bob", 155, "#1");
      await waitRow("carol", 150, "#2");
      await waitRow("alice", 120, "#3");
      await page.waitForFunction(() => window.__flashed.includes("bob"), null, { timeout: 5000 });
      await screenshot(page, "leaderboard-2-bob-overtakes");

      // A player the page has never seen: a new row with the right score and rank.
      await addScore(base, BOARD, "dave", 1_234_567);
      await waitRow("dave", 1234567, "#1");
      await waitRow("bob", 155, "#2");
      await page.waitForFunction(() => window.__flashed.includes("dave"), null, { timeout: 5000 });
      const r = await rows();
      assert.deepEqual(
        r.map((x) => [x.rank, x.player, x.dataScore]),
        [
          ["#1", "dave", "1234567"],
          ["#2", "bob", "155"],
          ["#3", "carol", "150"],
          ["#4", "alice", "120"],
        ],
      );
      assert.equal(r[0].score, "1,234,567", "thousands separators from the wasm formatter");
      // Same as the HTTP API says.
      const top = await get(base, `/v1/boards/${BOARD}/top?limit=10`);
      assert.deepEqual(
        top.body.entries.map((e) => [`#${e.rank}`, e.player, String(e.score)]),
        r.map((x) => [x.rank, x.player, x.dataScore]),
      );
      assert.equal(await page.textContent("#conn-state"), "open");
      await screenshot(page, "leaderboard-3-new-player");
    }));

  test("a signed-in player's own row is pinned below the top, and moves up live", () =>
    withDiagnostics(diag, async () => {
      const base = env.stack.base;
      await putBoard(base, "big", {});
      for (let i = 1; i <= 25; i++) await addScore(base, "big", `p${String(i).padStart(2, "0")}`, 1000 + i);
      // Sign in on /play (the token lands in localStorage) and score 1 point there.
      const context = await env.browser.newContext({ viewport: { width: 1100, height: 800 } });
      const play = await context.newPage();
      await play.goto(`${base}/play?board=big`);
      await waitConnState(play, "open");
      await play.fill("#guest-name", "pin");
      await play.click("#guest-login");
      await play.waitForFunction(() => window.__scorecast.sc.player === "guest-pin", null, { timeout: 10_000 });
      const ack = await play.evaluate(() => window.__scorecast.sc.submit("big", 1));
      assert.equal(ack.rank, 26);

      // The leaderboard page in the same browser profile says hello with that token.
      page = await newPage(env.browser, { context });
      await page.goto(`${base}/?board=big`);
      await waitConnState(page, "open");
      await page.waitForFunction(() => document.querySelectorAll("#rows tr[data-player]").length === 20, null, {
        timeout: 10_000,
      });
      await page.waitForFunction(
        () => {
          const tr = document.querySelector('#me-pin tr[data-player="guest-pin"]');
          return tr && tr.querySelector(".rank").textContent === "#26" && tr.querySelector(".score").dataset.score === "1";
        },
        null,
        { timeout: 10_000 },
      );
      assert.match(await page.textContent("#me-status"), /guest-pin/);
      // The pin is sticky at the viewport's bottom: a full-page shot would draw it mid-table.
      await screenshot(page, "leaderboard-5-pinned-own-row", { fullPage: false });

      // Into the top: the row moves from the pin into the table.
      await addScore(base, "big", "guest-pin", 5000);
      await page.waitForFunction(
        () => {
          const tr = document.querySelector('#rows tr[data-player="guest-pin"]');
          return (
            tr?.querySelector(".rank").textContent === "#1" &&
            tr.classList.contains("me") &&
            document.querySelector("#me-pin tr") === null
          );
        },
        null,
        { timeout: 10_000 },
      );
      await screenshot(page, "leaderboard-6-own-row-on-top");
      await context.close();
    }));

  test("phone-sized screen: compact numbers", () =>
    withDiagnostics(diag, async () => {
      // Its own board and player: nothing here depends on an earlier test.
      await putBoard(env.stack.base, "phone", {});
      await addScore(env.stack.base, "phone", "phil", 1_234_567);
      // The longest id there is: it wraps rather than pushing the score off the screen.
      await addScore(env.stack.base, "phone", "p".repeat(64), 7);
      const p = await newPage(env.browser, { viewport: { width: 375, height: 812 } });
      await p.goto(`${env.stack.base}/?board=phone`);
      await waitConnState(p, "open");
      await p.waitForSelector('#rows tr[data-player="phil"]');
      const compact = await p.evaluate(() => import("/sdk/scorecast.js").then((m) => m.formatCompact(1234567)));
      assert.notEqual(compact, "1,234,567");
      await p.waitForFunction(
        (c) => document.querySelector('#rows tr[data-player="phil"] .score').textContent === c,
        compact,
        { timeout: 5000 },
      );
      // Nothing sticks out sideways.
      assert.ok(await p.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth));
      await screenshot(p, "leaderboard-7-phone");
      await p.context().close();
    }));

  /// A bucketed board: the page shows bucket 1 (no one signed in), ranked within it; the arrows
  /// and the picker step through the buckets (the URL says which; one past the last says so); a score
  /// shows live; a signed-in player's page opens on their own bucket, their row pinned (rank in
  /// the bucket) when below its top 20.
  test("a bucketed board shows one bucket, live, and the signed-in player's own", () =>
    withDiagnostics(diag, async () => {
      const base = env.stack.base;
      const LEAGUE = "league";
      await putBoard(base, LEAGUE, { op: "best", bucket_size: 3, submit_limit: null });
      // Buckets of three in the order of first scores: b1–b3, b4–b6, b7.
      for (let i = 1; i <= 7; i++) await addScore(base, LEAGUE, `b${i}`, 10 * i);
      const players = () => page.$$eval("#rows tr[data-player]", (t) => t.map((tr) => [tr.dataset.player, tr.querySelector(".rank").textContent]));
      const seasonText = () => page.textContent("#season");

      page = await newPage(env.browser);
      await page.goto(`${base}/?board=${LEAGUE}`);
      await waitConnState(page, "open");
      await page.waitForFunction(() => /bucket 1$/.test(document.getElementById("season").textContent));
      assert.deepEqual(await players(), [["b3", "#1"], ["b2", "#2"], ["b1", "#3"]]);
      assert.equal(await page.textContent("#total"), "3 players");
      assert.equal(await page.inputValue("#bucket-picker"), "1");
      assert.equal(await page.isDisabled("#bucket-prev"), true);
      assert.equal(await page.isHidden("#error"), true, "a spectator's bucket view says no error");

      await page.click("#bucket-next");
      await page.waitForFunction(() => /bucket 2$/.test(document.getElementById("season").textContent));
      assert.deepEqual(await players(), [["b6", "#1"], ["b5", "#2"], ["b4", "#3"]]);
      assert.match(page.url(), /[?&]bucket=2$/);
      assert.equal(await page.isHidden("#bucket-mine"), true, "a spectator has no bucket of their own");
      // Live: b4 takes the lead of bucket 2.
      await addScore(base, LEAGUE, "b4", 1000);
      await waitRow("b4", 1000, "#1");
      assert.deepEqual(await players(), [["b4", "#1"], ["b6", "#2"], ["b5", "#3"]]);

      // By number; a bucket past the last says so.
      await page.fill("#bucket-picker", "9");
      await page.press("#bucket-picker", "Enter");
      await page.waitForFunction(() => !document.getElementById("bucket-empty").hidden);
      assert.equal(await page.textContent("#bucket-empty"), "No bucket 9 yet: this board has buckets 1–3.");
      assert.equal(await page.$$eval("#rows tr[data-player]", (t) => t.length), 0);
      assert.equal(await page.isHidden("#empty"), true);

      // Signed in as b7: the page opens on b7's bucket (3), whatever bucket was shown before.
      const { token } = await admin(base, "POST", "/admin/tokens", { player: "b7" });
      await page.evaluate((t) => {
        localStorage.setItem("scorecast.token", t);
        localStorage.setItem("scorecast.player", "b7");
      }, token);
      await page.goto(`${base}/?board=${LEAGUE}`);
      await page.waitForFunction(() => /bucket 3$/.test(document.getElementById("season").textContent));
      assert.deepEqual(await players(), [["b7", "#1"]]);
      assert.equal(await page.isHidden("#error"), true);
      assert.match(await seasonText(), /^season all, bucket 3$/);
      await page.click("#bucket-prev");
      await page.waitForFunction(() => /bucket 2$/.test(document.getElementById("season").textContent));
      // Away from it, "My bucket" leads back.
      await page.click("#bucket-mine");
      await page.waitForFunction(() => /bucket 3$/.test(document.getElementById("season").textContent));
      assert.equal(await page.isHidden("#bucket-mine"), true);
      // On a phone the picker fits: no horizontal scroll.
      await page.setViewportSize({ width: 390, height: 844 });
      assert.equal(await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth), 0);
      assert.equal(await page.isVisible("#bucket-next"), true);

      // Ranked below the top 20 of their own bucket, the signed-in player's row is pinned with
      // their rank within it.
      await putBoard(base, "bigleague", { op: "best", bucket_size: 30, submit_limit: null });
      const rivals = 24;
      for (let i = 1; i <= rivals; i++) await addScore(base, "bigleague", `c${String(i).padStart(2, "0")}`, 100 + i);
      const { token: lowToken } = await admin(base, "POST", "/admin/tokens", { player: "low" });
      await addScore(base, "bigleague", "low", 1);
      await page.evaluate((t) => {
        localStorage.setItem("scorecast.token", t);
        localStorage.setItem("scorecast.player", "low");
      }, lowToken);
      await page.goto(`${base}/?board=bigleague`);
      // Last of the bucket: ranked after every rival.
      await page.waitForFunction((rank) => {
        const tr = document.querySelector('#me-pin tr[data-player="low"]');
        return tr && tr.querySelector(".rank").textContent === `#${rank}`;
      }, rivals + 1);
      assert.equal(await page.$$eval("#rows tr[data-player]", (t) => t.length), 20);

      // A board without buckets shows no picker.
      await putBoard(base, "unbucketed", {});
      await addScore(base, "unbucketed", "u1", 1);
      await page.goto(`${base}/?board=unbucketed`);
      await page.waitForSelector("#rows tr[data-player]");
      assert.equal(await page.isHidden("#bucket-bar"), true);
      await page.context().close();
    }));

  test("an unknown board says so", () =>
    withDiagnostics(diag, async () => {
      const p = await newPage(env.browser);
      await p.goto(`${env.stack.base}/?board=no-such-board`);
      await waitConnState(p, "open");
      await p.waitForFunction(() => {
        const e = document.getElementById("error");
        return e && !e.hidden && e.textContent.includes("does not exist");
      }, null, { timeout: 10_000 });
      assert.equal(await p.locator("#rows tr").count(), 0);
      await screenshot(p, "leaderboard-4-unknown-board");
      await p.context().close();
    }));
});
