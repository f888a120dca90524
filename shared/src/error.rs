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
}

impl ErrorCode {
    pub const ALL: [ErrorCode; 14] = [
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
            ErrorCode::Forbidden => 403,
            ErrorCode::UnknownBoard | ErrorCode::UnknownSeason | ErrorCode::NotFound => 404,
            ErrorCode::Conflict | ErrorCode::LeaseLost => 409,
            ErrorCode::PayloadTooLarge => 413,
            ErrorCode::RateLimited => 429,
            ErrorCode::Unavailable => 503,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_names_round_trip() {
        for c in ErrorCode::ALL {
            let json = serde_json::to_string(&c).unwrap();
            assert_eq!(json, format!("\"{}\"", c.as_str()));
            assert_eq!(ErrorCode::parse(c.as_str()), Some(c));
        }
    }
}
