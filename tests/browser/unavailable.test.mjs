// A submission whose outcome is unknown: Redis is paused (SIGSTOP) while the game submits, so
// the server answers `unavailable` (it cannot know whether the script will run); the SDK keeps
// re-sending the same id with backoff, Redis resumes, and the game's promise resolves with the
// real result. The score is counted exactly once.

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import {
  admin,
  findMergingMove,
  newPage,
  playerScore,
  putBoard,
  screenshot,
  useStackAndBrowser,
  waitConnState,
  waitFor,
  withDiagnostics,
} from "./harness.mjs";

const BOARD = "stall";
// More `unavailable` answers than a client giving up after 5 retries would take.
const UNAVAILABLE_ANSWERS = 6;

describe("redis paused under a submission", { timeout: 180_000 }, () => {
  let play;
  let paused = false;
  const env = useStackAndBrowser({
    beforeStop: ({ stack }) => {
      if (paused) stack?.redis.resume();
    },
  });
  const diag = () => ({ stack: env.stack, pages: [play] });

  /// The game's merge submitted while Redis does not answer is answered `unavailable` several
  /// times, then acknowledged once Redis is back: the promise resolves (the page shows it
  /// accepted), the board has the points once and the log one entry.
  test("the SDK settles `unavailable` by retrying the same id: counted once, not lost", () =>
    withDiagnostics(diag, async () => {
      const base = env.stack.base;
      await putBoard(base, BOARD, { submit_limit: null });
      play = await newPage(env.browser);
      await play.goto(`${base}/play?board=${BOARD}&seed=7`);
      await waitConnState(play, "open");
      await play.fill("#guest-name", "stall");
      await play.click("#guest-login");
      await play.waitForFunction(() => window.__scorecast.sc.player === "guest-stall", null, { timeout: 10_000 });
      // The board has no validator: the page learnt (its run was refused) to submit plain points.
      await play.waitForFunction(() => window.__scorecast.mode === "plain", null, { timeout: 10_000 });
      await play.evaluate(() => {
        window.__unavailable = [];
        window.__scorecast.sc.on("message", (m) => {
          if (m.type === "rejected" && m.code === "unavailable") window.__unavailable.push(m);
        });
      });
      const { dir, gained } = await findMergingMove(play);

      env.stack.redis.pause();
      paused = true;
      await play.evaluate((d) => window.__scorecast.game.move(d), dir);
      // The server times each Redis reply out after 3 s: wait (bounded) until the page has been
      // answered `unavailable` more times than a client giving up after 5 retries would take, all for
      // one id.
      await waitFor(async () => (await play.evaluate(() => window.__unavailable.length)) >= UNAVAILABLE_ANSWERS, {
        timeoutMs: 120_000,
        intervalMs: 200,
        what: `${UNAVAILABLE_ANSWERS} unavailable answers`,
      });
      const answers = await play.evaluate(() => window.__unavailable);
      assert.equal(new Set(answers.map((m) => m.id)).size, 1, "one submission, retried with its id");
      assert.match(answers[0].message, /outcome unknown/, answers[0].message);
      assert.match(answers[0].message, /same id/, answers[0].message);
      // Still pending, the game is not told it failed.
      assert.equal(await play.evaluate(() => window.__scorecast.sc.pendingCount), 1);
      const shown = await play.evaluate(() => document.getElementById("last-result").textContent);
      assert.doesNotMatch(shown, /unavailable/, shown);
      await screenshot(play, "unavailable-1-paused");

      env.stack.redis.resume();
      paused = false;
      await play.waitForFunction(
        (t) => document.getElementById("last-result").textContent.startsWith(t),
        `+${gained} accepted`,
        { timeout: 30_000 },
      );
      assert.equal(await play.evaluate(() => window.__scorecast.sc.pendingCount), 0);
      await waitFor(async () => (await playerScore(base, BOARD, "guest-stall")) === gained, {
        what: "guest-stall's score on the server",
      });
      const log = await admin(base, "GET", `/admin/boards/${BOARD}/log?player=guest-stall`);
      assert.equal(log.entries.length, 1, JSON.stringify(log.entries));
      assert.equal(await playerScore(base, BOARD, "guest-stall"), gained, "counted once");
      await screenshot(play, "unavailable-2-settled");
    }));
});
