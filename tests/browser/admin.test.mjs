// The admin console (`/admin`) in headless Chromium, at desktop (1280×800) and phone (390×844)
// sizes: sign in (the token stays in sessionStorage), empty states, create a board from the
// form, watch a score arrive live, ban the player from their row (the row disappears and their
// next submission is refused), read their history, retry a dead letter, live charts summed over
// two server processes; find a player ranked far below the top by id and others by name, revoke
// a player's tokens, remove a score, roll a season over and read the past season's standings,
// delete a board — every destructive action only on its second click, every outcome said in
// view in the panel where it was asked for, every date marked UTC, no horizontal scroll on the
// phone; a tournament's panel followed live from scheduled through running to ended (the
// countdown, entrants paged in join order, the rules, the final standings). The run rewrites
// docs/admin-console.png (desktop), docs/admin-console-phone.png and
// docs/admin-console-tournament{,-phone}.png; a bucketed board's buckets, paged, and the top of
// any bucket (docs/admin-console-buckets.png), and the whole top of a bucketed board read only
// while the console is in view (Playwright's clock moves the time on); a league's seasons and the moves between its tiers
// when a season ends (docs/admin-console-leagues.png).

import assert from "node:assert/strict";
import { after, describe, test } from "node:test";

import {
  ADMIN_TOKEN,
  addScore,
  admin,
  docScreenshot,
  newPage,
  playerScore,
  redisCommand,
  startServer,
  useStackAndBrowser,
  waitConnState,
  waitFor,
  withDiagnostics,
} from "./harness.mjs";

const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };

/** Opens /admin in a fresh context of `viewport` and signs in. */
async function signedIn(env, viewport, { clock = false } = {}) {
  const page = await newPage(env.browser, { viewport });
  // Playwright's clock: time flows as usual until the test moves it on itself.
  if (clock) await page.clock.install();
  const res = await page.goto(`${env.stack.base}/admin`);
  assert.equal(res.status(), 200);
  // The module's top-level await (the SDK's wasm) may outlast the load event: sign in once its
  // form handler is attached, or the form would be submitted as a plain GET.
  await page.waitForFunction(() => window.__admin);
  await page.fill("#token", ADMIN_TOKEN);
  await page.click("#login-form button[type=submit]");
  await page.waitForSelector("#console:not([hidden])");
  await waitConnState(page, "open");
  return page;
}

/**
 * Waits for the message line `selector` to match `re` while wholly inside the viewport (1 px of
 * slack: layout positions are fractional): the operator reads it where they acted, without
 * scrolling (nothing in the test scrolls the page; the page scrolls a message into view itself).
 * A live update may move the layout for a moment, hence a wait rather than one look.
 */
async function saidInView(page, selector, re) {
  try {
    await page.waitForFunction(
      ([sel, src]) => {
        const el = document.querySelector(sel);
        if (!el || el.hidden || !new RegExp(src).test(el.textContent)) return false;
        const r = el.getBoundingClientRect();
        return r.height > 0 && r.top >= -1 && r.bottom <= window.innerHeight + 1 && r.left >= -1 && r.right <= window.innerWidth + 1;
      },
      [selector, re.source],
      { timeout: 10_000 },
    );
  } catch (e) {
    const where = await page.$eval(selector, (el) => JSON.stringify({ text: el.textContent, hidden: el.hidden, rect: el.getBoundingClientRect(), vh: window.innerHeight, vw: window.innerWidth }));
    throw new Error(`${selector} did not say ${re} in view: ${where}`);
  }
}

/** The page's horizontal overflow: document width beyond the viewport's. */
const overflow = (page) => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);

/**
 * A named player's submission over the page's own WebSocket (a token from /admin/tokens with
 * `name`): games record display names this way. Resolves the answer (`ack` or `rejected`), or
 * the `error` of `hello`.
 */
async function namedSubmit(page, base, board, player, name, points) {
  const { token } = await admin(base, "POST", "/admin/tokens", { player, name });
  return wsHelloSubmit(page, token, board, points);
}

function wsHelloSubmit(page, token, board, points) {
  return page.evaluate(
    ([token, board, points]) =>
      new Promise((resolve, reject) => {
        const ws = new WebSocket(`${location.origin.replace("http", "ws")}/ws`);
        let said = 0;
        setTimeout(() => reject(new Error("no answer in 10 s")), 10_000);
        ws.onmessage = (ev) => {
          const m = JSON.parse(ev.data);
          if (m.type === "welcome" && said === 0) {
            said = 1;
            ws.send(JSON.stringify({ type: "hello", token }));
          } else if (m.type === "welcome" && said === 1) {
            said = 2;
            ws.send(JSON.stringify({ type: "submit", id: `s-${Math.random().toString(36).slice(2)}`, board, points }));
          } else if (m.type === "error" || m.type === "ack" || m.type === "rejected") {
            ws.close();
            resolve(m);
          }
        };
      }),
    [token, board, points],
  );
}

/**
 * The distinct texts of the tournament's time left seen over 2.3 s (sampled every 100 ms) in
 * which the page made no request for the board's tournament; tried up to 3 times (the panel
 * reads the state again every 5 s).
 */
async function countdownAlone(page, board) {
  let asked = 0;
  const count = (r) => r.url().includes(`/v1/boards/${board}/tournament`) && asked++;
  page.on("request", count);
  try {
    for (let i = 0; i < 3; i++) {
      const before = asked;
      const seen = await page.evaluate(
        () =>
          new Promise((resolve) => {
            const texts = new Set();
            const t0 = performance.now();
            const timer = setInterval(() => {
              texts.add(document.getElementById("t-left").textContent);
              if (performance.now() - t0 > 2300) {
                clearInterval(timer);
                resolve(texts.size);
              }
            }, 100);
          }),
      );
      if (asked === before) return seen;
    }
    throw new Error("the page read the tournament in each of 3 windows of 2.3 s");
  } finally {
    page.off("request", count);
  }
}

describe("admin console", { timeout: 240_000 }, () => {
  const env = useStackAndBrowser();
  const pages = [];
  let second = null;
  const diag = () => ({ stack: env.stack, pages });

  test("desktop: sign in, empty states, a board, a live score, a ban, history, a dead letter, charts over two instances", () =>
    withDiagnostics(diag, async () => {
      const base = env.stack.base;
      const BOARD = "console-b";
      const page = await newPage(env.browser, { viewport: DESKTOP });
      pages.push(page);
      const topPlayers = () => page.$$eval("#top-rows tr[data-player]", (trs) => trs.map((tr) => tr.dataset.player));
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

      // A fresh server: every list says it is empty instead of showing bare headers.
      // (--dev makes the board of the 2048 demo, so the board list is never empty here.)
      await page.waitForSelector("#ban-rows tr.empty");
      assert.match(await page.textContent("#ban-rows tr.empty"), /No bans/);
      assert.match(await page.textContent("#audit-rows tr.empty"), /No admin actions yet/);
      assert.match(await page.textContent("#queue-rows tr.empty"), /No queues yet/);
      assert.match(await page.textContent("#season-rows tr.empty"), /Pick a board/);

      // Create a board from the form; it is listed and watched, the message next to the form.
      await page.fill("#board-id", BOARD);
      await page.fill("#board-config", '{"order": "desc", "op": "best"}');
      await page.click("#board-form button[type=submit]");
      await page.waitForSelector(`#boards tr[data-board="${BOARD}"].watched`);
      await saidInView(page, "#board-msg", /created/);
      // The change is among the admin actions, with the key that made it, its time in UTC.
      await page.waitForSelector('#audit-rows tr[data-action="board_put"]');
      assert.match(await page.textContent('#audit-rows tr[data-action="board_put"]'), new RegExp(`\\d\\d:\\d\\d:\\d\\d UTC.*${BOARD}.*admin`));
      const cfg = await admin(base, "GET", `/admin/boards/${BOARD}`);
      assert.equal(cfg.op, "best");
      // The live top of a board with no scores says so.
      assert.equal(await page.isVisible("#top-empty"), true);
      assert.match(await page.textContent("#top-empty"), /No scores yet/);

      // Scores arrive live.
      await addScore(base, BOARD, "honest", 100);
      await addScore(base, BOARD, "cheater", 9000);
      await page.waitForFunction(() => document.querySelectorAll("#top-rows tr[data-player]").length === 2);
      assert.deepEqual(await topPlayers(), ["cheater", "honest"]);

      // A ban stored before until_ms was bounded (2^63 − 1, no date at all): the list still
      // renders, that row with the number as it came.
      const legacy = { player: "legacy", board: BOARD, reason: "old", until_ms: 9223372036854775807n, at_ms: 1 };
      const legacyJson = JSON.stringify(legacy, (_, v) => (typeof v === "bigint" ? `#${v}#` : v)).replace(/"#(\d+)#"/, "$1");
      assert.equal(await redisCommand(env.stack.redis.port, "HSET", `lb:{${BOARD}}:bans`, "legacy", legacyJson), 1);

      // A ban with an end (placed by a tool) shows it, in UTC, within the 5 s refresh.
      const until = Date.now() + 86_400_000;
      await admin(base, "PUT", "/admin/bans/timed", { board: BOARD, until_ms: until });
      const untilText = `${new Date(until).toISOString().slice(0, 16).replace("T", " ")} UTC`;
      await page.waitForSelector('#ban-rows tr[data-player="timed"]', { timeout: 15_000 });
      assert.equal(await page.$eval('#ban-rows tr[data-player="timed"]', (tr) => tr.children[3].textContent), untilText);

      // Ban from the row: the first click only arms the button and asks, in view; the second
      // bans. The row disappears, the ban is listed "until lifted", and the player's next
      // submission is refused.
      await page.fill("#ban-reason", "impossible score");
      const banButton = '#top-rows tr[data-player="cheater"] button[data-action="ban"]';
      await page.click(banButton);
      await saidInView(page, "#top-msg", /Click again to ban cheater/);
      assert.deepEqual((await admin(base, "GET", "/admin/bans")).bans.map((b) => b.player).sort(), ["legacy", "timed"], "one click bans nobody");
      // The live top moves between the two clicks (its rows are drawn anew): the button stays
      // armed, so the operator of a busy board can still confirm.
      await addScore(base, BOARD, "honest", 150);
      await page.waitForFunction(() => /150/.test(document.querySelector('#top-rows tr[data-player="honest"]')?.textContent));
      assert.match(await page.textContent(banButton), /Confirm ban/);
      await page.click(banButton);
      await page.waitForFunction(() => !document.querySelector('#top-rows tr[data-player="cheater"]'));
      await saidInView(page, "#top-msg", /Banned cheater/);
      assert.deepEqual(await topPlayers(), ["honest"]);
      await page.waitForSelector('#ban-rows tr[data-player="cheater"]');
      assert.match(await page.textContent('#ban-rows tr[data-player="cheater"]'), /impossible score\s*until lifted/);
      await page.waitForSelector('#ban-rows tr[data-player="legacy"]');
      assert.match(await page.textContent('#ban-rows tr[data-player="legacy"]'), /old.*9223372036854776000/);
      const refused = await fetch(`${base}/admin/boards/${BOARD}/players/cheater/score`, {
        method: "POST",
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({ points: 1 }),
      });
      assert.equal(refused.status, 403);
      assert.equal((await refused.json()).error.code, "forbidden");

      // The player's history: the accepted submission, in UTC, by the admin key.
      await page.click('#top-rows tr[data-player="honest"] button[data-action="history"]');
      await page.waitForSelector('#history-rows tr[data-action="submit"]');
      assert.match(await page.textContent('#history-rows tr[data-action="submit"]'), /UTC.*by admin/);
      const { bans } = await admin(base, "GET", "/admin/bans");
      assert.deepEqual(bans.map((b) => [b.player, b.reason]), [["cheater", "impossible score"], ["legacy", "old"], ["timed", null]]);

      // A dead letter: a job with one attempt, claimed and failed; retried from the console.
      await admin(base, "POST", "/admin/queues/mail/jobs", { id: "welcome-1", kind: "email", payload: {}, max_attempts: 1 });
      const claimed = await admin(base, "POST", "/admin/queues/mail/claim");
      await admin(base, "POST", `/admin/queues/mail/jobs/welcome-1/nack`, { token: claimed.lease.token });
      await page.waitForFunction(() => {
        const tr = document.querySelector('#queue-rows tr[data-queue="mail"]');
        return tr && tr.children[4].textContent === "1";
      });
      await page.click('#queue-rows tr[data-queue="mail"] button[data-action="dead"]');
      await page.waitForSelector('#dead-rows tr[data-job="welcome-1"]');
      assert.match(await page.textContent('#dead-rows tr[data-job="welcome-1"]'), /UTC/);
      await page.click('#dead-rows tr[data-job="welcome-1"] button[data-action="retry"]');
      await page.waitForFunction(() => {
        const tr = document.querySelector('#queue-rows tr[data-queue="mail"]');
        return tr && tr.children[1].textContent === "1" && tr.children[4].textContent === "0";
      });
      const counts = await admin(base, "GET", "/admin/queues/mail");
      assert.deepEqual([counts.ready, counts.dead], [1, 0]);

      // Charts over every instance: a second server process on the same Redis. The page talks
      // to the first; what is submitted through the second shows in its charts.
      second = await startServer({ redisUrl: env.stack.redis.url });
      await page.waitForFunction(() => document.getElementById("chart-instances").dataset.count === "2", null, { timeout: 20_000 });
      const before = await page.evaluate(() => window.__admin.series.subs.get("submissions/s")?.length ?? 0);
      assert.ok(before >= 1);
      const through2 = (path, body) =>
        fetch(`${second.base}${path}`, {
          method: "POST",
          headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
          body: JSON.stringify(body),
        });
      // Bounded: 20 accepted submissions and 5 refused (the banned player) on the second.
      for (let i = 0; i < 20; i++) assert.equal((await through2(`/admin/boards/${BOARD}/players/p2-${i}/score`, { points: i })).status, 200);
      for (let i = 0; i < 5; i++) assert.equal((await through2(`/admin/boards/${BOARD}/players/cheater/score`, { points: 1 })).status, 403);
      await page.waitForFunction(() => Math.max(...window.__admin.series.subs.get("submissions/s").map((p) => p.v)) > 0, null, { timeout: 20_000 });
      await page.waitForFunction(() => Math.max(0, ...(window.__admin.series.rejections.get("forbidden") ?? []).map((p) => p.v)) > 0, null, { timeout: 20_000 });
      // The legend names the codes that occurred and no other; the axes say the time in UTC.
      assert.deepEqual(await page.$$eval("#chart-legend span[data-code]", (s) => s.map((e) => e.dataset.code)), ["forbidden"]);
      const axis = await page.$eval("#chart-subs", (c) => [c.dataset.from, c.dataset.to]);
      assert.match(axis.join(" "), /^\d\d:\d\d:\d\d \d\d:\d\d:\d\d$/);
      assert.match(await page.textContent("#charts-source"), /every instance/);
      await page.waitForFunction(() => Number(document.getElementById("chart-sockets").dataset.last) >= 1);

      // Sign out forgets the token.
      await page.click("#sign-out");
      await page.waitForSelector("#login:not([hidden])");
      assert.equal(await page.evaluate(() => sessionStorage.getItem("scorecast.adminToken")), null);
      await page.context().close();
    }));

  for (const [label, viewport, shot] of [
    ["desktop", DESKTOP, "admin-console"],
    ["phone", PHONE, "admin-console-phone"],
  ]) {
    test(`${label} ${viewport.width}×${viewport.height}: find any player, revoke, remove, seasons and rollover, delete a board`, () =>
      withDiagnostics(diag, async () => {
        const base = env.stack.base;
        const board = `find-${label}`;
        await admin(base, "PUT", `/admin/boards/${board}`, { reset: "never" });
        // 40 players by admin score (p00 … p39); two named players below all of them.
        for (let i = 0; i < 40; i++) await addScore(base, board, `p${String(i).padStart(2, "0")}`, 1000 + i);
        const page = await signedIn(env, viewport);
        pages.push(page);
        assert.equal((await namedSubmit(page, base, board, "zed-1", "Zoë Queen", 5)).type, "ack");
        const { token: zedToken } = await admin(base, "POST", "/admin/tokens", { player: "zed-2", name: "queenie" });
        assert.equal((await wsHelloSubmit(page, zedToken, board, 7)).type, "ack");

        await page.click(`#boards tr[data-board="${board}"] button[data-action="watch"]`);
        await page.waitForSelector("#top-rows tr[data-player]");
        assert.equal(await page.$$eval("#top-rows tr[data-player]", (t) => t.length), 20);

        // Found by id: p03 ranks 37th, far out of the live top.
        await page.fill("#find-q", "p03");
        await page.click("#find-form button[type=submit]");
        await page.waitForSelector('#find-rows tr[data-player="p03"]');
        assert.match(await page.textContent('#find-rows tr[data-player="p03"]'), /#37\s*p03\s*1,003\s*—/);
        await saidInView(page, "#find-msg", /1 player found/);

        // Found by a part of the name, in any case: both named players, by rank, with names.
        await page.fill("#find-q", "QUEEN");
        await page.click("#find-form button[type=submit]");
        await page.waitForFunction(() => document.querySelectorAll("#find-rows tr[data-player]").length === 2);
        assert.deepEqual(await page.$$eval("#find-rows tr[data-player]", (t) => t.map((tr) => tr.dataset.player)), ["zed-2", "zed-1"]);
        assert.match(await page.textContent('#find-rows tr[data-player="zed-1"]'), /Zoë Queen \(zed-1\)/);

        // Ban from the search result (two clicks): the Ban column says until when.
        const row = (p) => `#find-rows tr[data-player="${p}"]`;
        await page.click(`${row("zed-1")} button[data-action="ban"]`);
        await page.click(`${row("zed-1")} button[data-action="ban"]`);
        await saidInView(page, "#find-msg", /Banned zed-1/);
        await page.waitForFunction((sel) => /until lifted/.test(document.querySelector(sel)?.children[3].textContent), row("zed-1"));

        // Revoke zed-2's tokens: the first click changes nothing (the token still works), the
        // second revokes; the token zed-2 held is refused from then on.
        await page.click(`${row("zed-2")} button[data-action="revoke"]`);
        await saidInView(page, "#find-msg", /Click again to revoke/);
        assert.equal((await wsHelloSubmit(page, zedToken, board, 8)).type, "ack", "one click revokes nothing");
        await page.click(`${row("zed-2")} button[data-action="revoke"]`);
        await saidInView(page, "#find-msg", /Revoked zed-2's tokens issued before \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC/);
        const after = await wsHelloSubmit(page, zedToken, board, 9);
        assert.deepEqual([after.type, after.code], ["error", "unauthorized"]);
        const audit = await admin(base, "GET", "/admin/audit?limit=5");
        assert.ok(audit.entries.some((e) => e.action === "tokens_revoke" && e.player === "zed-2"));
        // The charts at this size: both server processes reporting, the time axis in UTC, every
        // chart inside the screen.
        await page.waitForFunction(() => document.getElementById("chart-instances").dataset.count === "2", null, { timeout: 20_000 });
        assert.match((await page.$eval("#chart-subs", (c) => c.dataset.to)) ?? "", /^\d\d:\d\d:\d\d$/);
        for (const id of ["chart-subs", "chart-rejections", "chart-sockets"]) {
          const right = await page.$eval(`#${id}`, (c) => c.getBoundingClientRect().right);
          assert.ok(right <= viewport.width, `#${id} ends at ${right} px`);
        }
        // The page as an operator uses it: the live top, a search, a ban, a revocation.
        assert.ok((await page.evaluate(() => document.documentElement.scrollWidth)) <= viewport.width, `overflow ${await overflow(page)} px`);
        await docScreenshot(page, shot);

        // Remove a score: armed by the first click (the score stays), removed by the second.
        await page.fill("#find-q", "p03");
        await page.click("#find-form button[type=submit]");
        await page.waitForSelector(`${row("p03")} button[data-action="remove"]`);
        await page.click(`${row("p03")} button[data-action="remove"]`);
        await saidInView(page, "#find-msg", /Click again to remove p03's score/);
        assert.equal(await playerScore(base, board, "p03"), 1003, "one click removes nothing");
        await page.click(`${row("p03")} button[data-action="remove"]`);
        await saidInView(page, "#find-msg", /Removed p03's score/);
        assert.equal(await playerScore(base, board, "p03"), null);
        // The search is run again: p03 has no score any more, so is no longer listed.
        await page.waitForFunction(() => !document.querySelector('#find-rows tr[data-player="p03"]'));

        // Seasons: one so far, its start in UTC. A rollover asks first (nothing changes), then
        // starts the new season; the past one keeps its standings.
        await page.waitForSelector("#season-rows tr[data-season]");
        assert.match(await page.textContent("#season-rows"), /\(current\)\s*\d{4}-\d\d-\d\d \d\d:\d\d UTC/);
        const seasonsBefore = (await admin(base, "GET", `/v1/boards/${board}/seasons`)).seasons;
        assert.equal(seasonsBefore.length, 1);
        const past = seasonsBefore[0].season;
        await page.fill("#rollover-season", "s2");
        await page.click("#rollover-form button");
        await saidInView(page, "#seasons-msg", /Click again to end the current season/);
        assert.equal((await admin(base, "GET", `/v1/boards/${board}/seasons`)).seasons.length, 1, "one click rolls nothing over");
        await page.click("#rollover-form button");
        await saidInView(page, "#seasons-msg", new RegExp(`Season s2 of ${board} started at .* UTC; ${past} ended`));
        await page.waitForSelector('#season-rows tr[data-season="s2"]');
        assert.match(await page.textContent('#season-rows tr[data-season="s2"]'), /current/);
        await page.click(`#season-rows tr[data-season="${past}"] button[data-action="standings"]`);
        await page.waitForSelector("#standings-rows tr[data-player]");
        assert.equal(await page.$eval("#standings-rows tr[data-player]", (tr) => tr.dataset.player), "p39");
        assert.match(await page.textContent("#standings-rows tr[data-player]"), /#1\s*p39\s*1,039/);
        // The new season is empty: said so.
        await page.click('#season-rows tr[data-season="s2"] button[data-action="standings"]');
        await page.waitForSelector("#standings-rows tr.empty");
        assert.match(await page.textContent("#standings-rows tr.empty"), /No scores in season s2/);

        // No horizontal scroll at this size, with the seasons and standings shown too.
        assert.ok((await page.evaluate(() => document.documentElement.scrollWidth)) <= viewport.width, `overflow ${await overflow(page)} px`);

        // Delete the board: armed first (the board stays), deleted on the second click.
        const del = `#boards tr[data-board="${board}"] button[data-action="delete"]`;
        await page.click(del);
        await saidInView(page, "#board-msg", new RegExp(`Click again to delete board ${board}`));
        assert.equal((await admin(base, "GET", `/admin/boards/${board}`)).reset, "never", "one click deletes nothing");
        await page.click(del);
        await saidInView(page, "#board-msg", new RegExp(`Board ${board} deleted`));
        await page.waitForFunction((b) => !document.querySelector(`#boards tr[data-board="${b}"]`), board);
        await page.context().close();
      }));
  }

  for (const [label, viewport, shot] of [
    ["desktop", DESKTOP, "admin-console-tournament"],
    ["phone", PHONE, "admin-console-tournament-phone"],
  ]) {
    test(`${label} ${viewport.width}×${viewport.height}: a tournament followed live from scheduled to its final standings`, () =>
      withDiagnostics(diag, async () => {
        const base = env.stack.base;
        const board = `cup-${label}`;
        const plain = `plain-${label}`;
        await admin(base, "PUT", `/admin/boards/${plain}`, {});
        // An hour ahead at first, so that the page sees it scheduled however slow the machine;
        // moved to seconds ahead once the players have joined (joining is open before the start).
        const schedule = (start, end) =>
          admin(base, "PUT", `/admin/boards/${board}`, {
            reset: "never",
            op: "best",
            tournament: { schedule: { start_ms: start, end_ms: end }, join_required: true, max_size: 30, max_attempts: 2 },
          });
        const later = Date.now() + 3_600_000;
        await schedule(later, later + 60_000);
        const page = await signedIn(env, viewport);
        pages.push(page);

        // A board without a tournament says so.
        await page.click(`#boards tr[data-board="${plain}"] button[data-action="watch"]`);
        await page.waitForFunction((b) => new RegExp(`${b} has no tournament`).test(document.getElementById("tournament-empty").textContent), plain);
        assert.equal(await page.isHidden("#tournament-facts"), true);

        // The tournament before its start: scheduled, opening in seconds, its rules; no entrants.
        await page.click(`#boards tr[data-board="${board}"] button[data-action="watch"]`);
        await page.waitForSelector('#t-state[data-state="upcoming"]');
        assert.equal(await page.textContent("#t-state"), "scheduled");
        assert.match(await page.textContent("#t-left"), /^opens in (59:[0-5]\d|01:00:00) \(at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\)$/);
        assert.match(await page.textContent("#t-schedule"), /UTC → .* UTC$/);
        assert.equal(await page.textContent("#t-entrants"), "0 / 30");
        assert.equal(await page.textContent("#t-attempts"), "2 per player");
        assert.match(await page.textContent("#t-join"), /^required/);
        assert.match(await page.textContent("#entrant-rows tr.empty"), /No entrants yet/);
        // The countdown is live and counted in the page: over 2.3 s in which the page asked the
        // server nothing about the tournament, it showed at least two different times left.
        assert.ok((await countdownAlone(page, board)) >= 2, "the countdown moves without a request");

        // 22 players join (bounded); the panel counts them within its 5 s refresh and lists
        // them in the order they joined, 20 at first, the rest on "More entrants".
        const players = Array.from({ length: 22 }, (_, i) => `j${String(i).padStart(2, "0")}`);
        const tokens = {};
        for (const p of players) {
          tokens[p] = (await admin(base, "POST", "/admin/tokens", { player: p })).token;
          const r = await fetch(`${base}/v1/boards/${board}/join`, { method: "POST", headers: { authorization: `Bearer ${tokens[p]}` } });
          assert.equal(r.status, 200, await r.text());
        }
        await page.waitForFunction(() => document.getElementById("t-entrants").textContent === "22 / 30", null, { timeout: 10_000 });
        await page.waitForFunction(() => document.querySelectorAll("#entrant-rows tr[data-player]").length === 20);
        assert.deepEqual(await page.$$eval("#entrant-rows tr[data-player]", (t) => t.map((tr) => tr.dataset.player)), players.slice(0, 20));
        assert.match(await page.textContent('#entrant-rows tr[data-player="j00"]'), /^1\s*j00\s*\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\s*0$/);
        await page.click("#entrants-more");
        await saidInView(page, "#tournament-msg", /22 of 22 entrants shown/);
        assert.deepEqual(await page.$$eval("#entrant-rows tr[data-player]", (t) => t.map((tr) => tr.dataset.player)), players);
        assert.equal(await page.isHidden("#entrants-more"), true);

        // Now it opens in 3 s and closes 5 s later; the panel reads the new dates by itself.
        const start = Date.now() + 3_000;
        const end = start + 5_000;
        await schedule(start, end);
        await page.waitForFunction(() => /opens in 00:0\d/.test(document.getElementById("t-left").textContent) || document.getElementById("t-state").dataset.state !== "upcoming", null, { timeout: 10_000 });

        // Running: the state turns by itself at the start; two players score, their attempts show.
        await page.waitForSelector('#t-state[data-state="running"]', { timeout: 15_000 });
        assert.match(await page.textContent("#t-left"), /^00:0\d \(closes at .* UTC\)$/);
        await addScore(base, board, "j05", 50);
        await addScore(base, board, "j05", 70);
        await addScore(base, board, "j11", 60);
        await page.waitForFunction(() => document.querySelector('#entrant-rows tr[data-player="j05"]')?.children[3].textContent === "2", null, { timeout: 10_000 });
        assert.equal(await page.$eval('#entrant-rows tr[data-player="j11"]', (tr) => tr.children[3].textContent), "1");
        assert.equal(await page.isHidden("#final-box"), true, "no final standings before the end");

        // Ended: the end job freezes the standings and the panel shows them, by rank.
        await page.waitForSelector('#t-state[data-state="ended"]', { timeout: 20_000 });
        await page.waitForSelector("#final-box:not([hidden]) #final-rows tr[data-player]", { timeout: 20_000 });
        assert.deepEqual(await page.$$eval("#final-rows tr[data-player]", (t) => t.map((tr) => tr.dataset.player)), ["j05", "j11"]);
        assert.match(await page.textContent('#final-rows tr[data-player="j05"]'), /^#1\s*j05\s*70$/);
        assert.match(await page.textContent("#final-total"), /^2 players in the final standings/);
        await page.waitForFunction(() => /final standings frozen at .* UTC/.test(document.getElementById("t-state").textContent));
        assert.match(await page.textContent("#t-left"), /^none: closed at .* UTC$/);

        assert.ok((await page.evaluate(() => document.documentElement.scrollWidth)) <= viewport.width, `overflow ${await overflow(page)} px`);
        // The docs show the panel itself.
        await docScreenshot(page.locator("#tournament-panel"), shot);
        await page.context().close();
      }));
  }

  for (const [label, viewport] of [
    ["desktop", DESKTOP],
    ["phone", PHONE],
  ]) {
    test(`${label} ${viewport.width}×${viewport.height}: a bucketed board's buckets, paged, and the top of one`, () =>
      withDiagnostics(diag, async () => {
        const base = env.stack.base;
        const board = `lg-${label}`;
        const plain = `lgplain-${label}`;
        await admin(base, "PUT", `/admin/boards/${plain}`, {});
        await admin(base, "PUT", `/admin/boards/${board}`, { op: "best", bucket_size: 2, submit_limit: null });
        // 43 players in order: buckets 1–21 of two, bucket 22 holding q42 (bounded loop).
        const ids = Array.from({ length: 43 }, (_, i) => `q${String(i).padStart(2, "0")}`);
        for (const [i, p] of ids.entries()) await addScore(base, board, p, 100 + i);
        const page = await signedIn(env, viewport);
        pages.push(page);

        await page.click(`#boards tr[data-board="${plain}"] button[data-action="watch"]`);
        await page.waitForFunction((b) => new RegExp(`${b} has no buckets`).test(document.getElementById("buckets-empty").textContent), plain);
        assert.equal(await page.isHidden("#buckets-box"), true);

        await page.click(`#boards tr[data-board="${board}"] button[data-action="watch"]`);
        await page.waitForSelector('#buckets-summary[data-count="22"]');
        // The live top of a bucketed board is the whole board's (ranks over every bucket).
        await page.waitForFunction(() => document.querySelectorAll("#top-rows tr[data-player]").length === 20);
        assert.deepEqual(await page.$eval("#top-rows tr[data-player]", (tr) => [tr.dataset.player, tr.children[0].textContent]), ["q42", "#1"]);
        assert.equal(await page.textContent("#buckets-summary"), "22 buckets of up to 2 in season all; bucket 22 is filling (1 placed).");
        const listed = () => page.$$eval("#bucket-rows tr[data-bucket]", (t) => t.map((tr) => [tr.dataset.bucket, tr.children[1].textContent]));
        const first = await listed();
        assert.equal(first.length, 20);
        assert.deepEqual(first[0], ["1", "2"]);
        await page.click("#buckets-more");
        await saidInView(page, "#buckets-msg", /22 of 22 buckets shown/);
        assert.deepEqual((await listed()).slice(19), [["20", "2"], ["21", "2"], ["22", "1"]]);
        assert.equal(await page.isHidden("#buckets-more"), true);

        // The top of bucket 2, ranked within it.
        await page.click('#bucket-rows tr[data-bucket="2"] button[data-action="bucket-top"]');
        await page.waitForSelector('#bucket-top-box[data-bucket="2"]:not([hidden])');
        await saidInView(page, "#buckets-msg", /Bucket 2: 2 players with a score/);
        const bucketTop = () => page.$$eval("#bucket-top-rows tr[data-player]", (t) => t.map((tr) => tr.textContent));
        assert.deepEqual(await bucketTop(), ["#1q03103", "#2q02102"]);

        // A bucket that does not exist is said so where it was asked for, and the view stays.
        await page.fill("#bucket-n", "23");
        await page.click("#bucket-form button[type=submit]");
        await saidInView(page, "#buckets-msg", /Pick a bucket from 1 to 22/);
        assert.equal(await page.getAttribute("#bucket-top-box", "data-bucket"), "2");
        // By number: bucket 22, and then it fills and bucket 23 opens, shown by the 5 s refresh.
        await page.fill("#bucket-n", "22");
        await page.click("#bucket-form button[type=submit]");
        await page.waitForSelector('#bucket-top-box[data-bucket="22"]');
        assert.deepEqual(await bucketTop(), ["#1q42142"]);
        await addScore(base, board, "q43", 500);
        await addScore(base, board, "q44", 1);
        await page.waitForSelector('#buckets-summary[data-count="23"]', { timeout: 10_000 });
        await page.waitForFunction(() => document.querySelectorAll("#bucket-top-rows tr[data-player]").length === 2, null, { timeout: 10_000 });
        assert.deepEqual(await bucketTop(), ["#1q43500", "#2q42142"]);
        await page.waitForFunction(() => document.querySelector("#top-rows tr[data-player]")?.dataset.player === "q43", null, { timeout: 10_000 });
        assert.equal(await page.isHidden("#top-msg"), true, "no error in the live top");

        assert.ok((await page.evaluate(() => document.documentElement.scrollWidth)) <= viewport.width, `overflow ${await overflow(page)} px`);
        if (label === "desktop") await docScreenshot(page.locator("#buckets-panel"), "admin-console-buckets");
        await page.context().close();
      }));
  }

  test("a bucketed board's whole top is read only while the console is in view", () =>
    withDiagnostics(diag, async () => {
      const base = env.stack.base;
      const board = "lg-hidden";
      await admin(base, "PUT", `/admin/boards/${board}`, { op: "best", bucket_size: 2, submit_limit: null });
      for (const [i, p] of ["h0", "h1", "h2"].entries()) await addScore(base, board, p, 10 + i);
      const page = await signedIn(env, DESKTOP, { clock: true });
      pages.push(page);
      const isTopRead = (r) => new URL(r.url()).pathname === `/admin/boards/${board}/top`;
      let reads = 0;
      page.on("request", (r) => {
        if (isTopRead(r)) reads += 1;
      });
      await page.click(`#boards tr[data-board="${board}"] button[data-action="watch"]`);
      await page.waitForFunction(() => document.querySelector("#top-rows tr[data-player]")?.dataset.player === "h2");
      // In view, the next read comes within 10 s (answered before the score below changes).
      const answered = page.waitForResponse(isTopRead);
      await page.clock.runFor(10_000);
      await answered;

      // Hidden (a background tab): 35 s pass and nothing is read, though a score changed.
      const setHidden = (hidden) =>
        page.evaluate((h) => {
          Object.defineProperty(document, "hidden", { configurable: true, get: () => h });
          Object.defineProperty(document, "visibilityState", { configurable: true, get: () => (h ? "hidden" : "visible") });
          document.dispatchEvent(new Event("visibilitychange"));
        }, hidden);
      await setHidden(true);
      await addScore(base, board, "h3", 99);
      const before = reads;
      await page.clock.runFor(35_000);
      // A request the page starts after the timers ran is seen after any they started.
      const sentinel = page.waitForRequest((r) => r.url().endsWith("/healthz?sentinel"));
      await page.evaluate(() => fetch("/healthz?sentinel").catch(() => {}));
      await sentinel;
      assert.equal(reads, before, "a hidden console read the whole top");
      assert.equal(await page.$eval("#top-rows tr[data-player]", (tr) => tr.dataset.player), "h2");

      // Shown again: read at once, without waiting for the next 10 s.
      const next = page.waitForRequest(isTopRead);
      await setHidden(false);
      await next;
      await page.waitForFunction(() => document.querySelector("#top-rows tr[data-player]")?.dataset.player === "h3");
      await page.context().close();
    }));

  for (const [label, viewport] of [
    ["desktop", DESKTOP],
    ["phone", PHONE],
  ]) {
    test(`${label} ${viewport.width}×${viewport.height}: a league's seasons and the moves between its tiers at a season's end`, () =>
      withDiagnostics(diag, async () => {
        const base = env.stack.base;
        const id = `wk-${label}`;
        const [bronze, silver, gold] = ["bz", "sv", "gd"].map((t) => `${t}-${label}`);
        await admin(base, "PUT", `/admin/leagues/${id}`, {
          tiers: [bronze, silver, gold],
          bucket_size: 3,
          promote: 1,
          relegate: 1,
          reset: "daily",
          board: { op: "best", submit_limit: null },
        });
        // Four new players on the lowest tier: bucket 1 holds a1–a3, bucket 2 a4.
        for (const [p, pts] of [["a1", 10], ["a2", 30], ["a3", 20], ["a4", 5]]) await addScore(base, bronze, `${p}-${label}`, pts);
        const { seasons } = await admin(base, "GET", `/v1/boards/${bronze}/seasons`);
        const season = seasons.find((s) => s.current).season;
        const page = await signedIn(env, viewport);
        pages.push(page);

        await page.waitForSelector(`#league-rows tr[data-league="${id}"]`);
        assert.match(await page.textContent(`#league-rows tr[data-league="${id}"]`), new RegExp(`${bronze} → ${silver} → ${gold}\\s*daily; buckets of 3; top 1 up, last 1 down`));
        await page.click(`#league-rows tr[data-league="${id}"] button[data-action="league-seasons"]`);
        await page.waitForSelector(`#league-season-rows tr[data-season="${season}"]`);
        assert.match(await page.textContent(`#league-season-rows tr[data-season="${season}"]`), /\(current\)\s*\d{4}-\d\d-\d\d \d\d:\d\d UTC/);
        // Before the season's end: no moves, said so where the operator asked.
        await page.click(`#league-season-rows tr[data-season="${season}"] button[data-action="league-moves"]`);
        await saidInView(page, "#leagues-msg", new RegExp(`No moves for season ${season} of ${id} yet`));
        assert.equal(await page.isHidden("#moves-box"), true);

        // The season's end: its league.close job, run now through Scorecast's own queue as the
        // calendar would run it at midnight (UTC).
        await admin(base, "POST", "/admin/queues/scorecast/jobs", {
          id: `league-close-now-${label}`,
          kind: "league.close",
          payload: { league: id, season, end_ms: Date.now() },
          max_attempts: 1,
        });
        await waitFor(
          async () => {
            const r = await fetch(`${base}/admin/leagues/${id}/moves?season=${season}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
            return r.ok && (await r.json()).closed_ms;
          },
          { timeoutMs: 20_000, what: "the league's moves applied" },
        );
        await page.click(`#league-season-rows tr[data-season="${season}"] button[data-action="league-moves"]`);
        await saidInView(page, "#leagues-msg", new RegExp(`Season ${season} of ${id}: 2 moves`));
        assert.match(await page.textContent("#moves-summary"), new RegExp(`^2 moves, applied to every tier at .* UTC\\. ${bronze}: 2 up, 0 down; ${silver}: 0 up, 0 down; ${gold}: 0 up, 0 down\\.$`));
        const moved = () => page.$$eval("#move-rows tr[data-player]", (t) => t.map((tr) => [...tr.children].map((td) => td.textContent)));
        // The first of each bucket moves up: a2 (bucket 1's first), a4 (alone in bucket 2).
        assert.deepEqual(await moved(), [
          [`a2-${label}`, `↑ ${bronze} → ${silver}`, "#1", "#1"],
          [`a4-${label}`, `↑ ${bronze} → ${silver}`, "#2", "#1"],
        ]);
        // One tier's movements: silver received both; gold saw none.
        await page.selectOption("#moves-tier", "1");
        assert.equal((await moved()).length, 2);
        await page.selectOption("#moves-tier", "2");
        assert.match(await page.textContent("#move-rows tr.empty"), new RegExp(`Nobody left or reached ${gold}`));
        await page.selectOption("#moves-tier", "");

        assert.ok((await page.evaluate(() => document.documentElement.scrollWidth)) <= viewport.width, `overflow ${await overflow(page)} px`);
        if (label === "desktop") await docScreenshot(page.locator("#leagues-panel"), "admin-console-leagues");
        await page.context().close();
      }));
  }

  after(() => second?.stop());
});
