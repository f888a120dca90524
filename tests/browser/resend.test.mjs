// What the SDK re-sends after a reconnect, in headless Chromium through a TCP proxy that can
// swallow the server's answers and cut the connections:
// - a burst of re-sent submissions that the connection's message limit refuses in part is sent
//   again after the wait, with the same ids: every one resolves, none is counted twice;
// - when the reconnect's hello is refused (the player's tokens were revoked meanwhile), pending
//   submissions are held, not re-sent as a spectator's and refused, and go out with their ids
//   once `sc.hello(freshToken)` succeeds, which also brings the `me` view back;
// - `subscribe` with the same arguments asks the server again: a `me` view refused for want of a
//   bucket is renewed after the first score.
// Every wait is for an answer or a state, never a fixed sleep.

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { admin, newPage, playerScore, putBoard, startProxy, useStackAndBrowser, waitFor, withDiagnostics } from "./harness.mjs";

describe("the SDK's re-sends", { timeout: 120_000 }, () => {
  let proxy;
  const env = useStackAndBrowser({
    afterStart: async ({ stack }) => {
      proxy = await startProxy(stack.server.port);
      await putBoard(stack.base, "burst", { submit_limit: null });
      await putBoard(stack.base, "held", { submit_limit: null });
      await putBoard(stack.base, "bucketed", { submit_limit: null, bucket_size: 5 });
    },
    beforeStop: () => proxy?.close(),
  });
  let page;
  const diag = () => ({ stack: env.stack, pages: [page] });

  /** A page on the proxy's origin with the SDK connected as `player` (a token minted now). */
  async function connectThroughProxy(player) {
    const { token } = await admin(env.stack.base, "POST", "/admin/tokens", { player });
    page = await newPage(env.browser);
    await page.goto(`${proxy.base}/`);
    await page.evaluate(async (token) => {
      const { Scorecast } = await import("/sdk/scorecast.js");
      const sc = await Scorecast.connect({ token });
      window.__sc = sc;
      window.__results = [];
      window.__errors = [];
      window.__rank = [];
      sc.on("error", (e) => window.__errors.push(e.code));
    }, token);
  }

  /** Starts `n` submissions of +1 to `board`, recording how each settles. */
  const submitMany = (board, n) =>
    page.evaluate(
      ([board, n]) => {
        for (let i = 0; i < n; i++) {
          window.__sc.submit(board, 1).then(
            (a) => window.__results.push({ ok: true, duplicate: a.duplicate }),
            (e) => window.__results.push({ ok: false, code: e.code }),
          );
        }
      },
      [board, n],
    );

  test("a burst of re-sent submissions refused by the message limit is sent again, counted once", () =>
    withDiagnostics(diag, async () => {
      const player = "burster";
      await connectThroughProxy(player);
      // The answers are swallowed: 110 submissions reach the server, paced under its message
      // limit (50 a second, bursts of 100: 10 every 250 ms), and are applied; the page hears of
      // none.
      proxy.dropServerToClient = true;
      await page.evaluate(
        () =>
          new Promise((resolve) => {
            let sent = 0;
            const tick = setInterval(() => {
              for (let i = 0; i < 10; i++) {
                window.__sc.submit("burst", 1).then(
                  (a) => window.__results.push({ ok: true, duplicate: a.duplicate }),
                  (e) => window.__results.push({ ok: false, code: e.code }),
                );
              }
              sent += 10;
              if (sent >= 110) {
                clearInterval(tick);
                resolve();
              }
            }, 250);
          }),
      );
      await waitFor(async () => (await playerScore(env.stack.base, "burst", player)) === 110, {
        what: "110 applied",
        timeoutMs: 15_000,
      });
      assert.equal(await page.evaluate(() => window.__sc.pendingCount), 110);
      proxy.cutAll();
      proxy.restore();
      // The reconnect re-sends all 110 at once: more than the limit lets through.
      await page.waitForFunction(() => window.__results.length === 110, null, { timeout: 30_000 });
      const results = await page.evaluate(() => window.__results);
      assert.deepEqual(
        results.filter((r) => !r.ok),
        [],
        "no re-sent submission settles as refused",
      );
      assert.ok(results.every((r) => r.duplicate), JSON.stringify(results.filter((r) => !r.duplicate)));
      assert.equal(await playerScore(env.stack.base, "burst", player), 110, "counted once each");
      await page.context().close();
    }));

  test("pending submissions wait for a hello that succeeds, and the me view comes back", () =>
    withDiagnostics(diag, async () => {
      const player = "revoked";
      await connectThroughProxy(player);
      await page.evaluate(
        () =>
          new Promise((resolve) =>
            window.__sc.subscribe("held", "me", (m) => {
              window.__rank.push(m);
              resolve();
            }),
          ),
      );
      proxy.dropServerToClient = true;
      await submitMany("held", 1);
      await waitFor(async () => (await playerScore(env.stack.base, "held", player)) === 1, { what: "applied" });
      // The player's tokens are revoked while the ack is lost, then the connection is cut.
      await admin(env.stack.base, "POST", `/admin/players/${player}/revoke`, {});
      proxy.cutAll();
      proxy.restore();
      // The reconnect's hello is refused: a spectator, and the submission stays pending.
      await page.waitForFunction(() => window.__errors.includes("unauthorized") && window.__sc.player === null, null, {
        timeout: 20_000,
      });
      assert.equal(await page.evaluate(() => window.__sc.state), "open");
      assert.equal(await page.evaluate(() => window.__sc.pendingCount), 1, "held, not refused");
      assert.deepEqual(await page.evaluate(() => window.__results), []);
      const ranksBefore = await page.evaluate(() => window.__rank.length);
      // A fresh token (issued after the revocation): the held submission goes out with its id.
      const { token } = await admin(env.stack.base, "POST", "/admin/tokens", { player });
      assert.equal(await page.evaluate((t) => window.__sc.hello(t), token), player);
      await page.waitForFunction(() => window.__results.length === 1, null, { timeout: 15_000 });
      assert.deepEqual(await page.evaluate(() => window.__results), [{ ok: true, duplicate: true }]);
      assert.equal(await playerScore(env.stack.base, "held", player), 1, "counted once");
      await page.waitForFunction((n) => window.__rank.length > n, ranksBefore, { timeout: 15_000 });
      const last = await page.evaluate(() => window.__rank.at(-1));
      assert.equal(last.score, 1, JSON.stringify(last));
      await page.context().close();
    }));

  test("subscribing again with the same arguments renews a view refused before", () =>
    withDiagnostics(diag, async () => {
      const player = "newcomer";
      await connectThroughProxy(player);
      // No bucket before the first score: the `me` view is refused (not_found).
      await page.evaluate(() => {
        window.__cb = (m) => window.__rank.push(m);
        window.__sc.subscribe("bucketed", "me", window.__cb);
      });
      await page.waitForFunction(() => window.__errors.includes("not_found"), null, { timeout: 10_000 });
      assert.deepEqual(await page.evaluate(() => window.__sc.submit("bucketed", 7).then((a) => a.score)), 7);
      await page.evaluate(() => window.__sc.subscribe("bucketed", "me", window.__cb));
      await page.waitForFunction(() => window.__rank.length > 0, null, { timeout: 10_000 });
      const m = await page.evaluate(() => window.__rank.at(-1));
      assert.equal(m.score, 7, JSON.stringify(m));
      assert.equal(m.rank, 1, JSON.stringify(m));
      await page.context().close();
    }));
});
