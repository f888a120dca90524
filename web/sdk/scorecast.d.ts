// Types of the Scorecast browser SDK (scorecast.js beside this file). The protocol's messages
// are described in docs/protocol.md; the fields below are the ones the SDK itself relies on.

export {
  formatThousands,
  formatCompact,
  formatOrdinal,
  formatRank,
  formatAgo,
  isValidId,
  protocolVersion,
} from "../pkg/scorecast.js";

/** The connection's state. */
export type ConnState = "connecting" | "open" | "reconnecting" | "closed";

/** The views a client can subscribe to. */
export type View = "top" | "me" | "around";

/** One ranked entry of a `top` or `around` push. */
export interface Entry {
  rank: number;
  player: string;
  score: number;
  name?: string;
  [field: string]: unknown;
}

/** The answer to an accepted submission. */
export interface Ack {
  type: "ack";
  id: string;
  board: string;
  score: number;
  rank: number | null;
  previous_rank: number | null;
  duplicate: boolean;
  [field: string]: unknown;
}

/** A run started on a verified board (`startRun`): the game is played from `seed`. */
export interface Run {
  /** The run id `submitProof` names. */
  run: string;
  /** The seed the game must be played from (0 ≤ seed < 2^32). */
  seed: number;
  started_ms: number;
  /** When the run ends (ms since the epoch): proofs after that are refused `not_found`. */
  expires_ms: number;
}

/** The answer to `join`: the player is in this occurrence (season) of the board's tournament. */
export interface Joined {
  board: string;
  season: string;
  player: string;
  /** When the player entered (ms since the epoch); the same on every join again. */
  joined_ms: number;
}

/** A tournament event, pushed for a board this client has a view of. */
export interface TournamentEvent {
  type: "tournament";
  board: string;
  season: string;
  event: "started" | "ending_soon" | "ended";
  start_ms?: number;
  /** When it ends (or ended), ms since the epoch: the time left is `end_ms` minus the server's clock. */
  end_ms?: number;
  /** With `ended`: how many are in the final standings. */
  total?: number;
  /** With `ended`: the first 10 of the final standings. */
  standings?: Entry[];
  /** With `ended`: this player's final rank (when among the first 1000). */
  rank?: number;
}

/** A player's place in a league (`GET /v1/leagues/{league}/me`). */
export interface LeagueMe {
  league: string;
  player: string;
  /** 0 = the lowest tier. */
  tier: number;
  /** The tier's board. */
  board: string;
  season: string;
  /** Their bucket, rank and score there this season (absent before their first score). */
  bucket?: number;
  rank?: number;
  score?: number;
  bucket_total?: number;
}

/** This player was moved at the end of a league's season. */
export interface LeagueMove {
  league: string;
  season: string;
  direction: "up" | "down";
  from: string;
  from_tier: number;
  to: string;
  to_tier: number;
  /** Their bucket and rank in it in the ended season. */
  bucket: number;
  rank: number;
}

/** A view's snapshot or push (`top`, `around`, or `rank` for "me"). */
export interface ViewMessage {
  type: "top" | "around" | "rank";
  board: string;
  entries?: Entry[];
  rank?: number | null;
  score?: number | null;
  [field: string]: unknown;
}

/** An error answered by Scorecast: `code` is the protocol's error code. */
export class ScorecastError extends Error {
  constructor(code: string, message?: string, extra?: Record<string, unknown>);
  code: string;
  /** For `rate_limited`: how long to wait before retrying. */
  retryAfterMs?: number;
  /** For an HTTP refusal (`Scorecast.guest`): its status. */
  status?: number;
  /** For a refused submission: its id. */
  id?: string;
}

export interface ConnectOptions {
  /** Default: ws(s)://<host that served scorecast.js>/ws. */
  url?: string;
  /** A player token; without one the connection is a spectator until `hello`. */
  token?: string;
  onState?: (state: ConnState) => void;
  onError?: (err: ScorecastError) => void;
  onNotify?: (msg: Record<string, unknown>) => void;
  /** Resolve at the first `welcome` (default) or at once. */
  wait?: boolean;
}

export type Unsubscribe = () => void;

export class Scorecast {
  /** Loads the protocol module (wasm) once. */
  static ready(): Promise<unknown>;
  static connect(opts?: ConnectOptions): Promise<Scorecast>;
  /** Dev servers only: a guest token for `guest-<name>` (`POST /v1/guest` on `baseUrl`). */
  static guest(name: string, opts?: { baseUrl?: string | URL }): Promise<{ player: string; token: string }>;

  readonly url: string;
  readonly state: ConnState;
  readonly player: string | null;
  /** Submissions, proofs and run starts sent or queued and not yet answered. */
  readonly pendingCount: number;

  /** Authenticates; resolves with the player id. */
  hello(token: string): Promise<string>;
  /** Adds `points`; retried with the same id across reconnects, counted once. */
  submit(board: string, points: number): Promise<Ack>;
  /** Starts a run on a verified board (one with a validator). */
  startRun(board: string): Promise<Run>;
  /** Joins the board's tournament; joining again resolves the same. */
  join(board: string): Promise<Joined>;
  /** This player's tier, bucket and rank in a league (over HTTP, with the client's token). */
  league(league: string): Promise<LeagueMe>;
  /**
   * Submits the run's proof so far (for `2048`, its move log), sent as base64; the server
   * replays it and records the validator's score. Answered as `submit` is; a proof re-sent
   * (same run, same length) is a `duplicate`.
   */
  submitProof(board: string, run: string, proofBytes: Uint8Array): Promise<Ack>;
  subscribe(board: string, view: View, opts: { limit?: number; radius?: number }, callback: (msg: ViewMessage) => void): Unsubscribe;
  subscribe(board: string, view: View, callback: (msg: ViewMessage) => void): Unsubscribe;
  on(event: "state", fn: (state: ConnState) => void): Unsubscribe;
  on(event: "tournament", fn: (msg: TournamentEvent) => void): Unsubscribe;
  on(event: "league", fn: (move: LeagueMove) => void): Unsubscribe;
  on(event: "error" | "notify" | "welcome" | "message", fn: (msg: any) => void): Unsubscribe;
  /** Stops for good; pending submissions reject with `closed`. */
  close(): void;
}

/** Delay before reconnect attempt `n` (0-based): full jitter over an exponential ceiling. */
export function backoffMs(n: number, base?: number, cap?: number, rng?: () => number): number;
/** A fresh submission id. */
export function newSubmissionId(): string;

export default Scorecast;
