// The 2048 page (`/play`) in headless Chromium: guest login by name, moves played with the arrow
// keys, every merge submitted over the WebSocket, the ack, the live rank and the neighbours shown.

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import {
  addScore,
  findMergingMove,
  get,
  newPage,
  playerScore,
  putBoard,
  screenshot,
  useStackAndBrowser,
  waitConnState,
  waitFor,
  withDiagnostics,
} from "./harness.mjs";

const BOARD = "game-2048"; // created by --dev

describe("2048 page", { timeout: 120_000 }, () => {
  const env = useStackAndBrowser();
  let page;
  const diag = () => ({ stack: env.stack, pages: [page] });

  test("guest login, merges are acked, rank and neighbours shown", () =>
    withDiagnostics(diag, async () => {
      const base = env.stack.base;
      const name = "ann";
      const player = `guest-${name}`;

      page = await newPage(env.browser);
      // Record every submission's ack the SDK resolves, to add up what the server accepted.
      await page.addInitScript(() => {
        window.__acks = [];
      });
      const res = await page.goto(`${base}/play?seed=7`);
      assert.equal(res.status(), 200);
      await waitConnState(page, "open");
      await page.evaluate(() =>
        window.__scorecast.sc.on("message", (m) => m.type === "ack" && window.__acks.push(m)),
      );
      await screenshot(page, "play-1-signed-out");

      // Guest login by name through the form.
      await page.fill("#guest-name", name);
      await page.click("#guest-login");
      await page.waitForFunction(
        (p) => {
          const who = document.getElementById("whoami");
          return !who.hidden && who.textContent.includes(p) && document.getElementById("login-form").hidden;
        },
        player,
        { timeout: 10_000 },
      );
      assert.equal(await page.evaluate(() => window.__scorecast.sc.player), player);

      // Play with the keyboard until at least one merge has happened.
      await page.focus("#grid");
      const keys = ["ArrowLeft", "ArrowDown", "ArrowRight", "ArrowDown"];
      let moves = 0;
      for (let i = 0; i < 200; i++) {
        await page.keyboard.press(keys[i % keys.length]);
        moves += 1;
        const s = await page.evaluate(() => window.__scorecast.game.score);
        if (s > 0 && moves >= 6) break;
      }
      const gameScore = await page.evaluate(() => window.__scorecast.game.score);
      assert.ok(gameScore > 0, "the keyboard moves merged tiles");
      assert.ok((await page.evaluate(() => window.__scorecast.game.moves)) > 0, "arrow keys move tiles");

      // Every merge is acked; the acked board score ends at the sum of merged points.
      await page.waitForFunction(
        (total) => window.__acks.some((a) => a.score === total) && window.__scorecast.sc.pendingCount === 0,
        gameScore,
        { timeout: 10_000 },
      );
      const acks = await page.evaluate(() => window.__acks);
      assert.ok(acks.length >= 1);
      assert.ok(acks.every((a) => a.board === BOARD && a.duplicate === false));
      assert.equal(Math.max(...acks.map((a) => a.score)), gameScore);

      await page.waitForFunction(() => /accepted/.test(document.getElementById("last-result").textContent), null, {
        timeout: 10_000,
      });
      const fmt = (n) => page.evaluate((n) => import("/sdk/scorecast.js").then((m) => m.formatThousands(n)), n);
      const fmtRank = (n) => page.evaluate((n) => import("/sdk/scorecast.js").then((m) => m.formatRank(n)), n);
      const expectedScore = await fmt(gameScore);
      await page.waitForFunction(
        (t) => document.getElementById("board-score").textContent === t,
        expectedScore,
        { timeout: 10_000 },
      );
      assert.equal(await page.textContent("#game-score"), expectedScore);
      // The last ack's text names the final board score.
      await page.waitForFunction(
        (t) => document.getElementById("last-result").textContent.includes(`board score ${t} `),
        expectedScore,
        { timeout: 10_000 },
      );

      // The server agrees (HTTP, straight to the server).
      assert.equal(await playerScore(base, BOARD, player), gameScore);

      // Live rank (`me`) and neighbours (`around`).
      assert.equal(await fmtRank(1), "#1");
      await page.waitForFunction(() => document.getElementById("my-rank").textContent === "#1", null, {
        timeout: 10_000,
      });
      await page.waitForSelector(`#around [data-player="${player}"]`, { timeout: 10_000 });
      assert.equal(await page.isHidden("#around-empty"), true);
      await screenshot(page, "play-2-after-merges");

      // Someone else overtakes: the `me` view pushes the new rank, `around` lists them above.
      await addScore(base, BOARD, "zed", gameScore + 100);
      await page.waitForFunction(() => document.getElementById("my-rank").textContent === "#2", null, {
        timeout: 10_000,
      });
      await page.waitForFunction(
        (p) => [...document.querySelectorAll("#around [data-player]")].map((li) => li.dataset.player).join(",") === `zed,${p}`,
        player,
        { timeout: 10_000 },
      );
      const around = await get(base, `/v1/boards/${BOARD}/players/${player}/around?radius=3`);
      assert.deepEqual(
        around.body.entries.map((e) => e.player),
        ["zed", player],
      );
      await screenshot(page, "play-3-overtaken");
    }));

  test("window.__scorecast.game.move submits exactly the merged points", () =>
    withDiagnostics(diag, async () => {
      // Its own board, page and guest: nothing here depends on an earlier test.
      const base = env.stack.base;
      const board = "moves";
      const player = "guest-cid";
      await putBoard(base, board, {});
      page = await newPage(env.browser);
      await page.goto(`${base}/play?board=${board}&seed=5`);
      await waitConnState(page, "open");
      await page.fill("#guest-name", "cid");
      await page.click("#guest-login");
      await page.waitForFunction((p) => window.__scorecast.sc.player === p, player, { timeout: 10_000 });
      const before = (await playerScore(base, board, player)) ?? 0;
      const { dir, gained } = await findMergingMove(page);
      const r = await page.evaluate((d) => window.__scorecast.game.move(d), dir);
      assert.deepEqual(r, { moved: true, gained });
      await waitFor(async () => (await playerScore(base, board, player)) === before + gained, {
        what: `score ${before} + ${gained}`,
      });
      await page.waitForFunction(
        (t) => document.getElementById("last-result").textContent.startsWith(t),
        `+${gained} accepted`,
        { timeout: 10_000 },
      );
      await page.context().close();
    }));

  test("?board=<id> plays on that board", () =>
    withDiagnostics(diag, async () => {
      const base = env.stack.base;
      await putBoard(base, "weekend", {});
      const p = await newPage(env.browser, { viewport: { width: 390, height: 844 } }); // phone-sized
      await p.goto(`${base}/play?board=weekend&seed=11`);
      await waitConnState(p, "open");
      assert.equal(await p.textContent("#board-name"), "weekend");
      await p.fill("#guest-name", "bea");
      await p.click("#guest-login");
      await p.waitForFunction(() => window.__scorecast.sc.player === "guest-bea", null, { timeout: 10_000 });
      const { dir, gained } = await findMergingMove(p);
      await p.evaluate((d) => window.__scorecast.game.move(d), dir);
      await waitFor(async () => (await playerScore(base, "weekend", "guest-bea")) === gained, {
        what: "guest-bea's score on weekend",
      });
      assert.equal(await playerScore(base, BOARD, "guest-bea"), null, "nothing on the default board");
      await p.waitForFunction(() => document.getElementById("my-rank").textContent === "#1", null, { timeout: 10_000 });
      assert.ok(await p.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), "fits a phone's width");
      await screenshot(p, "play-4-phone");
      await p.context().close();
    }));
});
