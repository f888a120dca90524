// Runs through the browser SDK in headless Chromium: `sc.startRun(board)` and
// `sc.submitProof(board, run, bytes)` over the WebSocket against the real server, the proof's
// bytes sent as base64 by the SDK and decoded by the server (the 2048 validator replays them).

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { newPage, playerScore, putBoard, useStackAndBrowser, withDiagnostics } from "./harness.mjs";

const BOARD = "runs-2048";

describe("runs through the SDK", { timeout: 120_000 }, () => {
  const env = useStackAndBrowser();
  let page;
  const diag = () => ({ stack: env.stack, pages: [page] });

  /// startRun resolves with {run, seed, started_ms, expires_ms}; submitProof resolves with the
  /// ack of the validator's score (a resent proof is a duplicate) and rejects with the
  /// server's code for a refused proof, a proof that is not bytes, and a board with no runs.
  test("startRun and submitProof: the run, the replayed score, the refusals", () =>
    withDiagnostics(diag, async () => {
      const base = env.stack.base;
      await putBoard(base, BOARD, { op: "best", validator: "2048" });
      page = await newPage(env.browser);
      // Any page of the server: the SDK is imported from its own origin.
      await page.goto(`${base}/`);
      const r = await page.evaluate(async (board) => {
        const { Scorecast } = await import("/sdk/scorecast.js");
        const { token } = await Scorecast.guest("runner");
        const sc = await Scorecast.connect({ token });
        const err = (e) => ({ code: e.code, message: e.message });
        const run = await sc.startRun(board);
        const empty = await sc.submitProof(board, run.run, new Uint8Array(0));
        const again = await sc.submitProof(board, run.run, new Uint8Array(0));
        // From any new game one of the four directions moves: its one-byte proof is legal.
        const moves = [];
        for (const m of "udlr") {
          moves.push(await sc.submitProof(board, run.run, new TextEncoder().encode(m)).catch(err));
        }
        const forged = await sc.submitProof(board, run.run, new Uint8Array([0x78])).catch(err);
        const notBytes = await sc.submitProof(board, run.run, "udlr").catch(err);
        const unknown = await sc.startRun("no-such-board").catch(err);
        const pending = sc.pendingCount;
        sc.close();
        return { run, empty, again, moves, forged, notBytes, unknown, pending };
      }, BOARD);

      assert.deepEqual(Object.keys(r.run).sort(), ["expires_ms", "run", "seed", "started_ms"]);
      assert.match(r.run.run, /^[0-9a-f]{32}$/);
      assert.ok(Number.isInteger(r.run.seed) && r.run.seed >= 0 && r.run.seed < 2 ** 32, `${r.run.seed}`);
      assert.equal(r.run.expires_ms - r.run.started_ms, 3_600_000);
      assert.deepEqual([r.empty.type, r.empty.score, r.empty.duplicate], ["ack", 0, false]);
      assert.deepEqual([r.again.type, r.again.duplicate], ["ack", true]);
      const legal = r.moves.filter((m) => m.type === "ack");
      assert.ok(legal.length >= 1, JSON.stringify(r.moves));
      for (const m of r.moves.filter((m) => m.type !== "ack")) {
        assert.equal(m.code, "bad_request", JSON.stringify(m));
        assert.match(m.message, /proof_refused.*reason -2/, m.message);
      }
      assert.equal(r.forged.code, "bad_request");
      assert.match(r.forged.message, /proof_refused.*reason -1/, r.forged.message);
      assert.equal(r.notBytes.code, "bad_request");
      assert.equal(r.unknown.code, "unknown_board");
      assert.equal(r.pending, 0, "every request was answered");
      assert.equal(await playerScore(base, BOARD, "guest-runner"), Math.max(...legal.map((m) => m.score)));
    }));
});
