//! A 2048 player for the verified-runs bench: real, legal games of a given length from a run's
//! seed, fast enough to generate thousands before a measurement.
//!
//! The game is played by the rules crate ([`scorecast_game2048::Game`]): every move of the proof
//! is a move the crate made, so the proof is exactly what the built-in validator replays. Which
//! move to make is chosen by a search on a 64-bit copy of the board (one 4-bit exponent per
//! cell, whole rows moved by table lookup), which draws its tiles from the same generator as
//! the crate: the spawns are known in advance, so the search looks ahead without guessing. A
//! greedy search keeps the board in a "snake" (large tiles along the bottom rows) and searches
//! deeper when few cells are empty; a game that still ends early is played again from the
//! same seed with a deeper search.

use std::sync::OnceLock;

use scorecast_game2048::{slide_line, Dir, Game, Mulberry32};

/// Row → (row after sliding toward nibble 0, points), and toward nibble 3.
struct Tables {
    left: Vec<(u16, u32)>,
    right: Vec<(u16, u32)>,
}

fn tables() -> &'static Tables {
    static T: OnceLock<Tables> = OnceLock::new();
    T.get_or_init(|| {
        let (mut left, mut right) = (Vec::with_capacity(1 << 16), Vec::with_capacity(1 << 16));
        for row in 0..=u16::MAX {
            let line: [u16; 4] = std::array::from_fn(|i| (row >> (4 * i)) & 15);
            left.push(slide_row(line));
            let (r, g) = slide_row([line[3], line[2], line[1], line[0]]);
            let rev = ((r & 15) << 12) | ((r >> 4 & 15) << 8) | ((r >> 8 & 15) << 4) | (r >> 12);
            right.push((rev, g));
        }
        Tables { left, right }
    })
}

/// One row of exponents slid toward index 0 by the crate's own line rule.
fn slide_row(line: [u16; 4]) -> (u16, u32) {
    let (out, gained) = slide_line(line.map(|e| if e == 0 { 0 } else { 1u32 << e }));
    let row = out.iter().enumerate().fold(0u16, |row, (i, &v)| {
        // A 65 536 tile does not fit a nibble; the search saturates it (never reached in the
        // runs the bench plays, which are checked move by move against the crate).
        let e = if v == 0 {
            0
        } else {
            v.trailing_zeros().min(15) as u16
        };
        row | (e << (4 * i))
    });
    (row, gained)
}

/// Cell `(r, c)` is nibble `4r + c`; transposing swaps rows and columns.
fn transpose(x: u64) -> u64 {
    let a1 = x & 0xF0F0_0F0F_F0F0_0F0F;
    let a2 = x & 0x0000_F0F0_0000_F0F0;
    let a3 = x & 0x0F0F_0000_0F0F_0000;
    let a = a1 | (a2 << 12) | (a3 >> 12);
    let b1 = a & 0xFF00_FF00_00FF_00FF;
    let b2 = a & 0x00FF_00FF_0000_0000;
    let b3 = a & 0x0000_0000_FF00_FF00;
    b1 | (b2 >> 24) | (b3 << 24)
}

fn rows(b: u64, table: &[(u16, u32)]) -> u64 {
    (0..4).fold(0u64, |out, r| {
        out | (u64::from(table[((b >> (16 * r)) & 0xFFFF) as usize].0) << (16 * r))
    })
}

fn slide(b: u64, d: Dir) -> u64 {
    let t = tables();
    match d {
        Dir::Left => rows(b, &t.left),
        Dir::Right => rows(b, &t.right),
        Dir::Up => transpose(rows(transpose(b), &t.left)),
        Dir::Down => transpose(rows(transpose(b), &t.right)),
    }
}

fn empty_cells(b: u64) -> u32 {
    (0..16).filter(|i| (b >> (4 * i)) & 15 == 0).count() as u32
}

/// The crate's spawn on the bitboard: the same two draws, the same pick among empty cells in
/// row-major order.
fn spawn(b: &mut u64, rng: &mut Mulberry32) {
    let empty = empty_cells(*b);
    if empty == 0 {
        return;
    }
    let pick = ((u64::from(rng.next_u32()) * u64::from(empty)) >> 32) as u32;
    let tile = if rng.next_f64() < 0.9 { 1u64 } else { 2 };
    let mut k = 0;
    for i in 0..16 {
        if (*b >> (4 * i)) & 15 == 0 {
            if k == pick {
                *b |= tile << (4 * i);
                return;
            }
            k += 1;
        }
    }
}

/// The bitboard of a crate board.
fn bits(game: &Game<4>) -> u64 {
    let mut b = 0u64;
    for (i, &v) in game.board.cells.iter().flatten().enumerate() {
        if v != 0 {
            b |= u64::from(v.trailing_zeros().min(15)) << (4 * i);
        }
    }
    b
}

/// Weights of the snake: 4^k along a path that ends in the bottom-left corner.
const SNAKE: [f64; 16] = {
    let order = [1, 2, 3, 4, 8, 7, 6, 5, 9, 10, 11, 12, 16, 15, 14, 13];
    let mut w = [0.0; 16];
    let mut i = 0;
    while i < 16 {
        let mut x = 1.0 / 4_294_967_296.0;
        let mut k = 0;
        while k < order[i] {
            x *= 4.0;
            k += 1;
        }
        w[i] = x;
        i += 1;
    }
    w
};

fn eval(b: u64) -> f64 {
    let mut snake = 0.0;
    let mut empty = 0.0;
    for (i, w) in SNAKE.iter().enumerate() {
        match (b >> (4 * i)) & 15 {
            0 => empty += 1.0,
            e => snake += w * (1u64 << e) as f64,
        }
    }
    snake * 1e3 + empty
}

/// The move from `b` with the best value reachable in `depth` moves (the spawns known from
/// `rng`), and that value; `None` when no move changes the board.
fn best_move(b: u64, rng: &Mulberry32, depth: u32) -> Option<(f64, Dir)> {
    let mut best: Option<(f64, Dir)> = None;
    for d in Dir::ALL {
        let mut next = slide(b, d);
        if next == b {
            continue;
        }
        let mut r = rng.clone();
        spawn(&mut next, &mut r);
        let v = if depth <= 1 {
            eval(next)
        } else {
            best_move(next, &r, depth - 1).map_or(f64::MIN, |(v, _)| v)
        };
        if best.is_none_or(|(bv, _)| v > bv) {
            best = Some((v, d));
        }
    }
    best
}

/// One game of `moves` moves from `seed` with search depth `base` (deeper when the board
/// fills), or `None` if it ended first.
fn play_with(seed: u32, moves: usize, base: u32) -> Option<(Vec<u8>, u64)> {
    let mut game = Game::<4>::new(seed);
    // The search's copy of the crate's generator: it advances exactly as the crate's does.
    let mut rng = Mulberry32::new(seed);
    let mut b = 0u64;
    spawn(&mut b, &mut rng);
    spawn(&mut b, &mut rng);
    let mut proof = Vec::with_capacity(moves);
    while proof.len() < moves {
        if game.over {
            return None;
        }
        debug_assert_eq!(b, bits(&game));
        let depth = match empty_cells(b) {
            6.. => base,
            3..=5 => base + 1,
            _ => base + 2,
        };
        let (_, d) = best_move(b, &rng, depth)?;
        // The crate makes the move; the search's board follows it.
        if !game.play(d).moved {
            return None;
        }
        b = slide(b, d);
        spawn(&mut b, &mut rng);
        if b != bits(&game) {
            // Only a tile past 32 768 could part them: fall back to the crate's board.
            b = bits(&game);
        }
        proof.push(d.as_byte());
    }
    Some((proof, game.score))
}

/// A real game of exactly `moves` moves from `seed` — every move changes the board, none comes
/// after the end — and its score; `None` if even the deepest search lost before `moves`.
pub fn play(seed: u32, moves: usize) -> Option<(Vec<u8>, u64)> {
    (1..=3).find_map(|base| play_with(seed, moves, base))
}

#[cfg(test)]
mod tests {
    use super::*;
    use scorecast_game2048::replay;

    /// The bitboard slides every direction as the crate does, on the boards of real games.
    #[test]
    fn bitboard_moves_match_the_crate() {
        for seed in 0..40u32 {
            let mut g = Game::<4>::new(seed);
            let mut i = 0usize;
            while !g.over && i < 300 {
                let b = bits(&g);
                for d in Dir::ALL {
                    let (next, _) = g.board.slide(d);
                    let mut want = 0u64;
                    for (k, &v) in next.cells.iter().flatten().enumerate() {
                        if v != 0 {
                            want |= u64::from(v.trailing_zeros()) << (4 * k);
                        }
                    }
                    assert_eq!(slide(b, d), want, "seed {seed} move {i} {d:?}");
                }
                g.play(Dir::ALL[(i * 7 + seed as usize) % 4]);
                i += 1;
            }
        }
    }

    /// Games of 1 000 moves from many seeds: each replays in the rules crate (what the built-in
    /// validator runs) to exactly its length and score, with no idle move.
    #[test]
    fn plays_thousand_move_games_the_crate_accepts() {
        let mut played = 0;
        for i in 0..12u32 {
            let seed = i.wrapping_mul(2_654_435_761);
            let (proof, score) = play(seed, 1000).expect("a 1 000-move game");
            assert_eq!(proof.len(), 1000);
            let g = replay::<4>(seed, &proof).expect("the crate replays every move");
            assert_eq!((g.moves, g.score), (1000, score), "seed {seed}");
            played += 1;
        }
        assert_eq!(played, 12);
    }
}
