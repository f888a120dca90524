//! The score codec (`docs/protocol.md`, "Points and scores"): how a board's points, and for `tie_break: earliest` the time they
//! were reached, are packed into the one double a Redis sorted set holds.
//!
//! With `earliest`, the stored score is `points × 2^T + f(t)` where `t` is the time since the
//! season's start in `resolution_ms` units and `f(t) = 2^T − 1 − t` for `desc` boards (earlier is
//! larger, ranks higher) and `t` for `asc` boards (earlier is smaller, ranks higher). Every value
//! stays an integer below 2^53, so the double is exact. `lua/lib.lua` implements the same
//! arithmetic; `tests/e2e/packing.rs` proves the two agree over every configuration.

use crate::board::Order;

/// The largest magnitude of points a board can hold exactly in a double: 2^53 − 1.
pub const MAX_POINTS: i64 = (1 << 53) - 1;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Codec {
    pub order: Order,
    /// `Some(T)` when the board breaks ties by earliest time with `T` time bits.
    pub time_bits: Option<u32>,
}

#[derive(Clone, Copy, Debug, PartialEq, thiserror::Error)]
pub enum CodecError {
    #[error("score {0} is outside the exact range of this board")]
    ScoreOutOfRange(i64),
    #[error("time {0} is beyond the tie-break clock of this board")]
    TimeOutOfRange(i64),
    #[error("stored value {0} is not a score of this board")]
    NotAScore(f64),
}

impl Codec {
    /// No tie-break: the stored score is the points.
    pub fn plain(order: Order) -> Codec {
        Codec {
            order,
            time_bits: None,
        }
    }

    pub fn earliest(order: Order, time_bits: u32) -> Codec {
        Codec {
            order,
            time_bits: Some(time_bits),
        }
    }

    /// The largest points this codec can store (the smallest is `-max_points()` without
    /// tie-break, 0 with it).
    pub fn max_points(&self) -> i64 {
        match self.time_bits {
            None => MAX_POINTS,
            Some(t) => (1i64 << (53 - t)) - 1,
        }
    }

    pub fn min_points(&self) -> i64 {
        match self.time_bits {
            None => -MAX_POINTS,
            Some(_) => 0,
        }
    }

    /// Packs `points` reached at tick `t` (ignored without tie-break).
    pub fn encode(&self, points: i64, t: i64) -> Result<f64, CodecError> {
        if points < self.min_points() || points > self.max_points() {
            return Err(CodecError::ScoreOutOfRange(points));
        }
        let Some(bits) = self.time_bits else {
            return Ok(points as f64);
        };
        let span = 1i64 << bits;
        if !(0..span).contains(&t) {
            return Err(CodecError::TimeOutOfRange(t));
        }
        let f = match self.order {
            Order::Desc => span - 1 - t,
            Order::Asc => t,
        };
        // Exact: points * 2^T + f < 2^53 by the range checks above.
        Ok((points * span + f) as f64)
    }

    /// Unpacks a stored score into `(points, t)`; `t` is 0 without tie-break.
    pub fn decode(&self, score: f64) -> Result<(i64, i64), CodecError> {
        if !score.is_finite() || score.fract() != 0.0 || score.abs() > MAX_POINTS as f64 {
            return Err(CodecError::NotAScore(score));
        }
        let v = score as i64;
        let Some(bits) = self.time_bits else {
            return Ok((v, 0));
        };
        if v < 0 {
            return Err(CodecError::NotAScore(score));
        }
        let span = 1i64 << bits;
        let (points, f) = (v >> bits, v & (span - 1));
        let t = match self.order {
            Order::Desc => span - 1 - f,
            Order::Asc => f,
        };
        Ok((points, t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_is_identity() {
        let c = Codec::plain(Order::Desc);
        assert_eq!(c.encode(155, 0).unwrap(), 155.0);
        assert_eq!(c.decode(155.0).unwrap(), (155, 0));
        assert_eq!(c.encode(MAX_POINTS, 0).unwrap(), 9007199254740991.0);
        assert!(c.encode(MAX_POINTS + 1, 0).is_err());
        assert!(c.encode(-MAX_POINTS - 1, 0).is_err());
    }

    #[test]
    fn earliest_desc_ranks_earlier_higher() {
        let c = Codec::earliest(Order::Desc, 26);
        let early = c.encode(100, 5).unwrap();
        let late = c.encode(100, 6).unwrap();
        let more = c.encode(101, 1_000_000).unwrap();
        assert!(early > late && more > early);
    }

    #[test]
    fn earliest_asc_ranks_earlier_lower() {
        let c = Codec::earliest(Order::Asc, 26);
        let early = c.encode(100, 5).unwrap();
        let late = c.encode(100, 6).unwrap();
        let fewer = c.encode(99, 1_000_000).unwrap();
        assert!(early < late && fewer < early);
    }

    #[test]
    fn earliest_range_is_exact() {
        let c = Codec::earliest(Order::Desc, 26);
        assert_eq!(c.max_points(), (1 << 27) - 1);
        let top = c.encode(c.max_points(), 0).unwrap();
        assert_eq!(top, ((1u64 << 53) - 1) as f64);
        assert_eq!(
            c.encode(c.max_points() + 1, 0),
            Err(CodecError::ScoreOutOfRange(1 << 27))
        );
        assert_eq!(c.encode(-1, 0), Err(CodecError::ScoreOutOfRange(-1)));
        assert_eq!(
            c.encode(1, 1 << 26),
            Err(CodecError::TimeOutOfRange(1 << 26))
        );
    }

    // proptest does not build for wasm32 (see Cargo.toml); these run natively.
    #[cfg(not(target_arch = "wasm32"))]
    mod props {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #[test]
            fn round_trips(bits in 1u32..=52, asc in any::<bool>(), p in any::<i64>(), t in any::<i64>()) {
                let order = if asc { Order::Asc } else { Order::Desc };
                let c = Codec::earliest(order, bits);
                let p = p.rem_euclid(c.max_points() + 1);
                let t = t.rem_euclid(1 << bits);
                let s = c.encode(p, t).unwrap();
                prop_assert_eq!(c.decode(s).unwrap(), (p, t));
            }

            #[test]
            fn order_is_points_then_time(bits in 1u32..=30, a in 0i64..1000, b in 0i64..1000, ta in 0i64..2, tb in 0i64..2) {
                let c = Codec::earliest(Order::Desc, bits);
                let (sa, sb) = (c.encode(a, ta).unwrap(), c.encode(b, tb).unwrap());
                if a != b { prop_assert_eq!(sa > sb, a > b); }
                else if ta != tb { prop_assert_eq!(sa > sb, ta < tb); }
            }
        }
    }
}
