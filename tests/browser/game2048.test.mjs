// The JavaScript 2048 model (shared/game2048/tests/data/game2048.js: the reference the Rust rules
// are compared with in shared/game2048/tests/js_differential.rs) on its own, in node: slides and
// merges, the score, and the seeded spawns.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";

import { REPO } from "./harness.mjs";

// Load its source as an ES module from a data: URL (it imports nothing), independent of how
// node would classify files outside a package.
const source = readFileSync(path.join(REPO, "shared", "game2048", "tests", "data", "game2048.js"), "utf8");
const { slideLine, move, spawn, canMove, seededRng, Game, DIRECTIONS } = await import(
  `data:text/javascript;base64,${Buffer.from(source).toString("base64")}`
);

test("slideLine merges each pair once, toward index 0", () => {
  assert.deepEqual(slideLine([2, 2, 4, 0]), { line: [4, 4, 0, 0], gained: 4 });
  assert.deepEqual(slideLine([2, 2, 2, 2]), { line: [4, 4, 0, 0], gained: 8 });
  assert.deepEqual(slideLine([4, 4, 8, 0]), { line: [8, 8, 0, 0], gained: 8 }, "a merged tile does not merge again");
  assert.deepEqual(slideLine([0, 2, 0, 2]), { line: [4, 0, 0, 0], gained: 4 });
  assert.deepEqual(slideLine([2, 4, 2, 4]), { line: [2, 4, 2, 4], gained: 0 });
  assert.deepEqual(slideLine([0, 0, 0, 0]), { line: [0, 0, 0, 0], gained: 0 });
  assert.deepEqual(slideLine([8, 0, 8, 8]), { line: [16, 8, 0, 0], gained: 16 });
});

test("move slides every line toward the direction and reports moved/gained", () => {
  // prettier-ignore
  const cells = [
    2, 2, 0, 0,
    0, 4, 0, 4,
    2, 0, 0, 0,
    0, 0, 0, 2,
  ];
  assert.deepEqual(move(cells, "left"), {
    cells: [4, 0, 0, 0, 8, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0],
    moved: true,
    gained: 12,
  });
  assert.deepEqual(move(cells, "right"), {
    cells: [0, 0, 0, 4, 0, 0, 0, 8, 0, 0, 0, 2, 0, 0, 0, 2],
    moved: true,
    gained: 12,
  });
  assert.deepEqual(move(cells, "up"), {
    cells: [4, 2, 0, 4, 0, 4, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0],
    moved: true,
    gained: 4,
  });
  assert.deepEqual(move(cells, "down"), {
    cells: [0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 4, 4, 4, 0, 2],
    moved: true,
    gained: 4,
  });
  assert.equal(cells[0], 2, "the input is not modified");
  const stuck = [2, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
  assert.deepEqual(move(stuck, "left"), { cells: stuck, moved: false, gained: 0 });
  assert.throws(() => move(cells, "sideways"));
});

test("spawn fills an empty cell with 2 or 4, and canMove sees a full stuck board", () => {
  const full = [2, 4, 2, 4, 4, 2, 4, 2, 2, 4, 2, 4, 4, 2, 4, 2];
  assert.equal(spawn(full, () => 0), full);
  assert.equal(canMove(full), false);
  const one = new Array(16).fill(2);
  one[5] = 0;
  assert.deepEqual(spawn(one, () => 0)[5], 2);
  assert.deepEqual(spawn(one, (() => { const v = [0, 0.95]; return () => v.shift(); })())[5], 4);
  assert.equal(canMove(one), true);
});

test("seeded games are repeatable and the score is the sum of merged points", () => {
  const a = seededRng(42);
  const b = seededRng(42);
  const xs = Array.from({ length: 5 }, a);
  assert.deepEqual(xs, Array.from({ length: 5 }, b));
  assert.ok(xs.every((x) => x >= 0 && x < 1));
  assert.notDeepEqual(xs, Array.from({ length: 5 }, seededRng(43)));

  const play = (seed) => {
    const g = new Game({ rng: seededRng(seed) });
    const events = [];
    g.onChange((e) => events.push(e));
    const start = g.cells.slice();
    assert.equal(start.filter((v) => v !== 0).length, 2, "a new game has two tiles");
    let gainedSum = 0;
    for (let i = 0; i < 300 && !g.over; i++) gainedSum += g.move(DIRECTIONS[i % 4]).gained;
    return { g, start, events, gainedSum };
  };
  const one = play(7);
  const two = play(7);
  assert.deepEqual(one.start, two.start);
  assert.deepEqual(one.g.cells, two.g.cells);
  assert.equal(one.g.score, two.g.score);
  assert.ok(one.g.score > 0);
  assert.equal(one.g.score, one.gainedSum);
  const moveEvents = one.events.filter((e) => e.type === "move");
  assert.equal(moveEvents.length, one.g.moves);
  assert.equal(moveEvents.reduce((s, e) => s + e.gained, 0), one.g.score);
  const differs = (s) => JSON.stringify(play(s).start) !== JSON.stringify(one.start);
  assert.ok([8, 9, 10].some(differs), "other seeds give other games");

  one.g.reset();
  assert.equal(one.g.score, 0);
  assert.equal(one.g.moves, 0);
});
