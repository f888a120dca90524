// The live leaderboard page (`/`, `?board=<id>`): the top 20 over the WebSocket, rows flashed when
// they change, and the signed-in player's own row pinned below when they are not in the top.

import { Scorecast, formatAgo, formatCompact, formatRank, formatThousands, isValidId } from "../sdk/scorecast.js";

const TOP_LIMIT = 20;
const FLASH_MS = 1500;
const DEFAULT_BOARD = "game-2048";

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
  board = id;
  top = null;
  me = null;
  rowOf.clear();
  $("rows").replaceChildren();
  $("me-pin").replaceChildren();
  $("error").hidden = true;
  $("play-link").href = `/play?board=${encodeURIComponent(id)}`;
  document.title = `${id} — Scorecast`;
  if (pushUrl) history.replaceState(null, "", `?board=${encodeURIComponent(id)}`);
  unsubscribe.push(sc.subscribe(id, "top", { limit: TOP_LIMIT }, onTop));
  if (sc.player) subscribeMe();
  render();
}

function subscribeMe() {
  unsubscribe.push(sc.subscribe(board, "me", onMe));
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

  $("empty").hidden = !top || entries.length > 0;
  $("season").textContent = top ? `season ${top.season}` : "";
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
