// The live leaderboard page (`/`, `?board=<id>`): the top 20 over the WebSocket, rows flashed when
// they change, and the signed-in player's own row pinned below when they are not in the top.
// On a bucketed board (`bucket_size`) it shows one bucket (`&bucket=<n>`; by default the
// signed-in player's own, else the first), ranked within it, their row pinned when below its
// top: read over HTTP every 2 s (the WebSocket's views of a bucketed board are a player's own
// bucket only, and none for a spectator), with a picker to step through the buckets.

import { Scorecast, formatAgo, formatCompact, formatRank, formatThousands, isValidId } from "../sdk/scorecast.js";

const TOP_LIMIT = 20;
const FLASH_MS = 1500;
const DEFAULT_BOARD = "game-2048";
const BUCKET_POLL_MS = 2000;

const $ = (id) => document.getElementById(id);
const narrow = matchMedia("(max-width: 640px)");

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
let bucket = null; // on a bucketed board: {n (null: the player's own, not known yet), timer, reading, again}
const rowOf = new Map(); // player -> <tr> in the top table, kept so highlights survive re-renders

sc.on("error", (e) => {
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

async function loadBoards() {
  try {
    const res = await fetch("/v1/boards", { headers: { accept: "application/json" } });
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
  if (configs.get(id)?.bucket_size) {
    const asked = Number(new URLSearchParams(location.search).get("bucket"));
    bucket = { n: Number.isInteger(asked) && asked >= 1 ? asked : null, timer: setInterval(readBucket, BUCKET_POLL_MS) };
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
    const res = await fetch(`/v1/boards/${encodeURIComponent(board)}/top?limit=${TOP_LIMIT}&${which}`, { headers: { accept: "application/json" } });
    const body = await res.json().catch(() => null);
    if (bucket !== b) return;
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
    // In their own bucket below its top rows, the signed-in player's row is pinned (their rank
    // within the bucket).
    me = null;
    if (player && body.bucket === b.mine && !body.entries.some((e) => e.player === player)) {
      const mine = await fetch(`/v1/boards/${encodeURIComponent(board)}/players/${encodeURIComponent(player)}`, { headers: { accept: "application/json" } });
      if (bucket !== b) return;
      if (mine.ok) me = await mine.json();
    }
    const previous = top && top.bucket === body.bucket ? new Map(top.entries.map((e) => [e.player, e])) : null;
    top = body;
    updatedAt = Date.now();
    render(previous);
  } catch (e) {
    if (bucket !== b) return;
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
$("bucket-prev").addEventListener("click", () => bucket?.n > 1 && showBucket(bucket.n - 1));
$("bucket-next").addEventListener("click", () => bucket?.n && showBucket(bucket.n + 1));
$("bucket-mine").addEventListener("click", () => bucket?.mine && showBucket(bucket.mine));

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
  const previous = top && new Map(top.entries.map((e) => [e.player, e]));
  top = msg;
  updatedAt = Date.now();
  render(previous);
}

function onMe(msg) {
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
    $("bucket-empty").textContent = bucket.note ?? `No scores in bucket ${bucket.n} yet.`;
    if (document.activeElement !== $("bucket-picker")) $("bucket-picker").value = bucket.n ? String(bucket.n) : "";
    $("bucket-prev").disabled = !bucket.n || bucket.n <= 1;
    $("bucket-mine").hidden = !bucket.mine || bucket.mine === bucket.n;
  }
  $("season").textContent = top ? `season ${top.season}${top.bucket ? `, bucket ${top.bucket}` : ""}` : "";
  $("total").textContent = top ? `${formatThousands(top.total)} player${top.total === 1 ? "" : "s"}` : "loading…";
  showUpdated();
  renderMe(shown);
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

function showState(state) {
  const badge = $("conn-state");
  badge.textContent = state;
  badge.dataset.state = state;
}
