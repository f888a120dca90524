//! The built-in `2048` validator: replays a 2048 move log from the run's seed and returns the
//! score it reaches, behind the validator ABI of `docs/validators.md`:
//!
//! - `memory`: the module's memory;
//! - `alloc(len: i32) -> i32`: the offset of `len` writable bytes (memory grows to hold them);
//! - `validate(seed: i64, proof_ptr: i32, proof_len: i32, elapsed_ms: i64) -> i64`: the score,
//!   or one of the negative refusal codes below.
//!
//! The proof is the move log, one byte per move that changed the board (`u`, `d`, `l`, `r`); the
//! seed's low 32 bits seed the tile generator. No imports: on wasm32 the crate is `no_std` and
//! allocates nothing.

#![cfg_attr(target_arch = "wasm32", no_std)]

use scorecast_game2048::{replay, Refusal};

/// Refusal: a proof byte that is not `u`, `d`, `l` or `r`.
pub const UNKNOWN_MOVE: i64 = -1;
/// Refusal: a move that changes nothing, or one after the game ended.
pub const IDLE_MOVE: i64 = -2;
/// Refusal: more moves than the elapsed time allows (see [`max_moves`]).
pub const TOO_FAST: i64 = -3;
/// Refusal: a negative elapsed time or proof length.
pub const BAD_INPUT: i64 = -4;

/// The most moves a run may hold after `elapsed_ms`: 25 moves a second, plus 10 for a burst of
/// key presses. A person holding a key reaches about 10 a second; a script replaying a solver's
/// moves at once is refused.
pub fn max_moves(elapsed_ms: u64) -> u64 {
    10 + elapsed_ms / 40
}

/// The score the proof reaches from `seed`, or a refusal code.
pub fn validate_proof(seed: i64, proof: &[u8], elapsed_ms: i64) -> i64 {
    let Ok(elapsed_ms) = u64::try_from(elapsed_ms) else {
        return BAD_INPUT;
    };
    if proof.len() as u64 > max_moves(elapsed_ms) {
        return TOO_FAST;
    }
    // The low 32 bits, as the page's generator takes its seed (`seed >>> 0`).
    match replay::<4>(seed as u32, proof) {
        Ok(game) => game.score as i64,
        Err(Refusal::UnknownMove(_)) => UNKNOWN_MOVE,
        Err(Refusal::IdleMove(_)) => IDLE_MOVE,
    }
}

#[cfg(target_arch = "wasm32")]
mod abi {
    use core::arch::wasm32::{memory_grow, memory_size};

    const PAGE: usize = 65_536;

    /// Grows memory by enough pages for `len` bytes and returns where they start; 0 when `len`
    /// is negative or memory cannot grow (the host's memory limit).
    #[no_mangle]
    pub extern "C" fn alloc(len: i32) -> i32 {
        let Ok(len) = usize::try_from(len) else {
            return 0;
        };
        let pages = len.div_ceil(PAGE);
        let start = memory_size(0);
        if pages > 0 && memory_grow(0, pages) == usize::MAX {
            return 0;
        }
        (start * PAGE) as i32
    }

    #[no_mangle]
    pub extern "C" fn validate(seed: i64, proof_ptr: i32, proof_len: i32, elapsed_ms: i64) -> i64 {
        let (Ok(ptr), Ok(len)) = (usize::try_from(proof_ptr), usize::try_from(proof_len)) else {
            return super::BAD_INPUT;
        };
        let end = ptr.checked_add(len);
        if end.is_none_or(|end| end > memory_size(0) * PAGE) {
            return super::BAD_INPUT;
        }
        // SAFETY: `ptr..ptr + len` lies inside the module's memory (checked above); the host
        // wrote the proof there and nothing else aliases it during this call.
        let proof = unsafe { core::slice::from_raw_parts(ptr as *const u8, len) };
        super::validate_proof(seed, proof, elapsed_ms)
    }

    #[panic_handler]
    fn panic(_: &core::panic::PanicInfo) -> ! {
        core::arch::wasm32::unreachable()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scorecast_game2048::{Dir, Game};

    /// A run of `count` moves on `seed`, trying directions in a fixed order until one moves.
    fn play(seed: u32, count: usize) -> (Vec<u8>, u64) {
        let mut g = Game::<4>::new(seed);
        let mut proof = Vec::new();
        let mut i = 0usize;
        while proof.len() < count && !g.over {
            let d = Dir::ALL[i % 4];
            i += 1;
            if g.play(d).moved {
                proof.push(d.as_byte());
            }
        }
        (proof, g.score)
    }

    /// A 1 000-move run (seed 2, played by a search program against the page's JavaScript
    /// rules, which reported 20 900 points and a 2048 tile) scores 20 900.
    #[test]
    fn scores_a_known_thousand_move_run() {
        let proof = include_bytes!("../../tests/data/seed2-1000-moves.txt");
        assert_eq!(proof.len(), 1000);
        assert_eq!(validate_proof(2, proof, 600_000), 20_900);
    }

    /// A real run scores what the game scored; each refusal has its code.
    #[test]
    fn scores_runs_and_refuses_forgeries() {
        let (proof, score) = play(99, 200);
        assert!(score > 0);
        assert_eq!(validate_proof(99, &proof, 60_000), score as i64);
        // Only the low 32 bits of the seed count.
        assert_eq!(validate_proof(99 + (1 << 32), &proof, 60_000), score as i64);
        assert_eq!(validate_proof(99, b"ux", 60_000), UNKNOWN_MOVE);
        assert_eq!(validate_proof(99, &proof, 1_000), TOO_FAST);
        assert_eq!(validate_proof(99, &proof, -1), BAD_INPUT);
        // After the last move, the direction just played changes nothing (its line is packed).
        let mut idle = proof.clone();
        idle.push(*proof.last().unwrap());
        assert_eq!(validate_proof(99, &idle, 60_000), IDLE_MOVE);
    }
}
