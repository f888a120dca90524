// A league through the browser SDK in headless Chromium, against the real server and its job
// workers: `sc.league(l)` reads the player's tier, bucket and rank (GET /v1/leagues/{l}/me with
// the client's token), and the `league` event arrives when the season-end job moves the player.

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { addScore, admin, newPage, useStackAndBrowser, withDiagnostics } from "./harness.mjs";

describe("leagues through the SDK", { timeout: 120_000 }, () => {
  const env = useStackAndBrowser();
  let page;
  const diag = () => ({ stack: env.stack, pages: [page] });

  /// Before the close the player is on tier 0, first of bucket 1; the close (a `league.close`
  /// job for today's season, run by the server's workers) moves them up, the `league` event
  /// says so, and `league()` then answers tier 1 (no bucket there yet); a client without a token
  /// is refused `unauthorized`, an unknown league `not_found`.
  test("league() and the league event", () =>
    withDiagnostics(diag, async () => {
      const base = env.stack.base;
      await admin(base, "PUT", "/admin/leagues/bl", {
        tiers: ["bl-0", "bl-1"],
        bucket_size: 2,
        promote: 1,
        relegate: 1,
        reset: "daily",
        board: { submit_limit: null },
      });
      page = await newPage(env.browser);
      await page.goto(`${base}/`);
      const before = await page.evaluate(async () => {
        const { Scorecast } = await import("/sdk/scorecast.js");
        const { token } = await Scorecast.guest("lea");
        const sc = await Scorecast.connect({ token });
        window.sc = sc;
        window.moved = new Promise((resolve) => sc.on("league", resolve));
        await sc.submit("bl-0", 50);
        const anon = await Scorecast.connect({});
        const err = (e) => ({ code: e.code });
        const noToken = await anon.league("bl").catch(err);
        const unknown = await sc.league("no-such-league").catch(err);
        anon.close();
        return { me: await sc.league("bl"), noToken, unknown };
      });
      assert.deepEqual(
        [before.me.tier, before.me.board, before.me.bucket, before.me.rank, before.me.score],
        [0, "bl-0", 1, 1, 50],
      );
      assert.equal(before.noToken.code, "unauthorized");
      assert.equal(before.unknown.code, "not_found");
      await addScore(base, "bl-0", "rival", 10);

      // Today's season, closed now (an operator's close: the job the calendar runs at midnight).
      const now = Date.now();
      const season = new Date(now).toISOString().slice(0, 10);
      await admin(base, "POST", "/admin/queues/scorecast/jobs", {
        id: "close-now",
        kind: "league.close",
        payload: { league: "bl", season, end_ms: now - 1 },
      });
      const after = await page.evaluate(async () => {
        const move = await window.moved;
        const me = await window.sc.league("bl");
        window.sc.close();
        return { move, me };
      });
      assert.deepEqual(
        [after.move.league, after.move.direction, after.move.from, after.move.to, after.move.to_tier],
        ["bl", "up", "bl-0", "bl-1", 1],
      );
      assert.deepEqual([after.me.tier, after.me.board], [1, "bl-1"]);
    }));
});
