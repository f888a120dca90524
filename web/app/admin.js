// The admin console (`/admin`): boards (create, edit, delete), a live top view with per-row
// "remove score" / "ban", a player's history from the audit log, bans, queues with their dead
// letters (retry), and live charts fed by the server's /metrics. No build step: the SDK
// (web/sdk/scorecast.js) and the shared Rust crate compiled to wasm (web/pkg) do the protocol.
//
// The admin token is asked for once per tab and kept in sessionStorage only (never in
// localStorage, never in a URL); every admin call sends it as a Bearer token.

import { Scorecast, formatThousands, isValidId } from "../sdk/scorecast.js";

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

function toast(text, kind = "info") {
  const t = $("toast");
  t.textContent = text;
  t.dataset.kind = kind;
  t.hidden = false;
}

const fail = (what) => (e) => toast(`${what}: ${e.code ?? ""} ${e.message}`, "error");

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
  sc.on("error", (e) => toast(`${e.code}: ${e.message}`, "error"));
  await refreshAll();
  pollTimer = setInterval(poll, POLL_MS);
  poll();
}

function showState(s) {
  const b = $("conn-state");
  b.textContent = s;
  b.dataset.state = s;
}

async function refreshAll() {
  await Promise.all([refreshBoards(), refreshBans(), refreshQueues(), refreshAudit()]).catch(fail("refresh"));
}

// ---- boards ----------------------------------------------------------------------------------

async function refreshBoards() {
  const res = await fetch("/v1/boards", { headers: { accept: "application/json" } });
  const { boards } = await res.json();
  const body = $("boards");
  body.replaceChildren(
    ...boards.map((b) => {
      const tr = row([b.id, b.order, b.op, b.reset]);
      tr.dataset.board = b.id;
      tr.classList.toggle("watched", b.id === watched);
      tr.append(
        actions([
          ["Watch", "watch", () => watch(b.id)],
          ["Edit", "edit", () => edit(b)],
          ["Delete", "delete", (btn) => armed(btn, () => deleteBoard(b.id)), "danger"],
        ]),
      );
      return tr;
    }),
  );
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
    msg.textContent = "The id must be 1–64 characters of A–Z a–z 0–9 _ . -";
    return;
  }
  let config;
  try {
    config = JSON.parse($("board-config").value || "{}");
  } catch (e) {
    msg.textContent = `The config is not JSON: ${e.message}`;
    return;
  }
  try {
    const r = await api("PUT", `/admin/boards/${id}`, config);
    msg.textContent = r.created ? `Board ${id} created.` : `Board ${id} saved.`;
    await Promise.all([refreshBoards(), refreshAudit()]);
    if (!watched) watch(id);
  } catch (e) {
    msg.textContent = `${e.code}: ${e.message}`;
  }
});

/** A destructive button asks for a second click. */
function armed(btn, run) {
  if (btn.classList.contains("armed")) {
    run();
    return;
  }
  btn.classList.add("armed");
  btn.textContent = "Confirm";
  setTimeout(() => {
    btn.classList.remove("armed");
    btn.textContent = btn.dataset.label;
  }, 4000);
}

async function deleteBoard(id) {
  try {
    await api("DELETE", `/admin/boards/${id}`);
    toast(`Board ${id} deleted.`);
    if (watched === id) watch(null);
    await refreshBoards();
  } catch (e) {
    fail("delete")(e);
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
  if (!board) return;
  offTop = sc.subscribe(board, "top", { limit: TOP_LIMIT }, (m) => renderTop(board, m));
}

function renderTop(board, m) {
  if (board !== watched) return;
  $("top-empty").hidden = m.entries.length > 0;
  $("top-rows").replaceChildren(
    ...m.entries.map((e) => {
      const tr = row([`#${e.rank}`, e.name ? `${e.name} (${e.player})` : e.player, formatThousands(e.score)]);
      tr.dataset.player = e.player;
      tr.children[2].className = "num";
      tr.append(
        actions([
          ["History", "history", () => showHistory(board, e.player)],
          ["Remove score", "remove", () => removeScore(board, e.player)],
          ["Ban", "ban", (btn) => armed(btn, () => ban(board, e.player)), "danger"],
        ]),
      );
      return tr;
    }),
  );
}

async function removeScore(board, player) {
  try {
    await api("DELETE", `/admin/boards/${board}/players/${player}`);
    toast(`Removed ${player}'s score from ${board}.`);
  } catch (e) {
    fail("remove")(e);
  }
}

async function ban(board, player) {
  const reason = $("ban-reason").value.trim();
  try {
    await api("PUT", `/admin/bans/${player}`, { board, ...(reason ? { reason } : {}) });
    toast(`Banned ${player} from ${board}.`);
    await refreshBans();
    if (history?.player === player) showHistory(board, player);
  } catch (e) {
    fail("ban")(e);
  }
}

// ---- a player's history ----------------------------------------------------------------------

// A time (ms since the epoch) as "YYYY-MM-DD HH:MM:SS" cut to `len` characters, or the number as
// it came when it is no date (a value stored before it was checked, say 2^63 − 1): one odd row
// must not keep the others from rendering.
function timeText(ms, len = 19) {
  const d = new Date(ms);
  return Number.isFinite(d.getTime()) ? d.toISOString().replace("T", " ").slice(0, len) : String(ms);
}

async function showHistory(board, player, cursor = null) {
  history = { board, player, cursor: null };
  $("history-panel").hidden = false;
  $("history-player").textContent = player;
  $("history-board").textContent = `on ${board}`;
  if (!cursor) $("history-rows").replaceChildren();
  try {
    const q = new URLSearchParams({ player, limit: "20", ...(cursor ? { cursor } : {}) });
    const page = await api("GET", `/admin/boards/${board}/log?${q}`);
    $("history-rows").append(
      ...page.entries.map((e) => {
        const what = e.action ?? "submit";
        const details =
          what === "submit"
            ? `${e.op} ${formatThousands(e.points)} → ${formatThousands(e.score)} (#${e.rank}, ${e.season})`
            : what === "ban"
              ? [e.reason, e.until_ms ? `until ${timeText(e.until_ms)}` : "until lifted"].filter(Boolean).join(", ")
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
    fail("history")(e);
  }
}

$("history-more").addEventListener("click", () => {
  if (history?.cursor) showHistory(history.board, history.player, history.cursor);
});

// ---- bans ------------------------------------------------------------------------------------

async function refreshBans() {
  const { bans } = await api("GET", "/admin/bans");
  $("ban-rows").replaceChildren(
    ...bans.map((b) => {
      const tr = row([
        b.player,
        b.board ?? "every board",
        b.reason ?? "",
        b.until_ms ? timeText(b.until_ms, 16) : "lifted by hand",
      ]);
      tr.dataset.player = b.player;
      tr.append(actions([["Lift", "lift", () => lift(b)]]));
      return tr;
    }),
  );
}

async function lift(b) {
  try {
    const q = b.board ? `?board=${encodeURIComponent(b.board)}` : "";
    await api("DELETE", `/admin/bans/${b.player}${q}`);
    toast(`Lifted the ban of ${b.player}.`);
    await refreshBans();
  } catch (e) {
    fail("lift")(e);
  }
}

// ---- admin actions ---------------------------------------------------------------------------

// The admin audit log's latest changes (board configuration and deletion, rollovers, removals,
// revocations, dead-letter retries), each with the name of the key that made it.
async function refreshAudit() {
  const { entries } = await api("GET", "/admin/audit?limit=20");
  $("audit-rows").replaceChildren(
    ...entries.map((e) => {
      const target = [e.board, e.player, e.queue, e.job, e.season].filter(Boolean).join(" ");
      const tr = row([new Date(e.time_ms).toISOString().replace("T", " ").slice(0, 19), e.action, target, e.by]);
      tr.dataset.action = e.action;
      return tr;
    }),
  );
}

// ---- queues ----------------------------------------------------------------------------------

async function refreshQueues() {
  const { queues } = await api("GET", "/admin/queues");
  $("queue-rows").replaceChildren(
    ...queues.map((q) => {
      const tr = row([q.name, q.ready, q.delayed, q.processing, q.dead]);
      tr.dataset.queue = q.name;
      for (const td of [...tr.children].slice(1)) td.className = "num";
      tr.append(actions([["Dead letters", "dead", () => showDead(q.name)]]));
      return tr;
    }),
  );
  if (deadQueue) await showDead(deadQueue);
}

async function showDead(queue) {
  deadQueue = queue;
  $("dead-box").hidden = false;
  $("dead-queue").textContent = queue;
  const { jobs } = await api("GET", `/admin/queues/${queue}/dead?limit=50`);
  $("dead-rows").replaceChildren(
    ...jobs.map((j) => {
      const tr = row([j.id, j.kind, `${j.attempts}/${j.max_attempts}`, new Date(j.died_at_ms).toISOString().slice(0, 19)]);
      tr.dataset.job = j.id;
      tr.children[2].className = "num";
      tr.append(actions([["Retry", "retry", () => retry(queue, j.id)]]));
      return tr;
    }),
  );
}

async function retry(queue, id) {
  try {
    await api("POST", `/admin/queues/${queue}/dead/${id}/retry`);
    toast(`Job ${id} is ready again.`);
    await refreshQueues();
  } catch (e) {
    fail("retry")(e);
  }
}

// ---- live charts from /metrics ----------------------------------------------------------------

const series = { subs: new Map(), rejections: new Map(), sockets: new Map() };
let previous = null; // {at, byOutcome}

/** The samples of `name` in Prometheus text: [{labels, value}]. */
function samples(text, name) {
  const out = [];
  for (const line of text.split("\n")) {
    if (!line.startsWith(name) || (line[name.length] !== "{" && line[name.length] !== " ")) continue;
    const labels = {};
    const m = line.match(/^[^{ ]+(?:\{(.*)\})? (\S+)$/);
    if (!m) continue;
    for (const [, k, v] of (m[1] ?? "").matchAll(/(\w+)="([^"]*)"/g)) labels[k] = v;
    out.push({ labels, value: Number(m[2]) });
  }
  return out;
}

function push(map, label, value) {
  const points = map.get(label) ?? [];
  points.push(value);
  if (points.length > CHART_POINTS) points.shift();
  map.set(label, points);
}

async function poll() {
  try {
    // The admin token also opens /metrics when the server requires a metrics token.
    const res = await fetch("/metrics", { headers: token ? { authorization: `Bearer ${token}` } : {} });
    const text = await res.text();
    const at = performance.now();
    const byOutcome = new Map(samples(text, "scorecast_submissions_total").map((s) => [s.labels.outcome, s.value]));
    if (previous) {
      const dt = (at - previous.at) / 1000;
      const rate = (o) => Math.max(0, ((byOutcome.get(o) ?? 0) - (previous.byOutcome.get(o) ?? 0)) / dt);
      let all = 0;
      for (const o of byOutcome.keys()) {
        all += rate(o);
        if (o !== "ok" && o !== "duplicate") push(series.rejections, o, rate(o));
      }
      push(series.subs, "submissions/s", all);
    }
    previous = { at, byOutcome };
    const sockets = samples(text, "scorecast_ws_connections")[0]?.value ?? 0;
    push(series.sockets, "sockets", sockets);
    draw($("chart-subs"), series.subs);
    draw($("chart-rejections"), series.rejections);
    draw($("chart-sockets"), series.sockets);
    $("chart-legend").replaceChildren(
      ...[...series.rejections.keys()].map((k, i) => {
        const span = document.createElement("span");
        span.textContent = `■ ${k}  `;
        span.style.color = COLORS[i % COLORS.length];
        return span;
      }),
    );
  } catch (e) {
    console.warn("scorecast admin: /metrics", e);
  }
  if (token) refreshQueues().catch(() => {});
}

/** A small line chart of every series in `map` (one color each), scaled to the largest value. */
function draw(canvas, map) {
  const ctx = canvas.getContext("2d");
  const { width: w, height: h } = canvas;
  ctx.clearRect(0, 0, w, h);
  const max = Math.max(1, ...[...map.values()].flat());
  ctx.fillStyle = "#8d98b0";
  ctx.font = "10px system-ui";
  ctx.fillText(formatThousands(Math.ceil(max)), 4, 12);
  let i = 0;
  let last = 0;
  let points = 0;
  for (const values of map.values()) {
    ctx.strokeStyle = COLORS[i++ % COLORS.length];
    ctx.lineWidth = 1.5;
    ctx.beginPath();
    values.forEach((v, x) => {
      const px = (x / (CHART_POINTS - 1)) * w;
      const py = h - 4 - (v / max) * (h - 18);
      if (x === 0) ctx.moveTo(px, py);
      else ctx.lineTo(px, py);
    });
    ctx.stroke();
    points = Math.max(points, values.length);
    last += values.at(-1) ?? 0;
  }
  // For tests and tools: how many points are drawn and the sum of the latest values.
  canvas.dataset.points = String(points);
  canvas.dataset.last = String(last);
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

function actions(list) {
  const td = document.createElement("td");
  td.className = "actions";
  for (const [label, action, run, cls] of list) {
    const b = document.createElement("button");
    b.type = "button";
    b.textContent = label;
    b.dataset.label = label;
    b.dataset.action = action;
    if (cls) b.className = cls;
    b.addEventListener("click", () => run(b));
    td.append(b);
  }
  return td;
}

window.__admin = { watch, series };
if (token) start();
