// The admin console (`/admin`): boards (create, edit, delete), a live top view with per-row
// "remove score" / "ban" / "revoke tokens", the watched board's tournament (state, a live
// countdown, entrants, rules, final standings), a bucketed board's buckets and the top of any
// of them, the leagues with each season's moves between tiers, any player of the watched board found by id or name,
// the board's past seasons with their standings and a manual rollover, a player's history from
// the audit log, bans, queues with their dead letters (retry), and live charts summed over every
// instance (`/admin/stats`). Every destructive action asks for a second click on the same button;
// every outcome is said in the panel where the operator acted, scrolled into view. No build
// step: the SDK (web/sdk/scorecast.js) and the shared Rust crate compiled to wasm (web/pkg) do
// the protocol.
//
// The admin token is asked for once per tab and kept in sessionStorage only (never in
// localStorage, never in a URL); every admin call sends it as a Bearer token.

import { Scorecast, formatThousands, isValidId } from "../sdk/scorecast.js";
import { durationText, timeText } from "./time.js";

const TOKEN_KEY = "scorecast.adminToken";
const TOP_LIMIT = 20;
const POLL_MS = 1000;
const CHART_POINTS = 60;
const COLORS = ["#ffb454", "#3ecf8e", "#ff6b6b", "#6ea8fe", "#f5c542", "#c792ea"];

const $ = (id) => document.getElementById(id);

await Scorecast.ready();

let token = sessionStorage.getItem(TOKEN_KEY);
let sc = null;
let watched = null; // the board whose top is shown
let offTop = null;
let history = null; // {board, player, cursor}
let deadQueue = null;
let pollTimer = null;
let boardList = []; // the last /v1/boards answer
let banList = []; // the last /admin/bans answer
let find = null; // {board, q, cursor}
let league = null; // the league whose seasons are shown: {id, cfg, season, moves}
let buckets = null; // the watched board's buckets: {board, season, shown, picked}
let tour = null; // the watched board's tournament: {board, info, skew, entrants offset}

// ---- the admin API ---------------------------------------------------------------------------

class ApiError extends Error {
  constructor(status, code, message) {
    super(message || code);
    this.status = status;
    this.code = code;
  }
}

async function api(method, path, body, bearer = token) {
  const res = await fetch(path, {
    method,
    headers: {
      authorization: `Bearer ${bearer}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  const json = text ? JSON.parse(text) : null;
  if (!res.ok) {
    if (res.status === 401 && bearer === token && token) signOut("The admin token was refused.");
    throw new ApiError(res.status, json?.error?.code ?? String(res.status), json?.error?.message);
  }
  return json;
}

/**
 * Says `text` in the message line of the panel holding `near` (a button, a form or the message
 * element itself) and scrolls it into view: the operator reads the outcome where they acted.
 */
function say(near, text, kind = "info") {
  const el = near?.classList?.contains("msg") ? near : near?.closest?.("section")?.querySelector(".msg");
  if (!el) return;
  el.textContent = text;
  el.dataset.kind = kind;
  el.hidden = false;
  keepInView(el);
}

// What stops keeping the last message in view: set by `keepInView`.
let letGo = () => {};

/**
 * Scrolls `el` into view, and keeps it there while the page settles: an action often reshapes
 * the panels above it (a rollover empties the live top, a removal shortens a list), which would
 * otherwise carry the message out of sight. Keeping stops after a few seconds, at the next
 * message, or as soon as the operator scrolls or types.
 */
function keepInView(el) {
  letGo();
  const check = () => {
    const r = el.getBoundingClientRect();
    if (!el.hidden && (r.top < 0 || r.bottom > window.innerHeight)) el.scrollIntoView({ block: "center" });
  };
  check();
  const watch = new ResizeObserver(check);
  watch.observe($("console"));
  const events = ["wheel", "touchmove", "keydown"];
  const timer = setTimeout(() => letGo(), 3000);
  letGo = () => {
    watch.disconnect();
    clearTimeout(timer);
    for (const e of events) removeEventListener(e, letGo);
    letGo = () => {};
  };
  for (const e of events) addEventListener(e, letGo, { passive: true });
}

const fail = (near, what) => (e) => say(near, `${what}: ${e.code ?? ""} ${e.message}`, "error");

// ---- sign in / out ---------------------------------------------------------------------------

$("login-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const candidate = $("token").value.trim();
  try {
    await api("GET", "/admin/bans", undefined, candidate);
  } catch (e) {
    $("login-error").textContent = e.status === 401 ? "That token is not the admin token." : `${e.code}: ${e.message}`;
    $("login-error").hidden = false;
    return;
  }
  token = candidate;
  sessionStorage.setItem(TOKEN_KEY, token);
  $("token").value = "";
  start();
});

$("sign-out").addEventListener("click", () => signOut());

function signOut(why) {
  sessionStorage.removeItem(TOKEN_KEY);
  token = null;
  clearInterval(pollTimer);
  offTop?.();
  sc?.close();
  sc = null;
  $("console").hidden = true;
  $("sign-out").hidden = true;
  $("login").hidden = false;
  $("login-error").textContent = why ?? "";
  $("login-error").hidden = !why;
}

async function start() {
  $("login").hidden = true;
  $("login-error").hidden = true;
  $("console").hidden = false;
  $("sign-out").hidden = false;
  sc = await Scorecast.connect({ wait: false, onState: showState });
  sc.on("error", (e) => say($("top-msg"), `${e.code}: ${e.message}`, "error"));
  // A live tournament event of the watched board: read its state again (an `ended` brings the
  // final standings).
  sc.on("tournament", (m) => {
    if (m.board === watched) showTournament(watched, { quiet: true });
  });
  if (!watched) showSeasons(null);
  await refreshAll();
  pollTimer = setInterval(() => {
    poll();
    tickTournament();
  }, POLL_MS);
  poll();
}

function showState(s) {
  const b = $("conn-state");
  b.textContent = s;
  b.dataset.state = s;
}

async function refreshAll() {
  await Promise.all([refreshBoards(), refreshBans(), refreshQueues(), refreshAudit(), refreshLeagues()]).catch(fail($("board-msg"), "refresh"));
}

// ---- boards ----------------------------------------------------------------------------------

async function refreshBoards() {
  // Through `api`, so a refusal (503 while Redis is unreachable) is shown as one.
  const { boards } = await api("GET", "/v1/boards");
  boardList = boards;
  fill(
    $("boards"),
    boards.map((b) => {
      const tr = row([b.id, b.order, b.op, b.reset]);
      tr.dataset.board = b.id;
      tr.classList.toggle("watched", b.id === watched);
      tr.append(
        actions([
          ["Watch", "watch", () => watch(b.id)],
          ["Edit", "edit", () => edit(b)],
          ["Delete", "delete", (btn) => armed(btn, `Click again to delete board ${b.id} and all its scores.`, () => deleteBoard(btn, b.id)), "danger"],
        ]),
      );
      return tr;
    }),
    "No boards yet: create one below.",
  );
  if (watched) showSeasons(watched);
  if (watched) {
    showTournament(watched, { quiet: true });
    showBuckets(watched, { quiet: true });
  }
}

function edit(b) {
  const { id, ...config } = b;
  $("board-id").value = id;
  $("board-config").value = JSON.stringify(config, null, 1);
}

$("board-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const id = $("board-id").value.trim();
  const msg = $("board-msg");
  if (!isValidId(id)) {
    say(msg, "The id must be 1–64 characters of A–Z a–z 0–9 _ . -", "error");
    return;
  }
  let config;
  try {
    config = JSON.parse($("board-config").value || "{}");
  } catch (e) {
    say(msg, `The config is not JSON: ${e.message}`, "error");
    return;
  }
  try {
    const r = await api("PUT", `/admin/boards/${id}`, config);
    say(msg, r.created ? `Board ${id} created.` : `Board ${id} saved.`);
    await Promise.all([refreshBoards(), refreshAudit()]);
    if (!watched) watch(id);
  } catch (e) {
    say(msg, `${e.code}: ${e.message}`, "error");
  }
});

const ARMED_MS = 8000;
// Armed buttons by key (board/player/action), until when: a live row re-rendered between the two
// clicks (the top moves all the time on a live game) comes back armed.
const armedKeys = new Map();

/**
 * A destructive button asks for a second click: the first arms it ("Confirm …", in red) and
 * says `question` in its panel; a second click within 8 s runs `run`, otherwise it disarms.
 */
function armed(btn, question, run) {
  const key = btn.dataset.key;
  if (btn.classList.contains("armed") || (key && (armedKeys.get(key) ?? 0) > Date.now())) {
    clearTimeout(btn.disarm);
    if (key) armedKeys.delete(key);
    disarm(btn);
    run();
    return;
  }
  if (key) armedKeys.set(key, Date.now() + ARMED_MS);
  arm(btn, ARMED_MS);
  say(btn, question, "confirm");
}

function arm(btn, ms) {
  btn.classList.add("armed");
  btn.textContent = `Confirm ${btn.dataset.label.toLowerCase()}`;
  btn.disarm = setTimeout(() => disarm(btn), ms);
}

function disarm(btn) {
  btn.classList.remove("armed");
  btn.textContent = btn.dataset.label;
}

async function deleteBoard(btn, id) {
  const msg = $("board-msg");
  try {
    await api("DELETE", `/admin/boards/${id}`);
    say(msg, `Board ${id} deleted.`);
    if (watched === id) watch(null);
    await Promise.all([refreshBoards(), refreshAudit()]);
  } catch (e) {
    fail(msg, "delete")(e);
  }
}

// ---- the live top ----------------------------------------------------------------------------

function watch(board) {
  offTop?.();
  offTop = null;
  watched = board;
  $("watching").textContent = board ? `— ${board}` : "";
  $("top-rows").replaceChildren();
  $("top-empty").textContent = board ? "No scores yet." : "Pick a board to watch.";
  $("top-empty").hidden = false;
  for (const tr of $("boards").children) tr.classList.toggle("watched", tr.dataset.board === board);
  // What the panels said was about the board watched before.
  for (const id of ["top-msg", "find-msg", "seasons-msg", "tournament-msg", "buckets-msg"]) $(id).hidden = true;
  $("find-board").textContent = board ? `on ${board}` : "";
  $("find-rows").replaceChildren();
  $("find-table").hidden = true;
  $("find-more").hidden = true;
  find = null;
  showSeasons(board);
  showTournament(board);
  showBuckets(board);
  if (!board) return;
  if (boardList.find((b) => b.id === board)?.bucket_size) {
    // The WebSocket's views of a bucketed board are a player's own bucket (none for the
    // console, a spectator): the whole board's top is read every 10 s instead. Not more often:
    // a read after scores changed merges every bucket in Redis (docs/protocol.md, "Buckets").
    // A console left in a background tab reads nothing, and reads at once when shown again.
    $("watching").textContent = `— ${board} (every bucket, read every 10 s)`;
    const read = () => {
      if (document.hidden) return;
      api("GET", `/admin/boards/${board}/top?limit=${TOP_LIMIT}`)
        .then((page) => renderTop(board, page))
        .catch((e) => say($("top-msg"), `top: ${e.code} ${e.message}`, "error"));
    };
    const timer = setInterval(read, 10_000);
    document.addEventListener("visibilitychange", read);
    read();
    offTop = () => {
      clearInterval(timer);
      document.removeEventListener("visibilitychange", read);
    };
    return;
  }
  offTop = sc.subscribe(board, "top", { limit: TOP_LIMIT }, (m) => renderTop(board, m));
}

/** The actions on one player of `board`, for the live top and the search results. */
function playerActions(board, player, where) {
  const key = (action) => `${where}/${board}/${player}/${action}`;
  return actions([
    ["History", "history", () => showHistory(board, player)],
    ["Remove score", "remove", (btn) => armed(btn, `Click again to remove ${player}'s score from ${board}.`, () => removeScore(btn, board, player)), "danger", key("remove")],
    ["Ban", "ban", (btn) => armed(btn, `Click again to ban ${player} from ${board}.`, () => ban(btn, board, player)), "danger", key("ban")],
    ["Revoke tokens", "revoke", (btn) => armed(btn, `Click again to revoke every token ${player} holds now (on every instance).`, () => revoke(btn, player)), "danger", key("revoke")],
  ]);
}

function renderTop(board, m) {
  if (board !== watched) return;
  $("top-empty").hidden = m.entries.length > 0;
  $("top-rows").replaceChildren(
    ...m.entries.map((e) => {
      const tr = row([`#${e.rank}`, e.name ? `${e.name} (${e.player})` : e.player, formatThousands(e.score)]);
      tr.dataset.player = e.player;
      tr.children[2].className = "num";
      tr.append(playerActions(board, e.player, "top"));
      return tr;
    }),
  );
}

// The outcome goes to the panel's message line (found before the call: the row may be gone
// after it).
const msgOf = (btn) => btn.closest("section").querySelector(".msg");

async function removeScore(btn, board, player) {
  const msg = msgOf(btn);
  try {
    await api("DELETE", `/admin/boards/${board}/players/${player}`);
    say(msg, `Removed ${player}'s score from ${board}.`);
    await Promise.all([refreshAudit(), refreshFind()]);
  } catch (e) {
    fail(msg, "remove")(e);
  }
}

async function ban(btn, board, player) {
  const msg = msgOf(btn);
  const reason = $("ban-reason").value.trim();
  try {
    await api("PUT", `/admin/bans/${player}`, { board, ...(reason ? { reason } : {}) });
    say(msg, `Banned ${player} from ${board}.`);
    await Promise.all([refreshBans(), refreshFind()]);
    if (history?.player === player) showHistory(board, player);
  } catch (e) {
    fail(msg, "ban")(e);
  }
}

async function revoke(btn, player) {
  const msg = msgOf(btn);
  try {
    const r = await api("POST", `/admin/players/${player}/revoke`);
    say(msg, `Revoked ${player}'s tokens issued before ${timeText(r.revoked_at_ms)}: they are refused from now on.`);
    await refreshAudit();
  } catch (e) {
    fail(msg, "revoke")(e);
  }
}

// ---- the watched board's tournament ----------------------------------------------------------
//
// `GET /v1/boards/{b}/tournament` gives the state, the dates and the server's clock; the time
// left counts down here every second from the difference between that clock and the page's (so
// a wrong clock on the operator's machine does not skew it), and the state is read again when the
// countdown reaches a boundary, on a live `tournament` event, and every 5 s (for the entrants).

const ENTRANTS_PAGE = 20;
const FINAL_TOP = 20;

function hideTournament(text) {
  $("tournament-empty").textContent = text;
  $("tournament-empty").hidden = false;
  for (const id of ["tournament-facts", "entrants-box", "final-box"]) $(id).hidden = true;
}

/**
 * Shows the tournament of `board` (none: the empty state). `quiet`: a refresh nobody asked for,
 * so the entrants already listed stay (their first page is read again) and no message is said.
 */
async function showTournament(board, { quiet = false } = {}) {
  $("tournament-board").textContent = board ? `of ${board}` : "";
  if (!board) {
    tour = null;
    hideTournament("Pick a board to see its tournament.");
    return;
  }
  const cfg = boardList.find((b) => b.id === board);
  if (cfg && !cfg.tournament) {
    tour = null;
    hideTournament(`${board} has no tournament (set "tournament" in its config).`);
    return;
  }
  let info;
  try {
    info = await api("GET", `/v1/boards/${board}/tournament`);
  } catch (e) {
    if (board !== watched) return;
    if (e.code === "not_found") {
      tour = null;
      hideTournament(`${board} has no tournament (set "tournament" in its config).`);
    } else if (!quiet) fail($("tournament-msg"), "tournament")(e);
    return;
  }
  if (board !== watched) return;
  const sameSeason = tour?.board === board && tour.info?.season === info.season;
  tour = { board, info, skew: info.server_time_ms - Date.now(), shown: sameSeason ? tour.shown : 0, asked: sameSeason ? tour.asked : null };
  $("tournament-empty").hidden = true;
  $("tournament-facts").hidden = false;
  const t = cfg?.tournament ?? {};
  const recurring = t.schedule?.recurring;
  $("t-schedule").textContent = `${recurring ? `each ${cfg.reset} season, ` : ""}${timeText(info.start_ms)} → ${timeText(info.end_ms)}`;
  $("t-entrants").textContent = info.max_size ? `${formatThousands(info.entrants)} / ${formatThousands(info.max_size)}${info.entrants >= info.max_size ? " (full)" : ""}` : `${formatThousands(info.entrants)} (no cap)`;
  const runs = cfg?.validator ? " (a started run is one)" : "";
  $("t-attempts").textContent = info.max_attempts ? `${formatThousands(info.max_attempts)} per player${runs}` : "unlimited";
  $("t-join").textContent = info.join_required ? "required: players join before they play" : "not required: a player enters with their first score";
  tickTournament();
  await Promise.all([showEntrants(board, info.season, { more: false }), showFinal(board, info)]);
}

/** The state and the time left, from the last answer and the page's clock corrected by it. */
function tickTournament() {
  if (!tour?.info || tour.board !== watched) return;
  const { info, skew } = tour;
  const now = Date.now() + skew;
  const state = now < info.start_ms ? "upcoming" : now < info.end_ms ? "running" : "ended";
  const el = $("t-state");
  el.dataset.state = state;
  el.textContent = state === "upcoming" ? "scheduled" : state === "running" ? "running" : info.ended_ms ? `ended (final standings frozen at ${timeText(info.ended_ms)})` : "ended (final standings being frozen)";
  $("t-left").textContent =
    state === "upcoming"
      ? `opens in ${durationText(info.start_ms - now)} (at ${timeText(info.start_ms)})`
      : state === "running"
        ? `${durationText(info.end_ms - now)} (closes at ${timeText(info.end_ms)})`
        : `none: closed at ${timeText(info.end_ms)}`;
  $("t-left").dataset.leftMs = String(state === "upcoming" ? info.start_ms - now : state === "running" ? info.end_ms - now : 0);
  // A boundary passed since the last answer: read the state again (once per boundary).
  if (state !== info.state && tour.asked !== state) {
    tour.asked = state;
    showTournament(watched, { quiet: true });
  }
}

/** A page of the occurrence's entrants (`more`: the next page, appended). */
async function showEntrants(board, season, { more }) {
  const offset = more ? tour.shown : 0;
  const limit = more ? ENTRANTS_PAGE : Math.max(ENTRANTS_PAGE, tour.shown);
  try {
    const q = new URLSearchParams({ season, offset: String(offset), limit: String(limit) });
    const page = await api("GET", `/admin/boards/${board}/tournament/entrants?${q}`);
    if (board !== watched || tour?.info?.season !== season) return;
    $("entrants-box").hidden = false;
    $("entrants-season").textContent = season;
    const rows = page.entries.map((e, i) => {
      const tr = row([`${offset + i + 1}`, e.name ? `${e.name} (${e.player})` : e.player, timeText(e.joined_ms), formatThousands(e.attempts)]);
      tr.dataset.player = e.player;
      tr.children[3].className = "num";
      return tr;
    });
    if (more) $("entrant-rows").append(...rows);
    else fill($("entrant-rows"), rows, "No entrants yet.");
    tour.shown = offset + page.entries.length;
    $("entrants-more").hidden = tour.shown >= page.total;
    $("entrants-more").textContent = `More entrants (${formatThousands(tour.shown)} of ${formatThousands(page.total)} shown)`;
    if (more) say($("tournament-msg"), `${formatThousands(tour.shown)} of ${formatThousands(page.total)} entrants shown.`);
  } catch (e) {
    fail($("tournament-msg"), "entrants")(e);
  }
}

$("entrants-more").addEventListener("click", () => {
  if (tour?.info) showEntrants(tour.board, tour.info.season, { more: true });
});

/**
 * The final standings: of this occurrence once frozen; of a recurring tournament, the last
 * occurrence frozen. Hidden while there are none.
 */
async function showFinal(board, info) {
  const season = info.ended_ms ? info.season : null;
  if (!season && !boardList.find((b) => b.id === board)?.tournament?.schedule?.recurring) {
    $("final-box").hidden = true;
    return;
  }
  try {
    const q = new URLSearchParams({ limit: String(FINAL_TOP), ...(season ? { season } : {}) });
    const page = await api("GET", `/v1/boards/${board}/final?${q}`);
    if (board !== watched) return;
    $("final-box").hidden = false;
    $("final-season").textContent = page.season;
    $("final-box").dataset.season = page.season;
    $("final-total").textContent = `${formatThousands(page.total)} player${page.total === 1 ? "" : "s"} in the final standings${page.total > FINAL_TOP ? `; the first ${FINAL_TOP} shown` : ""}.`;
    fill(
      $("final-rows"),
      page.entries.map((e) => {
        const tr = row([`#${e.rank}`, e.name ? `${e.name} (${e.player})` : e.player, formatThousands(e.score)]);
        tr.dataset.player = e.player;
        tr.children[2].className = "num";
        return tr;
      }),
      "Nobody scored in this tournament.",
    );
  } catch (e) {
    if (e.code === "not_found") $("final-box").hidden = true;
    else fail($("tournament-msg"), "final standings")(e);
  }
}

// ---- the watched board's buckets -------------------------------------------------------------
//
// A board with `bucket_size` splits each season's players into buckets of rivals: how many there
// are and how many scored in each (`GET /admin/boards/{b}/buckets`), and the top of the bucket
// picked (`GET /admin/boards/{b}/top?bucket=`), both read again every 5 s.

const BUCKETS_PAGE = 20;
const BUCKET_TOP = 20;

function hideBuckets(text) {
  $("buckets-empty").textContent = text;
  $("buckets-empty").hidden = false;
  $("buckets-box").hidden = true;
}

/** Shows the buckets of `board` (none: the empty state); `quiet`: a refresh nobody asked for. */
async function showBuckets(board, { quiet = false } = {}) {
  $("buckets-board").textContent = board ? `of ${board}` : "";
  const cfg = board && boardList.find((b) => b.id === board);
  if (!board || !cfg?.bucket_size) {
    buckets = null;
    hideBuckets(board ? `${board} has no buckets (set "bucket_size" in its config).` : "Pick a board to see its buckets.");
    return;
  }
  const same = buckets?.board === board;
  const shown = same ? Math.max(BUCKETS_PAGE, buckets.shown) : BUCKETS_PAGE;
  try {
    const page = await api("GET", `/admin/boards/${board}/buckets?limit=${shown}`);
    if (board !== watched) return;
    const picked = same && buckets.season === page.season ? buckets.picked : null;
    buckets = { board, season: page.season, shown: page.buckets.length, count: page.count, picked };
    $("buckets-empty").hidden = true;
    $("buckets-box").hidden = false;
    $("buckets-summary").textContent =
      page.count === 0
        ? `No buckets yet in season ${page.season}: buckets of ${cfg.bucket_size} form as players score.`
        : `${formatThousands(page.count)} bucket${page.count === 1 ? "" : "s"} of up to ${cfg.bucket_size} in season ${page.season}; bucket ${formatThousands(page.count)} is filling (${page.open_fill} placed).`;
    $("buckets-summary").dataset.count = String(page.count);
    fill($("bucket-rows"), page.buckets.map(bucketRow), "No buckets yet.");
    showMoreBuckets();
    if (picked) await showBucketTop(board, picked, { quiet: true });
    else $("bucket-top-box").hidden = true;
  } catch (e) {
    if (!quiet) fail($("buckets-msg"), "buckets")(e);
  }
}

function bucketRow(b) {
  const tr = row([`#${b.bucket}`, formatThousands(b.scored)]);
  tr.dataset.bucket = String(b.bucket);
  tr.children[1].className = "num";
  tr.classList.toggle("watched", b.bucket === buckets?.picked);
  tr.append(actions([["Top", "bucket-top", () => showBucketTop(buckets.board, b.bucket)]]));
  return tr;
}

function showMoreBuckets() {
  const more = $("buckets-more");
  more.hidden = buckets.shown >= buckets.count;
  more.textContent = `More buckets (${formatThousands(buckets.shown)} of ${formatThousands(buckets.count)} shown)`;
}

$("buckets-more").addEventListener("click", async () => {
  if (!buckets) return;
  const { board } = buckets;
  try {
    const q = new URLSearchParams({ offset: String(buckets.shown), limit: String(BUCKETS_PAGE) });
    const page = await api("GET", `/admin/boards/${board}/buckets?${q}`);
    if (buckets?.board !== board || page.season !== buckets.season) return;
    $("bucket-rows").append(...page.buckets.map(bucketRow));
    buckets.shown += page.buckets.length;
    buckets.count = page.count;
    showMoreBuckets();
    say($("buckets-msg"), `${formatThousands(buckets.shown)} of ${formatThousands(page.count)} buckets shown.`);
  } catch (e) {
    fail($("buckets-msg"), "buckets")(e);
  }
});

$("bucket-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  if (!buckets) return;
  const n = Number($("bucket-n").value);
  if (!Number.isInteger(n) || n < 1 || n > buckets.count) {
    say($("buckets-msg"), buckets.count ? `Pick a bucket from 1 to ${buckets.count}.` : "There are no buckets yet.", "error");
    return;
  }
  showBucketTop(buckets.board, n);
});

/** The top of bucket `n` (`quiet`: a refresh, no message). */
async function showBucketTop(board, n, { quiet = false } = {}) {
  try {
    const q = new URLSearchParams({ bucket: String(n), limit: String(BUCKET_TOP) });
    const page = await api("GET", `/admin/boards/${board}/top?${q}`);
    if (buckets?.board !== board) return;
    buckets.picked = n;
    for (const tr of $("bucket-rows").children) tr.classList.toggle("watched", tr.dataset.bucket === String(n));
    $("bucket-top-box").hidden = false;
    $("bucket-top-box").dataset.bucket = String(n);
    $("bucket-number").textContent = `#${n}`;
    $("bucket-season").textContent = page.season;
    fill(
      $("bucket-top-rows"),
      page.entries.map((e) => {
        const tr = row([`#${e.rank}`, e.name ? `${e.name} (${e.player})` : e.player, formatThousands(e.score)]);
        tr.dataset.player = e.player;
        tr.children[2].className = "num";
        return tr;
      }),
      `Nobody has scored in bucket ${n} yet.`,
    );
    if (!quiet) say($("buckets-msg"), `Bucket ${n}: ${formatThousands(page.total)} player${page.total === 1 ? "" : "s"} with a score${page.total > BUCKET_TOP ? `, the first ${BUCKET_TOP} shown` : ""}.`);
  } catch (e) {
    if (!quiet) fail($("buckets-msg"), `bucket ${n}`)(e);
  }
}

// ---- leagues ---------------------------------------------------------------------------------
//
// Every league (`GET /admin/leagues`): its tier boards, lowest first, and its rules; for one, the
// seasons of its lowest tier (every tier shares the calendar) and, for a season that ended, the
// moves its `league.close` job made (`GET /admin/leagues/{l}/moves?season=`), one tier's or all.

const ARROW = { up: "↑", down: "↓" };

async function refreshLeagues() {
  const { leagues } = await api("GET", "/admin/leagues");
  fill(
    $("league-rows"),
    leagues.map((l) => {
      const rules = `${l.reset}; buckets of ${l.bucket_size}; top ${l.promote} up, last ${l.relegate} down`;
      const tr = row([l.id, l.tiers.join(" → "), rules]);
      tr.dataset.league = l.id;
      tr.append(actions([["Seasons", "league-seasons", () => showLeague(l)]]));
      return tr;
    }),
    "No leagues yet (PUT /admin/leagues/{l}).",
  );
  const shown = league && leagues.find((l) => l.id === league.id);
  if (league && !shown) {
    league = null;
    $("league-box").hidden = true;
  }
}

/** The seasons of league `l` (those of its lowest tier board), newest first. */
async function showLeague(l) {
  league = { id: l.id, cfg: l, season: null, moves: null };
  $("league-box").hidden = false;
  $("league-name").textContent = l.id;
  $("moves-box").hidden = true;
  try {
    const { seasons } = await api("GET", `/v1/boards/${l.tiers[0]}/seasons`);
    if (league?.id !== l.id) return;
    fill(
      $("league-season-rows"),
      [...seasons]
        .sort((a, b) => b.start_ms - a.start_ms)
        .map((s) => {
          const tr = row([s.current ? `${s.season} (current)` : s.season, timeText(s.start_ms, 16)]);
          tr.dataset.season = s.season;
          tr.append(actions([["Moves", "league-moves", () => showMoves(l.id, s.season)]]));
          return tr;
        }),
      "No seasons yet: they start as players score.",
    );
  } catch (e) {
    fail($("leagues-msg"), `league ${l.id}`)(e);
  }
}

/** The moves made at the end of `season` of league `id`. */
async function showMoves(id, season) {
  const msg = $("leagues-msg");
  try {
    const m = await api("GET", `/admin/leagues/${id}/moves?season=${encodeURIComponent(season)}`);
    if (league?.id !== id) return;
    league.season = season;
    league.moves = m;
    $("moves-box").hidden = false;
    $("moves-season").textContent = `${season} of ${id}`;
    const tiers = league.cfg.tiers;
    const counts = tiers.map((t, i) => {
      const up = m.moves.filter((x) => x.from_tier === i && x.direction === "up").length;
      const down = m.moves.filter((x) => x.from_tier === i && x.direction === "down").length;
      return `${t}: ${up} up, ${down} down`;
    });
    const when = m.closed_ms ? `applied to every tier at ${timeText(m.closed_ms)}` : "being applied";
    $("moves-summary").textContent = `${m.moves.length} move${m.moves.length === 1 ? "" : "s"}, ${when}. ${counts.join("; ")}.`;
    $("moves-summary").dataset.closed = m.closed_ms ? "1" : "";
    const sel = $("moves-tier");
    const keep = sel.value;
    sel.replaceChildren(new Option("every tier", ""), ...tiers.map((t, i) => new Option(`${t} (tier ${i})`, String(i))));
    sel.value = [...sel.options].some((o) => o.value === keep) ? keep : "";
    renderMoves();
    say(msg, `Season ${season} of ${id}: ${m.moves.length} move${m.moves.length === 1 ? "" : "s"}.`);
  } catch (e) {
    if (e.code === "not_found") {
      $("moves-box").hidden = true;
      say(msg, `No moves for season ${season} of ${id} yet: they are made when the season ends (UTC).`);
    } else fail(msg, "moves")(e);
  }
}

/** The moves of the tier picked (those that left it and those that came to it), or all. */
function renderMoves() {
  if (!league?.moves) return;
  const t = $("moves-tier").value;
  const tier = t === "" ? null : Number(t);
  const shown = league.moves.moves.filter((x) => tier === null || x.from_tier === tier || x.to_tier === tier);
  fill(
    $("move-rows"),
    shown.map((x) => {
      const tr = row([x.player, `${ARROW[x.direction] ?? ""} ${x.from} → ${x.to}`, `#${x.bucket}`, `#${x.rank}`]);
      tr.dataset.player = x.player;
      tr.dataset.direction = x.direction;
      tr.children[2].className = "num";
      tr.children[3].className = "num";
      return tr;
    }),
    tier === null ? "Nobody moved this season." : `Nobody left or reached ${league.cfg.tiers[tier]} this season.`,
  );
}

$("moves-tier").addEventListener("change", renderMoves);

// ---- find a player ---------------------------------------------------------------------------

$("find-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const q = $("find-q").value.trim();
  if (!watched) {
    say($("find-msg"), "Pick a board to search first (Watch in Boards).", "error");
    return;
  }
  if (!q) return;
  find = { board: watched, q, cursor: null };
  $("find-rows").replaceChildren();
  runFind();
});

$("find-more").addEventListener("click", () => find?.cursor && runFind());

/**
 * Runs the search again from the start, quietly (after an action on a found player: a removed
 * score leaves the list, a ban shows).
 */
function refreshFind() {
  if (!find) return;
  find.cursor = null;
  $("find-rows").replaceChildren();
  return runFind({ quiet: true });
}

/** One call of the search (`GET /admin/boards/{board}/players?q=`), rows appended. */
async function runFind({ quiet = false } = {}) {
  const { board, q, cursor } = find;
  const msg = $("find-msg");
  try {
    const qs = new URLSearchParams({ q, ...(cursor ? { cursor } : {}) });
    const r = await api("GET", `/admin/boards/${board}/players?${qs}`);
    if (find?.board !== board || find.q !== q) return;
    const have = new Set([...$("find-rows").querySelectorAll("tr[data-player]")].map((tr) => tr.dataset.player));
    // Scored players by rank; then those found by name without a score this season, and the
    // id asked for when it has none but a ban holds it.
    const unscored = [...r.unscored];
    if (!cursor && !r.entries.some((e) => e.player === q) && !unscored.some((u) => u.player === q) && isValidId(q)) {
      if (banList.some((b) => b.player === q && (b.board === board || !b.board))) unscored.unshift({ player: q, name: null });
    }
    const rows = [...r.entries.map((e) => foundRow(board, e)), ...unscored.map((u) => foundRow(board, { ...u, rank: null, score: null }))];
    $("find-rows").append(...rows.filter((tr) => !have.has(tr.dataset.player)));
    $("find-table").hidden = $("find-rows").children.length === 0;
    find.cursor = r.next_cursor;
    $("find-more").hidden = !r.next_cursor;
    const n = $("find-rows").children.length;
    if (quiet) return;
    say(
      msg,
      n === 0
        ? r.next_cursor
          ? `No player found yet for “${q}” in season ${r.season}; search further.`
          : `No player of ${board} (season ${r.season}) has the id or a name with “${q}”.`
        : `${n} player${n === 1 ? "" : "s"} found for “${q}” in season ${r.season}${r.next_cursor ? " so far" : ""}.`,
    );
  } catch (e) {
    fail(msg, "find")(e);
  }
}

/** The bans that hold `player` on `board` (its own and those on every board), as text. */
function bansText(board, player) {
  const held = banList.filter((b) => b.player === player && (b.board === board || !b.board));
  return held.length ? held.map((b) => `banned ${b.board ? "" : "everywhere "}${untilText(b)}`).join("; ") : "—";
}

/** A found player's row; `rank` and `score` null for a player with no score this season. */
function foundRow(board, e) {
  const scored = e.rank !== null;
  const tr = row([scored ? `#${e.rank}` : "—", e.name ? `${e.name} (${e.player})` : e.player, scored ? formatThousands(e.score) : "no score", bansText(board, e.player)]);
  tr.dataset.player = e.player;
  if (!scored) tr.dataset.unscored = "1";
  tr.children[2].className = "num";
  tr.append(playerActions(board, e.player, "find"));
  return tr;
}

// ---- seasons ---------------------------------------------------------------------------------

async function showSeasons(board) {
  $("seasons-board").textContent = board ? `of ${board}` : "";
  $("rollover-form").hidden = true;
  $("rollover-auto").hidden = true;
  if (!board) {
    fill($("season-rows"), [], "Pick a board to see its seasons.", 3);
    $("standings-box").hidden = true;
    return;
  }
  try {
    const { seasons } = await api("GET", `/v1/boards/${board}/seasons`);
    if (board !== watched) return;
    const sorted = [...seasons].sort((a, b) => b.start_ms - a.start_ms);
    fill(
      $("season-rows"),
      sorted.map((s) => {
        const tr = row([s.current ? `${s.season} (current)` : s.season, timeText(s.start_ms, 16)]);
        tr.dataset.season = s.season;
        tr.append(actions([["Standings", "standings", () => showStandings(board, s.season)]]));
        return tr;
      }),
      "No seasons yet.",
    );
    const reset = boardList.find((b) => b.id === board)?.reset ?? "never";
    if (reset === "never") {
      $("rollover-form").hidden = false;
    } else {
      $("rollover-auto").textContent = `A ${reset} board rolls over on its own at each period's start (UTC).`;
      $("rollover-auto").hidden = false;
    }
  } catch (e) {
    fail($("seasons-msg"), "seasons")(e);
  }
}

async function showStandings(board, season) {
  try {
    const q = new URLSearchParams({ season, limit: String(TOP_LIMIT) });
    const page = await api("GET", `/v1/boards/${board}/top?${q}`);
    $("standings-box").hidden = false;
    $("standings-season").textContent = season;
    $("standings-box").dataset.season = season;
    fill(
      $("standings-rows"),
      page.entries.map((e) => {
        const tr = row([`#${e.rank}`, e.name ? `${e.name} (${e.player})` : e.player, formatThousands(e.score)]);
        tr.dataset.player = e.player;
        tr.children[2].className = "num";
        return tr;
      }),
      `No scores in season ${season}.`,
    );
  } catch (e) {
    fail($("seasons-msg"), "standings")(e);
  }
}

$("rollover-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const btn = ev.submitter ?? $("rollover-form").querySelector("button");
  const board = watched;
  const season = $("rollover-season").value.trim();
  if (!board) return;
  if (!isValidId(season)) {
    say(btn, "The season id must be 1–64 characters of A–Z a–z 0–9 _ . -", "error");
    return;
  }
  armed(btn, `Click again to end the current season of ${board} and start season ${season}.`, () => rollover(board, season));
});

async function rollover(board, season) {
  const msg = $("seasons-msg");
  try {
    const r = await api("POST", `/admin/boards/${board}/rollover`, { season });
    say(msg, `Season ${r.season} of ${board} started at ${timeText(r.start_ms)}; ${r.previous_season} ended.`);
    $("rollover-season").value = "";
    await Promise.all([showSeasons(board), refreshAudit()]);
  } catch (e) {
    fail(msg, "rollover")(e);
  }
}

// ---- a player's history ----------------------------------------------------------------------

// A time (ms since the epoch) as "YYYY-MM-DD HH:MM:SS UTC" (the date part cut to `len`
// characters), or the number as it came when it is no date (a value stored before it was
// checked, say 2^63 − 1): one odd row must not keep the others from rendering.

/** When a ban ends: its date, or "until lifted" for a ban with no end. */
function untilText(b) {
  return b.until_ms ? `until ${timeText(b.until_ms, 16)}` : "until lifted";
}

async function showHistory(board, player, cursor = null) {
  history = { board, player, cursor: null };
  $("history-panel").hidden = false;
  $("history-player").textContent = player;
  $("history-board").textContent = `on ${board}`;
  if (!cursor) $("history-rows").replaceChildren();
  $("history-panel").scrollIntoView({ block: "nearest" });
  try {
    const q = new URLSearchParams({ player, limit: "20", ...(cursor ? { cursor } : {}) });
    const page = await api("GET", `/admin/boards/${board}/log?${q}`);
    if (!cursor && page.entries.length === 0) fill($("history-rows"), [], `No history of ${player} on ${board}.`, 3);
    $("history-rows").append(
      ...page.entries.map((e) => {
        const what = e.action ?? "submit";
        const details =
          what === "submit"
            ? `${e.op} ${formatThousands(e.points)} → ${formatThousands(e.score)} (#${e.rank}, ${e.season})`
            : what === "ban"
              ? [e.reason, untilText(e)].filter(Boolean).join(", ")
              : what === "remove"
                ? `${formatThousands(e.points)} removed (${e.season}${e.held ? ", held by a ban" : ""})`
                : e.reason;
        const who = e.by ? ` · by ${e.by}` : "";
        const tr = row([timeText(e.time_ms), what, details + who]);
        tr.dataset.action = what;
        return tr;
      }),
    );
    history.cursor = page.next_cursor;
    $("history-more").hidden = !page.next_cursor;
  } catch (e) {
    fail($("top-msg"), "history")(e);
  }
}

$("history-more").addEventListener("click", () => {
  if (history?.cursor) showHistory(history.board, history.player, history.cursor);
});

// ---- bans ------------------------------------------------------------------------------------

async function refreshBans() {
  const { bans } = await api("GET", "/admin/bans");
  banList = bans;
  fill(
    $("ban-rows"),
    bans.map((b) => {
      const tr = row([b.player, b.board ?? "every board", b.reason ?? "", b.until_ms ? timeText(b.until_ms, 16) : "until lifted"]);
      tr.dataset.player = b.player;
      tr.append(actions([["Lift", "lift", () => lift(b)]]));
      return tr;
    }),
    "No bans.",
  );
  // The search results show bans too.
  for (const tr of $("find-rows").querySelectorAll("tr[data-player]")) {
    if (find) tr.children[3].textContent = bansText(find.board, tr.dataset.player);
  }
}

async function lift(b) {
  const msg = $("bans-msg");
  try {
    const q = b.board ? `?board=${encodeURIComponent(b.board)}` : "";
    await api("DELETE", `/admin/bans/${b.player}${q}`);
    say(msg, `Lifted the ban of ${b.player}.`);
    await refreshBans();
  } catch (e) {
    fail(msg, "lift")(e);
  }
}

// ---- admin actions ---------------------------------------------------------------------------

// The admin audit log's latest changes (board configuration and deletion, rollovers, removals,
// revocations, dead-letter retries), each with the name of the key that made it.
async function refreshAudit() {
  const { entries } = await api("GET", "/admin/audit?limit=20");
  fill(
    $("audit-rows"),
    entries.map((e) => {
      const target = [e.board, e.player, e.queue, e.job, e.season].filter(Boolean).join(" ");
      const tr = row([timeText(e.time_ms), e.action, target, e.by]);
      tr.dataset.action = e.action;
      return tr;
    }),
    "No admin actions yet.",
  );
}

// ---- queues ----------------------------------------------------------------------------------

async function refreshQueues() {
  const { queues } = await api("GET", "/admin/queues");
  fill(
    $("queue-rows"),
    queues.map((q) => {
      const tr = row([q.name, q.ready, q.delayed, q.processing, q.dead]);
      tr.dataset.queue = q.name;
      for (const td of [...tr.children].slice(1)) td.className = "num";
      tr.append(actions([["Dead letters", "dead", () => showDead(q.name)]]));
      return tr;
    }),
    "No queues yet.",
  );
  if (deadQueue) await showDead(deadQueue);
}

async function showDead(queue) {
  deadQueue = queue;
  $("dead-box").hidden = false;
  $("dead-queue").textContent = queue;
  const { jobs } = await api("GET", `/admin/queues/${queue}/dead?limit=50`);
  fill(
    $("dead-rows"),
    jobs.map((j) => {
      const tr = row([j.id, j.kind, `${j.attempts}/${j.max_attempts}`, timeText(j.died_at_ms)]);
      tr.dataset.job = j.id;
      tr.children[2].className = "num";
      tr.append(actions([["Retry", "retry", () => retry(queue, j.id)]]));
      return tr;
    }),
    "No dead letters.",
  );
}

async function retry(queue, id) {
  try {
    await api("POST", `/admin/queues/${queue}/dead/${id}/retry`);
    say($("queues-msg"), `Job ${id} is ready again.`);
    await refreshQueues();
  } catch (e) {
    fail($("queues-msg"), "retry")(e);
  }
}

// ---- live charts, summed over every instance ---------------------------------------------------
//
// Each instance writes its counters to Redis every second; `/admin/stats` answers every
// instance's latest (Redis's clock as `now_ms`). A rate is computed per instance from its own
// previous snapshot (so an instance that starts or stops does not show as a spike), then the
// instances are summed. Points carry their time; the x axis is the last 60 s, labelled in UTC.

const WINDOW_MS = CHART_POINTS * POLL_MS;
// Each series: an array of {t, v}. `rejections` holds one series per error code seen.
const series = { subs: new Map(), rejections: new Map(), sockets: new Map() };
const lastSnap = new Map(); // instance -> {at_ms, submissions}

function push(map, label, t, v) {
  const points = map.get(label) ?? [];
  points.push({ t, v });
  while (points.length && points[0].t < t - WINDOW_MS) points.shift();
  map.set(label, points);
}

async function poll() {
  try {
    const { now_ms: now, instances } = await api("GET", "/admin/stats");
    let subs = 0;
    let sockets = 0;
    const byCode = new Map();
    for (const inst of instances) {
      sockets += inst.ws_connections;
      const prev = lastSnap.get(inst.instance);
      if (prev && inst.at_ms > prev.at_ms) {
        const dt = (inst.at_ms - prev.at_ms) / 1000;
        for (const [o, n] of Object.entries(inst.submissions)) {
          const rate = Math.max(0, (n - (prev.submissions[o] ?? 0)) / dt);
          subs += rate;
          if (o !== "ok" && o !== "duplicate") byCode.set(o, (byCode.get(o) ?? 0) + rate);
        }
      } else if (prev) {
        continue; // no new snapshot of this instance since the last poll
      }
      lastSnap.set(inst.instance, { at_ms: inst.at_ms, submissions: inst.submissions });
    }
    // A code is charted from the first time it occurs; before that it is not in the legend.
    for (const [code, rate] of byCode) if (rate > 0 || series.rejections.has(code)) push(series.rejections, code, now, rate);
    for (const code of series.rejections.keys()) if (!byCode.has(code)) push(series.rejections, code, now, 0);
    push(series.subs, "submissions/s", now, subs);
    push(series.sockets, "sockets", now, sockets);
    draw($("chart-subs"), series.subs, now, "/s");
    draw($("chart-rejections"), series.rejections, now, "/s");
    draw($("chart-sockets"), series.sockets, now, "");
    const occurred = [...series.rejections.entries()].filter(([, pts]) => pts.some((p) => p.v > 0));
    $("chart-legend").replaceChildren(
      ...(occurred.length
        ? occurred.map(([k]) => {
            const span = document.createElement("span");
            span.textContent = `■ ${k}`;
            span.dataset.code = k;
            span.style.color = COLORS[[...series.rejections.keys()].indexOf(k) % COLORS.length];
            return span;
          })
        : [Object.assign(document.createElement("span"), { textContent: "No rejections in the last 60 s." })]),
    );
    $("chart-instances").textContent = `${instances.length} instance${instances.length === 1 ? "" : "s"} reporting.`;
    $("chart-instances").dataset.count = String(instances.length);
  } catch (e) {
    console.warn("scorecast admin: /admin/stats", e);
  }
  if (token) refreshQueues().catch(() => {});
  // Bans and admin actions made elsewhere (another operator, a tool) show within 5 s.
  if (token && ++polls % 5 === 0) {
    Promise.all([refreshBans(), refreshAudit(), refreshLeagues()]).catch(() => {});
    if (watched && tour?.info) showTournament(watched, { quiet: true });
    if (watched && buckets) showBuckets(watched, { quiet: true });
  }
}

let polls = 0;

/** "HH:MM:SS" of a time in UTC. */
const clockText = (ms) => new Date(ms).toISOString().slice(11, 19);

/**
 * A line chart of every series in `map` (one color each) over the last 60 s: the y axis from 0
 * to the largest value (labelled with `unit`), the x axis labelled in UTC.
 */
function draw(canvas, map, now, unit) {
  const ctx = canvas.getContext("2d");
  const { width: w, height: h } = canvas;
  const left = 34;
  const bottom = h - 16;
  const top = 8;
  ctx.clearRect(0, 0, w, h);
  const all = [...map.values()].flat();
  const max = Math.max(1, ...all.map((p) => p.v));
  ctx.strokeStyle = "#263049";
  ctx.fillStyle = "#8d98b0";
  ctx.font = "10px system-ui";
  ctx.lineWidth = 1;
  ctx.beginPath();
  ctx.moveTo(left, top);
  ctx.lineTo(left, bottom);
  ctx.lineTo(w - 2, bottom);
  ctx.stroke();
  const yLabel = (v) => (max < 10 && v % 1 ? v.toFixed(1) : formatThousands(Math.round(v)));
  ctx.textAlign = "right";
  ctx.fillText(`${yLabel(max)}${unit}`, left - 3, top + 8);
  ctx.fillText(`0`, left - 3, bottom);
  ctx.textAlign = "center";
  const x = (t) => left + ((t - (now - WINDOW_MS)) / WINDOW_MS) * (w - 2 - left);
  for (const back of [60, 30, 0]) {
    const t = now - back * 1000;
    ctx.fillText(back ? clockText(t) : `${clockText(t)} UTC`, Math.min(Math.max(x(t), left + 20), w - 40), h - 3);
  }
  let i = 0;
  let last = 0;
  let points = 0;
  for (const values of map.values()) {
    ctx.strokeStyle = COLORS[i++ % COLORS.length];
    ctx.lineWidth = 1.5;
    ctx.beginPath();
    values.forEach((p, k) => {
      const py = bottom - (p.v / max) * (bottom - top);
      if (k === 0) ctx.moveTo(x(p.t), py);
      else ctx.lineTo(x(p.t), py);
    });
    ctx.stroke();
    points = Math.max(points, values.length);
    last += values.at(-1)?.v ?? 0;
  }
  // For tests and tools: how many points are drawn, the sum of the latest values, the window.
  canvas.dataset.points = String(points);
  canvas.dataset.last = String(last);
  canvas.dataset.from = clockText(now - WINDOW_MS);
  canvas.dataset.to = clockText(now);
}

// ---- small DOM helpers -----------------------------------------------------------------------

function row(cells) {
  const tr = document.createElement("tr");
  for (const c of cells) {
    const td = document.createElement("td");
    td.textContent = String(c);
    tr.append(td);
  }
  return tr;
}

/**
 * Replaces the rows of `tbody`; with none, one row saying `empty` across the table's columns (or
 * `cols`).
 */
function fill(tbody, rows, empty, cols) {
  if (rows.length) {
    tbody.replaceChildren(...rows);
    return;
  }
  const tr = document.createElement("tr");
  tr.className = "empty";
  const td = document.createElement("td");
  td.colSpan = cols ?? tbody.closest("table").querySelectorAll("thead th").length;
  td.textContent = empty;
  tr.append(td);
  tbody.replaceChildren(tr);
}

function actions(list) {
  const td = document.createElement("td");
  td.className = "actions";
  for (const [label, action, run, cls, key] of list) {
    const b = document.createElement("button");
    b.type = "button";
    b.textContent = label;
    b.dataset.label = label;
    b.dataset.action = action;
    if (cls) b.className = cls;
    if (key) {
      b.dataset.key = key;
      const left = (armedKeys.get(key) ?? 0) - Date.now();
      if (left > 0) arm(b, left);
    }
    b.addEventListener("click", () => run(b));
    td.append(b);
  }
  return td;
}

window.__admin = { watch, series };
if (token) start();
