//! WebSocket protocol v1 (`docs/protocol.md`): JSON text frames, one object per frame, tagged by `type`,
//! snake_case fields. Unknown fields are ignored.
//!
//! [`ClientMsg::parse`] turns a frame into a message or into the exact answer the server owes:
//! a bad `submit` must still be answered by `rejected` carrying its `id`, while a frame that is
//! not a known message gets `error` `bad_request`.
//!
//! Both directions are read by hand from a [`serde_json::Value`] (`from_value`), not by derived
//! `Deserialize` impls: the browser gets that `Value` from the object `JSON.parse` already made,
//! so its wasm module carries neither a JSON parser nor serde's buffering of internally tagged
//! enums (most of its size, see BENCHMARKS.md), and the server reads with the very same code.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

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
    /// `"top"`, `"me"` or `"around"`.
    pub fn parse(s: &str) -> Option<ViewKind> {
        match s {
            "top" => Some(ViewKind::Top),
            "me" => Some(ViewKind::Me),
            "around" => Some(ViewKind::Around),
            _ => None,
        }
    }

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
    /// Starts a run on a verified board (`docs/validators.md`, "Runs"); answered by `run`.
    StartRun {
        id: Id,
        board: Id,
    },
    /// A verified submission: the run's proof so far, as standard base64 (RFC 4648 §4,
    /// padded) of its bytes — kept as the text that was sent: the server decodes it (a text that
    /// is not such base64 is `bad_request`); answered as a `submit` is.
    Proof {
        id: Id,
        board: Id,
        run: Id,
        proof: String,
    },
    /// Joins the tournament of a board (`docs/protocol.md`, "Tournaments"); answered by
    /// `joined`, or `rejected` carrying `id`.
    Join {
        id: Id,
        board: Id,
    },
    Ping,
}

/// Reads the `proof` field: a string (standard base64 of the proof's bytes, which the server
/// decodes).
pub fn parse_proof(v: Option<&Value>) -> Result<String, (ErrorCode, String)> {
    match v {
        None | Some(Value::Null) => Err((ErrorCode::BadRequest, missing("proof"))),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err((ErrorCode::BadRequest, wrong_type("proof", "a string"))),
    }
}

/// Why a frame could not become a [`ClientMsg`], shaped as the answer the server sends.
#[derive(Clone, Debug, PartialEq)]
pub enum ParseError {
    /// Answer with `error`.
    Frame { code: ErrorCode, message: String },
    /// A `submit`, `start_run`, `proof` or `join` that is wrong: answer with `rejected` carrying `id`
    /// as the client sent it.
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
    const MESSAGE: &str = "points must be an integer with |points| <= 2^53-1";
    // The value is echoed only when it is an integer: printing a float would bring float
    // formatting into the browser's wasm module for one error message.
    match (n.as_i64(), n.as_u64()) {
        // `unsigned_abs`: `abs` of i64::MIN overflows (and wraps to itself in release builds).
        (Some(p), _) if p.unsigned_abs() <= crate::MAX_POINTS as u64 => Ok(p),
        (Some(p), _) => Err((ErrorCode::PointsOutOfRange, format!("{MESSAGE}, got {p}"))),
        (None, Some(p)) => Err((ErrorCode::PointsOutOfRange, format!("{MESSAGE}, got {p}"))),
        (None, None) => Err((ErrorCode::PointsOutOfRange, MESSAGE.into())),
    }
}

/// Reads a required id field.
pub fn parse_id_field(obj: &Map<String, Value>, field: &str) -> Result<Id, (ErrorCode, String)> {
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
    obj: &Map<String, Value>,
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
        ClientMsg::from_value(&v)
    }

    /// Reads a message from parsed JSON (what [`ClientMsg::parse`] does after parsing; the
    /// browser's `encodeClientMsg` starts here with the caller's object).
    pub fn from_value(v: &Value) -> Result<ClientMsg, ParseError> {
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
            "submit" | "start_run" | "proof" | "join" => {
                let raw_id = obj.get("id").and_then(Value::as_str).map(str::to_owned);
                let rejected = |(code, message): (ErrorCode, String)| ParseError::Submit {
                    id: raw_id.clone(),
                    code,
                    message,
                };
                let id = parse_id_field(obj, "id").map_err(rejected)?;
                let board = parse_id_field(obj, "board").map_err(rejected)?;
                match ty.as_str() {
                    "submit" => {
                        let points = parse_points(obj.get("points")).map_err(rejected)?;
                        Ok(ClientMsg::Submit { id, board, points })
                    }
                    "start_run" => Ok(ClientMsg::StartRun { id, board }),
                    "join" => Ok(ClientMsg::Join { id, board }),
                    _ => {
                        let run = parse_id_field(obj, "run").map_err(rejected)?;
                        let proof = parse_proof(obj.get("proof")).map_err(rejected)?;
                        Ok(ClientMsg::Proof {
                            id,
                            board,
                            run,
                            proof,
                        })
                    }
                }
            }
            "subscribe" => {
                let board = parse_id_field(obj, "board").map_err(frame)?;
                let view = match obj.get("view").and_then(Value::as_str) {
                    Some("top") => View::Top {
                        limit: opt_u32(obj, "limit", 1..=MAX_TOP_LIMIT, DEFAULT_TOP_LIMIT)?,
                    },
                    Some("me") => View::Me,
                    Some("around") => View::Around {
                        radius: opt_u32(obj, "radius", 1..=MAX_RADIUS, DEFAULT_RADIUS)?,
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
                let board = parse_id_field(obj, "board").map_err(frame)?;
                let view = obj
                    .get("view")
                    .and_then(Value::as_str)
                    .and_then(ViewKind::parse)
                    .ok_or_else(|| {
                        ParseError::frame(ErrorCode::BadRequest, "`view` must be top, me or around")
                    })?;
                Ok(ClientMsg::Unsubscribe { board, view })
            }
            "ping" => Ok(ClientMsg::Ping),
            other => Err(ParseError::frame(
                ErrorCode::BadRequest,
                unknown_type(other),
            )),
        }
    }

    pub fn to_json(&self) -> String {
        to_json(self)
    }
}

/// The JSON text of a message: plain data with string keys, so serializing cannot fail (and this
/// avoids `unwrap`, whose message would bring `serde_json::Error`'s `Debug` into the wasm module).
fn to_json<T: Serialize>(msg: &T) -> String {
    match serde_json::to_string(msg) {
        Ok(text) => text,
        Err(_) => unreachable!("a protocol message always serializes"),
    }
}

/// The fields of one JSON object, read as serde's derive would: an absent or `null` `Option`
/// field is `None`; anything else of the wrong type is an error naming the field.
struct Fields<'a>(&'a Map<String, Value>);

impl<'a> Fields<'a> {
    fn opt<T>(
        &self,
        field: &str,
        what: &str,
        read: impl Fn(&'a Value) -> Option<T>,
    ) -> Result<Option<T>, String> {
        match self.0.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => read(v).map(Some).ok_or_else(|| wrong_type(field, what)),
        }
    }

    fn req<T>(
        &self,
        field: &str,
        what: &str,
        read: impl Fn(&'a Value) -> Option<T>,
    ) -> Result<T, String> {
        self.opt(field, what, read)?.ok_or_else(|| missing(field))
    }

    fn string(&self, field: &str) -> Result<String, String> {
        self.req(field, "a string", |v| v.as_str().map(str::to_owned))
    }

    fn opt_string(&self, field: &str) -> Result<Option<String>, String> {
        self.opt(field, "a string", |v| v.as_str().map(str::to_owned))
    }

    fn u64(&self, field: &str) -> Result<u64, String> {
        self.req(field, "an integer >= 0", Value::as_u64)
    }

    fn opt_u64(&self, field: &str) -> Result<Option<u64>, String> {
        self.opt(field, "an integer >= 0", Value::as_u64)
    }

    fn i64(&self, field: &str) -> Result<i64, String> {
        self.req(field, "an integer", Value::as_i64)
    }

    fn opt_i64(&self, field: &str) -> Result<Option<i64>, String> {
        self.opt(field, "an integer", Value::as_i64)
    }

    fn bool(&self, field: &str) -> Result<bool, String> {
        self.req(field, "a boolean", Value::as_bool)
    }

    /// A `#[serde(default)]` boolean: absent is `false`, `null` is wrong.
    fn flag(&self, field: &str) -> Result<bool, String> {
        match self.0.get(field) {
            None => Ok(false),
            Some(v) => v.as_bool().ok_or_else(|| wrong_type(field, "a boolean")),
        }
    }

    fn code(&self, field: &str) -> Result<ErrorCode, String> {
        self.req(field, "an error code", |v| {
            v.as_str().and_then(ErrorCode::parse)
        })
    }

    fn entries(&self, field: &str) -> Result<Vec<Entry>, String> {
        self.req(field, "an array", Value::as_array)?
            .iter()
            .map(|e| Entry::from_value(e).map_err(|m| format!("`{field}`: {m}")))
            .collect()
    }
}

/// Echoes the type only when it is made of id characters, so the message needs no escaping
/// (escaping code is sizeable in the browser's wasm module).
fn unknown_type(ty: &str) -> String {
    match crate::ids::validate(ty) {
        Ok(()) => format!("unknown message type \"{ty}\""),
        Err(_) => "unknown message type".into(),
    }
}

// Out of line: one copy of each message instead of one per field read (wasm size).
#[inline(never)]
fn wrong_type(field: &str, what: &str) -> String {
    format!("`{field}` must be {what}")
}

#[inline(never)]
fn missing(field: &str) -> String {
    format!("missing field `{field}`")
}

fn object(v: &Value) -> Result<Fields<'_>, String> {
    match v {
        Value::Object(obj) => Ok(Fields(obj)),
        _ => Err("a message is a JSON object".into()),
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

impl Entry {
    /// Reads a row from parsed JSON, with the rules of the derived `Deserialize`.
    pub fn from_value(v: &Value) -> Result<Entry, String> {
        let Value::Object(obj) = v else {
            return Err("an entry is a JSON object".into());
        };
        let o = Fields(obj);
        Ok(Entry {
            rank: o.u64("rank")?,
            player: o.string("player")?,
            score: o.i64("score")?,
            name: o.opt_string("name")?,
            reached_ms: o.opt_i64("reached_ms")?,
        })
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Server → client.
#[derive(Clone, Debug, PartialEq, Serialize)]
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
    /// The answer to `start_run`: the run and the seed its game is played from (the fields of
    /// `POST /v1/boards/{board}/runs`).
    Run {
        id: String,
        board: String,
        run: String,
        seed: u32,
        started_ms: i64,
        expires_ms: i64,
    },
    /// The answer to `join` (the fields of `POST /v1/boards/{board}/join`, and the request's
    /// `id`).
    Joined {
        id: String,
        board: String,
        season: String,
        player: String,
        joined_ms: i64,
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
    /// A board's tournament `started`, is `ending_soon` or `ended` (`docs/protocol.md`,
    /// "Tournaments"), pushed to every session with a view of the board.
    Tournament {
        board: String,
        season: String,
        event: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        start_ms: Option<i64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        end_ms: Option<i64>,
        /// With `ended`: how many are in the final standings, and the first of them.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        total: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        standings: Option<Vec<Entry>>,
        /// With `ended`, to a player among the first 1000 of the final standings: their rank.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rank: Option<u64>,
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
        to_json(self)
    }

    /// Parses one text frame; the error says what is wrong.
    pub fn parse(text: &str) -> Result<ServerMsg, String> {
        let v: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        ServerMsg::from_value(&v)
    }

    /// Reads a message from parsed JSON (what [`ServerMsg::parse`] does after parsing; the
    /// browser's `parseServerMsg` starts here). Unknown fields are ignored, absent `Option`
    /// fields are `None`, anything else missing or of the wrong type is an error.
    pub fn from_value(v: &Value) -> Result<ServerMsg, String> {
        let o = object(v)?;
        let ty = o.string("type")?;
        Ok(match ty.as_str() {
            "welcome" => ServerMsg::Welcome {
                protocol: o.req("protocol", "a protocol version", |v| {
                    v.as_u64().and_then(|n| u32::try_from(n).ok())
                })?,
                player: o.opt_string("player")?,
                server_time_ms: o.i64("server_time_ms")?,
            },
            "ack" => ServerMsg::Ack {
                id: o.string("id")?,
                board: o.string("board")?,
                season: o.string("season")?,
                score: o.i64("score")?,
                rank: o.u64("rank")?,
                previous_rank: o.opt_u64("previous_rank")?,
                duplicate: o.bool("duplicate")?,
            },
            "run" => ServerMsg::Run {
                id: o.string("id")?,
                board: o.string("board")?,
                run: o.string("run")?,
                seed: o.req("seed", "a seed (0..2^32)", |v| {
                    v.as_u64().and_then(|n| u32::try_from(n).ok())
                })?,
                started_ms: o.i64("started_ms")?,
                expires_ms: o.i64("expires_ms")?,
            },
            "joined" => ServerMsg::Joined {
                id: o.string("id")?,
                board: o.string("board")?,
                season: o.string("season")?,
                player: o.string("player")?,
                joined_ms: o.i64("joined_ms")?,
            },
            "rejected" => ServerMsg::Rejected {
                id: o.opt_string("id")?,
                code: o.code("code")?,
                message: o.string("message")?,
                retry_after_ms: o.opt_u64("retry_after_ms")?,
            },
            "top" => ServerMsg::Top {
                board: o.string("board")?,
                season: o.string("season")?,
                total: o.u64("total")?,
                entries: o.entries("entries")?,
                seq: o.u64("seq")?,
                resync: o.flag("resync")?,
            },
            "rank" => ServerMsg::Rank {
                board: o.string("board")?,
                season: o.string("season")?,
                player: o.string("player")?,
                score: o.opt_i64("score")?,
                rank: o.opt_u64("rank")?,
                previous_rank: o.opt_u64("previous_rank")?,
                seq: o.u64("seq")?,
                resync: o.flag("resync")?,
            },
            "around" => ServerMsg::Around {
                board: o.string("board")?,
                season: o.string("season")?,
                entries: o.entries("entries")?,
                seq: o.u64("seq")?,
                resync: o.flag("resync")?,
            },
            "notify" => ServerMsg::Notify {
                kind: o.string("kind")?,
                payload: o
                    .0
                    .get("payload")
                    .cloned()
                    .ok_or("missing field `payload`")?,
            },
            "tournament" => ServerMsg::Tournament {
                board: o.string("board")?,
                season: o.string("season")?,
                event: o.string("event")?,
                start_ms: o.opt_i64("start_ms")?,
                end_ms: o.opt_i64("end_ms")?,
                total: o.opt_u64("total")?,
                standings: match o.0.get("standings") {
                    None | Some(Value::Null) => None,
                    Some(_) => Some(o.entries("standings")?),
                },
                rank: o.opt_u64("rank")?,
            },
            "pong" => ServerMsg::Pong,
            "error" => ServerMsg::Error {
                code: o.code("code")?,
                message: o.string("message")?,
                retry_after_ms: o.opt_u64("retry_after_ms")?,
            },
            other => return Err(unknown_type(other)),
        })
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

    /// `join` reads its id and board; a bad one is `rejected` with the id as sent.
    #[test]
    fn join_parses_and_a_bad_one_is_rejected_with_its_id() {
        assert_eq!(
            ClientMsg::parse(r#"{"type":"join","id":"j-1","board":"cup"}"#),
            Ok(ClientMsg::Join {
                id: Id::parse("j-1").unwrap(),
                board: Id::parse("cup").unwrap()
            })
        );
        match ClientMsg::parse(r#"{"type":"join","id":"j-2","board":"c u p"}"#) {
            Err(ParseError::Submit { id, code, .. }) => {
                assert_eq!((id.as_deref(), code), (Some("j-2"), ErrorCode::InvalidId));
            }
            other => panic!("{other:?}"),
        }
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
                // The one integer whose `abs` overflows.
                r#"{"type":"submit","id":"a","board":"b","points":-9223372036854775808}"#,
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

    /// `start_run` and `proof` read into their messages (the proof as the text sent: the
    /// server decodes its base64) and write back the same JSON; each wrong field is a `rejected` carrying the id
    /// as sent, with its code.
    #[test]
    fn runs_and_proofs_parse_and_each_bad_field_is_rejected() {
        let id = |s: &str| Id::parse(s).unwrap();
        let start = ClientMsg::parse(r#"{"type":"start_run","id":"r-1","board":"game-2048"}"#);
        assert_eq!(
            start,
            Ok(ClientMsg::StartRun {
                id: id("r-1"),
                board: id("game-2048")
            })
        );
        // "dWRscg==" is base64 of "udlr"; an empty proof is the empty string.
        let proof = ClientMsg::parse(
            r#"{"type":"proof","id":"p-1","board":"game-2048","run":"abc","proof":"dWRscg=="}"#,
        );
        let want = ClientMsg::Proof {
            id: id("p-1"),
            board: id("game-2048"),
            run: id("abc"),
            proof: "dWRscg==".into(),
        };
        assert_eq!(proof, Ok(want.clone()));
        assert_eq!(
            want.to_json(),
            r#"{"type":"proof","id":"p-1","board":"game-2048","run":"abc","proof":"dWRscg=="}"#
        );
        let other = ClientMsg::Proof {
            id: id("p-2"),
            board: id("b"),
            run: id("r"),
            proof: "AAECAw==".into(),
        };
        for m in [start.unwrap(), other] {
            assert_eq!(ClientMsg::parse(&m.to_json()), Ok(m));
        }
        assert_eq!(
            ClientMsg::parse(r#"{"type":"proof","id":"p","board":"b","run":"r","proof":""}"#),
            Ok(ClientMsg::Proof {
                id: id("p"),
                board: id("b"),
                run: id("r"),
                proof: String::new()
            })
        );

        let cases = [
            (
                r#"{"type":"start_run","board":"b"}"#,
                None,
                ErrorCode::BadRequest,
                "missing field `id`",
            ),
            (
                r#"{"type":"start_run","id":"a"}"#,
                Some("a"),
                ErrorCode::BadRequest,
                "missing field `board`",
            ),
            (
                r#"{"type":"start_run","id":"a","board":7}"#,
                Some("a"),
                ErrorCode::BadRequest,
                "`board` must be a string",
            ),
            (
                r#"{"type":"start_run","id":"a","board":"b c"}"#,
                Some("a"),
                ErrorCode::InvalidId,
                "`board`",
            ),
            (
                r#"{"type":"start_run","id":"a b","board":"b"}"#,
                Some("a b"),
                ErrorCode::InvalidId,
                "`id`",
            ),
            (
                r#"{"type":"proof","id":"a","board":"b","proof":"dQ=="}"#,
                Some("a"),
                ErrorCode::BadRequest,
                "missing field `run`",
            ),
            (
                r#"{"type":"proof","id":"a","board":"b","run":"r/1","proof":"dQ=="}"#,
                Some("a"),
                ErrorCode::InvalidId,
                "`run`",
            ),
            (
                r#"{"type":"proof","id":"a","board":"b","run":"r"}"#,
                Some("a"),
                ErrorCode::BadRequest,
                "missing field `proof`",
            ),
            (
                r#"{"type":"proof","id":"a","board":"b","run":"r","proof":[117]}"#,
                Some("a"),
                ErrorCode::BadRequest,
                "`proof` must be a string",
            ),
            (
                r#"{"type":"proof","board":"b","run":"r","proof":"dQ=="}"#,
                None,
                ErrorCode::BadRequest,
                "missing field `id`",
            ),
        ];
        for (text, want_id, want_code, says) in cases {
            match ClientMsg::parse(text) {
                Err(ParseError::Submit { id, code, message }) => {
                    assert_eq!((id.as_deref(), code), (want_id, want_code), "{text}");
                    assert!(message.contains(says), "{text}: {message}");
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
    fn server_messages_match_the_protocol_examples() {
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

    fn every_server_message() -> Vec<ServerMsg> {
        let entry = |rank, player: &str, score| Entry {
            rank,
            player: player.into(),
            score,
            name: None,
            reached_ms: None,
        };
        vec![
            ServerMsg::Joined {
                id: "j-1".into(),
                board: "cup".into(),
                season: "all".into(),
                player: "kim".into(),
                joined_ms: 5,
            },
            ServerMsg::Tournament {
                board: "cup".into(),
                season: "all".into(),
                event: "started".into(),
                start_ms: Some(1),
                end_ms: Some(2),
                total: None,
                standings: None,
                rank: None,
            },
            ServerMsg::Tournament {
                board: "cup".into(),
                season: "all".into(),
                event: "ended".into(),
                start_ms: None,
                end_ms: Some(2),
                total: Some(1),
                standings: Some(vec![entry(1, "kim", 9)]),
                rank: Some(1),
            },
            ServerMsg::Welcome {
                protocol: 1,
                player: None,
                server_time_ms: 1_700_000_000_000,
            },
            ServerMsg::Welcome {
                protocol: 1,
                player: Some("alice".into()),
                server_time_ms: -1,
            },
            ServerMsg::Ack {
                id: "c-17".into(),
                board: "b".into(),
                season: "all".into(),
                score: -crate::MAX_POINTS,
                rank: 1,
                previous_rank: None,
                duplicate: true,
            },
            ServerMsg::Run {
                id: "r-1".into(),
                board: "game-2048".into(),
                run: "9f86d081884c7d65".into(),
                seed: u32::MAX,
                started_ms: 1_800_000_000_000,
                expires_ms: 1_800_003_600_000,
            },
            ServerMsg::Rejected {
                id: None,
                code: ErrorCode::RateLimited,
                message: "slow down".into(),
                retry_after_ms: Some(850),
            },
            ServerMsg::Rejected {
                id: Some("c-1".into()),
                code: ErrorCode::InvalidId,
                message: "m".into(),
                retry_after_ms: None,
            },
            ServerMsg::Top {
                board: "b".into(),
                season: "all".into(),
                total: 3,
                entries: vec![
                    Entry {
                        name: Some("Bob".into()),
                        reached_ms: Some(17),
                        ..entry(1, "bob", 155)
                    },
                    entry(2, "ann", 3),
                ],
                seq: 42,
                resync: true,
            },
            ServerMsg::Rank {
                board: "b".into(),
                season: "2025-01".into(),
                player: "ann".into(),
                score: None,
                rank: Some(3),
                previous_rank: Some(2),
                seq: 1,
                resync: false,
            },
            ServerMsg::Around {
                board: "b".into(),
                season: "all".into(),
                entries: vec![entry(2, "a", -5)],
                seq: u64::from(u32::MAX) + 1,
                resync: false,
            },
            ServerMsg::Notify {
                kind: "reward".into(),
                payload: serde_json::json!({"rank": 1, "items": [1, 2.5, null]}),
            },
            ServerMsg::Pong,
            ServerMsg::error(ErrorCode::Unavailable, "try later"),
            ServerMsg::Error {
                code: ErrorCode::RateLimited,
                message: "too many messages on this connection".into(),
                retry_after_ms: Some(20),
            },
        ]
    }

    #[test]
    fn every_server_message_reads_back_what_the_server_writes() {
        for m in every_server_message() {
            assert_eq!(
                ServerMsg::parse(&m.to_json()),
                Ok(m.clone()),
                "{}",
                m.to_json()
            );
        }
    }

    #[test]
    fn server_messages_follow_the_derive_rules_for_absent_and_unknown_fields() {
        // Absent options are `None`, absent `resync` is false, unknown fields are ignored.
        assert_eq!(
            ServerMsg::parse(r#"{"type":"welcome","protocol":1,"server_time_ms":5,"x":[1]}"#),
            Ok(ServerMsg::Welcome {
                protocol: 1,
                player: None,
                server_time_ms: 5
            })
        );
        assert_eq!(
            ServerMsg::parse(r#"{"type":"around","board":"b","season":"s","entries":[],"seq":0}"#),
            Ok(ServerMsg::Around {
                board: "b".into(),
                season: "s".into(),
                entries: vec![],
                seq: 0,
                resync: false
            })
        );
        assert_eq!(
            ServerMsg::parse(r#"{"type":"notify","kind":"k","payload":null}"#),
            Ok(ServerMsg::Notify {
                kind: "k".into(),
                payload: Value::Null
            })
        );
    }

    #[test]
    fn invalid_server_messages_say_what_is_wrong() {
        for (text, says) in [
            ("nope", "not JSON"),
            ("[1]", "a message is a JSON object"),
            (r#"{"no":"type"}"#, "missing field `type`"),
            (r#"{"type":7}"#, "`type` must be a string"),
            (
                r#"{"type":"teleport"}"#,
                "unknown message type \"teleport\"",
            ),
            (r#"{"type":"ack","id":"c-1"}"#, "missing field `board`"),
            (
                r#"{"type":"top","board":"b","season":"all","total":"3","entries":[],"seq":1}"#,
                "`total` must be an integer >= 0",
            ),
            (
                r#"{"type":"top","board":"b","season":"all","total":3,"entries":[{"rank":1}],"seq":1}"#,
                "`entries`: missing field `player`",
            ),
            (
                r#"{"type":"top","board":"b","season":"all","total":3,"entries":[],"seq":1,"resync":null}"#,
                "`resync` must be a boolean",
            ),
            (
                r#"{"type":"rank","board":"b","season":"s","player":"p","score":1.5,"seq":1}"#,
                "`score` must be an integer",
            ),
            (
                r#"{"type":"rejected","id":"x","code":"no_such_code","message":"m"}"#,
                "`code` must be an error code",
            ),
            (
                r#"{"type":"welcome","protocol":4294967296,"server_time_ms":1}"#,
                "`protocol` must be a protocol version",
            ),
            (r#"{"type":"notify","kind":"k"}"#, "missing field `payload`"),
            (
                r#"{"type":"run","id":"r","board":"b","run":"x","seed":4294967296,"started_ms":1,"expires_ms":2}"#,
                "`seed` must be a seed (0..2^32)",
            ),
            (
                r#"{"type":"ack","id":"c","board":"b","season":"s","score":1,"rank":0,"duplicate":null}"#,
                "missing field `duplicate`",
            ),
        ] {
            let err = ServerMsg::parse(text).expect_err(text);
            assert!(err.contains(says), "{text}: {err}");
        }
    }

    #[test]
    fn error_messages_echo_integers_only() {
        let points = |text: &str| match ClientMsg::parse(text) {
            Err(ParseError::Submit { message, .. }) => message,
            other => panic!("{text}: {other:?}"),
        };
        assert_eq!(
            points(r#"{"type":"submit","id":"a","board":"b","points":9007199254740992}"#),
            "points must be an integer with |points| <= 2^53-1, got 9007199254740992"
        );
        assert_eq!(
            points(r#"{"type":"submit","id":"a","board":"b","points":-18446744073709551615}"#),
            "points must be an integer with |points| <= 2^53-1"
        );
        assert_eq!(
            points(r#"{"type":"submit","id":"a","board":"b","points":1.5}"#),
            "points must be an integer with |points| <= 2^53-1"
        );
        assert_eq!(
            points(r#"{"type":"submit","id":"a\n","board":"b","points":1}"#),
            "`id`: id contains '\\n'; allowed are A-Z a-z 0-9 _ . -"
        );
        for (text, says) in [
            (r#"{"type":"fly"}"#, r#"unknown message type "fly""#),
            (r#"{"type":"fly\"\u00e9"}"#, "unknown message type"),
        ] {
            match ClientMsg::parse(text) {
                Err(ParseError::Frame { message, .. }) => assert_eq!(message, says),
                other => panic!("{other:?}"),
            }
        }
    }
}
