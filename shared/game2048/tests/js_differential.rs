//! The Rust rules against the JavaScript rules `/play` was first written with
//! (`tests/data/game2048.js`, kept here as a second, independent implementation), run by node:
//! the same seeds and moves must give the same cells, score, move count and end of game.

use scorecast_game2048::{Dir, Game, Mulberry32};
use std::path::Path;
use std::process::Command;

/// The moves played on each seed: a fixed pseudo-random sequence (a generator of its own, so
/// the moves do not follow the tile draws), idle moves included, as a player's key presses are.
fn moves_for(seed: u32, count: usize) -> Vec<Dir> {
    let mut r = Mulberry32::new(seed ^ 0x9e37_79b9);
    (0..count)
        .map(|_| Dir::ALL[(r.next_u32() % 4) as usize])
        .collect()
}

/// Seeds from 0, 1 and 2³²−1 to arbitrary ones, 3 000 key presses each (long enough that most
/// games end, so the end of game is compared too).
#[test]
fn rust_rules_match_the_javascript_rules() {
    let seeds = [0u32, 1, 42, 2048, 123_456_789, u32::MAX];
    let presses = 3000;
    let js = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/game2048.js");
    let js = js.canonicalize().expect("tests/data/game2048.js exists");
    let cases: Vec<String> = seeds
        .iter()
        .map(|&s| {
            let m: String = moves_for(s, presses)
                .iter()
                .map(|d| d.as_byte() as char)
                .collect();
            format!("[{s},\"{m}\"]")
        })
        .collect();
    let script = format!(
        r#"import {{ Game, seededRng }} from {js:?};
const names = {{ u: "up", d: "down", l: "left", r: "right" }};
for (const [seed, moves] of [{cases}]) {{
  const g = new Game({{ rng: seededRng(seed) }});
  for (const c of moves) g.move(names[c]);
  console.log(JSON.stringify([seed, g.cells, g.score, g.moves, g.over]));
}}"#,
        cases = cases.join(",")
    );
    let out = Command::new("node")
        .args(["--input-type=module", "-e", &script])
        .output()
        .expect("node runs (it is needed for the browser tests too)");
    assert!(
        out.status.success(),
        "node failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines.len(),
        seeds.len(),
        "one line per seed from node: {stdout}"
    );
    let mut ended = 0;
    for (&seed, line) in seeds.iter().zip(lines) {
        let mut g = Game::<4>::new(seed);
        for d in moves_for(seed, presses) {
            g.play(d);
        }
        let cells: Vec<String> = g
            .board
            .cells
            .iter()
            .flatten()
            .map(|v| v.to_string())
            .collect();
        let rust = format!(
            "[{seed},[{}],{},{},{}]",
            cells.join(","),
            g.score,
            g.moves,
            g.over
        );
        assert_eq!(
            rust, line,
            "seed {seed}: Rust (left) and JavaScript (right) differ"
        );
        ended += usize::from(g.over);
        assert!(
            g.moves > 50,
            "seed {seed}: the game lasted {} moves, too few to compare",
            g.moves
        );
    }
    assert!(
        ended > 0,
        "no game ended, so the end of game was never compared"
    );
}
