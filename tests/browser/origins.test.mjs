// The SDK from another origin: a game page served by a server of its own (another port on
// 127.0.0.1) imports the SDK straight from Scorecast, gets a guest token with `baseUrl`, submits
// and sees its rank; the same page from an origin that is not in `allowed_origins` is refused
// (the import, the token request and the WebSocket alike). Also the npm package: `npm pack`
// builds a tarball holding the SDK, its types and the wasm; a game's TypeScript type-checks
// against the unpacked package with `tsc --strict`; and a page that loads the SDK from the
// unpacked package (not from Scorecast) plays the same game.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";

import {
  REPO,
  WEB_DIR,
  launchBrowser,
  newPage,
  playerScore,
  putBoard,
  startRedis,
  startServer,
  withDiagnostics,
} from "./harness.mjs";

const BOARD = "cross";

/** A static server on a free loopback port: `pages` maps a path to HTML; `/pkg-root/...` serves files under `root`. */
async function startStatic(pages, root) {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, "http://x");
    if (pages[url.pathname]) {
      res.writeHead(200, { "content-type": "text/html" });
      res.end(pages[url.pathname]);
      return;
    }
    if (root && url.pathname.startsWith("/package/")) {
      const file = path.join(root, path.normalize(url.pathname).replace(/^\/package\//, ""));
      if (file.startsWith(root) && existsSync(file)) {
        const type = file.endsWith(".wasm") ? "application/wasm" : "text/javascript";
        res.writeHead(200, { "content-type": type });
        res.end(readFileSync(file));
        return;
      }
    }
    res.writeHead(404);
    res.end();
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = server.address().port;
  return { port, origin: `http://127.0.0.1:${port}`, close: () => new Promise((r) => server.close(r)) };
}

/** The game: imports the SDK from `sdkUrl`, takes a guest token from `base`, submits 64 and waits for its "me" rank. */
function gamePage(sdkUrl, base, name, wsUrl) {
  return `<!doctype html><meta charset="utf-8"><title>game</title><script type="module">
  window.__steps = [];
  try {
    const { Scorecast } = await import(${JSON.stringify(sdkUrl)});
    window.__steps.push("imported");
    const { player, token } = await Scorecast.guest(${JSON.stringify(name)}, { baseUrl: ${JSON.stringify(base)} });
    window.__steps.push("token");
    const sc = await Scorecast.connect({ token${wsUrl ? `, url: ${JSON.stringify(wsUrl)}` : ""} });
    const rank = new Promise((resolve) => sc.subscribe(${JSON.stringify(BOARD)}, "me", (m) => m.rank && resolve(m.rank)));
    const ack = await sc.submit(${JSON.stringify(BOARD)}, 64);
    window.__result = { player, ack, rank: await rank };
  } catch (e) {
    window.__error = String(e && e.message || e);
  }
  </script>`;
}

/** A page from an origin that is not allowed: tries the import, the token request and a WebSocket on its own. */
function refusedPage(base) {
  const ws = base.replace("http", "ws") + "/ws";
  return `<!doctype html><meta charset="utf-8"><title>other</title><script type="module">
  const out = {};
  try { await import(${JSON.stringify(base + "/sdk/scorecast.js")}); out.imported = true; } catch (e) { out.import = String(e); }
  try {
    const r = await fetch(${JSON.stringify(base + "/v1/guest")}, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ name: "mallory" }) });
    out.guest = r.status;
  } catch (e) { out.guest = "refused: " + e; }
  out.ws = await new Promise((resolve) => {
    const s = new WebSocket(${JSON.stringify(ws)});
    s.onopen = () => resolve("open");
    s.onerror = () => resolve("refused");
  });
  window.__result = out;
  </script>`;
}

describe("SDK from another origin", { timeout: 120_000 }, () => {
  let redis;
  let server;
  let game;
  let other;
  let browser;
  let pages = [];
  let packDir;
  const diag = () => ({ stack: { logs: () => [...(server?.log ?? []), ...(redis?.log ?? [])].join("\n") }, pages });

  before(async () => {
    packDir = mkdtempSync(path.join(os.tmpdir(), "scorecast-pack-"));
    redis = await startRedis();
    // The game's origin must be known before the server starts (it is in the allow-list);
    // its pages are filled in once the server's port is known.
    const gamePages = {};
    game = await startStatic(gamePages, path.join(packDir, "package"));
    const otherPages = {};
    other = await startStatic(otherPages);
    server = await startServer({ redisUrl: redis.url, extraArgs: ["--allowed-origins", game.origin] });
    gamePages["/"] = gamePage(`${server.base}/sdk/scorecast.js`, server.base, "ann");
    gamePages["/packaged"] = gamePage(
      "/package/sdk/scorecast.js",
      server.base,
      "bob",
      `ws://127.0.0.1:${server.port}/ws`,
    );
    otherPages["/"] = refusedPage(server.base);
    await putBoard(server.base, BOARD, {});
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await game?.close();
    await other?.close();
    await server?.stop();
    await redis?.stop();
    if (packDir) rmSync(packDir, { recursive: true, force: true });
  });

  async function run(url) {
    const page = await newPage(browser);
    pages.push(page);
    await page.goto(url);
    await page.waitForFunction(() => window.__result || window.__error, null, { timeout: 30_000 });
    return page.evaluate(() => ({ result: window.__result, error: window.__error, steps: window.__steps }));
  }

  test("a game on an allowed origin imports the SDK from the server, gets a token, submits and sees its rank", () =>
    withDiagnostics(diag, async () => {
      const { result, error, steps } = await run(`${game.origin}/`);
      assert.equal(error, undefined, `steps: ${JSON.stringify(steps)}`);
      assert.equal(result.player, "guest-ann");
      assert.equal(result.ack.score, 64);
      assert.equal(result.ack.rank, 1);
      assert.equal(result.rank, 1, "the live 'me' view");
      assert.equal(await playerScore(server.base, BOARD, "guest-ann"), 64, "stored");
    }));

  test("the same page from an origin that is not allowed is refused", () =>
    withDiagnostics(diag, async () => {
      const { result } = await run(`${other.origin}/`);
      assert.match(result.import ?? "imported?!", /Failed to fetch dynamically imported module/);
      assert.match(String(result.guest), /^refused: TypeError/, "the token request's answer is withheld");
      assert.equal(result.ws, "refused");
      // The preflight was refused, so the POST itself never reached the server.
      assert.equal(await playerScore(server.base, BOARD, "guest-mallory"), null);
    }));

  test("npm pack builds a tarball with the SDK, its types and the wasm", () => {
    const out = JSON.parse(
      execFileSync("npm", ["pack", "--json", "--pack-destination", packDir], { cwd: WEB_DIR, encoding: "utf8" }),
    );
    const tarball = path.join(packDir, out[0].filename);
    const listed = execFileSync("tar", ["-tzf", tarball], { encoding: "utf8" }).trim().split("\n").sort();
    assert.deepEqual(listed, [
      "package/package.json",
      "package/pkg/scorecast.d.ts",
      "package/pkg/scorecast.js",
      "package/pkg/scorecast_bg.wasm",
      "package/pkg/scorecast_bg.wasm.d.ts",
      "package/sdk/scorecast.d.ts",
      "package/sdk/scorecast.js",
    ]);
    execFileSync("tar", ["-xzf", tarball, "-C", packDir]);
    const wasm = readFileSync(path.join(packDir, "package/pkg/scorecast_bg.wasm"));
    assert.ok(wasm.subarray(0, 4).equals(Buffer.from([0, 0x61, 0x73, 0x6d])), "a wasm module");
    assert.ok(wasm.equals(readFileSync(path.join(WEB_DIR, "pkg/scorecast_bg.wasm"))), "the built one");
    const pkg = JSON.parse(readFileSync(path.join(packDir, "package/package.json"), "utf8"));
    for (const f of [pkg.main, pkg.types, pkg.exports["."].types, pkg.exports["."].default]) {
      assert.ok(existsSync(path.join(packDir, "package", f)), `${f} is in the tarball`);
    }
  });

  test("the package's types check a game's TypeScript (tsc --strict), and refuse a wrong call", () => {
    assert.ok(existsSync(path.join(packDir, "package/package.json")), "runs after the pack test");
    // A game project with the unpacked tarball as its node_modules/scorecast-sdk.
    const game = path.join(packDir, "game");
    mkdirSync(path.join(game, "node_modules"), { recursive: true });
    cpSync(path.join(packDir, "package"), path.join(game, "node_modules/scorecast-sdk"), { recursive: true });
    writeFileSync(
      path.join(game, "main.mts"),
      `import { Scorecast, ScorecastError, formatRank, type Ack, type Run, type ViewMessage } from "scorecast-sdk";
export async function play(): Promise<string> {
  const { token } = await Scorecast.guest("ann", { baseUrl: "https://scores.example.com" });
  const sc = await Scorecast.connect({ token, url: "wss://scores.example.com/ws", onState: (s) => console.log(s) });
  const off = sc.subscribe("b", "top", { limit: 10 }, (m: ViewMessage) => {
    for (const e of m.entries ?? []) console.log(e.rank, e.player, e.score);
  });
  try {
    const ack: Ack = await sc.submit("b", 64);
    return formatRank(ack.rank);
  } catch (e) {
    if (e instanceof ScorecastError && e.code === "rate_limited") return String(e.retryAfterMs);
    throw e;
  } finally {
    off();
    sc.close();
  }
}
// @ts-expect-error points are a number: the types must refuse a string
export const wrong = (sc: Scorecast) => sc.submit("b", "64");
export async function verified(sc: Scorecast, moves: Uint8Array): Promise<number> {
  const run: Run = await sc.startRun("game-2048");
  const ack: Ack = await sc.submitProof("game-2048", run.run, moves);
  return ack.score + run.seed + run.expires_ms;
}
// @ts-expect-error a proof is bytes: the types must refuse a string
export const wrongProof = (sc: Scorecast) => sc.submitProof("b", "run", "udlr");
`,
    );
    const tsc = path.join(REPO, "tests/browser/node_modules/.bin/tsc");
    const args = ["--strict", "--noEmit", "--module", "nodenext", "--moduleResolution", "nodenext", "--target", "es2022", "--lib", "es2022,dom", "main.mts"];
    try {
      execFileSync(tsc, args, { cwd: game, encoding: "utf8" });
    } catch (e) {
      assert.fail(`tsc found errors:\n${e.stdout}${e.stderr}`);
    }
  });

  test("a page that loads the SDK from the unpacked package plays against the server", () =>
    withDiagnostics(diag, async () => {
      assert.ok(existsSync(path.join(packDir, "package/sdk/scorecast.js")), "runs after the pack test");
      const { result, error, steps } = await run(`${game.origin}/packaged`);
      assert.equal(error, undefined, `steps: ${JSON.stringify(steps)}`);
      assert.equal(result.player, "guest-bob");
      assert.equal(result.ack.score, 64);
      assert.ok([1, 2].includes(result.ack.rank), `two players of 64, bob ranks 1 or 2: ${result.ack.rank}`);
      assert.equal(await playerScore(server.base, BOARD, "guest-bob"), 64);
    }));
});
