//! The one table of error codes (`docs/protocol.md`, "Error codes"), shared by HTTP and WebSocket.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    BadRequest,
    InvalidId,
    PointsOutOfRange,
    ScoreOutOfRange,
    Unauthorized,
    Forbidden,
    UnknownBoard,
    UnknownSeason,
    NotFound,
    Conflict,
    LeaseLost,
    PayloadTooLarge,
    RateLimited,
    Unavailable,
    NotStarted,
    Ended,
    NotJoined,
    Full,
    NoAttemptsLeft,
    WrongTier,
}

impl ErrorCode {
    pub const ALL: [ErrorCode; 20] = [
        ErrorCode::BadRequest,
        ErrorCode::InvalidId,
        ErrorCode::PointsOutOfRange,
        ErrorCode::ScoreOutOfRange,
        ErrorCode::Unauthorized,
        ErrorCode::Forbidden,
        ErrorCode::UnknownBoard,
        ErrorCode::UnknownSeason,
        ErrorCode::NotFound,
        ErrorCode::Conflict,
        ErrorCode::LeaseLost,
        ErrorCode::PayloadTooLarge,
        ErrorCode::RateLimited,
        ErrorCode::Unavailable,
        ErrorCode::NotStarted,
        ErrorCode::Ended,
        ErrorCode::NotJoined,
        ErrorCode::Full,
        ErrorCode::NoAttemptsLeft,
        ErrorCode::WrongTier,
    ];

    /// The code as it appears on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::BadRequest => "bad_request",
            ErrorCode::InvalidId => "invalid_id",
            ErrorCode::PointsOutOfRange => "points_out_of_range",
            ErrorCode::ScoreOutOfRange => "score_out_of_range",
            ErrorCode::Unauthorized => "unauthorized",
            ErrorCode::Forbidden => "forbidden",
            ErrorCode::UnknownBoard => "unknown_board",
            ErrorCode::UnknownSeason => "unknown_season",
            ErrorCode::NotFound => "not_found",
            ErrorCode::Conflict => "conflict",
            ErrorCode::LeaseLost => "lease_lost",
            ErrorCode::PayloadTooLarge => "payload_too_large",
            ErrorCode::RateLimited => "rate_limited",
            ErrorCode::Unavailable => "unavailable",
            ErrorCode::NotStarted => "not_started",
            ErrorCode::Ended => "ended",
            ErrorCode::NotJoined => "not_joined",
            ErrorCode::Full => "full",
            ErrorCode::NoAttemptsLeft => "no_attempts_left",
            ErrorCode::WrongTier => "wrong_tier",
        }
    }

    pub fn parse(s: &str) -> Option<ErrorCode> {
        ErrorCode::ALL.into_iter().find(|c| c.as_str() == s)
    }

    /// The HTTP status that goes with the code.
    pub fn http_status(self) -> u16 {
        match self {
            ErrorCode::BadRequest
            | ErrorCode::InvalidId
            | ErrorCode::PointsOutOfRange
            | ErrorCode::ScoreOutOfRange => 400,
            ErrorCode::Unauthorized => 401,
            ErrorCode::Forbidden | ErrorCode::NotJoined | ErrorCode::WrongTier => 403,
            ErrorCode::UnknownBoard | ErrorCode::UnknownSeason | ErrorCode::NotFound => 404,
            ErrorCode::Conflict
            | ErrorCode::LeaseLost
            | ErrorCode::NotStarted
            | ErrorCode::Ended
            | ErrorCode::Full
            | ErrorCode::NoAttemptsLeft => 409,
            ErrorCode::PayloadTooLarge => 413,
            ErrorCode::RateLimited => 429,
            ErrorCode::Unavailable => 503,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The error table of docs/protocol.md, written out: each code's wire name and HTTP status.
    /// Serde, `as_str`, `parse` and `http_status` must all agree with it, and `ALL` must list
    /// every code once.
    const TABLE: [(&str, u16); 20] = [
        ("bad_request", 400),
        ("invalid_id", 400),
        ("points_out_of_range", 400),
        ("score_out_of_range", 400),
        ("unauthorized", 401),
        ("forbidden", 403),
        ("unknown_board", 404),
        ("unknown_season", 404),
        ("not_found", 404),
        ("conflict", 409),
        ("lease_lost", 409),
        ("payload_too_large", 413),
        ("rate_limited", 429),
        ("unavailable", 503),
        ("not_started", 409),
        ("ended", 409),
        ("not_joined", 403),
        ("full", 409),
        ("no_attempts_left", 409),
        ("wrong_tier", 403),
    ];

    #[test]
    fn wire_names_and_statuses_match_the_contract() {
        for (name, status) in TABLE {
            let c: ErrorCode = serde_json::from_str(&format!("\"{name}\"")).unwrap();
            assert_eq!(serde_json::to_string(&c).unwrap(), format!("\"{name}\""));
            assert_eq!(c.as_str(), name);
            assert_eq!(ErrorCode::parse(name), Some(c));
            assert_eq!(c.http_status(), status, "{name}");
        }
        let mut listed: Vec<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
        listed.sort_unstable();
        let mut table: Vec<&str> = TABLE.iter().map(|(n, _)| *n).collect();
        table.sort_unstable();
        assert_eq!(listed, table);
        assert_eq!(ErrorCode::parse("BadRequest"), None);
    }
}
