//! A board's configuration (README, "Board configuration"; `docs/protocol.md`, "Points and scores"): how points combine, how ties break, how ranks are
//! counted and when seasons turn over. The same type is read from the config file, from
//! `PUT /admin/boards/{board}`, stored as JSON in `lb:{<board>}:config` (where the submission
//! script reads it) and listed by `GET /v1/boards`.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// Higher is better.
    #[default]
    Desc,
    /// Lower is better (speedruns).
    Asc,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// Add the points to the player's score (ZINCRBY).
    #[default]
    Incr,
    /// Keep the better of the old and the new score.
    Best,
    /// Overwrite the score.
    Set,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum TieBreak {
    /// Equal scores in Redis's member order.
    #[default]
    None,
    /// Whoever reached the score first ranks higher.
    Earliest,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Ranking {
    /// 1, 2, 3, 4.
    #[default]
    Ordinal,
    /// Equal points share a rank: 1, 2, 2, 4.
    Shared,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Reset {
    #[default]
    Never,
    Daily,
    Weekly,
    Monthly,
}

impl Reset {
    /// The longest a season of this kind lasts, in ms (`None`: unbounded).
    pub fn max_len_ms(self) -> Option<i64> {
        const DAY: i64 = 86_400_000;
        match self {
            Reset::Never => None,
            Reset::Daily => Some(DAY),
            Reset::Weekly => Some(7 * DAY),
            Reset::Monthly => Some(31 * DAY),
        }
    }
}

/// A sliding-window limit: at most `limit` submissions per `window_ms`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct SubmitLimit {
    pub limit: u32,
    pub window_ms: u64,
}

/// The `submit_limit` of a board configured without one: 10 submissions per second per player.
/// Plenty for a game that submits on events (a level, a match, a merge), and it stops one token
/// holder from flooding a board (and Redis) with thousands of submissions a second. A board that
/// needs more says so, or says `"submit_limit": null` (TOML: `"unlimited"`) for no limit.
pub const DEFAULT_SUBMIT_LIMIT: SubmitLimit = SubmitLimit {
    limit: 10,
    window_ms: 1000,
};

/// `submit_limit`: a limit, or none when given as `null` (JSON) or `"unlimited"` (TOML has no
/// null). A board that leaves the field out gets [`DEFAULT_SUBMIT_LIMIT`] (`BoardConfig`'s
/// `Default`).
fn limit_or_unlimited<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<SubmitLimit>, D::Error> {
    use serde::de::{self, MapAccess, Visitor};

    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Option<SubmitLimit>;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str(r#"{"limit": N, "window_ms": MS}, null or "unlimited""#)
        }

        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_some<D2: serde::Deserializer<'de>>(self, d: D2) -> Result<Self::Value, D2::Error> {
            d.deserialize_any(V)
        }

        fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
            match s {
                "unlimited" => Ok(None),
                other => Err(E::invalid_value(de::Unexpected::Str(other), &self)),
            }
        }

        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            SubmitLimit::deserialize(de::value::MapAccessDeserializer::new(map)).map(Some)
        }
    }
    d.deserialize_any(V)
}

/// When a tournament is open: one window (`start_ms` ≤ now < `end_ms`, on a board with
/// `reset: never`), or `recurring: true`, where each season of the board's calendar (`reset`
/// daily, weekly or monthly) is one tournament, with its own entrants and attempts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct Schedule {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_ms: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_ms: Option<i64>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub recurring: bool,
}

/// The `ending_soon_ms` of a tournament configured without one: 5 minutes.
pub const DEFAULT_ENDING_SOON_MS: u64 = 300_000;

/// A board's tournament rules (README, "Board configuration"; `docs/protocol.md`,
/// "Tournaments"). One occurrence of the tournament is one season of the board.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct Tournament {
    pub schedule: Schedule,
    /// Players must `join` before they may submit.
    pub join_required: bool,
    /// At most this many entrants: the first to join (or, without `join_required`, the first
    /// distinct players to score).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_size: Option<u32>,
    /// At most this many accepted submissions per player (on a board with a validator: started
    /// runs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_attempts: Option<u32>,
    /// How long before the end the `ending_soon` event is pushed.
    pub ending_soon_ms: u64,
}

impl Default for Tournament {
    fn default() -> Self {
        Tournament {
            schedule: Schedule::default(),
            join_required: false,
            max_size: None,
            max_attempts: None,
            ending_soon_ms: DEFAULT_ENDING_SOON_MS,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct BoardConfig {
    pub order: Order,
    pub op: Op,
    pub tie_break: TieBreak,
    pub resolution_ms: u64,
    pub time_bits: u32,
    pub ranking: Ranking,
    pub reset: Reset,
    pub keep_seasons: u32,
    pub max_points_per_submit: Option<i64>,
    /// Per player; left out: [`DEFAULT_SUBMIT_LIMIT`]; `null` (TOML: `"unlimited"`): none.
    #[serde(deserialize_with = "limit_or_unlimited")]
    pub submit_limit: Option<SubmitLimit>,
    pub rewards_top: u32,
    /// The validator that computes this board's scores from proofs (`docs/validators.md`):
    /// `2048` (built in) or the name of one uploaded with `PUT /admin/validators/{name}`.
    /// Left out: none, and the field is left out of the JSON too.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub validator: Option<String>,
    /// Tournament rules: a schedule, joining, a size cap, limited attempts. Left out: none
    /// (and left out of the JSON).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tournament: Option<Tournament>,
    /// Players are placed, on their first score (or join) of a season, in buckets of this
    /// many rivals; a player's reads and live views are within their bucket. Left out: none
    /// (and left out of the JSON).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bucket_size: Option<u32>,
    /// The league this board is a tier of (set by `PUT /admin/leagues/{l}`, not by hand).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub league: Option<LeagueTier>,
}

/// The smallest and largest `bucket_size`.
pub const BUCKET_SIZES: std::ops::RangeInclusive<u32> = 2..=1000;

/// A board's place in a league (`docs/protocol.md`, "Leagues"): the league's id and the tier's
/// index, 0 = the lowest, where new players enter.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct LeagueTier {
    pub league: String,
    /// 0 = the lowest tier.
    pub tier: u32,
    /// The league's lowest tier (where new players enter), named in refusals.
    pub entry: String,
}

impl Default for BoardConfig {
    fn default() -> Self {
        BoardConfig {
            order: Order::Desc,
            op: Op::Incr,
            tie_break: TieBreak::None,
            resolution_ms: 1000,
            time_bits: 26,
            ranking: Ranking::Ordinal,
            reset: Reset::Never,
            keep_seasons: 12,
            max_points_per_submit: None,
            submit_limit: Some(DEFAULT_SUBMIT_LIMIT),
            rewards_top: 0,
            validator: None,
            tournament: None,
            bucket_size: None,
            league: None,
        }
    }
}

impl BoardConfig {
    /// Checks the fields against each other; the message says what to change.
    pub fn validate(&self) -> Result<(), String> {
        if self.resolution_ms == 0 || self.resolution_ms > 86_400_000 {
            return Err("resolution_ms must be 1..=86400000".into());
        }
        if !(1..=52).contains(&self.time_bits) {
            return Err("time_bits must be 1..=52".into());
        }
        if self.keep_seasons > 1000 {
            return Err("keep_seasons must be at most 1000".into());
        }
        if let Some(m) = self.max_points_per_submit {
            if !(1..=crate::MAX_POINTS).contains(&m) {
                return Err("max_points_per_submit must be 1..=2^53-1".into());
            }
        }
        if let Some(l) = self.submit_limit {
            if l.limit == 0 || l.window_ms == 0 || l.window_ms > 86_400_000 * 31 {
                return Err("submit_limit needs limit >= 1 and window_ms 1..=2678400000".into());
            }
        }
        if let Some(v) = &self.validator {
            crate::Id::parse(v).map_err(|e| format!("validator: {e}"))?;
            // Each checkpoint of a run carries the run's score so far, and a player plays many
            // runs: only keeping the best is right.
            if self.op != Op::Best {
                return Err(
                    "a board with a validator keeps each player's best run: op must be best".into(),
                );
            }
        }
        if let Some(t) = &self.tournament {
            self.validate_tournament(t)?;
        }
        if let Some(n) = self.bucket_size {
            if !BUCKET_SIZES.contains(&n) {
                return Err(format!(
                    "bucket_size must be {}..={}, got {n}",
                    BUCKET_SIZES.start(),
                    BUCKET_SIZES.end()
                ));
            }
        }
        if let Some(l) = &self.league {
            crate::Id::parse(&l.league).map_err(|e| format!("league: {e}"))?;
            crate::Id::parse(&l.entry).map_err(|e| format!("league entry: {e}"))?;
            if self.bucket_size.is_none() {
                return Err("a league's tier board needs a bucket_size".into());
            }
        }
        if self.rewards_top > 10_000 {
            return Err("rewards_top must be at most 10000".into());
        }
        if self.rewards_top > 0 && self.keep_seasons == 0 {
            // The finished season must still be readable when its rewards are handed out.
            return Err("rewards_top needs keep_seasons >= 1".into());
        }
        if self.tie_break == TieBreak::Earliest {
            if let Some(len) = self.reset.max_len_ms() {
                let clock = (1i128 << self.time_bits) * self.resolution_ms as i128;
                if clock < len as i128 {
                    return Err(format!(
                        "a {:?} season lasts up to {len} ms but the tie-break clock (2^time_bits x resolution_ms) covers only {clock} ms",
                        self.reset
                    ));
                }
            }
        }
        Ok(())
    }

    fn validate_tournament(&self, t: &Tournament) -> Result<(), String> {
        let s = t.schedule;
        if s.recurring {
            if s.start_ms.is_some() || s.end_ms.is_some() {
                return Err(
                    "tournament.schedule: recurring takes its dates from the board's calendar (reset): leave out start_ms and end_ms".into(),
                );
            }
            if self.reset == Reset::Never {
                return Err(
                    "a recurring tournament needs a calendar board: reset daily, weekly or monthly"
                        .into(),
                );
            }
        } else {
            let (Some(start), Some(end)) = (s.start_ms, s.end_ms) else {
                return Err(
                    "tournament.schedule needs start_ms and end_ms, or recurring: true".into(),
                );
            };
            if start < 0 || end <= start {
                return Err("tournament.schedule needs 0 <= start_ms < end_ms".into());
            }
            if self.reset != Reset::Never {
                return Err(
                    "a tournament with start_ms and end_ms needs reset: never (or use recurring: true)"
                        .into(),
                );
            }
        }
        if t.max_size == Some(0) || t.max_size.is_some_and(|n| n > 10_000_000) {
            return Err("tournament.max_size must be 1..=10000000".into());
        }
        if t.max_attempts == Some(0) || t.max_attempts.is_some_and(|n| n > 1_000_000) {
            return Err("tournament.max_attempts must be 1..=1000000".into());
        }
        if t.ending_soon_ms == 0 || t.ending_soon_ms > 86_400_000 * 31 {
            return Err("tournament.ending_soon_ms must be 1..=2678400000".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `validator` is an id when given, needs `op: best`, and a board without one serialises as
    /// before (no
    /// `validator` key), so stored configs and answers are unchanged.
    #[test]
    fn the_validator_field_is_optional_and_checked() {
        let c: BoardConfig = serde_json::from_str(r#"{"validator":"2048","op":"best"}"#).unwrap();
        assert_eq!(c.validator.as_deref(), Some("2048"));
        assert!(c.validate().is_ok());
        let bad: BoardConfig =
            serde_json::from_str(r#"{"validator":"no{braces}","op":"best"}"#).unwrap();
        assert!(bad.validate().unwrap_err().starts_with("validator:"));
        let incr: BoardConfig = serde_json::from_str(r#"{"validator":"2048"}"#).unwrap();
        assert!(incr.validate().unwrap_err().contains("op must be best"));
        let plain = serde_json::to_value(BoardConfig::default()).unwrap();
        assert!(plain.get("validator").is_none(), "{plain}");
    }

    #[test]
    fn defaults_are_the_documented_ones() {
        let c: BoardConfig = serde_json::from_str("{}").unwrap();
        assert_eq!(c, BoardConfig::default());
        assert!(c.validate().is_ok());
    }

    #[test]
    fn refuses_a_season_longer_than_the_tie_break_clock() {
        let c = BoardConfig {
            tie_break: TieBreak::Earliest,
            reset: Reset::Monthly,
            time_bits: 20,
            resolution_ms: 1000,
            ..Default::default()
        };
        assert!(c.validate().is_err());
        assert!(BoardConfig { time_bits: 26, ..c }.validate().is_ok());
    }

    #[test]
    fn rewards_need_the_finished_season_kept() {
        let c = BoardConfig {
            rewards_top: 3,
            keep_seasons: 0,
            ..Default::default()
        };
        assert!(c.validate().is_err());
        assert!(BoardConfig {
            keep_seasons: 1,
            ..c
        }
        .validate()
        .is_ok());
    }

    #[test]
    fn submit_limit_defaults_on_and_null_means_unlimited() {
        let c: BoardConfig = serde_json::from_str("{}").unwrap();
        assert_eq!(c.submit_limit, Some(DEFAULT_SUBMIT_LIMIT));
        let c: BoardConfig = serde_json::from_str(r#"{"submit_limit": null}"#).unwrap();
        assert_eq!(c.submit_limit, None);
        let c: BoardConfig = serde_json::from_str(r#"{"submit_limit": "unlimited"}"#).unwrap();
        assert_eq!(c.submit_limit, None);
        let c: BoardConfig =
            serde_json::from_str(r#"{"submit_limit": {"limit": 3, "window_ms": 50}}"#).unwrap();
        assert_eq!(
            c.submit_limit,
            Some(SubmitLimit {
                limit: 3,
                window_ms: 50
            })
        );
        // What is stored says `null` for an unlimited board, so it stays unlimited when read back.
        let unlimited = BoardConfig {
            submit_limit: None,
            ..Default::default()
        };
        let back: BoardConfig =
            serde_json::from_str(&serde_json::to_string(&unlimited).unwrap()).unwrap();
        assert_eq!(back, unlimited);
        for bad in [
            r#"{"submit_limit": "none"}"#,
            r#"{"submit_limit": {"limt": 3, "window_ms": 50}}"#,
            r#"{"submit_limit": 10}"#,
        ] {
            assert!(serde_json::from_str::<BoardConfig>(bad).is_err(), "{bad}");
        }
    }

    /// A tournament needs a coherent schedule: a window on a `never` board or `recurring` on a
    /// calendar board; caps are at least 1; a board without one serialises as before.
    #[test]
    fn tournament_settings_are_checked_against_each_other() {
        let ok: BoardConfig = serde_json::from_str(
            r#"{"tournament":{"schedule":{"start_ms":10,"end_ms":20},"join_required":true,"max_size":2,"max_attempts":3}}"#,
        )
        .unwrap();
        assert_eq!(ok.validate(), Ok(()));
        let t = ok.tournament.unwrap();
        assert_eq!(t.ending_soon_ms, DEFAULT_ENDING_SOON_MS);
        let rec: BoardConfig = serde_json::from_str(
            r#"{"reset":"daily","tournament":{"schedule":{"recurring":true}}}"#,
        )
        .unwrap();
        assert_eq!(rec.validate(), Ok(()));
        for bad in [
            r#"{"tournament":{}}"#,
            r#"{"tournament":{"schedule":{"start_ms":20,"end_ms":20}}}"#,
            r#"{"tournament":{"schedule":{"recurring":true}}}"#,
            r#"{"reset":"daily","tournament":{"schedule":{"start_ms":1,"end_ms":2}}}"#,
            r#"{"reset":"daily","tournament":{"schedule":{"recurring":true,"end_ms":2}}}"#,
            r#"{"tournament":{"schedule":{"start_ms":1,"end_ms":2},"max_size":0}}"#,
            r#"{"tournament":{"schedule":{"start_ms":1,"end_ms":2},"max_attempts":0}}"#,
            r#"{"tournament":{"schedule":{"start_ms":1,"end_ms":2},"ending_soon_ms":0}}"#,
        ] {
            let c: BoardConfig = serde_json::from_str(bad).unwrap();
            assert!(c.validate().is_err(), "{bad}");
        }
        assert!(serde_json::from_str::<BoardConfig>(
            r#"{"tournament":{"schedule":{"start_ms":1,"end_ms":2},"bucket":3}}"#
        )
        .is_err());
        let plain = serde_json::to_value(BoardConfig::default()).unwrap();
        assert!(plain.get("tournament").is_none(), "{plain}");
    }

    #[test]
    fn unknown_fields_are_refused() {
        assert!(serde_json::from_str::<BoardConfig>(r#"{"max_point_per_submit":3}"#).is_err());
    }
}
