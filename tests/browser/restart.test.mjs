// A server restart under open pages: both pages show "reconnecting", come back "open" by
// themselves (backoff + jitter), resubscribe and take the fresh snapshot; the game page says
// hello again with its stored token and its merges are acked again.

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

const BOARD = "demo";

describe("server restart", { timeout: 120_000 }, () => {
  const env = useStackAndBrowser();
  let board;
  let play;
  const diag = () => ({ stack: env.stack, pages: [board, play] });

  const rowScore = (page, player) =>
    page.evaluate((p) => document.querySelector(`#rows tr[data-player="${p}"] .score`)?.dataset.score ?? null, player);

  test("pages reconnect, resubscribe and see scores submitted after the restart", () =>
    withDiagnostics(diag, async () => {
      const base = env.stack.base;
      await putBoard(base, BOARD, {});
      await addScore(base, BOARD, "alice", 100);

      board = await newPage(env.browser);
      await board.goto(`${base}/?board=${BOARD}`);
      await waitConnState(board, "open");
      await board.waitForSelector('#rows tr[data-player="alice"]');

      play = await newPage(env.browser);
      await play.goto(`${base}/play?board=${BOARD}&seed=42`);
      await waitConnState(play, "open");
      await play.fill("#guest-name", "rex");
      await play.click("#guest-login");
      await play.waitForFunction(() => window.__scorecast.sc.player === "guest-rex", null, { timeout: 10_000 });
      // The board has no validator: the page learnt (its run was refused) to submit plain points.
      await play.waitForFunction(() => window.__scorecast.mode === "plain", null, { timeout: 10_000 });

      // Record every state the badges show from now on.
      for (const p of [board, play]) {
        await p.evaluate(() => {
          window.__states = [];
          window.__scorecast.sc.on("state", (s) => window.__states.push(s));
        });
      }

      // Kill the server; while it is down, the pages are reconnecting.
      await env.stack.restart({
        beforeStart: async () => {
          await waitConnState(board, "reconnecting");
          await waitConnState(play, "reconnecting");
          await screenshot(board, "restart-1-leaderboard-reconnecting");
          await screenshot(play, "restart-2-play-reconnecting");
        },
      });

      // Back by themselves.
      await waitConnState(board, "open", 30_000);
      await waitConnState(play, "open", 30_000);
      for (const p of [board, play]) {
        const states = await p.evaluate(() => window.__states);
        assert.equal(states[0], "reconnecting", `states: ${states}`);
        assert.equal(states.at(-1), "open", `states: ${states}`);
      }

      // A score submitted after the restart appears: the `top` view was resubscribed.
      await addScore(env.stack.base, BOARD, "bob", 250);
      await board.waitForFunction(
        () => {
          const tr = document.querySelector('#rows tr[data-player="bob"]');
          return tr?.querySelector(".score").dataset.score === "250" && tr.querySelector(".rank").textContent === "#1";
        },
        null,
        { timeout: 10_000 },
      );
      assert.equal(await rowScore(board, "alice"), "100");
      await screenshot(board, "restart-3-leaderboard-after");

      // The game page is signed in again (hello with the stored token) and its merges count.
      assert.equal(await play.evaluate(() => window.__scorecast.sc.player), "guest-rex");
      const { dir, gained } = await findMergingMove(play);
      await play.evaluate((d) => window.__scorecast.game.move(d), dir);
      await play.waitForFunction(
        (t) => document.getElementById("last-result").textContent.startsWith(t),
        `+${gained} accepted`,
        { timeout: 10_000 },
      );
      await waitFor(async () => (await playerScore(env.stack.base, BOARD, "guest-rex")) === gained, {
        what: "guest-rex's score on the server",
      });
      // Its row appears on the leaderboard page too.
      await board.waitForFunction(
        (g) => document.querySelector('#rows tr[data-player="guest-rex"] .score')?.dataset.score === String(g),
        gained,
        { timeout: 10_000 },
      );
      // And its `me` view was resubscribed: the live rank is the server's.
      const { body } = await get(env.stack.base, `/v1/boards/${BOARD}/players/guest-rex`);
      await play.waitForFunction((r) => document.getElementById("my-rank").textContent === `#${r}`, body.rank, {
        timeout: 10_000,
      });
      await screenshot(play, "restart-4-play-after");
    }));
});
