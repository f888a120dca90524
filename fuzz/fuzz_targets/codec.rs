//! The tie-break packing: any (order, bits, points, t) either is refused or round-trips
//! exactly, and a stored value that is not a score of the board never decodes to garbage.
#![no_main]

use libfuzzer_sys::fuzz_target;
use scorecast_shared::{Codec, Order};

fuzz_target!(|input: (bool, u8, i64, i64, f64)| {
    let (asc, bits, points, t, raw) = input;
    let order = if asc { Order::Asc } else { Order::Desc };
    let codec = Codec::earliest(order, u32::from(bits % 52) + 1);
    if let Ok(score) = codec.encode(points, t) {
        assert!(score.abs() < 9_007_199_254_740_992.0, "beyond 2^53");
        assert_eq!(codec.decode(score), Ok((points, t)));
    }
    if let Ok((p, t)) = codec.decode(raw) {
        assert_eq!(codec.encode(p, t), Ok(raw));
    }
});
