// The 2048 page (`/play`, `?board=<id>`, `?seed=<n>` for a repeatable game): every move that merges
// tiles submits the merged points; the panel shows the server's answer, the live rank (`me` view)
// and the neighbours (`around` view, radius 3). Tests reach in through `window.__scorecast`.

import { Scorecast, formatRank, formatThousands, isValidId } from "../sdk/scorecast.js";
import { Game, seededRng } from "./game2048.js";

const DEFAULT_BOARD = "game-2048";
const AROUND_RADIUS = 3;
const SWIPE_MIN_PX = 24;
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

await Scorecast.ready(); // before isValidId (a wasm export) is called
const requested = params.get("board");
const board = requested && isValidId(requested) ? requested : DEFAULT_BOARD;
const seed = params.get("seed");
const game = new Game({ rng: seed !== null && seed !== "" ? seededRng(Number(seed)) : Math.random });
const sc = await Scorecast.connect({ wait: false, onState: showState });
showState(sc.state);
window.__scorecast = { sc, game, board };

// Points the board has not taken yet: made before sign-in, or refused as rate limited. They go
// out as one submission once signed in / once the limiter's retry time has passed.
let unsent = 0;
let limitedUntil = 0;
let flushTimer = null;

$("board-name").textContent = board;
$("board-link").href = `/?board=${encodeURIComponent(board)}`;
document.title = `2048 on ${board} — Scorecast`;

game.onChange((event) => {
  renderGame();
  if (event.type === "move" && event.gained > 0) submitPoints(event.gained);
});
renderGame();
setupInput();

sc.on("error", (e) => {
  if (e.code === "unknown_board") showResult("rejected", `Board “${board}” does not exist.`);
});

$("new-game").addEventListener("click", () => game.reset());
$("again").addEventListener("click", () => game.reset());
$("login-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  guestLogin($("guest-name").value.trim());
});

const storedToken = localStorage.getItem("scorecast.token");
if (storedToken) signIn(storedToken);
else showSignedOut();

// ---- scores ------------------------------------------------------------------------------------

function submitPoints(points) {
  unsent += points;
  if (!sc.player) {
    showResult("info", `Sign in to put your points on the board (${formatThousands(unsent)} waiting).`);
    return;
  }
  const wait = limitedUntil - Date.now();
  if (wait > 0) showResult("rejected", `rate limited — retry in ${seconds(wait)} (${formatThousands(unsent)} points waiting)`);
  flush();
}

function flush() {
  clearTimeout(flushTimer);
  flushTimer = null;
  if (unsent === 0 || !sc.player) return;
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
        showResult("rejected", `${err.code}: ${err.message}`);
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

function showResult(kind, text) {
  const el = $("last-result");
  el.textContent = text;
  el.dataset.kind = kind;
  el.classList.toggle("muted", kind === "info");
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
  flush();
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
