// The connection is cut while a submission is in flight: the page is served through a TCP proxy
// that first swallows everything the server sends (so the submission reaches the server and is
// applied, but the ack never arrives), then destroys the connections. The SDK reconnects, says
// hello again, re-sends the SAME submission id, and gets `duplicate: true`: counted exactly once.
// The page plays on a board without a validator, where it submits each merge's points.

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import {
  admin,
  findMergingMove,
  newPage,
  playerScore,
  putBoard,
  screenshot,
  startProxy,
  useStackAndBrowser,
  waitConnState,
  waitFor,
  withDiagnostics,
} from "./harness.mjs";

const BOARD = "cut"; // plain points: the demo board game-2048 takes only verified runs

describe("connection cut during a submission", { timeout: 120_000 }, () => {
  let proxy;
  const env = useStackAndBrowser({
    afterStart: async ({ stack }) => {
      proxy = await startProxy(stack.server.port);
      await putBoard(stack.base, BOARD, { submit_limit: null });
    },
    beforeStop: () => proxy?.close(),
  });
  let page;
  const sentSubmits = []; // every submit frame the page sent: {id, points}
  const diag = () => ({ stack: env.stack, pages: [page] });

  /** Opens /play through the proxy and signs in as guest-<name>. */
  async function openSignedIn(name) {
    page = await newPage(env.browser);
    page.on("websocket", (ws) =>
      ws.on("framesent", ({ payload }) => {
        try {
          const m = JSON.parse(payload);
          if (m.type === "submit") sentSubmits.push({ id: m.id, points: m.points });
        } catch {
          // not JSON: not ours to check here
        }
      }),
    );
    await page.goto(`${proxy.base}/play?board=${BOARD}&seed=3`);
    await waitConnState(page, "open");
    await page.evaluate(() => {
      window.__acks = [];
      window.__states = [];
      window.__scorecast.sc.on("message", (m) => m.type === "ack" && window.__acks.push(m));
      window.__scorecast.sc.on("state", (s) => window.__states.push(s));
    });
    await page.fill("#guest-name", name);
    await page.click("#guest-login");
    await page.waitForFunction((p) => window.__scorecast.sc.player === p, `guest-${name}`, { timeout: 10_000 });
    await page.waitForFunction(() => !document.getElementById("whoami").hidden, null, { timeout: 10_000 });
    // The page asked for a run and learnt that this board takes plain points.
    await page.waitForFunction(() => window.__scorecast.mode === "plain", null, { timeout: 10_000 });
  }

  /** Swallows server→client bytes, runs `submit`, waits for the server to apply it, cuts. */
  async function cutWhileInFlight(player, expectedScore, submit) {
    proxy.dropServerToClient = true;
    const dropped = proxy.droppedBytes;
    await submit();
    // Applied on the server (asked directly, not through the proxy) ...
    await waitFor(async () => (await playerScore(env.stack.base, BOARD, player)) === expectedScore, {
      what: `${player} at ${expectedScore} on the server`,
    });
    // ... but the page has not heard back: the ack was swallowed.
    await waitFor(() => proxy.droppedBytes > dropped, { what: "the ack to be swallowed" });
    assert.equal(await page.evaluate(() => window.__scorecast.sc.pendingCount), 1, "submission still pending");
    assert.equal(await page.evaluate(() => window.__acks.length), 0, "no ack reached the page");
    await screenshot(page, `cut-${player}-1-ack-swallowed`);
    proxy.cutAll();
    proxy.restore();
  }

  test("a merge whose ack is lost is re-sent with the same id and counted once", () =>
    withDiagnostics(diag, async () => {
      const player = "guest-cutter";
      await openSignedIn("cutter");
      const { dir, gained } = await findMergingMove(page);
      assert.equal(sentSubmits.length, 0, "moves without merges submit nothing");

      await cutWhileInFlight(player, gained, async () => {
        const r = await page.evaluate((d) => window.__scorecast.game.move(d), dir);
        assert.deepEqual(r, { moved: true, gained });
      });

      // The SDK notices, reconnects by itself, and re-sends.
      await waitConnState(page, "open", 20_000);
      await page.waitForFunction(() => window.__scorecast.sc.pendingCount === 0, null, { timeout: 15_000 });
      const states = await page.evaluate(() => window.__states);
      assert.ok(states.includes("reconnecting"), `states: ${states}`);

      // Same id sent twice, the second answered duplicate with the first result.
      assert.equal(sentSubmits.length, 2, JSON.stringify(sentSubmits));
      assert.equal(sentSubmits[0].id, sentSubmits[1].id);
      assert.equal(sentSubmits[0].points, gained);
      const acks = await page.evaluate(() => window.__acks);
      assert.equal(acks.length, 1, JSON.stringify(acks));
      assert.equal(acks[0].id, sentSubmits[0].id);
      assert.equal(acks[0].duplicate, true);
      assert.equal(acks[0].score, gained);

      // Counted exactly once: on the server, in the audit log, and on the page.
      assert.equal(await playerScore(env.stack.base, BOARD, player), gained);
      const log = await admin(env.stack.base, "GET", `/admin/boards/${BOARD}/log?count=100`);
      const mine = JSON.stringify(log).split(sentSubmits[0].id).length - 1;
      assert.equal(mine, 1, `the audit log holds the submission once: ${JSON.stringify(log)}`);
      await page.waitForFunction(
        () => document.getElementById("last-result").textContent.includes("duplicate, counted once"),
        null,
        { timeout: 10_000 },
      );
      await page.waitForFunction(
        (g) => document.getElementById("board-score").textContent === String(g) && document.getElementById("my-rank").textContent === "#1",
        gained,
        { timeout: 10_000 },
      );
      await screenshot(page, "cut-guest-cutter-2-counted-once");
      await page.context().close();
    }));

  test("sc.submit with known points survives a cut: the promise resolves once, duplicate", () =>
    withDiagnostics(diag, async () => {
      const player = "guest-direct";
      sentSubmits.length = 0;
      await openSignedIn("direct");
      const POINTS = 37;

      await cutWhileInFlight(player, POINTS, () =>
        page.evaluate((n) => {
          window.__result = null;
          window.__scorecast.sc.submit("cut", n).then(
            (ack) => (window.__result = { ok: ack }),
            (err) => (window.__result = { err: { code: err.code, message: err.message } }),
          );
        }, POINTS),
      );

      await page.waitForFunction(() => window.__result !== null, null, { timeout: 20_000 });
      const result = await page.evaluate(() => window.__result);
      assert.ok(result.ok, JSON.stringify(result));
      assert.equal(result.ok.duplicate, true);
      assert.equal(result.ok.score, POINTS);
      assert.equal(sentSubmits.length, 2);
      assert.equal(sentSubmits[0].id, sentSubmits[1].id);
      assert.equal(await playerScore(env.stack.base, BOARD, player), POINTS);
      // The `me` view was resubscribed and shows the one-time score.
      await page.waitForFunction(
        (n) => document.getElementById("board-score").textContent === String(n),
        POINTS,
        { timeout: 10_000 },
      );
      await page.context().close();
    }));
});
