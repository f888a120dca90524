//! The score packing: the Rust codec (`scorecast_shared::Codec`, which the browser client uses
//! through wasm to read raw scores) and the Lua arithmetic of `lua/lib.lua` (which the scripts
//! store) agree on every configuration a board may have — every `time_bits` 1..=52, every
//! `resolution_ms` 1..=86 400 000, both orders, with and without tie-break — at the edges:
//! points at ±max and max+1, times at 0, the last tick and one past it. The Lua side runs on a
//! real redis-server, prepended with base.lua and lib.lua exactly as the server's scripts are.

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use scorecast_shared::{Codec, CodecError, Order};
use scorecast_tests::start_redis;

const BASE: &str = include_str!("../../lua/base.lua");
const LIB: &str = include_str!("../../lua/lib.lua");

/// For a board configuration and a list of (points, t, season start), what lib.lua says: its
/// bounds, then per probe the packed score, its decoding, whether submit.lua's range checks
/// accept it, and when the score was reached. Numbers go out as strings (fmt): Redis would
/// truncate Lua numbers in a reply to integers.
const PROBE: &str = r#"
local cfg = {tie_break = ARGV[1], order = ARGV[2], time_bits = tonumber(ARGV[3]),
  resolution_ms = tonumber(ARGV[4])}
local out = {fmt(max_points(cfg)), fmt(min_points(cfg))}
for i = 5, #ARGV, 3 do
  local points, t, start = tonumber(ARGV[i]), tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  local ok = points <= max_points(cfg) and points >= min_points(cfg)
    and not (earliest(cfg) and (t < 0 or t >= span(cfg)))
  local score = encode(cfg, points, t)
  local p2, t2 = decode(cfg, score)
  out[#out + 1] = ok and '1' or '0'
  out[#out + 1] = fmt(score)
  out[#out + 1] = fmt(p2)
  out[#out + 1] = fmt(t2)
  out[#out + 1] = fmt(reached_ms(cfg, t, start))
end
return out
"#;

#[derive(Clone, Copy, Debug)]
struct Board {
    order: Order,
    /// `None`: no tie-break.
    time_bits: Option<u32>,
    resolution_ms: i64,
}

impl Board {
    fn codec(&self) -> Codec {
        match self.time_bits {
            None => Codec::plain(self.order),
            Some(bits) => Codec::earliest(self.order, bits),
        }
    }

    /// Points and ticks at the edges, plus `extra` from the caller.
    fn probes(&self, extra: &[(i64, i64)]) -> Vec<(i64, i64)> {
        let c = self.codec();
        let (max, min) = (c.max_points(), c.min_points());
        let last = self.time_bits.map_or(0, |b| (1i64 << b) - 1);
        let mut out = Vec::new();
        for p in [min, min + 1, 0, 1, max - 1, max, max + 1, min - 1] {
            for t in [0, 1.min(last), last, last + 1] {
                out.push((p, t));
            }
        }
        out.extend_from_slice(extra);
        out
    }
}

struct Lua {
    conn: redis::Connection,
    script: redis::Script,
}

impl Lua {
    fn check(&mut self, b: Board, probes: &[(i64, i64)]) -> Result<(), TestCaseError> {
        const START: i64 = 1_700_000_000_000;
        let mut inv = self.script.prepare_invoke();
        inv.arg(if b.time_bits.is_some() {
            "earliest"
        } else {
            "none"
        })
        .arg(match b.order {
            Order::Desc => "desc",
            Order::Asc => "asc",
        })
        .arg(b.time_bits.unwrap_or(26))
        .arg(b.resolution_ms);
        for (p, t) in probes {
            inv.arg(p).arg(t).arg(START);
        }
        let out: Vec<String> = inv.invoke(&mut self.conn).expect("the probe script runs");
        let num = |s: &str| -> f64 { s.parse().expect("fmt prints numbers") };
        let codec = b.codec();
        prop_assert_eq!(
            num(&out[0]),
            codec.max_points() as f64,
            "max_points of {:?}",
            b
        );
        prop_assert_eq!(
            num(&out[1]),
            codec.min_points() as f64,
            "min_points of {:?}",
            b
        );
        for (i, &(p, t)) in probes.iter().enumerate() {
            let f = &out[2 + 5 * i..7 + 5 * i];
            let rust = codec.encode(p, t);
            // Without tie-break the time is not packed: any t is accepted.
            let lua_ok = f[0] == "1";
            prop_assert_eq!(
                lua_ok,
                rust.is_ok(),
                "{:?} points {} t {}: {:?}",
                b,
                p,
                t,
                rust
            );
            let Ok(score) = rust else {
                prop_assert!(matches!(
                    rust,
                    Err(CodecError::ScoreOutOfRange(_) | CodecError::TimeOutOfRange(_))
                ));
                continue;
            };
            let tick = if b.time_bits.is_some() { t } else { 0 };
            prop_assert_eq!(num(&f[1]), score, "{:?} packs points {} t {}", b, p, t);
            prop_assert_eq!(
                (num(&f[2]), num(&f[3])),
                (p as f64, tick as f64),
                "lua decodes {:?}",
                b
            );
            prop_assert_eq!(
                codec.decode(num(&f[1])),
                Ok((p, tick)),
                "rust decodes {:?}",
                b
            );
            if b.time_bits.is_some() {
                // The instant the score was reached, exact while it fits a double's integers.
                let reached = i128::from(START) + i128::from(t) * i128::from(b.resolution_ms);
                if reached < 1 << 53 {
                    prop_assert_eq!(num(&f[4]), reached as f64, "reached_ms of {:?}", b);
                }
            } else {
                prop_assert_eq!(num(&f[4]), -1.0);
            }
        }
        Ok(())
    }
}

fn lua() -> (scorecast_server::embedded::RedisProcess, Lua) {
    let redis = start_redis();
    let conn = redis::Client::open(redis.url())
        .and_then(|c| c.get_connection())
        .expect("connect to the test redis-server");
    let script = redis::Script::new(&format!("{BASE}\n{LIB}\n{PROBE}"));
    (redis, Lua { conn, script })
}

fn order() -> impl Strategy<Value = Order> {
    prop_oneof![Just(Order::Desc), Just(Order::Asc)]
}

/// Every `time_bits`, both orders, the smallest and largest resolutions, at the edges.
#[test]
fn lua_and_rust_packing_agree_at_every_time_bits() {
    let (_redis, mut lua) = lua();
    for order in [Order::Desc, Order::Asc] {
        for time_bits in std::iter::once(None).chain((1..=52).map(Some)) {
            for resolution_ms in [1, 1000, 86_400_000] {
                let b = Board {
                    order,
                    time_bits,
                    resolution_ms,
                };
                lua.check(b, &b.probes(&[]))
                    .unwrap_or_else(|e| panic!("{e}"));
            }
        }
    }
}

/// Any configuration, random points and ticks in range besides the edges.
#[test]
fn lua_and_rust_packing_agree_on_random_configurations() {
    let (_redis, lua) = lua();
    let lua = std::cell::RefCell::new(lua);
    let board = (
        order(),
        prop::option::weighted(0.9, 1u32..=52),
        1i64..=86_400_000,
    )
        .prop_map(|(order, time_bits, resolution_ms)| Board {
            order,
            time_bits,
            resolution_ms,
        });
    let mut runner = TestRunner::new(Config::with_cases(256));
    runner
        .run(
            &(
                board,
                prop::collection::vec((any::<u64>(), any::<u64>()), 8),
            ),
            |(b, seeds)| {
                let c = b.codec();
                let span = b.time_bits.map_or(1, |bits| 1u64 << bits);
                let width = (c.max_points() - c.min_points()) as u64 + 1;
                let extra: Vec<(i64, i64)> = seeds
                    .iter()
                    .map(|(p, t)| (c.min_points() + (p % width) as i64, (t % span) as i64))
                    .collect();
                lua.borrow_mut().check(b, &b.probes(&extra))
            },
        )
        .unwrap_or_else(|e| panic!("{e}"));
}
