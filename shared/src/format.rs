//! Numbers and times for people: `12,345`, `1.2k`, `3rd`, `#3`, `2 min ago`.

/// `1234567` → `1,234,567`.
pub fn thousands(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 1);
    if n < 0 {
        out.push('-');
    }
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `950` → `950`, `1234` → `1.2k`, `3_400_000` → `3.4M`, then `B`, `T`, `P`: one decimal,
/// rounded down, dropped when it is 0. Integer arithmetic only (no float formatting in wasm).
pub fn compact(n: i64) -> String {
    const UNITS: [(u64, &str); 5] = [
        (1_000_000_000_000_000, "P"),
        (1_000_000_000_000, "T"),
        (1_000_000_000, "B"),
        (1_000_000, "M"),
        (1_000, "k"),
    ];
    let sign = if n < 0 { "-" } else { "" };
    let a = n.unsigned_abs();
    let Some((size, unit)) = UNITS.iter().find(|(size, _)| a >= *size) else {
        return format!("{sign}{a}");
    };
    // Tenths of the unit, rounded down; below 1000 units, since the next unit up starts there.
    let tenths = a / (size / 10);
    match tenths % 10 {
        0 => format!("{sign}{}{unit}", tenths / 10),
        d => format!("{sign}{}.{d}{unit}", tenths / 10),
    }
}

/// `1` → `1st`, `2` → `2nd`, `11` → `11th`, `23` → `23rd`.
pub fn ordinal(n: u64) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// `3` → `#3`.
pub fn rank_label(n: u64) -> String {
    format!("#{n}")
}

/// How long ago `then_ms` was at `now_ms`: `just now`, `42 s ago`, `2 min ago`, `3 h ago`, `5 d ago`.
pub fn ago(then_ms: i64, now_ms: i64) -> String {
    let s = (now_ms - then_ms).max(0) / 1000;
    match s {
        0..=4 => "just now".into(),
        5..=59 => format!("{s} s ago"),
        60..=3599 => format!("{} min ago", s / 60),
        3600..=86_399 => format!("{} h ago", s / 3600),
        _ => format!("{} d ago", s / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_for_people() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(thousands(-1000), "-1,000");
        assert_eq!(thousands(999), "999");
        assert_eq!(compact(950), "950");
        assert_eq!(compact(1234), "1.2k");
        assert_eq!(compact(3_400_000), "3.4M");
        assert_eq!(compact(999_999), "999.9k");
        assert_eq!(compact(-1500), "-1.5k");
        assert_eq!(compact(2_000), "2k");
        assert_eq!(compact(999), "999");
        assert_eq!(compact(1_000), "1k");
        assert_eq!(compact(999_950), "999.9k");
        assert_eq!(compact(1_000_000), "1M");
        assert_eq!(compact(1_050_000_000), "1B");
        assert_eq!(compact(9_007_199_254_740_991), "9P");
        assert_eq!(compact(i64::MIN), "-9223.3P");
        assert_eq!(compact(i64::MAX), "9223.3P");
        assert_eq!(ordinal(1), "1st");
        assert_eq!(ordinal(2), "2nd");
        assert_eq!(ordinal(3), "3rd");
        assert_eq!(ordinal(11), "11th");
        assert_eq!(ordinal(112), "112th");
        assert_eq!(ordinal(23), "23rd");
        assert_eq!(rank_label(3), "#3");
        assert_eq!(ago(0, 2_000), "just now");
        assert_eq!(ago(0, 42_000), "42 s ago");
        assert_eq!(ago(0, 120_000), "2 min ago");
        assert_eq!(ago(0, 3 * 3_600_000), "3 h ago");
    }
}
