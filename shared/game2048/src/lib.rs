//! The rules of 2048 as played on `/play`: moves, merges, scoring and tile spawns from a seeded
//! generator. The same seed and the same moves give the same board and score here, in the
//! browser and in the server's validator, so a move log is a proof of the score it reaches.
//!
//! The board is `N`×`N` cells (4×4 on `/play`), 0 for empty, row by row. A move slides every line
//! toward the direction, merging equal neighbours once per move; the merged tiles' values are the
//! points gained. After a move that changed the board, a 2 (90 %) or a 4 (10 %) appears on a
//! random empty cell. The generator is mulberry32, draw for draw the one the page's JavaScript
//! rules used (`tests/data/game2048.js`), so a seed means the same game everywhere.
//!
//! No allocation and no dependencies: the crate builds for `wasm32-unknown-unknown` without std.

#![cfg_attr(not(test), no_std)]

/// One of the four moves. In a proof each move is one byte: `u`, `d`, `l` or `r`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    Up,
    Down,
    Left,
    Right,
}

impl Dir {
    pub const ALL: [Dir; 4] = [Dir::Up, Dir::Down, Dir::Left, Dir::Right];

    /// The move a proof byte stands for (`u`, `d`, `l`, `r`), `None` for any other byte.
    pub fn from_byte(b: u8) -> Option<Dir> {
        match b {
            b'u' => Some(Dir::Up),
            b'd' => Some(Dir::Down),
            b'l' => Some(Dir::Left),
            b'r' => Some(Dir::Right),
            _ => None,
        }
    }

    /// The proof byte of this move.
    pub fn as_byte(self) -> u8 {
        match self {
            Dir::Up => b'u',
            Dir::Down => b'd',
            Dir::Left => b'l',
            Dir::Right => b'r',
        }
    }

    /// The name the page uses: `up`, `down`, `left`, `right`.
    pub fn name(self) -> &'static str {
        match self {
            Dir::Up => "up",
            Dir::Down => "down",
            Dir::Left => "left",
            Dir::Right => "right",
        }
    }

    /// The move named `up`, `down`, `left` or `right`.
    pub fn from_name(name: &str) -> Option<Dir> {
        Dir::ALL.into_iter().find(|d| d.name() == name)
    }
}

/// mulberry32: a 32-bit state, one `u32` per draw. Seeds are `u32` (the page's `?seed=n` is
/// taken modulo 2³², as JavaScript's `seed >>> 0` does).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mulberry32 {
    state: u32,
}

impl Mulberry32 {
    pub fn new(seed: u32) -> Self {
        Mulberry32 { state: seed }
    }

    /// The next draw as an integer in `0..2³²`.
    pub fn next_u32(&mut self) -> u32 {
        self.state = self.state.wrapping_add(0x6d2b_79f5);
        let mut t = self.state;
        t = (t ^ (t >> 15)).wrapping_mul(t | 1);
        t ^= t.wrapping_add((t ^ (t >> 7)).wrapping_mul(t | 61));
        t ^ (t >> 14)
    }

    /// The next draw as a float in `[0, 1)`: the integer divided by 2³², exactly as the page's
    /// generator returns it.
    pub fn next_f64(&mut self) -> f64 {
        f64::from(self.next_u32()) / 4_294_967_296.0
    }
}

/// What a move did: whether any tile moved, and the points its merges made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Moved {
    pub moved: bool,
    pub gained: u32,
}

/// Slides one line toward index 0, merging equal neighbours once: `[2,2,4,0]` → `[4,4,0,0]`,
/// 4 points.
pub fn slide_line<const N: usize>(line: [u32; N]) -> ([u32; N], u32) {
    let mut out = [0u32; N];
    let mut len = 0;
    let mut gained = 0u32;
    // The tile waiting for a partner: a merge happens only between two tiles that have not merged.
    let mut pending: Option<u32> = None;
    for v in line.into_iter().filter(|&v| v != 0) {
        match pending {
            Some(p) if p == v => {
                out[len] = p * 2;
                gained += p * 2;
                len += 1;
                pending = None;
            }
            Some(p) => {
                out[len] = p;
                len += 1;
                pending = Some(v);
            }
            None => pending = Some(v),
        }
    }
    if let Some(p) = pending {
        out[len] = p;
    }
    (out, gained)
}

/// The cell `(row, col)` holding position `b` of line `a` when moving toward `dir`: each line is
/// ordered from the edge the tiles move toward.
fn cell_of<const N: usize>(dir: Dir, a: usize, b: usize) -> (usize, usize) {
    match dir {
        Dir::Left => (a, b),
        Dir::Right => (a, N - 1 - b),
        Dir::Up => (b, a),
        Dir::Down => (N - 1 - b, a),
    }
}

/// An `N`×`N` board, row by row, 0 for empty.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Board<const N: usize = 4> {
    pub cells: [[u32; N]; N],
}

impl<const N: usize> Default for Board<N> {
    fn default() -> Self {
        Board { cells: [[0; N]; N] }
    }
}

impl<const N: usize> Board<N> {
    /// The board after moving toward `dir`, and what the move did.
    pub fn slide(&self, dir: Dir) -> (Board<N>, Moved) {
        let mut next = *self;
        let mut gained = 0;
        for a in 0..N {
            let line: [u32; N] = core::array::from_fn(|b| {
                let (r, c) = cell_of::<N>(dir, a, b);
                self.cells[r][c]
            });
            let (slid, g) = slide_line(line);
            gained += g;
            for (b, v) in slid.into_iter().enumerate() {
                let (r, c) = cell_of::<N>(dir, a, b);
                next.cells[r][c] = v;
            }
        }
        let moved = next != *self;
        (next, Moved { moved, gained })
    }

    /// Puts a 2 (90 %) or a 4 (10 %) on a random empty cell, drawing twice from `rng`; draws
    /// nothing when the board is full.
    pub fn spawn(&mut self, rng: &mut Mulberry32) {
        let empty = self.cells.iter().flatten().filter(|&&v| v == 0).count();
        if empty == 0 {
            return;
        }
        // floor(draw × empty) in exact integer arithmetic (the float product is exact too:
        // 32 bits times at most 64 fits a double's 53-bit mantissa).
        let pick = ((u64::from(rng.next_u32()) * empty as u64) >> 32) as usize;
        let value = if rng.next_f64() < 0.9 { 2 } else { 4 };
        // unwrap-free: `pick < empty`, so the pick-th empty cell exists.
        if let Some(cell) = self
            .cells
            .iter_mut()
            .flatten()
            .filter(|v| **v == 0)
            .nth(pick)
        {
            *cell = value;
        }
    }

    /// Whether any move would change the board: an empty cell on a board with a tile (some row
    /// or column then holds both, so a tile can slide), or two equal neighbours (they merge).
    /// The same answer as trying the four moves, for a fifth of the work on every move.
    pub fn can_move(&self) -> bool {
        let c = &self.cells;
        let empty = c.iter().flatten().any(|&v| v == 0);
        let tile = c.iter().flatten().any(|&v| v != 0);
        if empty && tile {
            return true;
        }
        (0..N).any(|r| {
            (0..N).any(|k| {
                let v = c[r][k];
                v != 0 && ((k + 1 < N && c[r][k + 1] == v) || (r + 1 < N && c[r + 1][k] == v))
            })
        })
    }

    /// The largest tile.
    pub fn max_tile(&self) -> u32 {
        self.cells.iter().flatten().copied().max().unwrap_or(0)
    }
}

/// One game: the board, the score, the number of moves that changed the board, whether it is
/// over, and the generator that places new tiles.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Game<const N: usize = 4> {
    pub board: Board<N>,
    pub score: u64,
    pub moves: u32,
    pub over: bool,
    rng: Mulberry32,
}

impl<const N: usize> Game<N> {
    /// A new game from `seed`: an empty board with two tiles spawned.
    pub fn new(seed: u32) -> Self {
        let mut rng = Mulberry32::new(seed);
        let mut board = Board::default();
        board.spawn(&mut rng);
        board.spawn(&mut rng);
        Self::with_board(board, rng)
    }

    /// A game on given cells (for tests), new tiles drawn from `rng`.
    pub fn with_board(board: Board<N>, rng: Mulberry32) -> Self {
        let over = !board.can_move();
        Game {
            board,
            score: 0,
            moves: 0,
            over,
            rng,
        }
    }

    /// Moves toward `dir`; spawns a tile if anything moved. A move that changes nothing (or any
    /// move once the game is over) does nothing and draws nothing.
    pub fn play(&mut self, dir: Dir) -> Moved {
        if self.over {
            return Moved::default();
        }
        let (mut next, r) = self.board.slide(dir);
        if !r.moved {
            return Moved::default();
        }
        next.spawn(&mut self.rng);
        self.board = next;
        self.score += u64::from(r.gained);
        self.moves += 1;
        self.over = !self.board.can_move();
        r
    }
}

/// Why a proof was refused by [`replay`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// A byte that is not `u`, `d`, `l` or `r`, at this index.
    UnknownMove(usize),
    /// A move that changes nothing (or comes after the game ended), at this index: the page
    /// records only moves that moved, so such a log was not made by playing.
    IdleMove(usize),
}

/// Replays a proof (one byte per move) from `seed`; the game it reaches, or why it was refused.
pub fn replay<const N: usize>(seed: u32, proof: &[u8]) -> Result<Game<N>, Refusal> {
    let mut game = Game::<N>::new(seed);
    for (i, &b) in proof.iter().enumerate() {
        let dir = Dir::from_byte(b).ok_or(Refusal::UnknownMove(i))?;
        if !game.play(dir).moved {
            return Err(Refusal::IdleMove(i));
        }
    }
    Ok(game)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn board(rows: [[u32; 4]; 4]) -> Board {
        Board { cells: rows }
    }

    /// A line merges each pair once, leftmost first, and scores the merged values.
    #[test]
    fn slide_line_merges_once() {
        assert_eq!(slide_line([2, 2, 4, 0]), ([4, 4, 0, 0], 4));
        assert_eq!(slide_line([2, 2, 2, 2]), ([4, 4, 0, 0], 8));
        assert_eq!(slide_line([4, 0, 4, 8]), ([8, 8, 0, 0], 8));
        assert_eq!(slide_line([2, 2, 2, 0]), ([4, 2, 0, 0], 4));
        assert_eq!(slide_line([0, 0, 0, 2]), ([2, 0, 0, 0], 0));
        assert_eq!(slide_line([2, 4, 8, 16]), ([2, 4, 8, 16], 0));
    }

    /// Each direction slides toward its own edge.
    #[test]
    fn directions_slide_toward_their_edge() {
        let b = board([[2, 0, 0, 2], [0; 4], [0; 4], [0, 0, 0, 4]]);
        let (l, m) = b.slide(Dir::Left);
        assert_eq!(l.cells, [[4, 0, 0, 0], [0; 4], [0; 4], [4, 0, 0, 0]]);
        assert_eq!(
            m,
            Moved {
                moved: true,
                gained: 4
            }
        );
        let (r, _) = b.slide(Dir::Right);
        assert_eq!(r.cells, [[0, 0, 0, 4], [0; 4], [0; 4], [0, 0, 0, 4]]);
        let (u, m) = b.slide(Dir::Up);
        assert_eq!(u.cells, [[2, 0, 0, 2], [0, 0, 0, 4], [0; 4], [0; 4]]);
        assert_eq!(m.gained, 0);
        let (d, _) = b.slide(Dir::Down);
        assert_eq!(d.cells, [[0; 4], [0; 4], [0, 0, 0, 2], [2, 0, 0, 4]]);
    }

    /// mulberry32 gives the draws the page's generator gives (values printed by node from
    /// `seededRng(1)` and `seededRng(42)`).
    #[test]
    fn mulberry32_matches_known_draws() {
        let mut r = Mulberry32::new(1);
        assert_eq!(r.next_f64(), 0.6270739405881613);
        assert_eq!(r.next_f64(), 0.002735721180215478);
        let mut r = Mulberry32::new(42);
        assert_eq!(r.next_f64(), 0.6011037519201636);
    }

    /// `can_move` agrees with trying the four moves, on the boards of real games and edge cases.
    #[test]
    fn can_move_agrees_with_trying_every_move() {
        let by_trying = |b: &Board| Dir::ALL.into_iter().any(|d| b.slide(d).1.moved);
        let mut boards = vec![
            Board::default(),
            board([[2, 4, 2, 4], [4, 2, 4, 2], [2, 4, 2, 4], [4, 2, 4, 2]]),
            board([[2, 4, 2, 4], [4, 2, 4, 2], [2, 4, 2, 4], [4, 2, 4, 4]]),
            board([[2, 4, 2, 4], [4, 2, 4, 2], [2, 4, 2, 4], [4, 2, 4, 0]]),
            board([[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 2]]),
        ];
        for seed in 0..50 {
            let mut g = Game::<4>::new(seed);
            let mut i = 0;
            while !g.over && i < 2000 {
                g.play(Dir::ALL[i % 4]);
                boards.push(g.board);
                i += 1;
            }
        }
        for b in &boards {
            assert_eq!(b.can_move(), by_trying(b), "{b:?}");
        }
    }

    /// A new game has two tiles, and a move that changes nothing draws nothing and scores nothing.
    #[test]
    fn idle_moves_change_nothing() {
        let g = Game::<4>::new(7);
        assert_eq!(
            g.board.cells.iter().flatten().filter(|&&v| v != 0).count(),
            2
        );
        let full = board([[2, 4, 2, 4], [4, 2, 4, 2], [2, 4, 2, 4], [4, 2, 4, 2]]);
        let mut g = Game::with_board(full, Mulberry32::new(1));
        assert!(g.over);
        assert_eq!(g.play(Dir::Left), Moved::default());
        assert_eq!((g.score, g.moves), (0, 0));
    }

    /// A proof with an unknown byte or an idle move is refused at that index.
    #[test]
    fn replay_refuses_bad_proofs() {
        assert_eq!(replay::<4>(1, b"lx").unwrap_err(), Refusal::UnknownMove(1));
        // The first seed whose opening board has an idle move (two tiles against one edge).
        let (seed, dir) = (0..1000u32)
            .find_map(|s| {
                let b = Game::<4>::new(s).board;
                Dir::ALL
                    .into_iter()
                    .find(|&d| !b.slide(d).1.moved)
                    .map(|d| (s, d))
            })
            .expect("some opening among 1000 has an idle move");
        assert_eq!(
            replay::<4>(seed, &[dir.as_byte()]).unwrap_err(),
            Refusal::IdleMove(0)
        );
    }
}
