// A tournament through the browser SDK in headless Chromium, against the real server and its
// job workers: on a `join_required` board a player's submission is refused `not_started` before
// the start and `not_joined` before `sc.join(board)` (each refusal leaves the board's keys as
// they were), accepted after it; the live `tournament` events arrive in order — `started`,
// `ending_soon`, `ended` with the player's final rank (and none for a spectator). The schedule
// is seconds long and set once the page watches the board; every step awaits an event or an
// answer, never a sleep.

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { dumpKeys, newPage, putBoard, useStackAndBrowser, withDiagnostics } from "./harness.mjs";

const BOARD = "sdk-cup";

describe("tournaments through the SDK", { timeout: 120_000 }, () => {
  const env = useStackAndBrowser();
  let page;
  const diag = () => ({ stack: env.stack, pages: [page] });
  const config = (start, end) => ({
    reset: "never",
    op: "best",
    tournament: { schedule: { start_ms: start, end_ms: end }, join_required: true, ending_soon_ms: 1500 },
  });
  /** The board's own keys (the queue's and the limiter's move on their own meanwhile). */
  const boardKeys = async () => (await dumpKeys(env.stack.redis.port)).filter(([k]) => k.startsWith(`lb:{${BOARD}}`));

  /// A join-required tournament: `not_started`, then `not_joined` until `sc.join`, then
  /// accepted; the `tournament` events `started`, `ending_soon` and `ended` (with the player's
  /// final rank; a spectator's without one) reach the page's sessions.
  test("join, submit, and the live tournament events", () =>
    withDiagnostics(diag, async () => {
      const base = env.stack.base;
      // Far in the future at first: the page connects and subscribes in its own time.
      const far = Date.now() + 3_600_000;
      await putBoard(base, BOARD, config(far, far + 60_000));
      page = await newPage(env.browser);
      await page.goto(`${base}/`);
      const player = await page.evaluate(async (board) => {
        const { Scorecast } = await import("/sdk/scorecast.js");
        const { token, player } = await Scorecast.guest("joiner");
        // Every `tournament` event of each session, and a way to await the next of a kind.
        const sessions = {};
        const watch = async (name, opts) => {
          const sc = await Scorecast.connect(opts);
          const s = { sc, events: [], waiters: [] };
          sc.on("tournament", (m) => {
            s.events.push(m);
            for (const w of s.waiters.splice(0)) if (!w(m)) s.waiters.push(w);
          });
          // Events go to sessions with a view of the board: the first top means it is in place.
          await new Promise((resolve) => sc.subscribe(board, "top", { limit: 10 }, resolve));
          sessions[name] = s;
        };
        await watch("player", { token });
        await watch("spectator", {});
        window.__t = {
          sessions,
          /** The session's `event`, seen already or the next one, within `ms`. */
          event(name, event, ms) {
            const s = sessions[name];
            const seen = s.events.find((m) => m.event === event);
            if (seen) return Promise.resolve(seen);
            return new Promise((resolve, reject) => {
              const timer = setTimeout(() => reject(new Error(`${name}: no ${event} event in ${ms} ms (seen: ${JSON.stringify(s.events)})`)), ms);
              s.waiters.push((m) => m.event === event && (clearTimeout(timer), resolve(m), true));
            });
          },
        };
        return player;
      }, BOARD);

      const submit = (points) =>
        page.evaluate(
          ([board, points]) =>
            window.__t.sessions.player.sc.submit(board, points).then(
              (a) => ({ type: a.type ?? "ack", score: a.score, rank: a.rank }),
              (e) => ({ code: e.code, message: e.message }),
            ),
          [BOARD, points],
        );

      // Now the short schedule: open in 2 s for 4 s; `ending_soon` 1.5 s before the end.
      const start = Date.now() + 2_000;
      const end = start + 4_000;
      await putBoard(base, BOARD, config(start, end));

      // Before the start: refused, and nothing changed.
      let before = await boardKeys();
      const early = await submit(10);
      assert.equal(early.code, "not_started", JSON.stringify(early));
      assert.deepEqual(await boardKeys(), before);

      const started = await page.evaluate(() => window.__t.event("player", "started", 15_000));
      assert.deepEqual([started.board, started.season, started.start_ms, started.end_ms], [BOARD, "all", start, end]);

      // Open, but the player has not joined: refused, and nothing changed.
      before = await boardKeys();
      const unjoined = await submit(10);
      assert.equal(unjoined.code, "not_joined", JSON.stringify(unjoined));
      assert.deepEqual(await boardKeys(), before);

      // sc.join enters the player; joining again is the same answer.
      const [joined, again] = await page.evaluate(async (board) => {
        const { sc } = window.__t.sessions.player;
        return [await sc.join(board), await sc.join(board)];
      }, BOARD);
      assert.deepEqual(Object.keys(joined).sort(), ["board", "joined_ms", "player", "season"]);
      assert.deepEqual([joined.board, joined.season, joined.player], [BOARD, "all", player]);
      assert.ok(joined.joined_ms >= start && joined.joined_ms < end, JSON.stringify(joined));
      assert.deepEqual(again, joined);

      const accepted = await submit(10);
      assert.deepEqual(accepted, { type: "ack", score: 10, rank: 1 });

      const soon = await page.evaluate(() => window.__t.event("player", "ending_soon", 15_000));
      assert.deepEqual([soon.start_ms, soon.end_ms], [start, end]);
      const ended = await page.evaluate(() => window.__t.event("player", "ended", 20_000));
      assert.equal(ended.end_ms, end);
      assert.equal(ended.total, 1);
      assert.equal(ended.rank, 1, JSON.stringify(ended));
      assert.deepEqual(ended.standings.map((e) => [e.player, e.score, e.rank]), [[player, 10, 1]]);
      const late = await submit(5);
      assert.equal(late.code, "ended", JSON.stringify(late));

      // The spectator got the same events, the end without a rank of its own.
      const spectator = await page.evaluate(async () => {
        await window.__t.event("spectator", "ended", 10_000);
        return window.__t.sessions.spectator.events;
      });
      assert.deepEqual(spectator.map((m) => m.event), ["started", "ending_soon", "ended"]);
      assert.equal(spectator[2].total, 1);
      assert.equal("rank" in spectator[2], false, JSON.stringify(spectator[2]));
      // The player's session saw each event once, in order.
      const mine = await page.evaluate(() => window.__t.sessions.player.events.map((m) => m.event));
      assert.deepEqual(mine, ["started", "ending_soon", "ended"]);
      await page.evaluate(() => Object.values(window.__t.sessions).forEach((s) => s.sc.close()));
    }));
});
