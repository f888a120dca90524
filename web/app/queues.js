// The queue browser (`/queues.html`, linked from the admin console): every queue with its counts,
// each state's jobs paged (payload, times in UTC, attempt history), enqueue, delete, retry one,
// retry all dead, purge a state. Every destructive action takes a second click on the same button
// (the first one arms it for a few seconds); its result shows next to that button. Job data is
// only ever set as text (textContent), never parsed as HTML.
//
// The admin token is the console's: kept in sessionStorage only, sent as a Bearer token.

const TOKEN_KEY = "scorecast.adminToken";
const PAGE = 20;
const ARM_MS = 5000;
const STATES = ["ready", "delayed", "processing", "dead"];

const $ = (id) => document.getElementById(id);

let token = sessionStorage.getItem(TOKEN_KEY);
let current = null; // {queue, state, offset}
let counts = {}; // queue -> {ready, delayed, processing, dead}

/**
 * JSON.parse that keeps a number's text where a JS number would change it (big integers, `1.50`),
 * so that a payload is shown as stored (JSON.rawJSON; plain numbers where it is missing).
 */
function parseKeepingNumbers(text) {
  if (typeof JSON.rawJSON !== "function") return JSON.parse(text);
  return JSON.parse(text, (_k, v, ctx) =>
    typeof v === "number" && ctx?.source !== undefined && String(v) !== ctx.source ? JSON.rawJSON(ctx.source) : v,
  );
}

/** An admin call: resolves {status, body}; throws an Error with the server's message otherwise. */
async function api(method, path, body) {
  const headers = { authorization: `Bearer ${token}` };
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : body });
  const text = await res.text();
  let json = null;
  try {
    json = text ? parseKeepingNumbers(text) : null;
  } catch {
    json = null;
  }
  if (res.status === 401) signOut();
  if (!res.ok) {
    const err = json?.error;
    throw new Error(err ? `${err.code}: ${err.message}` : `HTTP ${res.status}`);
  }
  return { status: res.status, body: json, text };
}

const q = (name) => `/admin/queues/${encodeURIComponent(name)}`;

/** `2026-12-01 22:10:35 UTC`. */
export function utc(ms) {
  return new Date(ms).toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
}

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text;
  if (cls) e.className = cls;
  return e;
}

function say(span, text, ok) {
  span.textContent = text;
  span.className = `msg ${ok ? "ok" : "err"}`;
}

/**
 * Makes `button` destructive: the first click arms it (its label asks to confirm) and does
 * nothing else; a second click within ARM_MS runs `action`. Its result (or error) goes to `msg`.
 */
function destructive(button, msg, confirmLabel, action) {
  let timer = null;
  const label = () => button.dataset.label || button.textContent;
  button.dataset.label = label();
  button.addEventListener("click", async () => {
    if (!button.dataset.armed) {
      button.dataset.armed = "1";
      button.textContent = confirmLabel();
      say(msg, "Click again to confirm.", true);
      timer = setTimeout(() => disarm(), ARM_MS);
      return;
    }
    disarm();
    button.disabled = true;
    try {
      say(msg, await action(), true);
    } catch (e) {
      say(msg, e.message, false);
    } finally {
      button.disabled = false;
    }
  });
  function disarm() {
    clearTimeout(timer);
    delete button.dataset.armed;
    button.textContent = button.dataset.label;
    if (msg.textContent === "Click again to confirm.") msg.textContent = "";
  }
}

// ---- queues ----------------------------------------------------------------------------------

async function loadQueues() {
  const { body } = await api("GET", "/admin/queues");
  counts = {};
  const ul = $("queues");
  ul.replaceChildren();
  for (const info of body.queues) {
    counts[info.name] = info;
    const li = el("li");
    li.dataset.queue = info.name;
    const b = el(
      "button",
      `${info.name} — ready ${info.ready} · delayed ${info.delayed} · processing ${info.processing} · dead ${info.dead}`,
    );
    b.type = "button";
    b.addEventListener("click", () => open(info.name, "ready", 0));
    li.append(b);
    ul.append(li);
  }
  $("no-queues").hidden = body.queues.length > 0;
  if (current) renderStates();
}

function renderStates() {
  const box = $("states");
  box.replaceChildren();
  const c = counts[current.queue] || {};
  for (const s of STATES) {
    const b = el("button", `${s} (${c[s] ?? 0})`);
    b.type = "button";
    b.dataset.state = s;
    b.setAttribute("role", "tab");
    b.setAttribute("aria-selected", String(s === current.state));
    b.addEventListener("click", () => open(current.queue, s, 0));
    box.append(b);
  }
  const purge = $("purge");
  purge.hidden = current.state === "processing";
  purge.dataset.label = `Purge ${current.state}`;
  if (!purge.dataset.armed) purge.textContent = purge.dataset.label;
  $("retry-all").hidden = current.state !== "dead";
}

// ---- one state's jobs --------------------------------------------------------------------------

async function open(queue, state, offset) {
  const changed = !current || current.queue !== queue || current.state !== state;
  current = { queue, state, offset };
  if (changed) $("bulk-msg").textContent = "";
  $("browser").hidden = false;
  $("q-name").textContent = queue;
  renderStates();
  await loadJobs();
}

async function loadJobs() {
  const { queue, state, offset } = current;
  const list = $("jobs");
  let body;
  try {
    ({ body } = await api("GET", `${q(queue)}/jobs?state=${state}&limit=${PAGE}&offset=${offset}`));
  } catch (e) {
    list.replaceChildren();
    $("empty").hidden = false;
    $("empty").textContent = e.message;
    return;
  }
  list.replaceChildren(...body.jobs.map((j) => jobItem(j, state)));
  $("empty").hidden = body.jobs.length > 0;
  $("empty").textContent = body.total === 0 ? `No ${state} jobs` : "Nothing on this page";
  const last = Math.min(offset + body.jobs.length, body.total);
  $("page-info").textContent = body.total ? `${offset + 1}–${last} of ${body.total}` : "";
  $("prev").disabled = offset === 0;
  $("next").disabled = offset + PAGE >= body.total;
}

function jobItem(j, state) {
  const li = el("li");
  li.dataset.job = j.id;
  const head = el("div");
  head.append(el("strong", j.id), el("span", `  ${j.kind} · priority ${j.priority} · attempts ${j.attempts}/${j.max_attempts}`, "small muted"));
  li.append(head);
  if (j.run_at_ms !== undefined) li.append(el("div", `due ${utc(j.run_at_ms)}`, "small when"));
  if (j.lease_expires_at_ms !== undefined) li.append(el("div", `lease until ${utc(j.lease_expires_at_ms)}`, "small when"));
  if (j.died_at_ms !== undefined) li.append(el("div", `died ${utc(j.died_at_ms)}`, "small when"));
  li.append(el("pre", JSON.stringify(j.payload, null, 1), "payload"));
  if (j.history.length) {
    const last = j.history[j.history.length - 1];
    if (state === "dead") li.append(el("div", `reason: ${last.reason ?? "(none given)"}`, "small reason"));
    const ol = el("ol", undefined, "history");
    for (const h of j.history) {
      const lease = h.lease ? ` lease ${h.lease}` : "";
      ol.append(el("li", `attempt ${h.attempt} failed ${utc(h.at_ms)}${lease}: ${h.reason ?? "(no reason)"}`));
    }
    li.append(ol);
  }
  if (state !== "processing") {
    const act = el("div", undefined, "act");
    const msg = el("span", "", "msg");
    msg.setAttribute("role", "status");
    if (state === "dead") {
      const retry = el("button", "Retry");
      retry.type = "button";
      retry.className = "retry";
      destructive(retry, msg, () => "Confirm retry", async () => {
        await api("POST", `${q(current.queue)}/dead/${encodeURIComponent(j.id)}/retry`);
        done(li);
        return `Retried: ${j.id} is ready again.`;
      });
      act.append(retry);
    }
    const del = el("button", "Delete", "danger delete");
    del.type = "button";
    destructive(del, msg, () => "Confirm delete", async () => {
      await api("DELETE", `${q(current.queue)}/jobs/${encodeURIComponent(j.id)}`);
      done(li);
      return `Deleted ${j.id}.`;
    });
    act.append(del, msg);
    li.append(act);
  }
  return li;
}

/** A job acted on: its buttons go (its message stays), and the counts refresh. */
function done(li) {
  li.classList.add("gone");
  for (const b of li.querySelectorAll("button")) b.remove();
  loadQueues().catch(() => {});
}

// ---- wiring ------------------------------------------------------------------------------------

function signOut() {
  sessionStorage.removeItem(TOKEN_KEY);
  token = null;
  $("console").hidden = true;
  $("sign-out").hidden = true;
  $("login").hidden = false;
}

async function signedIn() {
  $("login").hidden = true;
  $("console").hidden = false;
  $("sign-out").hidden = false;
  await loadQueues();
}

$("login-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  token = $("token").value.trim();
  try {
    await api("GET", "/admin/queues");
    sessionStorage.setItem(TOKEN_KEY, token);
    $("login-error").hidden = true;
    await signedIn();
  } catch (err) {
    $("login-error").hidden = false;
    $("login-error").textContent = err.message;
  }
});
$("sign-out").addEventListener("click", signOut);

$("enqueue-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const msg = $("eq-msg");
  const queue = $("eq-queue").value.trim();
  const raw = $("eq-payload").value.trim() || "null";
  try {
    JSON.parse(raw);
  } catch (err) {
    say(msg, `The payload is not JSON: ${err.message}`, false);
    return;
  }
  const id = $("eq-id").value.trim();
  const delay = Number($("eq-delay").value || 0);
  // The payload goes as typed (the server keeps it byte for byte).
  const parts = [`"kind":${JSON.stringify($("eq-kind").value.trim())}`, `"payload":${raw}`];
  parts.push(`"priority":${Number($("eq-priority").value)}`, `"max_attempts":${Number($("eq-max").value)}`);
  if (id) parts.push(`"id":${JSON.stringify(id)}`);
  if (delay > 0) parts.push(`"delay_ms":${delay}`);
  try {
    const { body } = await api("POST", `${q(queue)}/jobs`, `{${parts.join(",")}}`);
    say(msg, `Enqueued ${body.id} in ${queue}${delay > 0 ? " (delayed)" : ""}.`, true);
    await loadQueues();
    if (current?.queue === queue || !current) await open(queue, delay > 0 ? "delayed" : "ready", 0);
  } catch (err) {
    say(msg, err.message, false);
  }
});

destructive($("purge"), $("bulk-msg"), () => `Confirm purge ${current.state}`, async () => {
  const { body } = await api("POST", `${q(current.queue)}/purge?state=${current.state}`);
  await loadQueues();
  await loadJobs();
  return `Purged ${body.done} ${current.state} job${body.done === 1 ? "" : "s"}${body.left ? `; ${body.left} left (purge again)` : ""}.`;
});
destructive($("retry-all"), $("bulk-msg"), () => "Confirm retry all", async () => {
  const { body } = await api("POST", `${q(current.queue)}/dead/retry`);
  await loadQueues();
  await loadJobs();
  return `Retried ${body.done} dead job${body.done === 1 ? "" : "s"}${body.left ? `; ${body.left} left` : ""}.`;
});
$("prev").addEventListener("click", () => open(current.queue, current.state, Math.max(0, current.offset - PAGE)));
$("next").addEventListener("click", () => open(current.queue, current.state, current.offset + PAGE));
$("refresh").addEventListener("click", async () => {
  await loadQueues();
  await loadJobs();
});

if (token) {
  signedIn().catch(() => signOut());
} else {
  signOut();
}
