// The 2048 page (`/play`, `?board=<id>`): the game is the Rust rules built for the browser
// (`shared/game2048/web`, `/game/pkg/game2048.js`), the same code the server's `2048` validator
// replays.
//
// On a verified board (one with a validator, as the demo board `game-2048`), signing in starts a
// run (`sc.startRun`): the game is played from the server's seed, every move that moved is
// recorded, and the move log is checkpointed with `sc.submitProof` after merges (at most once a
// second, and at once on game over, new game and when the page is hidden). The board keeps the
// best score the server computed. A reload resumes the run (kept in localStorage). Before
// sign-in the game is practice: nothing is submitted.
//
// On a board without a validator the page submits each merge's points (`sc.submit`), as a game
// that is its own authority would; `?seed=<n>` then makes the game repeatable.
//
// The panel shows the server's answer, the live rank (`me` view) and the neighbours (`around`
// view, radius 3). Tests reach in through `window.__scorecast`.

import { Scorecast, formatRank, formatThousands, isValidId } from "../sdk/scorecast.js";
import initRules, { Game2048 } from "../game/pkg/game2048.js";

const DEFAULT_BOARD = "game-2048";
const AROUND_RADIUS = 3;
const SWIPE_MIN_PX = 24;
/** The least time between two checkpoints of a run while playing. */
const CHECKPOINT_EVERY_MS = 1000;
const DIRECTIONS = ["up", "down", "left", "right"];
const PROOF_BYTE = { up: "u", down: "d", left: "l", right: "r" };
const BYTE_DIR = { u: "up", d: "down", l: "left", r: "right" };
const KEYS = {
  ArrowUp: "up",
  ArrowDown: "down",
  ArrowLeft: "left",
  ArrowRight: "right",
  w: "up",
  s: "down",
  a: "left",
  d: "right",
};

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);

// Before isValidId (a wasm export) is called and a game is made.
await Promise.all([Scorecast.ready(), initRules()]);
const requested = params.get("board");
const board = requested && isValidId(requested) ? requested : DEFAULT_BOARD;
const seedParam = params.get("seed");

/** One game on the Rust rules, and listeners told about every move and reset. */
class Game {
  constructor(seed) {
    this._listeners = new Set();
    this.reset(seed);
  }

  /** Starts over from `seed` (a u32; random when left out). */
  reset(seed = randomSeed()) {
    this._rules?.free();
    this._rules = new Game2048(seed);
    this.seed = this._rules.seed;
    this._state = this._rules.state();
    this._notify({ type: "reset", moved: false, gained: 0 });
  }

  get cells() {
    return this._state.cells;
  }
  get score() {
    return this._state.score;
  }
  get moves() {
    return this._state.moves;
  }
  get over() {
    return this._state.over;
  }
  get maxTile() {
    return this._state.maxTile;
  }

  /** Moves toward `dir`; the rules spawn a tile if anything moved. Returns `{moved, gained}`. */
  move(dir) {
    if (!DIRECTIONS.includes(dir)) throw new Error(`unknown direction ${dir}`);
    const s = this._rules.play(dir);
    this._state = s;
    if (!s.moved) return { moved: false, gained: 0 };
    this._notify({ type: "move", dir, moved: true, gained: s.gained });
    return { moved: true, gained: s.gained };
  }

  /** What `dir` would do, `{moved, gained}`, without playing it. */
  peek(dir) {
    return this._rules.peek(dir);
  }

  /** The proof: one byte per move that moved (`u`, `d`, `l`, `r`). */
  moveLog() {
    return this._rules.moveLog();
  }

  /** `fn({type: "move"|"reset", dir?, moved, gained}, game)` after each change; returns `off()`. */
  onChange(fn) {
    this._listeners.add(fn);
    return () => this._listeners.delete(fn);
  }

  _notify(event) {
    for (const fn of this._listeners) fn(event, this);
  }
}

function randomSeed() {
  return crypto.getRandomValues(new Uint32Array(1))[0];
}

const game = new Game(seedParam !== null && seedParam !== "" ? Number(seedParam) >>> 0 : undefined);
const sc = await Scorecast.connect({ wait: false, onState: showState });
showState(sc.state);

// "unknown" until sign-in asks for a run: "verified" (the board has a validator: runs and
// proofs) or "plain" (no validator: the merged points are submitted).
let mode = "unknown";
/** The verified run being played: {run, seed, started_ms, expires_ms}, or null. */
let run = null;
window.__scorecast = {
  sc,
  game,
  board,
  get mode() {
    return mode;
  },
  get run() {
    return run;
  },
};

$("board-name").textContent = board;
$("board-link").href = `/?board=${encodeURIComponent(board)}`;
document.title = `2048 on ${board} — Scorecast`;

game.onChange((event) => {
  renderGame();
  if (event.type !== "move") return;
  if (mode === "verified" && run) {
    saveRun();
    if (game.over) checkpoint();
    else if (event.gained > 0) scheduleCheckpoint();
  } else if ((mode === "plain" || mode === "unknown") && event.gained > 0) {
    submitPoints(event.gained);
  }
});
renderGame();
setupInput();

sc.on("error", (e) => {
  if (e.code === "unknown_board") showResult("rejected", `Board “${board}” does not exist.`);
});

$("new-game").addEventListener("click", () => newGame());
$("again").addEventListener("click", () => newGame());
$("login-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  guestLogin($("guest-name").value.trim());
});
// Disabled in the page until now: a sign-in before this handler was attached (the module waits
// for the SDK first) would submit the form as a plain GET and reload /play without its board.
$("guest-login").disabled = false;
// The last moves of a run are checkpointed before the page goes away (a closed tab keeps them).
document.addEventListener("visibilitychange", () => document.visibilityState === "hidden" && checkpoint());
window.addEventListener("pagehide", () => checkpoint());

const storedToken = localStorage.getItem("scorecast.token");
if (storedToken) signIn(storedToken);
else showSignedOut();

// ---- verified runs -------------------------------------------------------------------------------

/** The localStorage key of the run this player plays on this board. */
function runKey() {
  return `scorecast.run.${board}.${sc.player}`;
}

function saveRun() {
  if (!run) return;
  const log = new TextDecoder().decode(game.moveLog()); // u, d, l, r: ASCII
  localStorage.setItem(runKey(), JSON.stringify({ ...run, log }));
}

function forgetRun() {
  if (sc.player) localStorage.removeItem(runKey());
  run = null;
}

/** The stored run of this player on this board, if it has a minute left. */
function storedRun() {
  try {
    const r = JSON.parse(localStorage.getItem(runKey()) ?? "null");
    if (r && typeof r.run === "string" && r.expires_ms - Date.now() > 60_000 && /^[udlr]*$/.test(r.log)) return r;
  } catch {
    // unreadable: start a new run
  }
  return null;
}

/** After sign-in: resumes the stored run, or starts one (which tells whether the board is verified). */
async function beginRun() {
  const stored = storedRun();
  if (stored) {
    mode = "verified";
    run = { run: stored.run, seed: stored.seed, started_ms: stored.started_ms, expires_ms: stored.expires_ms };
    replay(stored.seed, stored.log);
    showResult("info", `Run resumed: ${formatThousands(game.score)} points so far.`);
    return;
  }
  await startRun();
}

/** Plays `log` (proof bytes as a string) from `seed` on a new game. */
function replay(seed, log) {
  game.reset(seed);
  const held = mode;
  mode = "replaying"; // no checkpoints or submissions while catching up
  try {
    for (const c of log) game.move(BYTE_DIR[c]);
  } finally {
    mode = held;
  }
  renderGame();
}

/** What a refusal means for the player, in words; the server's message for anything else. */
function refusal(err) {
  const said = {
    ended: "This tournament has ended: scores no longer count.",
    not_started: "This tournament has not started yet.",
    not_joined: "Join this tournament first.",
    full: "This tournament is full.",
    no_attempts_left: "You have no attempts left in this tournament.",
  }[err.code];
  return said ? `${said} (${err.code})` : `${err.code}: ${err.message}`;
}

async function startRun() {
  let started;
  try {
    started = await sc.startRun(board);
  } catch (e) {
    if (e.code === "bad_request" && mode !== "verified") {
      // No validator: the board takes the game's own points.
      mode = "plain";
      flush();
      return;
    }
    run = null;
    if (e.code === "conflict") {
      mode = "verified";
      showResult(
        "rejected",
        "Too many open runs on this board: a run stays open for an hour after it starts. Wait for the oldest to end, then press New game.",
      );
    } else if (e.code === "unknown_board") {
      showResult("rejected", `Board “${board}” does not exist.`);
    } else if (e.code === "unauthorized") {
      showResult("rejected", `unauthorized: ${e.message}`);
      showSignedOut();
    } else {
      showResult("rejected", `Could not start a run. ${refusal(e)}`);
    }
    return;
  }
  mode = "verified";
  unsent = 0; // practice points do not count on a verified board
  run = started;
  lastProofLength = 0;
  game.reset(started.seed);
  saveRun();
  showResult("info", "New run: your merges are checked by the server and put on the board.");
}

async function newGame() {
  if (mode !== "verified") {
    game.reset(seedParam !== null && seedParam !== "" ? Number(seedParam) >>> 0 : undefined);
    return;
  }
  if (run && game.moveLog().length === 0) {
    showResult("info", "This run has no moves yet: play it.");
    return;
  }
  // The finished game's last moves first, answered before the new run's. A log played faster
  // than the validator allows is only accepted once the run is old enough: wait for that.
  const wait = proofDueAt(game.moveLog().length) - Date.now();
  if (game.score > 0 && wait > 0 && wait < 60_000) {
    showResult("info", "Sending this run's last moves…");
    await new Promise((resolve) => setTimeout(resolve, wait));
  }
  await checkpoint();
  forgetRun();
  renderGame();
  await startRun();
}

/**
 * When a log of `moves` moves is old enough for the `2048` validator (at most 10 + 25 a second
 * since the run started; docs/validators.md), with a quarter second for the clocks' skew.
 */
function proofDueAt(moves) {
  return run ? run.started_ms + (moves - 10) * 40 + 250 : 0;
}

let lastProofLength = 0;
let lastCheckpointAt = 0;
let checkpointTimer = null;

function scheduleCheckpoint() {
  const wait = Math.max(lastCheckpointAt + CHECKPOINT_EVERY_MS, limitedUntil) - Date.now();
  if (wait <= 0) checkpoint();
  else if (checkpointTimer === null) checkpointTimer = setTimeout(checkpoint, wait);
}

/**
 * Sends the run's move log so far, unless that length was already sent or the run has scored
 * nothing yet (a 0 would only put the player on the board with 0). Resolves once answered.
 */
function checkpoint() {
  clearTimeout(checkpointTimer);
  checkpointTimer = null;
  if (mode !== "verified" || !run || !sc.player || game.score === 0) return Promise.resolve();
  const proof = game.moveLog();
  if (proof.length === lastProofLength) return Promise.resolve();
  lastProofLength = proof.length;
  lastCheckpointAt = Date.now();
  const sent = { run: run.run, score: game.score };
  return sc.submitProof(board, run.run, proof).then(
    (ack) => {
      showBoardScore(ack.score);
      const dup = ack.duplicate ? " (already counted)" : "";
      showResult(
        "ok",
        `verified ${formatThousands(sent.score)}${dup} · board score ${formatThousands(ack.score)} · rank ${formatRank(ack.rank)}`,
      );
    },
    (err) => {
      if (run?.run === sent.run) lastProofLength = Math.min(lastProofLength, proof.length - 1);
      if (err.code === "not_found" && run?.run === sent.run) {
        forgetRun();
        showResult("rejected", "This run has expired (a run lasts an hour): press New game to start another.");
      } else if (err.code === "rate_limited") {
        limitedUntil = Date.now() + (err.retryAfterMs ?? 1000);
        showResult("rejected", `rate limited — retry in ${seconds(limitedUntil - Date.now())}`);
        scheduleCheckpoint();
      } else if (err.code === "unauthorized") {
        showResult("rejected", `unauthorized: ${err.message}`);
        showSignedOut();
      } else if (/^proof_refused.*-3\b/.test(err.message) && run?.run === sent.run) {
        // Moves faster than the validator believes a person plays (25 a second, plus a burst of
        // 10): the same log is valid once the run is old enough, so it is sent again then.
        const due = proofDueAt(proof.length);
        showResult("rejected", "Moves faster than the server accepts: this checkpoint is sent again in a moment.");
        limitedUntil = Math.max(limitedUntil, Date.now() + Math.min(Math.max(due - Date.now(), 250), 60_000));
        scheduleCheckpoint();
      } else {
        showResult("rejected", `refused — ${refusal(err)}`);
      }
    },
  );
}

// ---- plain points (boards without a validator) ---------------------------------------------------

// Points the board has not taken yet: made before sign-in, or refused as rate limited. They go
// out as one submission once signed in / once the limiter's retry time has passed.
let unsent = 0;
let limitedUntil = 0;
let flushTimer = null;

function submitPoints(points) {
  unsent += points;
  if (mode === "unknown") {
    showResult("rejected", `Board “${board}” does not exist: these points count nowhere.`);
    return;
  }
  if (!sc.player) {
    showResult("info", "Sign in to play for the board.");
    return;
  }
  const wait = limitedUntil - Date.now();
  if (wait > 0) showResult("rejected", `rate limited — retry in ${seconds(wait)} (${formatThousands(unsent)} points waiting)`);
  flush();
}

function flush() {
  clearTimeout(flushTimer);
  flushTimer = null;
  if (mode !== "plain" || unsent === 0 || !sc.player) return;
  const wait = limitedUntil - Date.now();
  if (wait > 0) {
    scheduleFlush(wait); // the limiter said when; asking earlier would only be refused again
    return;
  }
  const points = unsent;
  unsent = 0;
  sc.submit(board, points).then(
    (ack) => {
      showBoardScore(ack.score);
      const dup = ack.duplicate ? " (duplicate, counted once)" : "";
      showResult("ok", `+${formatThousands(points)} accepted${dup} · board score ${formatThousands(ack.score)} · rank ${formatRank(ack.rank)}`);
    },
    (err) => {
      if (err.code === "rate_limited") {
        unsent += points;
        const wait = err.retryAfterMs ?? 1000;
        limitedUntil = Date.now() + wait;
        showResult("rejected", `rate limited — retry in ${seconds(wait)} (${formatThousands(unsent)} points waiting)`);
        scheduleFlush(wait);
      } else if (err.code === "unauthorized") {
        unsent += points; // sign in again and they are sent
        showResult("rejected", `unauthorized: ${err.message}`);
        showSignedOut();
      } else {
        showResult("rejected", refusal(err));
      }
    },
  );
}

function scheduleFlush(ms) {
  if (flushTimer === null) flushTimer = setTimeout(flush, ms + 50);
}

function seconds(ms) {
  return `${(ms / 1000).toFixed(1)} s`;
}

/**
 * Says what became of the last submission in its panel. A refusal is also said above the grid,
 * where the player is looking (on a phone the panel is below the fold), until something counts
 * again.
 */
function showResult(kind, text) {
  const el = $("last-result");
  el.textContent = text;
  el.dataset.kind = kind;
  el.classList.toggle("muted", kind === "info");
  const notice = $("notice");
  if (kind === "rejected") {
    notice.textContent = text;
    notice.hidden = false;
  } else if (kind === "ok") {
    notice.hidden = true;
  }
}

function showBoardScore(score) {
  $("board-score").textContent = score === null || score === undefined ? "–" : formatThousands(score);
}

// ---- player --------------------------------------------------------------------------------------

async function guestLogin(name) {
  const error = $("login-error");
  error.hidden = true;
  if (!isValidId(`guest-${name}`)) {
    error.textContent = "Use 1–58 letters, digits, _ . or -.";
    error.hidden = false;
    return;
  }
  $("guest-login").disabled = true;
  try {
    const { player, token } = await Scorecast.guest(name);
    localStorage.setItem("scorecast.token", token);
    localStorage.setItem("scorecast.player", player);
    await signIn(token);
  } catch (e) {
    error.textContent =
      e.code === "not_found" ? "Guest login is only available on development servers." : `Login failed: ${e.message}`;
    error.hidden = false;
  } finally {
    $("guest-login").disabled = false;
  }
}

let subscribed = false;

async function signIn(token) {
  let player;
  try {
    player = await sc.hello(token);
  } catch (e) {
    if (e.code === "unauthorized") {
      localStorage.removeItem("scorecast.token");
      localStorage.removeItem("scorecast.player");
    }
    $("login-error").textContent = `Sign-in refused (${e.code}): ${e.message}`;
    $("login-error").hidden = false;
    showSignedOut();
    return;
  }
  $("login-form").hidden = true;
  $("login-error").hidden = true;
  const who = $("whoami");
  who.hidden = false;
  who.replaceChildren(`Playing as `, strong(player), " · ");
  const out = document.createElement("button");
  out.type = "button";
  out.id = "sign-out";
  out.textContent = "Sign out";
  out.addEventListener("click", () => {
    localStorage.removeItem("scorecast.token");
    localStorage.removeItem("scorecast.player");
    location.reload(); // a session stays its player: start a fresh one
  });
  who.append(out);
  if (!subscribed) {
    subscribed = true;
    sc.subscribe(board, "me", onMe);
    sc.subscribe(board, "around", { radius: AROUND_RADIUS }, onAround);
  }
  await beginRun();
}

function showSignedOut() {
  $("login-form").hidden = false;
  $("whoami").hidden = true;
}

function onMe(msg) {
  $("my-rank").textContent = formatRank(msg.rank);
  showBoardScore(msg.score);
}

function onAround(msg) {
  const list = $("around");
  list.replaceChildren(
    ...msg.entries.map((e) => {
      const li = document.createElement("li");
      li.dataset.player = e.player;
      li.classList.toggle("me", e.player === sc.player);
      li.append(span("rank", formatRank(e.rank)), span("name", e.name ?? e.player), span("score", formatThousands(e.score)));
      return li;
    }),
  );
  $("around-empty").hidden = msg.entries.length > 0;
}

function span(cls, text) {
  const s = document.createElement("span");
  s.className = cls;
  s.textContent = text;
  return s;
}

function strong(text) {
  const s = document.createElement("strong");
  s.textContent = text;
  return s;
}

// ---- game board ----------------------------------------------------------------------------------

function renderGame() {
  const grid = $("grid");
  const tiles = game.cells.map((v) => {
    const d = document.createElement("div");
    d.className = v >= 1024 ? "tile big" : "tile";
    d.dataset.v = String(v);
    d.textContent = v ? String(v) : "";
    return d;
  });
  const overlay = $("game-over");
  overlay.hidden = !game.over;
  grid.replaceChildren(...tiles, overlay);
  $("game-score").textContent = formatThousands(game.score);
}

function setupInput() {
  window.addEventListener("keydown", (ev) => {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (ev.target instanceof HTMLElement && ev.target.closest("input, textarea, select")) return;
    const dir = KEYS[ev.key] ?? KEYS[ev.key.toLowerCase?.()];
    if (!dir) return;
    ev.preventDefault();
    game.move(dir);
  });

  const grid = $("grid");
  let start = null;
  grid.addEventListener("pointerdown", (ev) => {
    start = { x: ev.clientX, y: ev.clientY, id: ev.pointerId };
  });
  grid.addEventListener("pointerup", (ev) => {
    if (!start || start.id !== ev.pointerId) return;
    const dx = ev.clientX - start.x;
    const dy = ev.clientY - start.y;
    start = null;
    if (Math.max(Math.abs(dx), Math.abs(dy)) < SWIPE_MIN_PX) return;
    game.move(Math.abs(dx) > Math.abs(dy) ? (dx > 0 ? "right" : "left") : dy > 0 ? "down" : "up");
  });
  grid.addEventListener("pointercancel", () => (start = null));
}

function showState(state) {
  const badge = $("conn-state");
  badge.textContent = state;
  badge.dataset.state = state;
}
