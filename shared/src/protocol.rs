//! WebSocket protocol v1 (`docs/protocol.md`): JSON text frames, one object per frame, tagged by `type`,
//! snake_case fields. Unknown fields are ignored.
//!
//! [`ClientMsg::parse`] turns a frame into a message or into the exact answer the server owes:
//! a bad `submit` must still be answered by `rejected` carrying its `id`, while a frame that is
//! not a known message gets `error` `bad_request`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::ErrorCode;
use crate::ids::Id;

pub const PROTOCOL_VERSION: u32 = 1;
pub const MAX_TOP_LIMIT: u32 = 100;
pub const DEFAULT_TOP_LIMIT: u32 = 10;
pub const MAX_RADIUS: u32 = 25;
pub const DEFAULT_RADIUS: u32 = 5;

/// What a subscription watches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "view")]
pub enum View {
    Top { limit: u32 },
    Me,
    Around { radius: u32 },
}

impl View {
    pub fn kind(&self) -> ViewKind {
        match self {
            View::Top { .. } => ViewKind::Top,
            View::Me => ViewKind::Me,
            View::Around { .. } => ViewKind::Around,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ViewKind {
    Top,
    Me,
    Around,
}

impl ViewKind {
    /// Whether the view needs an authenticated player.
    pub fn needs_player(self) -> bool {
        !matches!(self, ViewKind::Top)
    }
}

/// Client → server.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ClientMsg {
    Hello {
        token: String,
    },
    Submit {
        id: Id,
        board: Id,
        points: i64,
    },
    Subscribe {
        board: Id,
        #[serde(flatten)]
        view: View,
    },
    Unsubscribe {
        board: Id,
        view: ViewKind,
    },
    Ping,
}

/// Why a frame could not become a [`ClientMsg`], shaped as the answer the server sends.
#[derive(Clone, Debug, PartialEq)]
pub enum ParseError {
    /// Answer with `error`.
    Frame { code: ErrorCode, message: String },
    /// A `submit` that is wrong: answer with `rejected` carrying `id` as the client sent it.
    Submit {
        id: Option<String>,
        code: ErrorCode,
        message: String,
    },
}

impl ParseError {
    fn frame(code: ErrorCode, message: impl Into<String>) -> ParseError {
        ParseError::Frame {
            code,
            message: message.into(),
        }
    }

    pub fn code(&self) -> ErrorCode {
        match self {
            ParseError::Frame { code, .. } | ParseError::Submit { code, .. } => *code,
        }
    }
}

/// Reads `points` (`docs/protocol.md`, "Points and scores"): an integer with |points| ≤ 2^53 − 1. A number that is not such an
/// integer is `points_out_of_range`; a value of another type is `bad_request`.
pub fn parse_points(v: Option<&Value>) -> Result<i64, (ErrorCode, String)> {
    let Some(v) = v else {
        return Err((ErrorCode::BadRequest, "missing field `points`".into()));
    };
    let Value::Number(n) = v else {
        return Err((ErrorCode::BadRequest, "`points` must be an integer".into()));
    };
    match n.as_i64() {
        Some(p) if p.abs() <= crate::MAX_POINTS => Ok(p),
        _ => Err((
            ErrorCode::PointsOutOfRange,
            format!("points must be an integer with |points| <= 2^53-1, got {n}"),
        )),
    }
}

/// Reads a required id field.
pub fn parse_id_field(
    obj: &serde_json::Map<String, Value>,
    field: &str,
) -> Result<Id, (ErrorCode, String)> {
    match obj.get(field) {
        None | Some(Value::Null) => {
            Err((ErrorCode::BadRequest, format!("missing field `{field}`")))
        }
        Some(Value::String(s)) => {
            Id::parse(s).map_err(|e| (ErrorCode::InvalidId, format!("`{field}`: {e}")))
        }
        Some(_) => Err((ErrorCode::BadRequest, format!("`{field}` must be a string"))),
    }
}

fn opt_u32(
    obj: &serde_json::Map<String, Value>,
    field: &str,
    range: std::ops::RangeInclusive<u32>,
    default: u32,
) -> Result<u32, ParseError> {
    match obj.get(field) {
        None | Some(Value::Null) => Ok(default),
        Some(v) => v
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| range.contains(n))
            .ok_or_else(|| {
                ParseError::frame(
                    ErrorCode::BadRequest,
                    format!(
                        "`{field}` must be an integer in {}..={}",
                        range.start(),
                        range.end()
                    ),
                )
            }),
    }
}

impl ClientMsg {
    /// Parses one text frame.
    pub fn parse(text: &str) -> Result<ClientMsg, ParseError> {
        let v: Value = serde_json::from_str(text)
            .map_err(|e| ParseError::frame(ErrorCode::BadRequest, format!("not JSON: {e}")))?;
        let Value::Object(obj) = v else {
            return Err(ParseError::frame(
                ErrorCode::BadRequest,
                "a message is a JSON object",
            ));
        };
        let Some(Value::String(ty)) = obj.get("type") else {
            return Err(ParseError::frame(
                ErrorCode::BadRequest,
                "missing string field `type`",
            ));
        };
        let frame = |(code, message): (ErrorCode, String)| ParseError::Frame { code, message };
        match ty.as_str() {
            "hello" => match obj.get("token") {
                Some(Value::String(t)) => Ok(ClientMsg::Hello { token: t.clone() }),
                _ => Err(ParseError::frame(
                    ErrorCode::BadRequest,
                    "`token` must be a string",
                )),
            },
            "submit" => {
                let raw_id = obj.get("id").and_then(Value::as_str).map(str::to_owned);
                let rejected = |(code, message): (ErrorCode, String)| ParseError::Submit {
                    id: raw_id.clone(),
                    code,
                    message,
                };
                let id = parse_id_field(&obj, "id").map_err(rejected)?;
                let board = parse_id_field(&obj, "board").map_err(rejected)?;
                let points = parse_points(obj.get("points")).map_err(rejected)?;
                Ok(ClientMsg::Submit { id, board, points })
            }
            "subscribe" => {
                let board = parse_id_field(&obj, "board").map_err(frame)?;
                let view = match obj.get("view").and_then(Value::as_str) {
                    Some("top") => View::Top {
                        limit: opt_u32(&obj, "limit", 1..=MAX_TOP_LIMIT, DEFAULT_TOP_LIMIT)?,
                    },
                    Some("me") => View::Me,
                    Some("around") => View::Around {
                        radius: opt_u32(&obj, "radius", 1..=MAX_RADIUS, DEFAULT_RADIUS)?,
                    },
                    _ => {
                        return Err(ParseError::frame(
                            ErrorCode::BadRequest,
                            "`view` must be top, me or around",
                        ))
                    }
                };
                Ok(ClientMsg::Subscribe { board, view })
            }
            "unsubscribe" => {
                let board = parse_id_field(&obj, "board").map_err(frame)?;
                let view = obj
                    .get("view")
                    .cloned()
                    .and_then(|v| serde_json::from_value::<ViewKind>(v).ok())
                    .ok_or_else(|| {
                        ParseError::frame(ErrorCode::BadRequest, "`view` must be top, me or around")
                    })?;
                Ok(ClientMsg::Unsubscribe { board, view })
            }
            "ping" => Ok(ClientMsg::Ping),
            other => Err(ParseError::frame(
                ErrorCode::BadRequest,
                format!("unknown message type {other:?}"),
            )),
        }
    }

    pub fn to_json(&self) -> String {
        // unwrap: the message is plain data with string keys.
        serde_json::to_string(self).unwrap()
    }
}

/// One row of a board as players see it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct Entry {
    /// 1-based.
    pub rank: u64,
    pub player: String,
    /// The player's points.
    pub score: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// When the score was reached (tie-break `earliest` boards only), ms since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reached_ms: Option<i64>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Server → client.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ServerMsg {
    Welcome {
        protocol: u32,
        player: Option<String>,
        server_time_ms: i64,
    },
    Ack {
        id: String,
        board: String,
        season: String,
        score: i64,
        rank: u64,
        previous_rank: Option<u64>,
        duplicate: bool,
    },
    Rejected {
        id: Option<String>,
        code: ErrorCode,
        message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_after_ms: Option<u64>,
    },
    Top {
        board: String,
        season: String,
        total: u64,
        entries: Vec<Entry>,
        seq: u64,
        #[serde(default, skip_serializing_if = "is_false")]
        resync: bool,
    },
    Rank {
        board: String,
        season: String,
        player: String,
        score: Option<i64>,
        rank: Option<u64>,
        previous_rank: Option<u64>,
        seq: u64,
        #[serde(default, skip_serializing_if = "is_false")]
        resync: bool,
    },
    Around {
        board: String,
        season: String,
        entries: Vec<Entry>,
        seq: u64,
        #[serde(default, skip_serializing_if = "is_false")]
        resync: bool,
    },
    Notify {
        kind: String,
        payload: Value,
    },
    Pong,
    Error {
        code: ErrorCode,
        message: String,
        /// With `rate_limited`: when the connection may send again.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_after_ms: Option<u64>,
    },
}

impl ServerMsg {
    pub fn error(code: ErrorCode, message: impl Into<String>) -> ServerMsg {
        ServerMsg::Error {
            code,
            message: message.into(),
            retry_after_ms: None,
        }
    }

    pub fn to_json(&self) -> String {
        // unwrap: every variant is plain data with string keys.
        serde_json::to_string(self).unwrap()
    }

    pub fn parse(text: &str) -> Result<ServerMsg, serde_json::Error> {
        serde_json::from_str(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_client_message() {
        assert_eq!(ClientMsg::parse(r#"{"type":"ping"}"#), Ok(ClientMsg::Ping));
        assert_eq!(
            ClientMsg::parse(r#"{"type":"submit","id":"c-17","board":"b","points":60,"extra":1}"#),
            Ok(ClientMsg::Submit {
                id: Id::parse("c-17").unwrap(),
                board: Id::parse("b").unwrap(),
                points: 60
            })
        );
        assert_eq!(
            ClientMsg::parse(r#"{"type":"subscribe","board":"b","view":"top"}"#),
            Ok(ClientMsg::Subscribe {
                board: Id::parse("b").unwrap(),
                view: View::Top { limit: 10 }
            })
        );
        assert_eq!(
            ClientMsg::parse(r#"{"type":"subscribe","board":"b","view":"around","radius":3}"#),
            Ok(ClientMsg::Subscribe {
                board: Id::parse("b").unwrap(),
                view: View::Around { radius: 3 }
            })
        );
    }

    #[test]
    fn client_messages_round_trip_through_json() {
        for m in [
            ClientMsg::Ping,
            ClientMsg::Hello { token: "t".into() },
            ClientMsg::Subscribe {
                board: Id::parse("b").unwrap(),
                view: View::Top { limit: 7 },
            },
            ClientMsg::Unsubscribe {
                board: Id::parse("b").unwrap(),
                view: ViewKind::Me,
            },
        ] {
            assert_eq!(ClientMsg::parse(&m.to_json()), Ok(m));
        }
    }

    #[test]
    fn bad_submits_are_rejected_with_their_id() {
        let cases = [
            (
                r#"{"type":"submit","id":"a","board":"b","points":1.5}"#,
                ErrorCode::PointsOutOfRange,
            ),
            (
                r#"{"type":"submit","id":"a","board":"b","points":"60"}"#,
                ErrorCode::BadRequest,
            ),
            (
                r#"{"type":"submit","id":"a","board":"b","points":9007199254740992}"#,
                ErrorCode::PointsOutOfRange,
            ),
            (
                r#"{"type":"submit","id":"a","board":"b{x}","points":1}"#,
                ErrorCode::InvalidId,
            ),
            (
                r#"{"type":"submit","id":"a","board":"b"}"#,
                ErrorCode::BadRequest,
            ),
        ];
        for (text, code) in cases {
            match ClientMsg::parse(text) {
                Err(ParseError::Submit { id, code: c, .. }) => {
                    assert_eq!(id.as_deref(), Some("a"), "{text}");
                    assert_eq!(c, code, "{text}");
                }
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    #[test]
    fn unknown_frames_are_bad_requests() {
        for text in [
            "nope",
            "[1]",
            r#"{"type":"fly"}"#,
            r#"{"no":"type"}"#,
            r#"{"type":"subscribe","board":"b","view":"top","limit":101}"#,
        ] {
            assert_eq!(
                ClientMsg::parse(text).unwrap_err().code(),
                ErrorCode::BadRequest,
                "{text}"
            );
        }
    }

    #[test]
    fn server_messages_match_the_design_examples() {
        let ack = ServerMsg::Ack {
            id: "c-17".into(),
            board: "b".into(),
            season: "all".into(),
            score: 155,
            rank: 1,
            previous_rank: Some(3),
            duplicate: false,
        };
        assert_eq!(
            ack.to_json(),
            r#"{"type":"ack","id":"c-17","board":"b","season":"all","score":155,"rank":1,"previous_rank":3,"duplicate":false}"#
        );
        assert_eq!(ServerMsg::parse(&ack.to_json()).unwrap(), ack);
        assert_eq!(ServerMsg::Pong.to_json(), r#"{"type":"pong"}"#);
    }
}
