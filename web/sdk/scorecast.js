// Scorecast browser SDK — an ES module, no build step. Served at /sdk/scorecast.js; it loads the
// protocol code compiled from Rust (scorecast-shared) from /pkg/scorecast.js + scorecast_bg.wasm,
// so every frame is checked by the same types the server uses.
//
//   import { Scorecast } from "/sdk/scorecast.js";
//   const { token } = await Scorecast.guest("ann");            // dev servers only
//   const sc = await Scorecast.connect({ token, onState: (s) => console.log("state", s) });
//   const off = sc.subscribe("demo", "top", { limit: 10 }, (m) => {
//     for (const e of m.entries) console.log(e.rank, e.player, e.score);
//   });
//   sc.subscribe("demo", "me", (m) => console.log("my rank", m.rank));
//   try {
//     const ack = await sc.submit("demo", 64);                // {score, rank, previous_rank, duplicate}
//   } catch (e) {
//     if (e.code === "rate_limited") setTimeout(retry, e.retryAfterMs);
//   }
//
// API
//   Scorecast.connect({url?, token?, onState?, onError?, onNotify?, wait = true}) -> Promise<Scorecast>
//       url defaults to ws(s)://<host that served this file>/ws. With wait, resolves at the first
//       `welcome`; with wait: false, at once (everything is queued until the socket is up).
//   sc.hello(token) -> Promise<player id>           authenticate; rejects (code unauthorized|forbidden)
//   sc.submit(board, points) -> Promise<ack>        rejects with ScorecastError {code, message, retryAfterMs};
//       never with `unavailable` (outcome unknown: re-sent with the same id until answered)
//   sc.startRun(board) -> Promise<{run, seed, started_ms, expires_ms}>
//       starts a run on a verified board (docs/validators.md): play the game from `seed`.
//       Rejects (code bad_request: no validator, unknown_board, conflict: too many open runs).
//   sc.submitProof(board, run, proofBytes /* Uint8Array */) -> Promise<ack>
//       the run's proof so far (for 2048, its move log); the server replays it and answers as
//       submit does (the score is the validator's). Rejects as submit does, and with
//       not_found (no such run, or expired), forbidden (another player's run),
//       payload_too_large (over the server's proof_bytes), bad_request (the proof is refused).
//   sc.join(board) -> Promise<{board, season, player, joined_ms}>
//       enters the board's tournament (docs/protocol.md, "Tournaments"); joining again resolves
//       the same. Rejects (code bad_request: no tournament, unknown_board, ended, full).
//   sc.league(league) -> Promise<{league, player, tier, board, season, bucket?, rank?, score?, bucket_total?}>
//       GET /v1/leagues/{league}/me with the client's token: the player's tier (0 = lowest), its
//       board, and their bucket and rank there this season (docs/protocol.md, "Leagues").
//       Rejects (code unauthorized: no token, not_found: no such league).
//   sc.subscribe(board, "top"|"me"|"around", {limit|radius}?, callback) -> unsubscribe()
//       On a bucketed board the views are the player's bucket ("Buckets"; needs hello).
//       callback(msg): the snapshot, then every push (`top`, `around`, or `rank` for "me").
//       Throws at once (err.code bad_request|invalid_id) on arguments the server would refuse;
//       submit rejects the same way (also points_out_of_range) without sending anything.
//   sc.on("state"|"error"|"notify"|"tournament"|"league"|"welcome"|"message", fn) -> off()
//       "league": {league, season, direction: "up"|"down", from, from_tier, to, to_tier, bucket,
//       rank}: this player was moved at the end of a league's season (also a "notify", kind league).
//       "tournament": {board, season, event: "started"|"ending_soon"|"ended", start_ms?, end_ms?,
//       total?, standings?, rank?} for a board this client has a view of (`rank`: the player's
//       final rank, with `ended`).
//   sc.state: "connecting" | "open" | "reconnecting" | "closed";  sc.player: id or null
//       (onState and the "state" event hear the changes: it starts as "connecting")
//   sc.close()                                     stops for good; pending submissions reject (closed)
//   Scorecast.guest(name, {baseUrl?}) -> Promise<{player, token}>   POST /v1/guest (dev only)
//   formatThousands, formatCompact, formatOrdinal, formatRank, formatAgo, isValidId: re-exported
//       from wasm; usable once `await Scorecast.ready()` (or connect) has resolved.
//
// Reliability: every submission gets a unique id and stays pending until the server answers
// `ack`/`rejected`. After a reconnect (exponential backoff with full jitter, 250 ms → 10 s) the
// SDK says hello again, resubscribes every view (each delivers a fresh snapshot) and re-sends
// pending submissions with the SAME id; the server recognises an id for at least 10 minutes
// (or the player's last 64 submissions to the board; README "Redis keys"), answering
// `duplicate: true`, so a retry never counts twice. `unavailable` means Redis did not answer in
// time and the submission's outcome is unknown (it may have been applied, or be applied later):
// the SDK settles it by re-sending the SAME id with backoff (0.5 s → 5 s, jittered) until a
// definitive answer, so submit() resolves with the real result (an ack, perhaps with
// `duplicate: true`) and the score is neither lost nor counted twice. Proofs are treated alike:
// the server's submission id of a proof is its run and its length, so a re-sent proof is a
// `duplicate`. A startRun whose answer was lost is sent again too, with its id: the server
// answers the run that id started (the run id is derived from the player and the id), so a
// retry never opens a second run. A re-sent submission that the connection's message limit
// refuses (`rate_limited`: a burst of re-sends) is sent again after the wait, same id, rather than
// rejected, since its first copy may have counted. If the reconnect's hello is refused (the
// token expired or was revoked: an `error` event, code unauthorized), the client is a spectator
// (sc.player null) and pending submissions wait, unsent, for sc.hello(freshToken), which sends
// them and the player's views again. More than 64 submissions pending to one board across a
// disconnect may outrun the server's memory of ids: keep fewer in flight.
// sc.subscribe with the same arguments again asks the server again (a fresh snapshot): how a
// view refused before (a player without a bucket yet) or one to follow into a new season is
// renewed.

import init, * as wasm from "../pkg/scorecast.js";

export {
  formatThousands,
  formatCompact,
  formatOrdinal,
  formatRank,
  formatAgo,
  isValidId,
  protocolVersion,
} from "../pkg/scorecast.js";

const BACKOFF_BASE_MS = 250;
const BACKOFF_CAP_MS = 10_000;
const PING_EVERY_MS = 20_000; // the server also pings at WS level; this lets us notice a dead link
const HELLO_TIMEOUT_MS = 10_000;
const UNAVAILABLE_RETRY_BASE_MS = 500;
const UNAVAILABLE_RETRY_CAP_MS = 5_000;

let wasmReady = null;

/** An error answered by Scorecast: `code` is the protocol's error code. */
export class ScorecastError extends Error {
  constructor(code, message, extra = {}) {
    super(message || code);
    this.name = "ScorecastError";
    this.code = code;
    Object.assign(this, extra);
  }
}

/** Delay before reconnect attempt `n` (0-based): full jitter over an exponential ceiling. */
export function backoffMs(n, base = BACKOFF_BASE_MS, cap = BACKOFF_CAP_MS, rng = Math.random) {
  return Math.floor(rng() * Math.min(cap, base * 2 ** Math.min(n, 30)));
}

/** A fresh submission id: `s-` + 32 hex digits, well inside the id alphabet and 64 chars. */
export function newSubmissionId() {
  const c = globalThis.crypto;
  if (c && typeof c.randomUUID === "function") return "s-" + c.randomUUID().replaceAll("-", "");
  // randomUUID needs a secure context; getRandomValues works everywhere.
  const bytes = c.getRandomValues(new Uint8Array(16));
  return "s-" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Standard base64 (padded) of `bytes`, as the protocol's `proof` field carries it. */
function toBase64(bytes) {
  let binary = "";
  // In slices: `fromCharCode` takes its bytes as arguments, and arguments are limited in number.
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}

function defaultUrl() {
  const u = new URL("/ws", import.meta.url);
  u.protocol = u.protocol === "https:" ? "wss:" : "ws:";
  return u.href;
}

const viewOfMessage = { top: "top", around: "around", rank: "me" };

export class Scorecast {
  /** Loads the wasm module once; every other call awaits this. */
  static ready() {
    wasmReady ??= init();
    return wasmReady;
  }

  static async connect(opts = {}) {
    await Scorecast.ready();
    const sc = new Scorecast(opts);
    if (opts.wait !== false) await sc._firstWelcome;
    return sc;
  }

  /** Dev servers only: a guest player token for `guest-<name>`. */
  static async guest(name, { baseUrl } = {}) {
    const url = new URL("/v1/guest", baseUrl ?? import.meta.url);
    const res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name }),
    });
    const body = await res.json().catch(() => null);
    if (!res.ok) {
      const err = body?.error ?? {};
      throw new ScorecastError(err.code ?? `http_${res.status}`, err.message ?? res.statusText, {
        status: res.status,
      });
    }
    return { player: body.player, token: body.token };
  }

  /** Use `Scorecast.connect`: the constructor needs the wasm module loaded. */
  constructor({ url, token, onState, onError, onNotify } = {}) {
    this.url = url ?? defaultUrl();
    this.state = "connecting";
    this.player = null;
    this._token = token ?? null;
    this._listeners = new Map(); // event -> Set<fn>
    this._subs = new Map(); // "board|view" -> {board, view, opts, frame, listeners, last, lastSeq}
    this._pending = new Map(); // submission id -> {frame, board, resolve, reject, tries, sends}
    this._heldForHello = false; // a reconnect's hello was refused: pending submissions wait
    this._helloWaiters = []; // [{resolve, reject}] until the next welcome with a player / auth error
    this._ws = null;
    this._attempt = 0;
    this._ready = false; // open, and hello answered: the frames below can flow
    this._authPending = false;
    this._timers = new Set();
    if (onState) this.on("state", onState);
    if (onError) this.on("error", onError);
    if (onNotify) this.on("notify", onNotify);
    this._firstWelcome = new Promise((resolve) => this.on("open", resolve));
    this._onOnline = () => this.state === "reconnecting" && !this._ws && this._reconnectNow();
    globalThis.addEventListener?.("online", this._onOnline);
    this._open();
  }

  // ---- public API --------------------------------------------------------------------------

  on(event, fn) {
    if (!this._listeners.has(event)) this._listeners.set(event, new Set());
    this._listeners.get(event).add(fn);
    return () => this._listeners.get(event)?.delete(fn);
  }

  hello(token) {
    if (this.state === "closed") return Promise.reject(new ScorecastError("closed", "client is closed"));
    let frame;
    try {
      frame = wasm.encodeClientMsg({ type: "hello", token });
    } catch (e) {
      return Promise.reject(e);
    }
    const previous = this._token;
    this._token = token;
    const result = new Promise((resolve, reject) => this._helloWaiters.push({ resolve, reject, previous }));
    if (this._ws?.readyState === WebSocket.OPEN) {
      // Not ready yet: hold subscriptions and submissions until the answer, as at connect.
      if (!this._ready) this._gateOnHello(this._ws);
      this._send(frame);
    }
    // Otherwise the hello goes out as soon as the socket opens.
    return result;
  }

  submit(board, points) {
    return this._request({ type: "submit", board, points }, (m) => m);
  }

  startRun(board) {
    return this._request({ type: "start_run", board }, (m) => ({
      run: m.run,
      seed: m.seed,
      started_ms: m.started_ms,
      expires_ms: m.expires_ms,
    }));
  }

  join(board) {
    return this._request({ type: "join", board }, (m) => ({
      board: m.board,
      season: m.season,
      player: m.player,
      joined_ms: m.joined_ms,
    }));
  }

  async league(league) {
    if (!this._token) throw new ScorecastError("unauthorized", "league() needs a token: hello first");
    const url = new URL(`/v1/leagues/${encodeURIComponent(league)}/me`, this.url);
    url.protocol = url.protocol === "wss:" ? "https:" : "http:";
    const res = await fetch(url, { headers: { authorization: `Bearer ${this._token}` } });
    const body = await res.json().catch(() => null);
    if (!res.ok) {
      const err = body?.error ?? {};
      throw new ScorecastError(err.code ?? `http_${res.status}`, err.message ?? res.statusText, {
        status: res.status,
      });
    }
    return body;
  }

  submitProof(board, run, proofBytes) {
    if (!(proofBytes instanceof Uint8Array)) {
      return Promise.reject(new ScorecastError("bad_request", "the proof must be a Uint8Array"));
    }
    return this._request({ type: "proof", board, run, proof: toBase64(proofBytes) }, (m) => m);
  }

  /**
   * Sends `msg` with a fresh id; it stays pending until answered (`ack`, `run`, `joined` or `rejected`
   * with that id), is re-sent after a reconnect and on `unavailable`, and settles with
   * `answer(message)` or a ScorecastError.
   */
  _request(msg, answer) {
    if (this.state === "closed") return Promise.reject(new ScorecastError("closed", "client is closed"));
    const id = newSubmissionId();
    let frame;
    try {
      frame = wasm.encodeClientMsg({ ...msg, id });
    } catch (e) {
      return Promise.reject(new ScorecastError(e.code ?? "bad_request", e.message, { id }));
    }
    return new Promise((resolve, reject) => {
      const p = { frame, board: msg.board, resolve: (m) => resolve(answer(m)), reject, tries: 0, sends: 0 };
      this._pending.set(id, p);
      if (this._ready && !this._heldForHello) this._sendPending(p);
    });
  }

  /** Pending (sent or queued, not yet answered) submissions, proofs and run starts. */
  get pendingCount() {
    return this._pending.size;
  }

  subscribe(board, view, opts, callback) {
    if (typeof opts === "function") [opts, callback] = [{}, opts];
    opts ??= {};
    // Throws (code bad_request / invalid_id) on a board, view, limit or radius the server refuses.
    const frame = wasm.encodeClientMsg({ type: "subscribe", board, view, limit: opts.limit, radius: opts.radius });
    const key = `${board}|${view}`;
    let sub = this._subs.get(key);
    if (!sub) {
      sub = { board, view, frame: null, listeners: new Set(), last: null, lastSeq: null };
      this._subs.set(key, sub);
    }
    sub.listeners.add(callback);
    if (sub.frame !== frame) {
      // New, or new options: (re)subscribe; the server replaces the old view.
      sub.frame = frame;
      sub.last = null;
      sub.lastSeq = null;
      if (this._ready) this._send(frame);
    } else {
      // The same again: the new listener gets the last message at once, and the server is asked
      // again (a view refused before — no bucket yet — or one to follow into a new season).
      if (sub.last) {
        const last = sub.last;
        queueMicrotask(() => sub.listeners.has(callback) && this._call(callback, last));
      }
      if (this._ready) {
        sub.lastSeq = null;
        this._send(frame);
      }
    }
    return () => {
      if (!sub.listeners.delete(callback) || sub.listeners.size > 0 || this._subs.get(key) !== sub) return;
      this._subs.delete(key);
      if (this._ready) this._send(wasm.encodeClientMsg({ type: "unsubscribe", board, view }));
    };
  }

  close() {
    if (this.state === "closed") return;
    this._setState("closed");
    this._ready = false;
    for (const t of this._timers) clearTimeout(t);
    this._timers.clear();
    clearInterval(this._pingTimer);
    clearTimeout(this._reconnectTimer);
    globalThis.removeEventListener?.("online", this._onOnline);
    this._teardown();
    const err = () => new ScorecastError("closed", "client is closed");
    for (const p of this._pending.values()) p.reject(err());
    this._pending.clear();
    for (const w of this._helloWaiters.splice(0)) w.reject(err());
  }

  // ---- connection lifecycle ----------------------------------------------------------------

  _open() {
    const ws = new WebSocket(this.url);
    this._ws = ws;
    this._ready = false;
    ws.onopen = () => {
      this._lastRecv = Date.now();
      if (this._token) {
        this._gateOnHello(ws);
        this._send(wasm.encodeClientMsg({ type: "hello", token: this._token }));
      }
    };
    ws.onmessage = (ev) => this._onFrame(ev.data);
    ws.onclose = () => this._lost();
    ws.onerror = () => {}; // always followed by close
  }

  _teardown() {
    const ws = this._ws;
    this._ws = null;
    if (!ws) return;
    ws.onopen = ws.onmessage = ws.onclose = ws.onerror = null;
    try {
      ws.close(1000);
    } catch {
      // already closing
    }
  }

  _lost() {
    this._teardown();
    this._ready = false;
    this._authPending = false;
    clearInterval(this._pingTimer);
    if (this.state === "closed") return;
    this._setState("reconnecting");
    const delay = backoffMs(this._attempt++);
    this._reconnectTimer = setTimeout(() => this._reconnectNow(), delay);
  }

  _reconnectNow() {
    clearTimeout(this._reconnectTimer);
    if (this.state !== "closed" && !this._ws) this._open();
  }

  /** Holds subscriptions and submissions until the hello on `ws` is answered (or times out). */
  _gateOnHello(ws) {
    this._authPending = true;
    this._after(HELLO_TIMEOUT_MS, () => ws === this._ws && this._authDone());
  }

  /** Hello answered (or given up on): let subscriptions and submissions flow. */
  _authDone() {
    if (!this._authPending) return;
    this._authPending = false;
    this._becomeReady();
  }

  _becomeReady() {
    if (this._ready || !this._ws) return;
    this._ready = true;
    this._attempt = 0;
    for (const sub of this._subs.values()) {
      sub.lastSeq = null;
      this._send(sub.frame);
    }
    // Not while the reconnect's hello was refused: as a spectator they would be refused
    // `unauthorized` though they may have counted; they wait for a hello that succeeds.
    if (!this._heldForHello) for (const p of this._pending.values()) this._sendPending(p);
    clearInterval(this._pingTimer);
    this._pingSentAt = 0;
    this._pingTimer = setInterval(() => this._ping(), PING_EVERY_MS);
    this._setState("open");
    this._emit("open");
  }

  _ping() {
    if (this._pingSentAt && this._lastRecv < this._pingSentAt) {
      // No frame at all since the last ping: the link is dead even if the browser hasn't noticed.
      this._lost();
      return;
    }
    this._pingSentAt = Date.now();
    this._send(wasm.encodeClientMsg({ type: "ping" }));
  }

  _send(frame) {
    if (this._ws?.readyState === WebSocket.OPEN) this._ws.send(frame);
  }

  /** Sends a pending submission (again), counting its sends. */
  _sendPending(p) {
    p.sends += 1;
    this._send(p.frame);
  }


  _after(ms, fn) {
    const t = setTimeout(() => {
      this._timers.delete(t);
      fn();
    }, ms);
    this._timers.add(t);
  }

  _setState(state) {
    if (this.state === state) return;
    this.state = state;
    this._emit("state", state);
  }

  _emit(event, ...args) {
    for (const fn of this._listeners.get(event) ?? []) this._call(fn, ...args);
  }

  _call(fn, ...args) {
    try {
      fn(...args);
    } catch (e) {
      console.error("scorecast: a callback threw", e);
    }
  }

  // ---- incoming frames ---------------------------------------------------------------------

  _onFrame(data) {
    this._lastRecv = Date.now();
    if (typeof data !== "string") return; // the protocol is text frames only
    let msg;
    try {
      msg = wasm.parseServerMsg(data);
    } catch (e) {
      this._emit("error", new ScorecastError(e.code ?? "bad_request", e.message));
      return;
    }
    this._emit("message", msg);
    switch (msg.type) {
      case "welcome":
        return this._onWelcome(msg);
      case "ack":
      case "run":
      case "joined":
        return this._onAck(msg);
      case "rejected":
        return this._onRejected(msg);
      case "top":
      case "rank":
      case "around":
        return this._onView(msg);
      case "notify":
        if (msg.kind === "league") this._emit("league", msg.payload);
        return this._emit("notify", msg);
      case "tournament":
        return this._emit("tournament", msg);
      case "error":
        return this._onError(msg);
      default: // pong
    }
  }

  _onWelcome(msg) {
    this._emit("welcome", msg);
    if (msg.player === null) {
      // The greeting right after the upgrade; a hello (if any) is on its way.
      if (!this._authPending) this._becomeReady();
      return;
    }
    const changed = this.player !== msg.player;
    this.player = msg.player;
    const held = this._heldForHello;
    this._heldForHello = false;
    for (const w of this._helloWaiters.splice(0)) w.resolve(msg.player);
    if (this._authPending) {
      this._authDone(); // sends every subscription and pending submission
    } else if (this._ready && (changed || held)) {
      // Player views refused while we were a spectator (or another player): ask again; and the
      // submissions held since a refused hello go out now, with their ids.
      for (const sub of this._subs.values()) {
        if (sub.view !== "top") {
          sub.lastSeq = null;
          this._send(sub.frame);
        }
      }
      if (held) for (const p of this._pending.values()) this._sendPending(p);
    }
  }

  _onError(msg) {
    const err = new ScorecastError(msg.code, msg.message);
    const authFailure = msg.code === "unauthorized" || msg.code === "forbidden";
    if (authFailure && (this._authPending || this._helloWaiters.length)) {
      const waiters = this._helloWaiters.splice(0);
      // Fall back to the token that worked before (if any), so reconnects don't repeat the failure.
      if (waiters.length) this._token = waiters[0].previous;
      else if (msg.code === "unauthorized") {
        // The reconnect's hello was refused (the token expired or was revoked): a spectator now,
        // and the pending submissions wait for `sc.hello(freshToken)`.
        this._token = null;
        this.player = null;
        if (this._pending.size > 0) this._heldForHello = true;
      }
      for (const w of waiters) w.reject(err);
      this._authDone();
    }
    this._emit("error", err);
  }

  _onAck(msg) {
    const p = this._pending.get(msg.id);
    if (!p) return; // an answer to a submission we already settled
    this._pending.delete(msg.id);
    p.resolve(msg);
  }

  _onRejected(msg) {
    const p = this._pending.get(msg.id);
    if (!p) return;
    if (msg.code === "unavailable") {
      // Outcome unknown: the submission may have been applied or may still be. Re-send the same
      // id until the server says what happened (dedup makes it safe); never give up, so a score
      // is not dropped while the game believes it failed. While disconnected, the reconnect
      // re-sends every pending submission anyway.
      const ceiling = Math.min(UNAVAILABLE_RETRY_CAP_MS, UNAVAILABLE_RETRY_BASE_MS * 2 ** Math.min(p.tries++, 30));
      const delay = ceiling / 2 + backoffMs(0, ceiling / 2, ceiling / 2);
      this._after(delay, () => this._pending.has(msg.id) && this._ready && this._sendPending(p));
      return;
    }
    if (msg.code === "rate_limited" && p.sends > 1) {
      // A re-sent submission (after a reconnect or `unavailable`) may have counted already: the
      // connection's message limit refused this copy unread, so it goes again after the wait
      // with the same id (dedup answers it), and never settles as a refusal it may not be.
      const wait = Math.max(msg.retry_after_ms ?? 1000, 50);
      this._after(wait, () => this._pending.has(msg.id) && this._ready && !this._heldForHello && this._sendPending(p));
      return;
    }
    this._pending.delete(msg.id);
    p.reject(
      new ScorecastError(msg.code, msg.message, {
        id: msg.id,
        board: p.board,
        retryAfterMs: msg.retry_after_ms ?? null,
      }),
    );
  }

  _onView(msg) {
    const sub = this._subs.get(`${msg.board}|${viewOfMessage[msg.type]}`);
    if (!sub) return; // a push that crossed our unsubscribe
    // Seq increases strictly within a subscription; a resync (or a fresh snapshot) restarts it.
    // An equal seq is let through: after a re-subscribe with new options, a push of the old view
    // may still be on the wire ahead of the new snapshot, which carries the same seq and must win.
    if (!msg.resync && sub.lastSeq !== null && msg.seq < sub.lastSeq) return;
    sub.lastSeq = msg.seq;
    sub.last = msg;
    for (const fn of [...sub.listeners]) this._call(fn, msg);
  }
}

export default Scorecast;
