// The 2048 page (`/play`) in headless Chromium. On the demo board `game-2048` (verified by the
// built-in `2048` validator): guest login starts a run, the game (the Rust rules as wasm) plays
// from the run's seed, the move log is checkpointed with `submitProof`, and the board shows the
// score the server computed; cheats from the console are refused. On boards without a
// validator the page submits each merge's points.

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import {
  addScore,
  dumpKeys,
  findMergingMove,
  get,
  newPage,
  playerScore,
  putBoard,
  redisCommand,
  screenshot,
  useStackAndBrowser,
  waitConnState,
  waitFor,
  withDiagnostics,
} from "./harness.mjs";

const BOARD = "game-2048"; // created by --dev, with the validator `2048`
const CHECKPOINT_EVERY_MS = 1000; // web/app/play.js

/** Every frame the page sends over its WebSockets, parsed, with the time it was seen. */
function recordFrames(page) {
  const frames = [];
  page.on("websocket", (ws) =>
    ws.on("framesent", ({ payload }) => {
      try {
        frames.push({ at: Date.now(), ...JSON.parse(payload) });
      } catch {
        // not JSON: not ours to check here
      }
    }),
  );
  return frames;
}

/**
 * Waits until the page's module has run to its end, sign-in form handler included: its top-level
 * await (the SDK's wasm and first connection) may outlast the load event. "Play as guest" stays
 * disabled until then (a click before the handler would submit the form as a plain GET, which
 * reloads the page without its `?board=`): the test that says so checks it.
 */
async function pageReady(page) {
  await page.waitForFunction(() => window.__scorecast, null, { timeout: 15_000 });
}

/** Signs in as guest-<name> through the form; waits until the page knows the board's mode. */
async function signIn(page, name, mode = "verified") {
  await pageReady(page);
  await page.fill("#guest-name", name);
  await page.click("#guest-login");
  await page.waitForFunction(
    ([p, m]) => window.__scorecast.sc.player === p && window.__scorecast.mode === m && (m !== "verified" || window.__scorecast.run),
    [`guest-${name}`, mode],
    { timeout: 10_000 },
  );
}

/**
 * Presses arrow keys (a fixed cycle) until `done(state)` or the game ends; at most `max` presses.
 * Each key is held 50 ms, a person's pace: the `2048` validator refuses a log of more than 25
 * moves a second (plus a burst of 10) as a script's.
 */
async function pressKeys(page, done, max = 400) {
  await page.focus("#grid");
  const keys = ["ArrowLeft", "ArrowDown", "ArrowRight", "ArrowDown"];
  const read = () =>
    page.evaluate(() => {
      const g = window.__scorecast.game;
      return { score: g.score, moves: g.moves, over: g.over };
    });
  let s = await read();
  for (let i = 0; i < max && !s.over && !done(s, i); i++) {
    await page.keyboard.press(keys[i % keys.length], { delay: 50 });
    s = await read();
  }
  return s;
}

/** Plays until the server holds a verified score > 0 equal to the game's; returns that score. */
async function playUntilCheckpointed(page, base, player) {
  const s = await pressKeys(page, (st) => st.score > 0 && st.moves >= 6);
  assert.ok(s.score > 0, "the keyboard moves merged tiles");
  await waitFor(async () => (await playerScore(base, BOARD, player)) === (await page.evaluate(() => window.__scorecast.game.score)), {
    what: `${player}'s verified score to reach the game's`,
  });
  return page.evaluate(() => window.__scorecast.game.score);
}

const fromBase64 = (b64) => Buffer.from(b64, "base64").toString("latin1");

describe("2048 page", { timeout: 180_000 }, () => {
  const env = useStackAndBrowser();
  let page;
  const diag = () => ({ stack: env.stack, pages: [page] });

  test("sign-in starts a run, its checkpoints are verified, the board shows the game's score", () =>
    withDiagnostics(diag, async () => {
      const base = env.stack.base;
      const name = "ann";
      const player = `guest-${name}`;

      page = await newPage(env.browser);
      const frames = recordFrames(page);
      await page.addInitScript(() => {
        window.__acks = [];
      });
      const res = await page.goto(`${base}/play`);
      assert.equal(res.status(), 200);
      await waitConnState(page, "open");
      await page.evaluate(() =>
        window.__scorecast.sc.on("message", (m) => m.type === "ack" && window.__acks.push(m)),
      );
      // The page's rules are the wasm module, not a JavaScript copy.
      const scripts = await page.evaluate(() => performance.getEntriesByType("resource").map((e) => new URL(e.name).pathname));
      assert.ok(scripts.includes("/game/pkg/game2048_bg.wasm"), scripts.join(" "));
      assert.ok(!scripts.some((p) => p.endsWith("/game2048.js") && !p.startsWith("/game/pkg/")), scripts.join(" "));
      await screenshot(page, "play-1-signed-out");

      await signIn(page, name);
      const run = await page.evaluate(() => window.__scorecast.run);
      assert.equal(typeof run.run, "string");
      assert.ok(Number.isInteger(run.seed) && run.seed >= 0 && run.seed < 2 ** 32, JSON.stringify(run));
      assert.ok(run.expires_ms > run.started_ms, JSON.stringify(run));
      // The game is the opening of the server's seed (a fresh game from that seed, same module),
      // and the state crosses from Rust as a plain object with the fields the page reads.
      const { opening, state } = await page.evaluate(async (seed) => {
        const { Game2048 } = await import("/game/pkg/game2048.js");
        const g = new Game2048(seed);
        return { opening: g.state(), state: g.play("left") };
      }, run.seed);
      assert.deepEqual(Object.keys(opening).sort(), ["cells", "gained", "maxTile", "moved", "moves", "over", "score"]);
      assert.equal(opening.cells.length, 16);
      assert.equal(opening.cells.filter((v) => v !== 0).length, 2);
      assert.deepEqual([opening.score, opening.moves, opening.moved, opening.over], [0, 0, false, false]);
      assert.equal(opening.maxTile, Math.max(...opening.cells));
      assert.equal(state.moves, state.moved ? 1 : 0);
      assert.deepEqual(await page.evaluate(() => window.__scorecast.game.cells), opening.cells);
      assert.equal(await page.evaluate(() => window.__scorecast.game.seed), run.seed);
      assert.deepEqual(
        frames.filter((f) => f.type === "start_run").map((f) => f.board),
        [BOARD],
        "one run started, at sign-in",
      );

      // Play with the keyboard for at least 2.5 s of merges (so the throttle is exercised).
      const started = Date.now();
      const s = await pressKeys(page, (st, i) => st.score > 0 && i >= 6 && Date.now() - started > 2500, 1000);
      assert.ok(s.score > 0, "the keyboard moves merged tiles");
      const gameScore = await page.evaluate(() => window.__scorecast.game.score);

      // The server replays the log and keeps that score: read straight from the server.
      await waitFor(async () => (await playerScore(base, BOARD, player)) === gameScore, {
        what: `the verified score ${gameScore}`,
      });
      await page.waitForFunction(() => window.__scorecast.sc.pendingCount === 0, null, { timeout: 10_000 });
      const proofs = frames.filter((f) => f.type === "proof");
      assert.ok(proofs.length >= 1, "at least one checkpoint");
      assert.equal(frames.filter((f) => f.type === "submit").length, 0, "no plain points on a verified board");
      const log = await page.evaluate(() => String.fromCharCode(...window.__scorecast.game.moveLog()));
      assert.equal(log.length, s.moves, "the log holds the moves that moved");
      for (const p of proofs) {
        assert.equal(p.board, BOARD);
        assert.equal(p.run, run.run);
        assert.ok(log.startsWith(fromBase64(p.proof)), "each checkpoint is the log so far");
      }
      // Throttled: checkpoints at least a second apart (100 ms margin for when frames are seen),
      // but for the one sent at once when the game ends.
      const throttled = s.over ? proofs.slice(0, -1) : proofs;
      for (let i = 1; i < throttled.length; i++) {
        const gap = throttled[i].at - throttled[i - 1].at;
        assert.ok(gap >= CHECKPOINT_EVERY_MS - 100, `checkpoints ${gap} ms apart`);
      }
      const acks = await page.evaluate(() => window.__acks);
      assert.ok(acks.length >= 1 && acks.every((a) => a.board === BOARD), JSON.stringify(acks));

      const fmt = (n) => page.evaluate((n) => import("/sdk/scorecast.js").then((m) => m.formatThousands(n)), n);
      const expectedScore = await fmt(gameScore);
      await page.waitForFunction((t) => document.getElementById("board-score").textContent === t, expectedScore, {
        timeout: 10_000,
      });
      assert.equal(await page.textContent("#game-score"), expectedScore);
      await page.waitForFunction(
        (t) => document.getElementById("last-result").textContent.includes(`board score ${t} `),
        expectedScore,
        { timeout: 10_000 },
      );
      assert.match(await page.textContent("#last-result"), /^verified /);

      // The leaderboard page shows the same verified score.
      const lb = await newPage(env.browser);
      await lb.goto(`${base}/?board=${BOARD}`);
      await waitConnState(lb, "open");
      await lb.waitForFunction(
        ([p, n]) => document.querySelector(`#rows tr[data-player="${p}"] .score`)?.dataset.score === String(n),
        [player, gameScore],
        { timeout: 10_000 },
      );
      await screenshot(lb, "play-2b-leaderboard");
      await lb.context().close();

      // Live rank (`me`) and neighbours (`around`).
      await page.waitForFunction(() => document.getElementById("my-rank").textContent === "#1", null, {
        timeout: 10_000,
      });
      await page.waitForSelector(`#around [data-player="${player}"]`, { timeout: 10_000 });
      assert.equal(await page.isHidden("#around-empty"), true);
      await screenshot(page, "play-2-after-merges");

      // Someone else overtakes (a score set by the admin API, the game server's authority): the
      // `me` view pushes the new rank, `around` lists them above.
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
      await page.context().close();
    }));

  test("console cheats: plain points are refused forbidden, forged proofs are refused, nothing changes", () =>
    withDiagnostics(diag, async () => {
      const base = env.stack.base;
      const player = "guest-eve";
      page = await newPage(env.browser);
      await page.goto(`${base}/play`);
      await waitConnState(page, "open");
      await signIn(page, "eve");
      const score = await playUntilCheckpointed(page, base, player);
      await page.waitForFunction(() => window.__scorecast.sc.pendingCount === 0, null, { timeout: 10_000 });
      const before = await dumpKeys(env.stack.redis.port);

      // What a player could paste into the console: the page's token, a WebSocket of their own,
      // and a submission of made-up points.
      const answer = await page.evaluate(async (board) => {
        const token = localStorage.getItem("scorecast.token");
        const url = new URL("/ws", location.href);
        url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
        const ws = new WebSocket(url);
        const seen = [];
        const next = (pred) =>
          new Promise((resolve, reject) => {
            const timer = setTimeout(() => reject(new Error(`no answer: ${JSON.stringify(seen)}`)), 10_000);
            ws.addEventListener("message", function on(ev) {
              const m = JSON.parse(ev.data);
              seen.push(m);
              if (pred(m)) {
                clearTimeout(timer);
                ws.removeEventListener("message", on);
                resolve(m);
              }
            });
          });
        await new Promise((resolve) => ws.addEventListener("open", resolve, { once: true }));
        const welcome = next((m) => m.type === "welcome" && m.player);
        ws.send(JSON.stringify({ type: "hello", token }));
        await welcome;
        const rejected = next((m) => m.id === "cheat-1");
        ws.send(JSON.stringify({ type: "submit", id: "cheat-1", board, points: 999999 }));
        const r = await rejected;
        ws.close();
        return r;
      }, BOARD);
      assert.equal(answer.type, "rejected", JSON.stringify(answer));
      assert.equal(answer.code, "forbidden", JSON.stringify(answer));

      // Forged proofs through the page's own client: a byte that is no move, and more moves than
      // the run's time allows (a solver's log pasted in at once).
      const forged = await page.evaluate(async (board) => {
        const { sc, run } = window.__scorecast;
        const attempt = (bytes) =>
          sc.submitProof(board, run.run, bytes).then(
            (ack) => ({ ack }),
            (e) => ({ code: e.code, message: e.message }),
          );
        return [await attempt(Uint8Array.of(0x78)), await attempt(new TextEncoder().encode("lr".repeat(5000)))];
      }, BOARD);
      assert.equal(forged[0].code, "bad_request", JSON.stringify(forged[0]));
      assert.match(forged[0].message, /proof_refused.*-1/, forged[0].message);
      assert.equal(forged[1].code, "bad_request", JSON.stringify(forged[1]));
      assert.match(forged[1].message, /proof_refused.*-3/, forged[1].message);

      assert.equal(await playerScore(base, BOARD, player), score, "the board's score is unchanged");
      assert.deepEqual(await dumpKeys(env.stack.redis.port), before, "nothing in Redis changed");
      await page.context().close();
    }));

  test("New game starts a new run; one run too many is refused with a clear message", () =>
    withDiagnostics(diag, async () => {
      const base = env.stack.base;
      page = await newPage(env.browser);
      await page.goto(`${base}/play`);
      await waitConnState(page, "open");
      await signIn(page, "ned");
      const runs = [await page.evaluate(() => window.__scorecast.run.run)];
      // The server's default: 3 open runs per player and board.
      for (let i = 0; i < 2; i++) {
        await pressKeys(page, (st) => st.moves >= 1);
        await page.click("#new-game");
        await page.waitForFunction(
          (known) => {
            const { run, game } = window.__scorecast;
            return run && !known.includes(run.run) && game.seed === run.seed && game.moves === 0;
          },
          runs,
          { timeout: 10_000 },
        );
        runs.push(await page.evaluate(() => window.__scorecast.run.run));
      }
      assert.equal(new Set(runs).size, 3);
      assert.equal(Number(await redisCommand(env.stack.redis.port, "ZCARD", `lb:{${BOARD}}:runs:guest-ned`)), 3);

      await pressKeys(page, (st) => st.moves >= 1);
      await page.click("#new-game");
      await page.waitForFunction(
        () => /Too many open runs/.test(document.getElementById("last-result").textContent) && window.__scorecast.run === null,
        null,
        { timeout: 10_000 },
      );
      assert.equal(Number(await redisCommand(env.stack.redis.port, "ZCARD", `lb:{${BOARD}}:runs:guest-ned`)), 3);
      await screenshot(page, "play-5-too-many-runs");
      await page.context().close();
    }));

  test("an ended tournament says so in words, not as a server message", () =>
    withDiagnostics(diag, async () => {
      const now = Date.now();
      await putBoard(env.stack.base, "cup-over", {
        op: "best",
        validator: "2048",
        tournament: { schedule: { start_ms: now - 7_200_000, end_ms: now - 3_600_000 } },
      });
      const page = await newPage(env.browser);
      await page.goto(`${env.stack.base}/play?board=cup-over`);
      await pageReady(page);
      await page.fill("#guest-name", "ola");
      await page.click("#guest-login");
      await page.waitForFunction(
        () => /This tournament has ended: scores no longer count\. \(ended\)/.test(document.getElementById("last-result").textContent),
        null,
        { timeout: 10_000 },
      );
      assert.doesNotMatch(await page.textContent("#last-result"), /\d{13}/, "no raw epoch milliseconds");
      await page.context().close();
    }));

  test("on a phone a refusal is said above the grid, in view", () =>
    withDiagnostics(diag, async () => {
      const now = Date.now();
      await putBoard(env.stack.base, "cup-phone", {
        op: "best",
        validator: "2048",
        tournament: { schedule: { start_ms: now - 7_200_000, end_ms: now - 3_600_000 } },
      });
      const page = await newPage(env.browser, { viewport: { width: 375, height: 667 } });
      await page.goto(`${env.stack.base}/play?board=cup-phone`);
      await pageReady(page);
      await page.fill("#guest-name", "pia");
      await page.click("#guest-login");
      // Nothing scrolls the page: the refusal must be where the player looks.
      await page.waitForFunction(
        () => {
          const el = document.getElementById("notice");
          if (el.hidden || !/This tournament has ended/.test(el.textContent)) return false;
          const r = el.getBoundingClientRect();
          return r.height > 0 && r.top >= -1 && r.bottom <= window.innerHeight + 1 && r.right <= window.innerWidth + 1;
        },
        null,
        { timeout: 10_000 },
      );
      // The panel below the grid, which says it too, is out of view on a phone.
      const panel = await page.$eval("#last-result", (el) => el.getBoundingClientRect().top);
      assert.ok(panel > 667, `the last-result panel is at ${panel} px, below the fold`);
      await page.context().close();
    }));

  test("an expired run says so, and New game starts another", () =>
    withDiagnostics(diag, async () => {
      const base = env.stack.base;
      const player = "guest-exa";
      page = await newPage(env.browser);
      await page.goto(`${base}/play`);
      await waitConnState(page, "open");
      await signIn(page, "exa");
      await playUntilCheckpointed(page, base, player);
      const first = await page.evaluate(() => window.__scorecast.run.run);
      // What the run's TTL does when it runs out.
      assert.equal(await redisCommand(env.stack.redis.port, "DEL", `lb:{${BOARD}}:run:${first}`), 1);
      const score = await page.evaluate(() => window.__scorecast.game.score);
      await pressKeys(page, (st) => st.score > score);
      await page.waitForFunction(
        () => /run has expired/.test(document.getElementById("last-result").textContent) && window.__scorecast.run === null,
        null,
        { timeout: 10_000 },
      );
      await page.click("#new-game");
      await page.waitForFunction(
        (old) => window.__scorecast.run && window.__scorecast.run.run !== old && window.__scorecast.game.moves === 0,
        first,
        { timeout: 10_000 },
      );
      await page.context().close();
    }));

  test("moves faster than the validator allows are checkpointed again once the run is old enough", () =>
    withDiagnostics(diag, async () => {
      const base = env.stack.base;
      const player = "guest-fay";
      page = await newPage(env.browser);
      await page.goto(`${base}/play`);
      await waitConnState(page, "open");
      await signIn(page, "fay");
      // Up to 100 moves at machine speed, from the page itself (moves that merge first, which
      // lasts 57 moves or more on 5 000 seeds): far above the validator's 10 + 25 a second.
      const played = await page.evaluate(() => {
        const { game, run } = window.__scorecast;
        const dirs = ["left", "down", "right", "up"];
        for (let i = 0; i < 1000 && game.moves < 100 && !game.over; i++) {
          const dir = dirs.find((d) => game.peek(d).gained > 0) ?? dirs.find((d) => game.peek(d).moved);
          game.move(dir);
        }
        return { moves: game.moves, score: game.score, over: game.over, elapsedMs: Date.now() - run.started_ms };
      });
      // The next checkpoint leaves within a second: it must still be too fast then.
      assert.ok(
        played.score > 0 && played.moves > 10 + (played.elapsedMs + CHECKPOINT_EVERY_MS) / 40,
        `not faster than the validator allows (the machine was slow?): ${JSON.stringify(played)}`,
      );
      await page.waitForFunction(() => /Moves faster than the server accepts/.test(document.getElementById("last-result").textContent), null, {
        timeout: 10_000,
      });
      // (moves − 10) × 40 ms after the run started (at most 3.6 s), the same log is accepted.
      await waitFor(async () => (await playerScore(base, BOARD, player)) === played.score, {
        timeoutMs: 15_000,
        what: `the verified score ${played.score} after the re-send`,
      });
      await page.waitForFunction(() => /^verified /.test(document.getElementById("last-result").textContent), null, {
        timeout: 10_000,
      });
      await page.context().close();
    }));

  test("New game right after moves faster than the validator allows still lands the run's score", () =>
    withDiagnostics(diag, async () => {
      const base = env.stack.base;
      const player = "guest-fin";
      page = await newPage(env.browser);
      await page.goto(`${base}/play`);
      await waitConnState(page, "open");
      await signIn(page, "fin");
      const first = await page.evaluate(() => window.__scorecast.run.run);
      // As in the test above, then New game at once (before any throttled checkpoint).
      const played = await page.evaluate(() => {
        const { game, run } = window.__scorecast;
        const dirs = ["left", "down", "right", "up"];
        for (let i = 0; i < 1000 && game.moves < 100 && !game.over; i++) {
          const dir = dirs.find((d) => game.peek(d).gained > 0) ?? dirs.find((d) => game.peek(d).moved);
          game.move(dir);
        }
        document.getElementById("new-game").click();
        return { moves: game.moves, score: game.score, elapsedMs: Date.now() - run.started_ms };
      });
      assert.ok(
        played.score > 0 && played.moves > 10 + (played.elapsedMs + CHECKPOINT_EVERY_MS) / 40,
        `not faster than the validator allows (the machine was slow?): ${JSON.stringify(played)}`,
      );
      await page.waitForFunction((old) => window.__scorecast.run && window.__scorecast.run.run !== old, first, {
        timeout: 15_000,
      });
      assert.equal(await playerScore(base, BOARD, player), played.score, "the finished run's whole log was verified");
      await page.context().close();
    }));

  test("when the page is hidden, the moves since the last checkpoint are sent", () =>
    withDiagnostics(diag, async () => {
      const base = env.stack.base;
      page = await newPage(env.browser);
      const frames = recordFrames(page);
      await page.goto(`${base}/play`);
      await waitConnState(page, "open");
      await signIn(page, "hid");
      await playUntilCheckpointed(page, base, "guest-hid");
      await page.waitForFunction(() => window.__scorecast.sc.pendingCount === 0, null, { timeout: 10_000 });
      // A move that merges nothing: no checkpoint of its own. When every move would merge, one
      // is played and checkpointed first (at most 20 times).
      let moves = null;
      for (let i = 0; i < 20 && moves === null; i++) {
        const r = await page.evaluate(() => {
          const { game } = window.__scorecast;
          const dirs = ["left", "down", "right", "up"];
          const quiet = dirs.find((d) => game.peek(d).moved && game.peek(d).gained === 0);
          game.move(quiet ?? dirs.find((d) => game.peek(d).moved));
          return { quiet: quiet !== undefined, moves: game.moves, score: game.score };
        });
        if (r.quiet) moves = r.moves;
        else await waitFor(async () => (await playerScore(base, BOARD, "guest-hid")) === r.score, { what: "the merge's checkpoint" });
      }
      assert.notEqual(moves, null, "a move that merges nothing");
      const longest = () => Math.max(0, ...frames.filter((f) => f.type === "proof").map((f) => fromBase64(f.proof).length));
      assert.ok(longest() < moves, "the last move is not checkpointed yet");
      await page.evaluate(() => window.dispatchEvent(new PageTransitionEvent("pagehide")));
      await waitFor(() => longest() === moves, { what: `a checkpoint of all ${moves} moves` });
      await page.waitForFunction(() => window.__scorecast.sc.pendingCount === 0, null, { timeout: 10_000 });
      assert.match(await page.textContent("#last-result"), /^verified /);
      await page.context().close();
    }));

  test("a reload resumes the run", () =>
    withDiagnostics(diag, async () => {
      const base = env.stack.base;
      page = await newPage(env.browser);
      await page.goto(`${base}/play`);
      await waitConnState(page, "open");
      await signIn(page, "rea");
      await playUntilCheckpointed(page, base, "guest-rea");
      const read = () =>
        page.evaluate(() => {
          const { run, game } = window.__scorecast;
          return { run: run.run, cells: game.cells, score: game.score, moves: game.moves };
        });
      const before = await read();
      await page.reload();
      await waitConnState(page, "open");
      await page.waitForFunction(() => window.__scorecast.mode === "verified" && window.__scorecast.run, null, {
        timeout: 10_000,
      });
      assert.deepEqual(await read(), before);
      assert.match(await page.textContent("#last-result"), /Run resumed/);
      await page.context().close();
    }));

  test("on a board without a validator, window.__scorecast.game.move submits exactly the merged points", () =>
    withDiagnostics(diag, async () => {
      // Its own board, page and guest: nothing here depends on an earlier test.
      const base = env.stack.base;
      const board = "moves";
      const player = "guest-cid";
      await putBoard(base, board, {});
      page = await newPage(env.browser);
      await page.goto(`${base}/play?board=${board}&seed=5`);
      await waitConnState(page, "open");
      await pageReady(page);
      await page.fill("#guest-name", "cid");
      await page.click("#guest-login");
      await page.waitForFunction((p) => window.__scorecast.sc.player === p && window.__scorecast.mode === "plain", player, {
        timeout: 10_000,
      });
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

  test("Play as guest is disabled until the page is ready, so an early sign-in cannot reload it without its board", () =>
    withDiagnostics(diag, async () => {
      const base = env.stack.base;
      await putBoard(base, "early", {});
      const page = await newPage(env.browser);
      // The SDK's wasm is held back: the page's module waits for it before attaching its handlers.
      let release;
      const held = new Promise((r) => (release = r));
      await page.route("**/*.wasm", async (route) => {
        await held;
        await route.continue();
      });
      await page.goto(`${base}/play?board=early`);
      assert.equal(await page.isDisabled("#guest-login"), true);
      // Enter submits a form through its default button: disabled, nothing is submitted.
      await page.fill("#guest-name", "eve");
      await page.press("#guest-name", "Enter");
      release();
      await page.waitForSelector("#guest-login:not([disabled])");
      // The same page (a reload would have emptied the field and lost ?board=).
      assert.equal(await page.inputValue("#guest-name"), "eve");
      assert.equal(new URL(page.url()).search, "?board=early");
      await page.click("#guest-login");
      await page.waitForFunction(() => window.__scorecast.sc.player === "guest-eve" && window.__scorecast.mode === "plain", null, {
        timeout: 10_000,
      });
      assert.equal(await page.textContent("#board-name"), "early");
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
      await pageReady(p);
      await p.fill("#guest-name", "bea");
      await p.click("#guest-login");
      await p.waitForFunction(() => window.__scorecast.sc.player === "guest-bea" && window.__scorecast.mode === "plain", null, {
        timeout: 10_000,
      });
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
