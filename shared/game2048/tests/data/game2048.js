// 2048 in JavaScript, as `/play` first played it; the page now plays the Rust rules
// (shared/game2048/web). Kept as an independent implementation the Rust rules are compared with
// (tests/js_differential.rs, tests/browser/game2048.test.mjs).
//
// A pure model: no DOM, no timers, randomness injected. The board is a flat array of
// size×size cells, 0 for empty, row by row. A move slides every line toward `dir`, merging equal
// neighbours once per move; the merged tiles' values are the points gained.

export const DIRECTIONS = ["up", "down", "left", "right"];

/** Slides one line toward index 0: `[2,2,4,0]` → `{line: [4,4,0,0], gained: 4}`. */
export function slideLine(line) {
  const tiles = line.filter((v) => v !== 0);
  const out = [];
  let gained = 0;
  for (let i = 0; i < tiles.length; i++) {
    if (i + 1 < tiles.length && tiles[i] === tiles[i + 1]) {
      out.push(tiles[i] * 2);
      gained += tiles[i] * 2;
      i++;
    } else {
      out.push(tiles[i]);
    }
  }
  while (out.length < line.length) out.push(0);
  return { line: out, gained };
}

/** Cell indices of every line, each ordered from the edge the tiles move toward. */
function lines(size, dir) {
  const result = [];
  for (let a = 0; a < size; a++) {
    const line = [];
    for (let b = 0; b < size; b++) {
      const [row, col] = {
        left: [a, b],
        right: [a, size - 1 - b],
        up: [b, a],
        down: [size - 1 - b, a],
      }[dir];
      line.push(row * size + col);
    }
    result.push(line);
  }
  return result;
}

/** Applies a move to `cells` (not modified): `{cells, moved, gained}`. */
export function move(cells, dir, size = 4) {
  if (!DIRECTIONS.includes(dir)) throw new Error(`unknown direction ${dir}`);
  const next = cells.slice();
  let gained = 0;
  for (const idx of lines(size, dir)) {
    const slid = slideLine(idx.map((i) => cells[i]));
    gained += slid.gained;
    idx.forEach((i, k) => (next[i] = slid.line[k]));
  }
  const moved = next.some((v, i) => v !== cells[i]);
  return { cells: next, moved, gained };
}

/** Puts a 2 (90 %) or a 4 (10 %) on a random empty cell; returns the new cells (or the same if full). */
export function spawn(cells, rng = Math.random) {
  const empty = [];
  cells.forEach((v, i) => v === 0 && empty.push(i));
  if (empty.length === 0) return cells;
  const next = cells.slice();
  next[empty[Math.floor(rng() * empty.length)]] = rng() < 0.9 ? 2 : 4;
  return next;
}

export function canMove(cells, size = 4) {
  return DIRECTIONS.some((d) => move(cells, d, size).moved);
}

/** A deterministic rng for tests and `?seed=`: mulberry32. */
export function seededRng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** One game: cells, score, and listeners told about every move and reset. */
export class Game {
  constructor({ size = 4, rng = Math.random, cells } = {}) {
    this.size = size;
    this.rng = rng;
    this._listeners = new Set();
    this.reset(cells);
  }

  /** Starts over with two tiles (or the given cells, for tests). */
  reset(cells) {
    if (cells) {
      if (cells.length !== this.size * this.size) throw new Error("cells must have size×size entries");
      this.cells = cells.slice();
    } else {
      this.cells = spawn(spawn(new Array(this.size * this.size).fill(0), this.rng), this.rng);
    }
    this.score = 0;
    this.moves = 0;
    this.over = !canMove(this.cells, this.size);
    this._notify({ type: "reset", moved: false, gained: 0 });
  }

  /** Moves toward `dir`; spawns a tile if anything moved. Returns `{moved, gained}`. */
  move(dir) {
    if (this.over) return { moved: false, gained: 0 };
    const r = move(this.cells, dir, this.size);
    if (!r.moved) return { moved: false, gained: 0 };
    this.cells = spawn(r.cells, this.rng);
    this.score += r.gained;
    this.moves += 1;
    this.over = !canMove(this.cells, this.size);
    const result = { moved: true, gained: r.gained };
    this._notify({ type: "move", dir, ...result });
    return result;
  }

  get maxTile() {
    return Math.max(...this.cells);
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
