// Test harness for the real-browser tests: a private redis-server on a free port, the real
// `scorecast` binary in --dev mode against it, headless Chromium (Debian's, driven by
// playwright-core), a TCP proxy that can cut connections, and small HTTP helpers.
//
// Environment (set by `cargo xtask test`):
//   SCORECAST_BIN            the built debug `scorecast` binary   (default <repo>/target/debug/scorecast)
//   SCORECAST_REDIS_SERVER   redis-server                         (default: redis-server on PATH)
//   CHROMIUM                 the browser                          (default /usr/bin/chromium)
//
// Every child process is killed in the tests' `after` hooks and, as a last resort, when node exits.

import { spawn } from "node:child_process";
import { mkdirSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { after, before } from "node:test";
import { fileURLToPath } from "node:url";

import { chromium } from "playwright-core";

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const WEB_DIR = path.join(REPO, "web");
export const SCREENSHOT_DIR = path.join(REPO, "target", "browser-screenshots");
export const ADMIN_TOKEN = "browser-tests-admin-token-0123456789abcdef";
// Fixed so that player tokens stay valid across a server restart (the dev profile would
// otherwise generate a new secret at every start).
export const TOKEN_SECRET = "browser-tests-token-secret-0123456789abcdef";

const SCORECAST_BIN = process.env.SCORECAST_BIN || path.join(REPO, "target", "debug", "scorecast");
const REDIS_SERVER = process.env.SCORECAST_REDIS_SERVER || "redis-server";
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";

// ---- process bookkeeping -------------------------------------------------------------------

const children = new Set();

function track(child) {
  children.add(child);
  child.once("exit", () => children.delete(child));
  return child;
}

function killAllNow() {
  for (const c of children) {
    try {
      c.kill("SIGKILL");
    } catch {
      // already gone
    }
  }
}
process.once("exit", killAllNow);
for (const sig of ["SIGINT", "SIGTERM"]) {
  process.once(sig, () => {
    killAllNow();
    process.exit(130);
  });
}

/** Kills a child and waits for it to be gone. */
async function killChild(child, signal = "SIGKILL") {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise((resolve) => child.once("exit", resolve));
  child.kill(signal);
  await gone;
}

/** Keeps the last `max` lines a child wrote, for failure messages. */
function tail(child, label, max = 200) {
  const lines = [];
  const push = (chunk) => {
    for (const line of chunk.toString().split("\n")) {
      if (line === "") continue;
      // eslint-disable-next-line no-control-regex
      lines.push(`[${label}] ${line.replace(/\x1b\[[0-9;]*m/g, "")}`);
      if (lines.length > max) lines.shift();
    }
  };
  child.stdout?.on("data", push);
  child.stderr?.on("data", push);
  return lines;
}

// ---- waiting -------------------------------------------------------------------------------

/** Polls `fn` (async ok) until it returns a truthy value; throws with `what` after `timeoutMs`. */
export async function waitFor(fn, { timeoutMs = 10_000, intervalMs = 50, what = "condition" } = {}) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
      last = v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) {
      const detail = last instanceof Error ? last.message : JSON.stringify(last);
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (last: ${detail})`);
    }
    await sleep(intervalMs);
  }
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** One RESP PING over a fresh TCP connection; resolves true on +PONG. */
function redisPing(port) {
  return new Promise((resolve) => {
    const sock = net.connect(port, "127.0.0.1");
    let buf = "";
    const done = (ok) => {
      sock.destroy();
      resolve(ok);
    };
    sock.setTimeout(1000, () => done(false));
    sock.on("error", () => done(false));
    sock.on("connect", () => sock.write("PING\r\n"));
    sock.on("data", (d) => {
      buf += d.toString();
      if (buf.includes("\r\n")) done(buf.startsWith("+PONG"));
    });
  });
}

// ---- redis ---------------------------------------------------------------------------------

/** The `process_id` of the redis-server answering on `port` (INFO server), or null. */
function redisPid(port) {
  return new Promise((resolve) => {
    const sock = net.connect(port, "127.0.0.1");
    let buf = "";
    const done = (pid) => {
      sock.destroy();
      resolve(pid);
    };
    sock.setTimeout(1000, () => done(null));
    sock.on("error", () => done(null));
    sock.on("connect", () => sock.write("INFO server\r\n"));
    sock.on("data", (d) => {
      buf += d.toString();
      const m = buf.match(/process_id:(\d+)/);
      if (m) done(Number(m[1]));
    });
  });
}

/**
 * One command to the redis-server on `port` (on its own connection); the reply parsed from RESP:
 * a string for simple strings, a number for integers, a Buffer for bulk strings (null for nil),
 * an array for arrays. An error reply throws.
 */
export function redisCommand(port, ...args) {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, "127.0.0.1");
    let buf = Buffer.alloc(0);
    sock.setTimeout(5000, () => {
      sock.destroy();
      reject(new Error(`redis ${args[0]}: no answer in 5 s`));
    });
    sock.on("error", reject);
    sock.on("connect", () => {
      const parts = [`*${args.length}\r\n`];
      for (const a of args) parts.push(`$${Buffer.byteLength(String(a))}\r\n${a}\r\n`);
      sock.write(parts.join(""));
    });
    sock.on("data", (d) => {
      buf = Buffer.concat([buf, d]);
      const parsed = parseResp(buf, 0);
      if (!parsed) return; // incomplete
      sock.destroy();
      if (parsed.value instanceof Error) reject(parsed.value);
      else resolve(parsed.value);
    });
  });
}

/** One RESP value at `at`: {value, end}, or null when `buf` does not hold all of it yet. */
function parseResp(buf, at) {
  const eol = buf.indexOf("\r\n", at);
  if (eol < 0) return null;
  const line = buf.toString("utf8", at + 1, eol);
  const next = eol + 2;
  switch (String.fromCharCode(buf[at])) {
    case "+":
      return { value: line, end: next };
    case "-":
      return { value: new Error(line), end: next };
    case ":":
      return { value: Number(line), end: next };
    case "$": {
      const n = Number(line);
      if (n < 0) return { value: null, end: next };
      if (buf.length < next + n + 2) return null;
      return { value: buf.subarray(next, next + n), end: next + n + 2 };
    }
    case "*": {
      const n = Number(line);
      const items = [];
      let end = next;
      for (let i = 0; i < n; i++) {
        const item = parseResp(buf, end);
        if (!item) return null;
        items.push(item.value);
        end = item.end;
      }
      return { value: items, end };
    }
    default:
      throw new Error(`unexpected RESP type byte ${buf[at]}`);
  }
}

/**
 * Every key of the redis-server on `port` and its serialised value (DUMP, as hex), sorted: to
 * prove that a refused request changed nothing. The per-address limiter of public reads and the
 * live counters every instance writes each second (`sc:{stats}`) are not data and are left out.
 */
export async function dumpKeys(port) {
  const keys = (await redisCommand(port, "KEYS", "*")).map(String).filter((k) => !k.startsWith("rl:{read:") && k !== "sc:{stats}");
  keys.sort();
  const out = [];
  for (const k of keys) out.push([k, (await redisCommand(port, "DUMP", k))?.toString("hex") ?? null]);
  return out;
}

/**
 * A private redis-server on a port the OS picked. Another process may take that port between
 * the pick and redis-server's bind, so a start is only good once the server answering on the
 * port is our child (its process_id); otherwise it is retried on another port.
 */
export async function startRedis() {
  let lastError;
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await freePort();
    const proc = track(
      spawn(REDIS_SERVER, ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], {
        stdio: ["ignore", "pipe", "pipe"],
      }),
    );
    const log = tail(proc, "redis", 50);
    let exited = null;
    proc.once("exit", (code, sig) => (exited = `exited (${code ?? sig})`));
    try {
      await waitFor(async () => {
        if (exited) throw new Error(`redis-server ${exited}:\n${log.join("\n")}`);
        const pid = await redisPid(port);
        if (pid !== null && pid !== proc.pid) throw new Error(`port ${port} is answered by pid ${pid}, not ours`);
        return pid === proc.pid;
      }, { timeoutMs: 10_000, what: `redis-server on port ${port}` });
    } catch (e) {
      lastError = e;
      await killChild(proc);
      continue;
    }
    return {
      port,
      url: `redis://127.0.0.1:${port}/`,
      log,
      stop: () => killChild(proc),
      /** SIGSTOP: Redis stops answering, its connections stay open (a stall, not a crash). */
      pause: () => proc.kill("SIGSTOP"),
      /** SIGCONT: Redis runs what was queued meanwhile, in order. */
      resume: () => proc.kill("SIGCONT"),
    };
  }
  throw lastError;
}

// ---- scorecast -------------------------------------------------------------------------------

/**
 * Starts `scorecast --dev` against `redisUrl` on a port it binds itself (port 0: no port is
 * picked first and hoped to stay free), read back from its "listening on" line, and waits for
 * /healthz. Returns {port, base, log, stop()}.
 */
export async function startServer({ redisUrl, extraArgs = [], env = {} }) {
  const args = ["--dev", "--listen", "127.0.0.1:0", "--redis-url", redisUrl, "--web-dir", WEB_DIR, ...extraArgs];
  const proc = track(
    spawn(SCORECAST_BIN, args, {
      cwd: REPO,
      stdio: ["ignore", "pipe", "pipe"],
      env: {
        ...process.env,
        RUST_LOG: process.env.RUST_LOG || "info",
        NO_COLOR: "1",
        SCORECAST_ADMIN_TOKEN: ADMIN_TOKEN,
        SCORECAST_TOKEN_SECRET: TOKEN_SECRET,
        ...env,
      },
    }),
  );
  const log = tail(proc, "scorecast");
  let exited = null;
  proc.once("exit", (code, sig) => (exited = `exited (${code ?? sig})`));
  proc.once("error", (e) => (exited = `failed to spawn: ${e.message}`));
  const port = await waitFor(() => {
    if (exited) throw new Error(`scorecast ${exited}:\n${log.join("\n")}`);
    const line = log.find((l) => /listening on http:\/\/127\.0\.0\.1:\d+/.test(l));
    return line && Number(line.match(/127\.0\.0\.1:(\d+)/)[1]);
  }, { timeoutMs: 30_000, what: "scorecast's listening line" });
  const base = `http://127.0.0.1:${port}`;
  await waitFor(async () => {
    if (exited) throw new Error(`scorecast ${exited}:\n${log.join("\n")}`);
    const res = await fetch(`${base}/healthz`);
    return res.ok;
  }, { timeoutMs: 30_000, what: `scorecast /healthz on ${base}` });
  return {
    port,
    base,
    log,
    proc,
    /** SIGKILL: a crash, as far as the browser can tell. */
    stop: () => killChild(proc, "SIGKILL"),
  };
}

/**
 * Redis + scorecast behind a front proxy whose port the harness holds for the whole test:
 * pages talk to `stack.base` (the proxy), so `restart()` can start the new server on a port of
 * its own and point the proxy at it — the address the pages know never changes hands.
 */
export async function startStack() {
  const redis = await startRedis();
  let server;
  let front;
  try {
    server = await startServer({ redisUrl: redis.url });
    front = await startProxy(server.port);
  } catch (e) {
    await server?.stop();
    await redis.stop();
    throw e;
  }
  const stack = {
    redis,
    server,
    front,
    get base() {
      return front.base;
    },
    async restart({ beforeStart } = {}) {
      front.target = 0; // until the new server is up, connections are refused
      await stack.server.stop();
      front.cutAll();
      if (beforeStart) await beforeStart();
      stack.server = await startServer({ redisUrl: redis.url });
      front.target = stack.server.port;
      return stack.server;
    },
    async stop() {
      await front?.close();
      await stack.server?.stop();
      await redis.stop();
    },
    logs() {
      return [...(stack.server?.log ?? []), ...redis.log].join("\n");
    },
  };
  return stack;
}

/**
 * For a `describe` block: registers the hooks that start a stack (`startStack`) and a browser
 * before its tests and close the browser, then stop the stack, after them. Returns the object
 * whose `stack` and `browser` those hooks fill in. `afterStart(env)` runs once both are up;
 * `beforeStop(env)` after the browser is closed and before the stack stops.
 */
export function useStackAndBrowser({ afterStart, beforeStop } = {}) {
  const env = { stack: undefined, browser: undefined };
  before(async () => {
    env.stack = await startStack();
    env.browser = await launchBrowser();
    if (afterStart) await afterStart(env);
  });
  after(async () => {
    await env.browser?.close();
    if (beforeStop) await beforeStop(env);
    await env.stack?.stop();
  });
  return env;
}

// ---- HTTP helpers ------------------------------------------------------------------------------

async function jsonOrText(res) {
  const text = await res.text();
  try {
    return text ? JSON.parse(text) : null;
  } catch {
    return text;
  }
}

/** An admin call with the Bearer token; throws on a non-2xx answer. */
export async function admin(base, method, pathname, body) {
  const res = await fetch(base + pathname, {
    method,
    headers: {
      authorization: `Bearer ${ADMIN_TOKEN}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const out = await jsonOrText(res);
  if (!res.ok) throw new Error(`${method} ${pathname} -> ${res.status}: ${JSON.stringify(out)}`);
  return out;
}

export const putBoard = (base, board, config = {}) => admin(base, "PUT", `/admin/boards/${board}`, config);

export const addScore = (base, board, player, points, extra = {}) =>
  admin(base, "POST", `/admin/boards/${board}/players/${player}/score`, { points, ...extra });

/** A public GET; resolves {status, body}. */
export async function get(base, pathname) {
  const res = await fetch(base + pathname, { headers: { accept: "application/json" } });
  return { status: res.status, body: await jsonOrText(res) };
}

/** The player's score on the board, or null when absent (404). */
export async function playerScore(base, board, player) {
  const { status, body } = await get(base, `/v1/boards/${board}/players/${player}`);
  if (status === 404) return null;
  if (status !== 200) throw new Error(`GET player ${player} -> ${status}: ${JSON.stringify(body)}`);
  return body.score ?? null;
}

// ---- browser -------------------------------------------------------------------------------------

export async function launchBrowser() {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}

/** A page (in a fresh context unless `context` is given) that records console errors and page errors for failure messages. */
export async function newPage(browser, { viewport = { width: 1100, height: 800 }, context } = {}) {
  context ??= await browser.newContext({ viewport });
  const page = await context.newPage();
  const console_ = [];
  page.on("console", (m) => {
    if (m.type() === "error" || m.type() === "warning") console_.push(`[console.${m.type()}] ${m.text()}`);
  });
  page.on("pageerror", (e) => console_.push(`[pageerror] ${e.message}`));
  page.on("websocket", (ws) => {
    console_.push(`[ws open] ${ws.url()}`);
    ws.on("close", () => console_.push(`[ws close] ${ws.url()}`));
  });
  page.consoleLog = console_;
  return page;
}

/** Saves target/browser-screenshots/<name>.png (the whole page unless `fullPage: false`). */
export async function screenshot(page, name, { fullPage = true } = {}) {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const file = path.join(SCREENSHOT_DIR, `${name}.png`);
  await page.screenshot({ path: file, fullPage });
  return file;
}

/**
 * A screenshot the docs show, `docs/<name>.png`, of a page (the whole page unless
 * `fullPage: false`) or of a locator. Every run takes it; it is written to docs/ only with
 * SCORECAST_DOC_SCREENSHOTS=1 (`SCORECAST_DOC_SCREENSHOTS=1 cargo xtask test` refreshes them),
 * else to target/browser-screenshots/docs/, so that a test run leaves the tree as it was.
 */
export async function docScreenshot(shot, name, { fullPage = true } = {}) {
  const dir = process.env.SCORECAST_DOC_SCREENSHOTS === "1" ? path.join(REPO, "docs") : path.join(SCREENSHOT_DIR, "docs");
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${name}.png`);
  const isPage = typeof shot.goto === "function";
  await shot.screenshot(isPage ? { path: file, fullPage } : { path: file });
  return file;
}

/** Waits until the page's connection badge says `state`. */
export async function waitConnState(page, state, timeout = 15_000) {
  await page.waitForFunction((s) => document.getElementById("conn-state")?.textContent === s, state, { timeout });
}

/**
 * Runs `fn`; on failure, appends the server/redis logs and the page console to the error, so a
 * red test says why.
 */
export async function withDiagnostics(getContext, fn) {
  try {
    return await fn();
  } catch (e) {
    const { stack, pages = [] } = getContext();
    const parts = [];
    for (const p of pages) if (p?.consoleLog?.length) parts.push(p.consoleLog.slice(-40).join("\n"));
    if (stack) parts.push(stack.logs().split("\n").slice(-60).join("\n"));
    if (parts.length) e.message += `\n---- diagnostics ----\n${parts.join("\n----\n")}`;
    throw e;
  }
}

// ---- a TCP proxy that can cut connections ------------------------------------------------------

/**
 * A TCP proxy on a free loopback port in front of `targetPort`. The browser talks to the proxy,
 * so its WebSocket goes through here too (Origin and Host are the proxy's, which the server's
 * same-origin check accepts).
 *
 *   proxy.dropServerToClient = true   bytes from the server are swallowed (client→server still flows)
 *   proxy.cutAll()                   destroys every open connection pair
 *   proxy.restore()                  back to normal forwarding (new connections)
 *   proxy.target = port              new connections go to another port
 */
export async function startProxy(targetPort) {
  const pairs = new Set();
  const proxy = {
    /** Where new connections go; may be changed while the proxy runs. */
    target: targetPort,
    port: 0,
    base: "",
    dropServerToClient: false,
    droppedBytes: 0,
    connections: 0,
    get open() {
      return pairs.size;
    },
    cutAll() {
      for (const p of [...pairs]) {
        p.client.destroy();
        p.upstream.destroy();
        pairs.delete(p);
      }
    },
    restore() {
      proxy.dropServerToClient = false;
    },
    close() {
      proxy.cutAll();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
  const server = net.createServer((client) => {
    proxy.connections += 1;
    const upstream = net.connect(proxy.target, "127.0.0.1");
    const pair = { client, upstream };
    pairs.add(pair);
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on("error", end);
    upstream.on("error", end);
    client.on("close", end);
    upstream.on("close", end);
    client.on("data", (d) => upstream.write(d));
    upstream.on("data", (d) => {
      if (proxy.dropServerToClient) proxy.droppedBytes += d.length;
      else client.write(d);
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  proxy.port = server.address().port;
  proxy.base = `http://127.0.0.1:${proxy.port}`;
  return proxy;
}

// ---- in-page helpers -----------------------------------------------------------------------------

/**
 * In /play: plays moves that do not merge until one would merge (so a test controls which move
 * submits points). Returns {dir, gained} of the merging move, which has NOT been played yet.
 * Asks the page's game (the Rust rules) with `game.peek(dir)`, which plays nothing.
 */
export async function findMergingMove(page, maxMoves = 200) {
  await page.waitForFunction(() => window.__scorecast?.game, null, { timeout: 10_000 });
  return page.evaluate(async (maxMoves) => {
    const { game } = window.__scorecast;
    const DIRECTIONS = ["up", "down", "left", "right"];
    for (let i = 0; i < maxMoves; i++) {
      if (game.over) throw new Error("the game ended before a merging move was found");
      const options = DIRECTIONS.map((dir) => ({ dir, ...game.peek(dir) }));
      const merging = options.find((o) => o.gained > 0);
      if (merging) return { dir: merging.dir, gained: merging.gained };
      const any = options.find((o) => o.moved);
      game.move(any.dir); // moves without a merge submit nothing
    }
    throw new Error("no merging move found");
  }, maxMoves);
}
