// The live leaderboard page (`/`, `?board=<id>`): the top 20 over the WebSocket, rows flashed when
// they change, and the signed-in player's own row pinned below when they are not in the top.
// On a bucketed board (`bucket_size`) it shows one bucket (`&bucket=<n>`; by default the
// signed-in player's own, else the first), ranked within it, their row pinned when below its
// top: read over HTTP every 2 s (the WebSocket's views of a bucketed board are a player's own
// bucket only, and none for a spectator), with a picker to step through the buckets, bounded by
// the season's number of buckets (`buckets` in each answer).
// A board with a tournament shows its state (not started / open / ending soon / ended), the time
// left, counted down on the server's clock, and its participants: `GET /v1/boards/{b}/tournament`,
// read again on a live `tournament` event, when the countdown reaches a boundary, and every 30 s.
// The connection badge says when the server answers but its Redis does not (reads answered 503
// `unavailable`, views refused `unavailable`): "Redis unavailable — retrying", until a read
// succeeds again; then the views are asked for again.

import { Scorecast, formatAgo, formatCompact, formatRank, formatThousands, isValidId } from "../sdk/scorecast.js";
import { durationText, timeText } from "./time.js";

const TOP_LIMIT = 20;
const FLASH_MS = 1500;
const DEFAULT_BOARD = "game-2048";
const BUCKET_POLL_MS = 2000;
const TOURNAMENT_POLL_MS = 30_000;
// A read to learn whether Redis answers: every 10 s while it does, every 2 s while it does not.
const HEALTH_MS = 10_000;
const RETRY_MS = 2000;
const JSON_ACCEPT = { headers: { accept: "application/json" } };

const $ = (id) => document.getElementById(id);
const narrow = matchMedia("(max-width: 640px)");

// Declared before the connection, whose first state change may come at once.
let connState = "connecting"; // the SDK's state
let redisDown = false; // the last answer said the server's Redis does not answer

await Scorecast.ready();

const sc = await Scorecast.connect({ wait: false, onState: showState });
showState(sc.state);
window.__scorecast = { sc };

let board = null;
let unsubscribe = [];
let top = null; // the latest `top` message
let me = null; // the latest `rank` message of the `me` view
let myPlayer = localStorage.getItem("scorecast.player");
let updatedAt = null;
let configs = new Map(); // board id -> its configuration, from /v1/boards
let bucket = null; // on a bucketed board: {n (null: the player's own, not known yet), timer, reading, again, last}
let tour = null; // the shown board's tournament: {board, info (GET /tournament), skew, asked, soon, timer, tick}
let healthTimer = null;
const rowOf = new Map(); // player -> <tr> in the top table, kept so highlights survive re-renders

sc.on("error", (e) => {
  // Redis did not answer a view: the badge says so and the page asks again once reads succeed.
  if (e.code === "unavailable") return redisAnswered(false);
  const text = e.code === "unknown_board" ? `Board “${board}” does not exist.` : `${e.code}: ${e.message}`;
  $("error").textContent = text;
  $("error").hidden = false;
});

const boards = await loadBoards();
const requested = new URLSearchParams(location.search).get("board");
const initial =
  requested && isValidId(requested)
    ? requested
    : boards.includes(DEFAULT_BOARD)
      ? DEFAULT_BOARD
      : (boards[0] ?? DEFAULT_BOARD);
fillPicker(boards, initial);
$("board-picker").addEventListener("change", (ev) => selectBoard(ev.target.value, true));
narrow.addEventListener("change", () => render());
setInterval(showUpdated, 5000);

selectBoard(initial, false);
signIn();
scheduleHealth();

sc.on("tournament", (m) => {
  // A live event (started, ending soon, ended): the state is read again, with the participants.
  if (!tour || m.board !== tour.board) return;
  if (m.event === "ending_soon") tour.soon = true;
  readTournament();
});

async function loadBoards() {
  try {
    const res = await fetch("/v1/boards", JSON_ACCEPT);
    noteRead(res);
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    const body = await res.json();
    configs = new Map(body.boards.map((b) => [b.id, b]));
    return body.boards.map((b) => b.id).filter(isValidId);
  } catch (e) {
    console.warn("scorecast: cannot list boards", e);
    return [];
  }
}

function fillPicker(ids, selected) {
  const picker = $("board-picker");
  const all = ids.includes(selected) ? ids : [selected, ...ids];
  picker.replaceChildren(...all.map((id) => new Option(id, id, false, id === selected)));
}

function selectBoard(id, pushUrl) {
  if (id === board) return;
  for (const off of unsubscribe) off();
  unsubscribe = [];
  clearInterval(bucket?.timer);
  bucket = null;
  board = id;
  top = null;
  me = null;
  rowOf.clear();
  $("rows").replaceChildren();
  $("me-pin").replaceChildren();
  $("error").hidden = true;
  $("play-link").href = `/play?board=${encodeURIComponent(id)}`;
  $("play-empty").href = $("play-link").href;
  document.title = `${id} — Scorecast`;
  if (pushUrl) history.replaceState(null, "", `?board=${encodeURIComponent(id)}`);
  $("bucket-bar").hidden = !configs.get(id)?.bucket_size;
  $("bucket-empty").hidden = true;
  startTournament(id);
  if (configs.get(id)?.bucket_size) {
    const asked = Number(new URLSearchParams(location.search).get("bucket"));
    bucket = {
      n: Number.isInteger(asked) && asked >= 1 ? asked : null,
      timer: setInterval(readBucket, BUCKET_POLL_MS),
      last: null, // the season's number of buckets (0: none yet), once read
    };
    readBucket();
    render();
    return;
  }
  unsubscribe.push(sc.subscribe(id, "top", { limit: TOP_LIMIT }, onTop));
  if (sc.player) subscribeMe();
  render();
}

function subscribeMe() {
  // A bucketed board's `me` would rank the player on the whole board: the bucket shows them.
  if (bucket) return;
  unsubscribe.push(sc.subscribe(board, "me", onMe));
}

/**
 * Reads the shown bucket's top (`GET /v1/boards/{b}/top?bucket=` or, for the player's own,
 * `?player=`); one read at a time, the next one right after when asked meanwhile.
 */
async function readBucket() {
  const b = bucket;
  if (!b) return;
  if (b.reading) {
    b.again = true;
    return;
  }
  b.reading = true;
  const player = sc.player ?? myPlayer;
  const which = b.n ? `bucket=${b.n}` : player ? `player=${encodeURIComponent(player)}` : "bucket=1";
  try {
    const res = await fetch(`/v1/boards/${encodeURIComponent(board)}/top?limit=${TOP_LIMIT}&${which}`, JSON_ACCEPT);
    noteRead(res);
    const body = await res.json().catch(() => null);
    if (bucket !== b) return;
    // Redis does not answer: the badge says so; the table stays as it was until it does.
    if (res.status === 503) return;
    if (res.status === 404 && body?.error?.code === "not_found" && !b.n) {
      // The player has no bucket yet (no score this season): the first bucket, said so.
      b.n = 1;
      b.note = `${player} has no bucket yet: one is given with the first score.`;
      b.again = true;
      return;
    }
    if (!res.ok) throw new Error(body?.error ? `${body.error.code}: ${body.error.message}` : `HTTP ${res.status}`);
    // The first bucket read is the signed-in player's own; a spectator has none.
    if (!b.n && player) b.mine = body.bucket;
    b.n = body.bucket;
    $("error").hidden = true;
    b.last = body.buckets ?? null;
    // In their own bucket below its top rows, the signed-in player's row is pinned (their rank
    // within the bucket).
    me = null;
    if (player && body.bucket === b.mine && !body.entries.some((e) => e.player === player)) {
      const mine = await fetch(`/v1/boards/${encodeURIComponent(board)}/players/${encodeURIComponent(player)}`, JSON_ACCEPT);
      if (bucket !== b) return;
      if (mine.ok) me = await mine.json();
    }
    const previous = top && top.bucket === body.bucket ? new Map(top.entries.map((e) => [e.player, e])) : null;
    top = body;
    updatedAt = Date.now();
    render(previous);
  } catch (e) {
    // Redis not answering is the badge's to say.
    if (bucket !== b || redisDown) return;
    $("error").textContent = `bucket ${b.n ?? ""}: ${e.message}`;
    $("error").hidden = false;
  } finally {
    b.reading = false;
    if (b.again && bucket === b) {
      b.again = false;
      readBucket();
    }
  }
}

/** Shows bucket `n` (the picker, the arrows): the URL says which. */
function showBucket(n) {
  if (!bucket || !Number.isInteger(n) || n < 1) return;
  bucket.n = n;
  bucket.note = null;
  top = null;
  rowOf.clear();
  history.replaceState(null, "", `?board=${encodeURIComponent(board)}&bucket=${n}`);
  render();
  readBucket();
}

$("bucket-bar").addEventListener("submit", (ev) => {
  ev.preventDefault();
  showBucket(Number($("bucket-picker").value));
});
$("bucket-picker").addEventListener("change", () => showBucket(Number($("bucket-picker").value)));
// Back from past the last bucket goes to the last; forward stops at it.
$("bucket-prev").addEventListener("click", () => bucket?.n > 1 && showBucket(bucket.last && bucket.n > bucket.last ? bucket.last : bucket.n - 1));
$("bucket-next").addEventListener("click", () => bucket?.n && !atLastBucket() && showBucket(bucket.n + 1));
$("bucket-mine").addEventListener("click", () => bucket?.mine && showBucket(bucket.mine));

/** The shown bucket is the last with scores, or past it (not while the last is not known). */
function atLastBucket() {
  return Boolean(bucket) && bucket.last !== null && bucket.n >= bucket.last;
}

/** A stored player token (from /play): say hello and pin the player's row. */
async function signIn() {
  const token = localStorage.getItem("scorecast.token");
  if (!token) return;
  try {
    myPlayer = await sc.hello(token);
    localStorage.setItem("scorecast.player", myPlayer);
    subscribeMe();
  } catch (e) {
    console.warn("scorecast: stored token refused", e);
    if (e.code === "unauthorized") {
      localStorage.removeItem("scorecast.token");
      localStorage.removeItem("scorecast.player");
      myPlayer = null;
    }
  }
  render();
}

function onTop(msg) {
  redisAnswered(true);
  const previous = top && new Map(top.entries.map((e) => [e.player, e]));
  top = msg;
  updatedAt = Date.now();
  render(previous);
}

function onMe(msg) {
  redisAnswered(true);
  const changed = me !== null && (me.rank !== msg.rank || me.score !== msg.score);
  me = msg;
  render();
  if (changed) flash($("me-pin").firstElementChild);
}

/** Redraws from `top` and `me`; rows whose rank or score differ from `previous` flash. */
function render(previous) {
  const entries = top?.entries ?? [];
  const rows = entries.map((entry) => {
    let tr = rowOf.get(entry.player);
    if (!tr) {
      tr = newRow(entry.player);
      rowOf.set(entry.player, tr);
    }
    fillRow(tr, entry);
    const before = previous?.get(entry.player);
    if (previous && (!before || before.rank !== entry.rank || before.score !== entry.score)) flash(tr);
    return tr;
  });
  const shown = new Set(entries.map((e) => e.player));
  for (const player of rowOf.keys()) if (!shown.has(player)) rowOf.delete(player);
  $("rows").replaceChildren(...rows);

  $("empty").hidden = !top || entries.length > 0 || Boolean(bucket);
  $("bucket-empty").hidden = !bucket || !top || (entries.length > 0 && !bucket.note);
  if (bucket) {
    $("bucket-empty").textContent = bucket.note ?? bucketEmptyText();
    if (document.activeElement !== $("bucket-picker")) $("bucket-picker").value = bucket.n ? String(bucket.n) : "";
    // The picker goes up to the season's last bucket.
    if (bucket.last !== null) $("bucket-picker").max = String(Math.max(1, bucket.last));
    else $("bucket-picker").removeAttribute("max");
    $("bucket-prev").disabled = !bucket.n || bucket.n <= 1;
    $("bucket-next").disabled = !bucket.n || atLastBucket();
    $("bucket-mine").hidden = !bucket.mine || bucket.mine === bucket.n;
  }
  $("season").textContent = top ? `season ${top.season}${top.bucket ? `, bucket ${top.bucket}` : ""}` : "";
  // Nothing shown yet: loading, or waiting for the server's Redis to answer.
  $("total").textContent = top ? `${formatThousands(top.total)} player${top.total === 1 ? "" : "s"}` : redisDown ? "waiting for Redis…" : "loading…";
  showUpdated();
  renderMe(shown);
}

/** What an empty bucket says: none of its players scored, or there is no such bucket (yet). */
function bucketEmptyText() {
  const { n, last } = bucket;
  if (last === null || n <= last) return `No scores in bucket ${n} yet.`;
  if (last === 0) return "No buckets this season yet: the first score opens bucket 1.";
  return `No bucket ${n} yet: this board has bucket${last === 1 ? " 1" : `s 1–${last}`}.`;
}

/** The player's own row, pinned in the table footer unless it is already in the top rows. */
function renderMe(shown) {
  const pin = $("me-pin");
  const player = sc.player ?? myPlayer;
  $("me-status").textContent = player ? `signed in as ${player}` : "";
  if (!me || !player || shown.has(player)) {
    pin.replaceChildren();
    return;
  }
  let tr = pin.firstElementChild;
  if (!tr || tr.dataset.player !== player) {
    tr = newRow(player);
    pin.replaceChildren(tr);
  }
  fillRow(tr, { player, rank: me.rank, score: me.score });
}

function newRow(player) {
  const tr = document.createElement("tr");
  tr.dataset.player = player;
  for (const cls of ["rank", "player", "score"]) {
    const td = document.createElement("td");
    td.className = cls;
    tr.append(td);
  }
  return tr;
}

function fillRow(tr, entry) {
  const [rank, who, score] = tr.children;
  rank.textContent = formatRank(entry.rank);
  who.replaceChildren(entry.name ?? entry.player);
  if (entry.name && entry.name !== entry.player) {
    const id = document.createElement("span");
    id.className = "id";
    id.textContent = entry.player;
    who.append(id);
  }
  if (entry.score === null || entry.score === undefined) {
    score.textContent = "–";
    delete score.dataset.score;
  } else {
    score.textContent = narrow.matches ? formatCompact(entry.score) : formatThousands(entry.score);
    score.dataset.score = String(entry.score);
    score.title = formatThousands(entry.score);
  }
  tr.classList.toggle("me", entry.player === (sc.player ?? myPlayer));
}

function flash(el) {
  if (!el) return;
  clearTimeout(el._flashTimer);
  el.classList.remove("changed");
  void el.offsetWidth; // restart the CSS animation
  el.classList.add("changed");
  el._flashTimer = setTimeout(() => el.classList.remove("changed"), FLASH_MS);
}

function showUpdated() {
  $("updated").textContent = updatedAt ? `updated ${formatAgo(updatedAt, Date.now())}` : "";
}

/**
 * The connection badge: the SDK's state, or, connected but the server's Redis not answering,
 * "Redis unavailable — retrying" (`data-state="degraded"`).
 */
function showState(state = connState) {
  connState = state;
  const badge = $("conn-state");
  const degraded = redisDown && state === "open";
  badge.textContent = degraded ? "Redis unavailable — retrying" : state;
  badge.dataset.state = degraded ? "degraded" : state;
  badge.title = degraded ? "The server is up but its Redis does not answer: the board is not live until it does" : "Live connection";
}

/** A read's answer: 503 says Redis does not answer; any other answer from the server says it does. */
function noteRead(res) {
  if (res.status === 503) redisAnswered(false);
  else if (res.status < 500) redisAnswered(true);
}

/**
 * Whether Redis answers, as the last answer said. Down: the badge says so and reads are tried
 * every 2 s. Back: the views are asked for again (a refused subscribe opened none; an open one
 * gets a fresh snapshot), a bucket and the tournament read again, the boards listed if they
 * could not be.
 */
function redisAnswered(up) {
  if (up === !redisDown) return;
  redisDown = !up;
  showState();
  render();
  scheduleHealth();
  if (!up || !board) return;
  if (!configs.size) {
    // The boards could not be listed (Redis was down when the page opened): list them, and show
    // the board again, now knowing whether it is bucketed or a tournament.
    loadBoards().then((ids) => {
      if (!ids.length) return askAgain();
      fillPicker(ids, board);
      const id = board;
      board = null;
      selectBoard(id, false);
    });
    return;
  }
  askAgain();
}

/** Asks again for what the shown board needs: its views (or bucket) and its tournament. */
function askAgain() {
  if (bucket) readBucket();
  else {
    sc.subscribe(board, "top", { limit: TOP_LIMIT }, onTop);
    if (sc.player) sc.subscribe(board, "me", onMe);
  }
  readTournament();
}

/** The next check of Redis (see HEALTH_MS). */
function scheduleHealth() {
  clearTimeout(healthTimer);
  healthTimer = setTimeout(checkHealth, redisDown ? RETRY_MS : HEALTH_MS);
}

/**
 * One small read (the board's first row): the live views alone would not tell that Redis stopped
 * answering, they just go quiet. A bucketed board's own reads (every 2 s) tell already.
 */
async function checkHealth() {
  try {
    if (board && (!bucket || redisDown)) {
      const which = bucket ? `&bucket=${bucket.n ?? 1}` : "";
      noteRead(await fetch(`/v1/boards/${encodeURIComponent(board)}/top?limit=1${which}`, JSON_ACCEPT));
    }
  } catch {
    // The server itself is not reached: the badge shows the connection's state.
  } finally {
    scheduleHealth();
  }
}

// ---- the board's tournament ----------------------------------------------------------------

/** Starts showing the tournament of board `id`, if it has one (the board list says; unknown: asked). */
function startTournament(id) {
  stopTournament();
  const cfg = configs.get(id);
  if (cfg && !cfg.tournament) return;
  tour = { board: id, info: null, skew: 0, asked: null, soon: false };
  tour.timer = setInterval(readTournament, TOURNAMENT_POLL_MS);
  tour.tick = setInterval(tickTournament, 1000);
  readTournament();
}

function stopTournament() {
  clearInterval(tour?.timer);
  clearInterval(tour?.tick);
  tour = null;
  $("tournament").hidden = true;
}

/** `GET /v1/boards/{b}/tournament`: the state, dates, the server's clock and the participants. */
async function readTournament() {
  const t = tour;
  if (!t) return;
  try {
    const res = await fetch(`/v1/boards/${encodeURIComponent(t.board)}/tournament`, JSON_ACCEPT);
    noteRead(res);
    const body = await res.json().catch(() => null);
    if (tour !== t) return;
    if (res.status === 404) return stopTournament(); // no tournament (or no such board)
    if (!res.ok) return; // the last answer stays shown; the badge tells when Redis is down
    if (t.info && t.info.season !== body.season) t.soon = false;
    t.info = body;
    // The time left is counted on the server's clock: the page's may be wrong.
    t.skew = body.server_time_ms - Date.now();
    tickTournament();
  } catch (e) {
    console.warn("scorecast: cannot read the tournament", e);
  }
}

/** The state, the time left and the participants, from the last answer and the corrected clock. */
function tickTournament() {
  const t = tour;
  if (!t?.info) return;
  const { info } = t;
  const now = Date.now() + t.skew;
  const state = now < info.start_ms ? "upcoming" : now < info.end_ms ? "running" : "ended";
  const left = state === "upcoming" ? info.start_ms - now : state === "running" ? info.end_ms - now : 0;
  const soonMs = configs.get(t.board)?.tournament?.ending_soon_ms ?? 300_000;
  const soon = state === "running" && (t.soon || left <= soonMs);
  const badge = $("tournament-state");
  badge.textContent = state === "upcoming" ? "not started" : state === "running" ? (soon ? "ending soon" : "open") : "ended";
  badge.dataset.state = state;
  badge.dataset.soon = String(soon);
  const el = $("tournament-left");
  el.dataset.leftMs = String(Math.max(0, left));
  el.textContent =
    state === "upcoming"
      ? `starts in ${durationText(left)}`
      : state === "running"
        ? `ends in ${durationText(left)}`
        : `ended ${timeText(info.end_ms, 16)}${info.ended_ms ? "" : ": final standings being counted"}`;
  el.title = `${timeText(info.start_ms, 16)} → ${timeText(info.end_ms, 16)}`;
  const n = info.entrants;
  $("tournament-entrants").textContent =
    `${formatThousands(n)} participant${n === 1 ? "" : "s"}` +
    (info.max_size ? ` of ${formatThousands(info.max_size)}${n >= info.max_size ? " (full)" : ""}` : "");
  $("tournament").hidden = false;
  // A boundary passed since the last answer: read the state again (once per boundary).
  if (state !== info.state && t.asked !== state) {
    t.asked = state;
    readTournament();
  }
}
