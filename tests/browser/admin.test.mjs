// The admin console (`/admin`) in headless Chromium: sign in (the token stays in sessionStorage),
// create a board from the form, watch a score arrive live, ban the player from their row (the
// row disappears and their next submission is refused), read their history, retry a dead
// letter, and see the live charts fed by /metrics.

import assert from "node:assert/strict";
import net from "node:net";
import { describe, test } from "node:test";

import {
  ADMIN_TOKEN,
  addScore,
  admin,
  newPage,
  screenshot,
  useStackAndBrowser,
  waitConnState,
  withDiagnostics,
} from "./harness.mjs";

const BOARD = "console-b";

/** Sends one command to the redis-server on `port` (RESP) and resolves with its raw reply. */
function redisCommand(port, ...args) {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, "127.0.0.1");
    const req = `*${args.length}\r\n` + args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join("");
    sock.setTimeout(5000, () => reject(new Error("redis timeout")));
    sock.on("error", reject);
    sock.on("connect", () => sock.write(req));
    sock.once("data", (d) => {
      sock.destroy();
      resolve(d.toString());
    });
  });
}

describe("admin console", { timeout: 120_000 }, () => {
  const env = useStackAndBrowser();
  let page;
  const diag = () => ({ stack: env.stack, pages: [page] });

  const topPlayers = () => page.$$eval("#top-rows tr[data-player]", (trs) => trs.map((tr) => tr.dataset.player));

  test("sign in, create a board, watch a score, ban the player, retry a dead letter", () =>
    withDiagnostics(diag, async () => {
      const base = env.stack.base;
      page = await newPage(env.browser, { viewport: { width: 1280, height: 900 } });
      const res = await page.goto(`${base}/admin`);
      assert.equal(res.status(), 200);

      // A wrong token is refused; the right one opens the console and lives in sessionStorage only.
      await page.fill("#token", "not-the-token");
      await page.click("#login-form button[type=submit]");
      await page.waitForSelector("#login-error:not([hidden])");
      assert.equal(await page.isHidden("#console"), true);
      await page.fill("#token", ADMIN_TOKEN);
      await page.click("#login-form button[type=submit]");
      await page.waitForSelector("#console:not([hidden])");
      await waitConnState(page, "open");
      const stored = await page.evaluate(() => [sessionStorage.getItem("scorecast.adminToken"), JSON.stringify(localStorage)]);
      assert.equal(stored[0], ADMIN_TOKEN);
      assert.ok(!stored[1].includes(ADMIN_TOKEN), "the token is not in localStorage");

      // Create a board from the form; it is listed and watched.
      await page.fill("#board-id", BOARD);
      await page.fill("#board-config", '{"order": "desc", "op": "best"}');
      await page.click("#board-form button[type=submit]");
      await page.waitForSelector(`#boards tr[data-board="${BOARD}"].watched`);
      assert.match(await page.textContent("#board-msg"), /created/);
      // The change is among the admin actions, with the key that made it (the admin token).
      await page.waitForSelector('#audit-rows tr[data-action="board_put"]');
      assert.match(await page.textContent('#audit-rows tr[data-action="board_put"]'), new RegExp(`${BOARD}.*admin`));
      const cfg = await admin(base, "GET", `/admin/boards/${BOARD}`);
      assert.equal(cfg.op, "best");

      // Scores arrive live.
      await addScore(base, BOARD, "honest", 100);
      await addScore(base, BOARD, "cheater", 9000);
      await page.waitForFunction(() => document.querySelectorAll("#top-rows tr[data-player]").length === 2);
      assert.deepEqual(await topPlayers(), ["cheater", "honest"]);

      // A ban stored before until_ms was bounded (2^63 − 1, no date at all): the list still
      // renders, that row with the number as it came.
      const legacy = { player: "legacy", board: BOARD, reason: "old", until_ms: 9223372036854775807n, at_ms: 1 };
      const legacyJson = JSON.stringify(legacy, (_, v) => (typeof v === "bigint" ? `#${v}#` : v)).replace(/"#(\d+)#"/, "$1");
      assert.match(await redisCommand(env.stack.redis.port, "HSET", `lb:{${BOARD}}:bans`, "legacy", legacyJson), /^:1/);

      // Ban from the row (two clicks: arm, confirm): the row disappears, the ban is listed, and
      // the player's next submission is refused.
      await page.fill("#ban-reason", "impossible score");
      const banButton = '#top-rows tr[data-player="cheater"] button[data-action="ban"]';
      await page.click(banButton);
      await page.click(banButton);
      await page.waitForFunction(() => !document.querySelector('#top-rows tr[data-player="cheater"]'));
      assert.deepEqual(await topPlayers(), ["honest"]);
      await page.waitForSelector('#ban-rows tr[data-player="cheater"]');
      await page.waitForSelector('#ban-rows tr[data-player="legacy"]');
      assert.match(await page.textContent('#ban-rows tr[data-player="legacy"]'), /old.*9223372036854776000/);
      const refused = await fetch(`${base}/admin/boards/${BOARD}/players/cheater/score`, {
        method: "POST",
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({ points: 1 }),
      });
      assert.equal(refused.status, 403);
      assert.equal((await refused.json()).error.code, "forbidden");

      // The player's history: the accepted submission and the ban with its reason.
      await page.click('#top-rows tr[data-player="honest"] button[data-action="history"]');
      await page.waitForSelector('#history-rows tr[data-action="submit"]');
      // Each entry names the key that made it: these scores came with the admin token.
      assert.match(await page.textContent('#history-rows tr[data-action="submit"]'), /by admin/);
      const { bans } = await admin(base, "GET", "/admin/bans");
      assert.deepEqual(bans.map((b) => [b.player, b.reason]), [["cheater", "impossible score"], ["legacy", "old"]]);

      // A dead letter: a job with one attempt, claimed and failed.
      await admin(base, "POST", "/admin/queues/mail/jobs", { id: "welcome-1", kind: "email", payload: {}, max_attempts: 1 });
      const claimed = await admin(base, "POST", "/admin/queues/mail/claim");
      await admin(base, "POST", `/admin/queues/mail/jobs/welcome-1/nack`, { token: claimed.lease.token });
      await page.waitForFunction(() => {
        const tr = document.querySelector('#queue-rows tr[data-queue="mail"]');
        return tr && tr.children[4].textContent === "1";
      });
      await page.click('#queue-rows tr[data-queue="mail"] button[data-action="dead"]');
      await page.waitForSelector('#dead-rows tr[data-job="welcome-1"]');
      await screenshot(page, "admin-console");
      await page.click('#dead-rows tr[data-job="welcome-1"] button[data-action="retry"]');
      await page.waitForFunction(() => {
        const tr = document.querySelector('#queue-rows tr[data-queue="mail"]');
        return tr && tr.children[1].textContent === "1" && tr.children[4].textContent === "0";
      });
      const counts = await admin(base, "GET", "/admin/queues/mail");
      assert.deepEqual([counts.ready, counts.dead], [1, 0]);

      // The charts draw from /metrics: submissions/s saw the submissions, sockets counts ours.
      await page.waitForFunction(() => Number(document.getElementById("chart-subs").dataset.points) >= 2);
      await page.waitForFunction(() => Number(document.getElementById("chart-sockets").dataset.last) >= 1);
      // The refused submission above shows as a rejection rate of code `forbidden`.
      await page.waitForFunction(() => Math.max(0, ...(window.__admin.series.rejections.get("forbidden") ?? [])) > 0);

      // Sign out forgets the token.
      await page.click("#sign-out");
      await page.waitForSelector("#login:not([hidden])");
      assert.equal(await page.evaluate(() => sessionStorage.getItem("scorecast.adminToken")), null);
    }));
});
