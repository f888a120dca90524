//! Calendar seasons as the jobs schedule them: the same names and boundaries as
//! `calendar_season` in `lua/lib.lua`, which decides a submission's season.

use chrono::{DateTime, Datelike, Duration as Days, NaiveDate, Utc};
use scorecast_shared::Reset;

/// The calendar season containing `now_ms` (UTC): name, start and end ms — the same names as
/// `calendar_season` in `lua/lib.lua` (`YYYY-MM-DD`, ISO week `YYYY-Www`, `YYYY-MM`). `None`
/// for `never` boards.
pub fn calendar_season(reset: Reset, now_ms: i64) -> Option<(String, i64, i64)> {
    let day = DateTime::<Utc>::from_timestamp_millis(now_ms)?.date_naive();
    let ms = |d: NaiveDate| {
        d.and_hms_opt(0, 0, 0)
            .map(|t| t.and_utc().timestamp_millis())
    };
    match reset {
        Reset::Never => None,
        Reset::Daily => Some((
            day.format("%Y-%m-%d").to_string(),
            ms(day)?,
            ms(day.succ_opt()?)?,
        )),
        Reset::Weekly => {
            let monday = day - Days::days(i64::from(day.weekday().num_days_from_monday()));
            let w = day.iso_week();
            Some((
                format!("{:04}-W{:02}", w.year(), w.week()),
                ms(monday)?,
                ms(monday + Days::days(7))?,
            ))
        }
        Reset::Monthly => {
            let first = day.with_day(1)?;
            let next = if first.month() == 12 {
                NaiveDate::from_ymd_opt(first.year() + 1, 1, 1)?
            } else {
                NaiveDate::from_ymd_opt(first.year(), first.month() + 1, 1)?
            };
            Some((first.format("%Y-%m").to_string(), ms(first)?, ms(next)?))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> i64 {
        DateTime::parse_from_rfc3339(s).unwrap().timestamp_millis()
    }

    #[test]
    fn calendar_seasons_are_named_by_day_iso_week_and_month() {
        let (n, s, e) = calendar_season(Reset::Daily, at("2025-03-10T12:34:56Z")).unwrap();
        assert_eq!(
            (n.as_str(), s, e),
            (
                "2025-03-10",
                at("2025-03-10T00:00:00Z"),
                at("2025-03-11T00:00:00Z")
            )
        );
        // 2024-12-30 is a Monday in ISO week 1 of 2025.
        let (n, s, e) = calendar_season(Reset::Weekly, at("2025-01-01T08:00:00Z")).unwrap();
        assert_eq!(
            (n.as_str(), s, e),
            (
                "2025-W01",
                at("2024-12-30T00:00:00Z"),
                at("2025-01-06T00:00:00Z")
            )
        );
        let (n, _, _) = calendar_season(Reset::Weekly, at("2021-01-03T23:59:59Z")).unwrap();
        assert_eq!(n, "2020-W53");
        let (n, s, e) = calendar_season(Reset::Monthly, at("2024-12-31T23:59:59.999Z")).unwrap();
        assert_eq!(
            (n.as_str(), s, e),
            (
                "2024-12",
                at("2024-12-01T00:00:00Z"),
                at("2025-01-01T00:00:00Z")
            )
        );
        // The end is exclusive: the boundary instant belongs to the next season.
        let (n, _, _) = calendar_season(Reset::Monthly, at("2025-01-01T00:00:00Z")).unwrap();
        assert_eq!(n, "2025-01");
        assert!(calendar_season(Reset::Never, 0).is_none());
    }
}
