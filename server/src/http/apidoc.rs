//! The OpenAPI document served at `/openapi.json`: the handlers' annotations ([`ApiDoc`])
//! completed with what an annotation cannot say, taken from the code's own tables and constants
//! so that the document cannot drift from them:
//!
//! - **Errors.** Every error status of every operation carries the error body
//!   `{"error":{"code","message"}}`, its `code` limited to the codes that go with that status
//!   ([`ErrorCode::http_status`]; schemas `Error400`, `Error401`, …, and `Error` with every code).
//!   Beside the statuses an operation documents itself, each gets those its kind can answer:
//!   431 for any request (the head check runs before routing), 400 where a path, query or body
//!   is read, 413 where a body is, 401 where a key is required (and 403 where it writes: a key of a
//!   lower scope is refused), 429 on the
//!   rate-limited public reads (with `Retry-After` and the `RateLimit-*` headers) and 503 where
//!   Redis is asked.
//! - **Bounds.** Ids (length and alphabet) on every path parameter and on the id fields of
//!   queries and bodies; points; page sizes and offsets; leases, priorities and attempts of jobs;
//!   the length of a ban's reason.

use std::sync::OnceLock;

use scorecast_shared::ids::MAX_ID_LEN;
use scorecast_shared::{protocol, ErrorCode, MAX_POINTS};
use serde_json::{json, Map, Value};
use utoipa::OpenApi;

use super::ops::ApiDoc;
use super::{admin, buckets, moderation, public, queues, tournaments, MAX_BODY, MAX_HEAD};
use crate::queue::{MAX_ATTEMPTS, MAX_CLAIM_BATCH, MAX_PRIORITY};

/// The id alphabet as a JSON Schema `pattern` (beside `minLength` 1 and `maxLength`
/// [`MAX_ID_LEN`]): characters of `[A-Za-z0-9_.-]`, at least one of them not a `.`.
pub const ID_PATTERN: &str = "^[A-Za-z0-9_.-]*[A-Za-z0-9_-][A-Za-z0-9_.-]*$";

const METHODS: [&str; 5] = ["get", "put", "post", "delete", "patch"];

/// The completed document, built once.
pub fn document() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(|| {
        // unwrap: the document is plain data with string keys.
        let mut doc = serde_json::to_value(ApiDoc::openapi()).unwrap();
        let missing = complete(&mut doc);
        if !missing.is_empty() {
            tracing::error!(
                ?missing,
                "OpenAPI bounds name parameters or fields that do not exist"
            );
        }
        doc
    })
}

/// The codes an error status can carry.
pub fn codes_for(status: u16) -> Vec<ErrorCode> {
    if status == 431 {
        // An oversize request head (`HeadTooLarge`): the fix is the same as for a body, send less.
        return vec![ErrorCode::PayloadTooLarge];
    }
    ErrorCode::ALL
        .into_iter()
        .filter(|c| c.http_status() == status)
        .collect()
}

/// A bound on one value: the id rules, an integer range (with the default when absent), a
/// length.
#[derive(Clone, Copy)]
enum Bound {
    Id,
    /// An id, or empty for "not given" (`season=` reads the current season).
    IdOrEmpty,
    Int {
        min: i64,
        max: Option<i64>,
        default: Option<i64>,
    },
    MaxChars(usize),
}

const fn range(min: i64, max: i64) -> Bound {
    Bound::Int {
        min,
        max: Some(max),
        default: None,
    }
}

const fn range_or(min: i64, max: i64, default: i64) -> Bound {
    Bound::Int {
        min,
        max: Some(max),
        default: Some(default),
    }
}

const fn at_least(min: i64) -> Bound {
    Bound::Int {
        min,
        max: None,
        default: None,
    }
}

/// Query parameters with bounds: (path, parameter, bound). Every path parameter is an id, and
/// so is every query parameter named in [`ID_QUERY_PARAMS`].
fn query_bounds() -> Vec<(&'static str, &'static str, Bound)> {
    let top = protocol::MAX_TOP_LIMIT as i64;
    let offset = public::MAX_OFFSET as i64;
    let log = admin::MAX_LOG_PAGE as i64;
    vec![
        (
            "/v1/boards/{board}/top",
            "limit",
            range_or(1, top, protocol::DEFAULT_TOP_LIMIT as i64),
        ),
        ("/v1/boards/{board}/top", "offset", range_or(0, offset, 0)),
        (
            "/v1/boards/{board}/final",
            "limit",
            range_or(1, top, protocol::DEFAULT_TOP_LIMIT as i64),
        ),
        ("/v1/boards/{board}/final", "offset", range_or(0, offset, 0)),
        (
            "/v1/boards/{board}/players/{player}/around",
            "radius",
            range_or(
                1,
                protocol::MAX_RADIUS as i64,
                protocol::DEFAULT_RADIUS as i64,
            ),
        ),
        (
            "/admin/boards/{board}/tournament/entrants",
            "limit",
            range_or(
                1,
                tournaments::MAX_ENTRANTS_PAGE as i64,
                tournaments::DEFAULT_ENTRANTS_PAGE as i64,
            ),
        ),
        (
            "/admin/boards/{board}/tournament/entrants",
            "offset",
            range_or(0, offset, 0),
        ),
        (
            "/admin/boards/{board}/buckets",
            "limit",
            range_or(
                1,
                i64::from(buckets::MAX_BUCKETS_PAGE),
                i64::from(buckets::DEFAULT_BUCKETS_PAGE),
            ),
        ),
        (
            "/admin/boards/{board}/buckets",
            "offset",
            range_or(0, i64::from(u32::MAX), 0),
        ),
        ("/admin/boards/{board}/log", "limit", range_or(1, log, 100)),
        ("/admin/boards/{board}/log", "count", range_or(1, log, 100)),
        ("/admin/boards/{board}/log", "since_ms", at_least(0)),
        (
            "/admin/queues/{q}/dead",
            "limit",
            range_or(1, queues::MAX_DEAD_PAGE as i64, 100),
        ),
        ("/admin/queues/{q}/dead", "offset", range_or(0, offset, 0)),
        (
            "/admin/boards/{board}/players",
            "q",
            Bound::MaxChars(super::console::MAX_SEARCH_CHARS),
        ),
        (
            "/admin/queues/{q}/jobs",
            "limit",
            range_or(1, queues::MAX_DEAD_PAGE as i64, 100),
        ),
        ("/admin/queues/{q}/jobs", "offset", range_or(0, offset, 0)),
        (
            "/admin/queues/{q}/claim",
            "lease_ms",
            range(1, queues::MAX_LEASE_MS as i64),
        ),
        ("/admin/queues/{q}/claim", "wait_ms", at_least(0)),
        (
            "/admin/queues/{q}/claim",
            "max",
            range(1, MAX_CLAIM_BATCH as i64),
        ),
        (
            "/admin/queues/{q}/jobs/{id}/ack",
            "lease_ms",
            range(1, queues::MAX_LEASE_MS as i64),
        ),
        (
            "/admin/queues/{q}/jobs/{id}/ack",
            "max",
            range(1, MAX_CLAIM_BATCH as i64),
        ),
    ]
}

/// Query parameters that are ids wherever they appear (`season` may also be empty).
const ID_QUERY_PARAMS: [&str; 2] = ["player", "board"];

/// Fields of request bodies with bounds: (schema, property, bound).
fn body_bounds() -> Vec<(&'static str, &'static str, Bound)> {
    vec![
        ("ScoreBody", "points", range(-MAX_POINTS, MAX_POINTS)),
        ("ScoreBody", "id", Bound::Id),
        ("TokenRequest", "player", Bound::Id),
        ("TokenRequest", "ttl_s", at_least(1)),
        ("RolloverBody", "season", Bound::Id),
        ("BanBody", "board", Bound::Id),
        ("BanBody", "reason", Bound::MaxChars(moderation::MAX_REASON)),
        ("EnqueueBody", "id", Bound::Id),
        ("EnqueueBody", "kind", Bound::Id),
        ("EnqueueBody", "priority", range(0, i64::from(MAX_PRIORITY))),
        (
            "EnqueueBody",
            "max_attempts",
            range(1, i64::from(MAX_ATTEMPTS)),
        ),
        ("EnqueueBody", "run_at_ms", at_least(0)),
        ("EnqueueBody", "delay_ms", at_least(0)),
        (
            "NackBody",
            "reason",
            Bound::MaxChars(crate::queue::MAX_REASON_CHARS),
        ),
        (
            "ExtendBody",
            "lease_ms",
            range(1, queues::MAX_LEASE_MS as i64),
        ),
    ]
}

/// Completes the document in place; returns the bounds whose target was not found (empty when
/// the tables above match the handlers).
pub fn complete(doc: &mut Value) -> Vec<String> {
    let mut missing = Vec::new();
    let mut statuses = std::collections::BTreeSet::new();
    let queries = query_bounds();
    let mut used = vec![false; queries.len()];

    if let Some(paths) = doc["paths"].as_object_mut() {
        for (path, item) in paths.iter_mut() {
            for method in METHODS {
                let Some(op) = item.get_mut(method) else {
                    continue;
                };
                // `get_mut`, not `op["parameters"]`: indexing a JSON object for writing inserts
                // a `null` under a missing key.
                let params = op.get_mut("parameters").and_then(Value::as_array_mut);
                for param in params.into_iter().flatten() {
                    let name = param["name"].as_str().unwrap_or_default().to_owned();
                    let bound = if param["in"] == "path" || ID_QUERY_PARAMS.contains(&name.as_str())
                    {
                        Some(Bound::Id)
                    } else if name == "season" {
                        Some(Bound::IdOrEmpty)
                    } else {
                        queries
                            .iter()
                            .position(|(p, n, _)| p == path && *n == name)
                            .map(|i| {
                                used[i] = true;
                                queries[i].2
                            })
                    };
                    if let Some(b) = bound {
                        apply(&mut param["schema"], b);
                    }
                    if path == "/v1/boards/{board}/players" && name == "ids" {
                        param["description"] = json!(format!(
                            "Comma-separated player ids (each an id), at most {}.",
                            protocol::MAX_TOP_LIMIT
                        ));
                    }
                }
                for status in add_errors(path, method, op) {
                    statuses.insert(status);
                }
            }
        }
    }
    for (i, (path, name, _)) in queries.iter().enumerate() {
        if !used[i] {
            missing.push(format!("{path} ?{name}"));
        }
    }

    if let Some(d) = doc["info"]["description"].as_str() {
        doc["info"]["description"] = json!(format!(
            "{d} Errors are {{\"error\":{{\"code\",\"message\"}}}}: the code is stable, the \
             message is for humans. The WebSocket protocol is described by /asyncapi.json \
             (AsyncAPI 3.0); this document is browsable at /docs."
        ));
    }

    let schemas = &mut doc["components"]["schemas"];
    for (schema, field, bound) in body_bounds() {
        let target = schemas
            .get_mut(schema)
            .and_then(|s| s.get_mut("properties"))
            .and_then(|p| p.get_mut(field));
        match target {
            Some(s) => apply(s, bound),
            None => missing.push(format!("{schema}.{field}")),
        }
    }
    open_extended_schemas(schemas);
    schemas["Id"] = id_schema();
    schemas["ErrorCode"] = json!({
        "type": "string",
        "description": "What went wrong; stable (`message` is for humans and may change).",
        "enum": ErrorCode::ALL.iter().map(|c| c.as_str()).collect::<Vec<_>>(),
    });
    schemas["Error"] = error_schema(json!({"$ref": "#/components/schemas/ErrorCode"}));
    for status in statuses {
        let codes: Vec<&str> = codes_for(status).iter().map(|c| c.as_str()).collect();
        schemas[format!("Error{status}")] = error_schema(json!({"type": "string", "enum": codes}));
    }
    missing
}

/// A closed schema (`additionalProperties: false`: a request body that refuses unknown fields)
/// extended with more fields by `allOf` (an answer: the board's config and its `id`) could match
/// nothing: within each `allOf` it is inlined without that closure.
fn open_extended_schemas(schemas: &mut Value) {
    let Some(all) = schemas.as_object() else {
        return;
    };
    let open: Map<String, Value> = all
        .iter()
        .filter(|(_, s)| s["additionalProperties"] == json!(false))
        .map(|(name, s)| {
            let mut s = s.clone();
            s.as_object_mut().map(|o| o.remove("additionalProperties"));
            (format!("#/components/schemas/{name}"), s)
        })
        .collect();
    for schema in schemas
        .as_object_mut()
        .into_iter()
        .flat_map(|m| m.values_mut())
    {
        for part in schema
            .get_mut("allOf")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            if let Some(s) = part["$ref"].as_str().and_then(|r| open.get(r)) {
                *part = s.clone();
            }
        }
    }
}

fn id_schema() -> Value {
    json!({
        "type": "string",
        "minLength": 1,
        "maxLength": MAX_ID_LEN,
        "pattern": ID_PATTERN,
        "description": "An id: 1–64 characters of [A-Za-z0-9_.-], not only dots.",
    })
}

fn error_schema(code: Value) -> Value {
    json!({
        "type": "object",
        "required": ["error"],
        "properties": {"error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {"code": code, "message": {"type": "string"}},
        }},
    })
}

/// Merges a bound into a (possibly nullable) schema: JSON Schema applies string and number
/// keywords only to values of that type, so `null` stays allowed where it was.
fn apply(schema: &mut Value, bound: Bound) {
    let Some(s) = schema.as_object_mut() else {
        return;
    };
    match bound {
        Bound::Id => {
            for key in ["minLength", "maxLength", "pattern"] {
                s.insert(key.into(), id_schema()[key].clone());
            }
        }
        Bound::IdOrEmpty => {
            s.insert("maxLength".into(), json!(MAX_ID_LEN));
            s.insert("pattern".into(), json!(format!("^$|{ID_PATTERN}")));
        }
        Bound::Int { min, max, default } => {
            s.insert("minimum".into(), json!(min));
            if let Some(max) = max {
                s.insert("maximum".into(), json!(max));
            }
            if let Some(d) = default {
                s.insert("default".into(), json!(d));
            }
        }
        Bound::MaxChars(n) => {
            s.insert("maxLength".into(), json!(n));
        }
    }
}

/// Adds the error statuses the operation's kind implies and the error body to every error
/// status; returns the error statuses it has.
fn add_errors(path: &str, method: &str, op: &mut Value) -> Vec<u16> {
    let is_ops = op["tags"]
        .as_array()
        .is_some_and(|t| t.iter().any(|t| t == "ops"));
    let has_input = op["parameters"].as_array().is_some_and(|p| !p.is_empty());
    let has_body = op.get("requestBody").is_some();
    let secured = op["security"].as_array().is_some_and(|s| !s.is_empty());
    // Everything but the process checks, guest login and token minting asks Redis.
    let asks_redis = !is_ops && path != "/v1/guest" && path != "/admin/tokens";

    let mut implied = vec![431];
    if has_input || has_body {
        implied.push(400);
    }
    if has_body {
        implied.push(413);
    }
    if secured {
        implied.push(401);
        // Every key may read; a write needs the game-server or admin scope, and a key of a
        // lower scope is refused 403 (docs/protocol.md, "Keys and scopes").
        if method != "get" {
            implied.push(403);
        }
    }
    // Public reads count against the per-address limit (a proof's own 429, the submit limit,
    // is in its annotation).
    let read = path.starts_with("/v1/") && method == "get";
    if read {
        implied.push(429);
    }
    if asks_redis {
        implied.push(503);
    }

    let responses = op["responses"]
        .as_object_mut()
        .expect("every operation has responses");
    for status in implied {
        responses
            .entry(status.to_string())
            .or_insert_with(|| json!({"description": ""}));
    }
    let mut statuses = Vec::new();
    for (key, response) in responses.iter_mut() {
        let Ok(status) = key.parse::<u16>() else {
            continue;
        };
        // Every answer to a read carries the limiter's headers (`read_limit_headers`), the
        // 429 its `Retry-After` too (below); a 401, 431 or 503 is answered before the limiter
        // has counted.
        if read && ![401, 429, 431, 503].contains(&status) {
            response
                .as_object_mut()
                .expect("a response is an object")
                .insert("headers".into(), rate_headers(false));
        }
        // readyz's 503 is its own `{"status"}` body, not an error of the table.
        if status < 400 || (path == "/readyz" && status == 503) {
            continue;
        }
        statuses.push(status);
        let r = response.as_object_mut().expect("a response is an object");
        if r.get("description")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            r.insert("description".into(), json!(describe(status)));
        }
        r.insert(
            "content".into(),
            json!({"application/json": {"schema": {"$ref": format!("#/components/schemas/Error{status}")}}}),
        );
        if status == 429 {
            r.insert("headers".into(), rate_headers(true));
        }
    }
    statuses
}

fn describe(status: u16) -> String {
    let codes: Vec<String> = codes_for(status)
        .iter()
        .map(|c| format!("`{}`", c.as_str()))
        .collect();
    let codes = codes.join(", ");
    match status {
        413 => format!("{codes}: a body above {MAX_BODY} bytes"),
        431 => format!("{codes}: a request head above {MAX_HEAD} bytes"),
        429 => format!("{codes}: retry after `Retry-After` seconds"),
        503 => format!("{codes}: Redis unreachable; retry"),
        _ => codes,
    }
}

/// The `RateLimit-*` headers, and `Retry-After` on a refusal.
fn rate_headers(refused: bool) -> Value {
    let header = |d: &str| json!({"description": d, "schema": {"type": "integer", "minimum": 0}});
    let mut h = Map::new();
    if refused {
        h.insert(
            "Retry-After".into(),
            header("Seconds until a retry can pass."),
        );
    }
    h.insert(
        "RateLimit-Limit".into(),
        header("Reads allowed per window."),
    );
    h.insert(
        "RateLimit-Remaining".into(),
        header("Reads left in the window."),
    );
    h.insert(
        "RateLimit-Reset".into(),
        header("Seconds until the window has room again."),
    );
    Value::Object(h)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn doc() -> Value {
        let mut doc = serde_json::to_value(ApiDoc::openapi()).unwrap();
        let missing = complete(&mut doc);
        assert!(missing.is_empty(), "bounds without a target: {missing:?}");
        doc
    }

    fn operations(doc: &Value) -> Vec<(String, String, &Value)> {
        let mut out = Vec::new();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for m in METHODS {
                if let Some(op) = item.get(m) {
                    out.push((m.to_uppercase(), path.clone(), op));
                }
            }
        }
        out
    }

    fn param<'a>(doc: &'a Value, method: &str, path: &str, name: &str) -> &'a Value {
        doc["paths"][path][method]["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .unwrap_or_else(|| panic!("{method} {path} has no parameter {name}"))
    }

    /// Every bound of the tables above finds its parameter or field, and the description
    /// points to the error shape and the WebSocket document.
    #[test]
    fn every_bound_has_a_target() {
        let d = doc()["info"]["description"].as_str().unwrap().to_owned();
        assert!(d.contains(r#"{"error":{"code","message"}}"#), "{d}");
        assert!(d.contains("/asyncapi.json"), "{d}");
    }

    /// The completion wrote no stray `null` (indexing a JSON object for writing inserts one
    /// under a missing key, which makes the document invalid OpenAPI). Only values — defaults,
    /// examples, enums — may be null.
    #[test]
    fn the_document_has_no_stray_nulls() {
        fn walk(v: &Value, at: &str) {
            match v {
                Value::Null => panic!("null at {at}"),
                Value::Array(a) => {
                    for (i, v) in a.iter().enumerate() {
                        walk(v, &format!("{at}/{i}"));
                    }
                }
                Value::Object(o) => {
                    for (k, v) in o {
                        let value = ["default", "example", "examples", "enum", "const"];
                        if !value.contains(&k.as_str()) {
                            walk(v, &format!("{at}/{k}"));
                        }
                    }
                }
                _ => {}
            }
        }
        walk(&doc(), "");
    }

    /// Every operation documents at least one error response, and every error response of an
    /// API operation is the error body with the codes of its status (from `ErrorCode`).
    #[test]
    fn every_operation_has_error_responses_with_the_error_body() {
        let doc = doc();
        let ops = operations(&doc);
        assert!(ops.len() > 25, "{} operations", ops.len());
        for (method, path, op) in ops {
            let errors: Vec<(&String, &Value)> = op["responses"]
                .as_object()
                .unwrap()
                .iter()
                .filter(|(s, _)| s.as_str() >= "400")
                .collect();
            assert!(!errors.is_empty(), "{method} {path} has no error response");
            for (status, r) in errors {
                if path == "/readyz" && status == "503" {
                    continue;
                }
                let schema = &r["content"]["application/json"]["schema"]["$ref"];
                assert_eq!(
                    schema,
                    &json!(format!("#/components/schemas/Error{status}")),
                    "{method} {path} {status}"
                );
                let name = schema.as_str().unwrap().rsplit('/').next().unwrap();
                let codes = &doc["components"]["schemas"][name]["properties"]["error"]
                    ["properties"]["code"]["enum"];
                let want: Vec<&str> = codes_for(status.parse().unwrap())
                    .iter()
                    .map(|c| c.as_str())
                    .collect();
                assert!(!want.is_empty(), "{status} has no code");
                assert_eq!(codes, &json!(want), "{method} {path} {status}");
            }
        }
        // The full table, once.
        let all: Vec<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(
            doc["components"]["schemas"]["ErrorCode"]["enum"],
            json!(all)
        );
    }

    /// The statuses implied by an operation's kind are there: admin endpoints say 401, public
    /// reads 429 with their headers, endpoints with a body 413, all 431.
    #[test]
    fn implied_error_statuses_are_documented() {
        let doc = doc();
        let responses = |m: &str, p: &str| doc["paths"][p][m]["responses"].clone();
        let score = responses("post", "/admin/boards/{board}/players/{player}/score");
        for s in ["400", "401", "403", "413", "431", "503"] {
            assert!(score[s].is_object(), "score lacks {s}");
        }
        assert!(
            responses("delete", "/admin/boards/{board}")["403"].is_object(),
            "a write needs a scope"
        );
        let top = responses("get", "/v1/boards/{board}/top");
        assert!(top["429"]["headers"]["Retry-After"].is_object());
        assert!(top["200"]["headers"]["RateLimit-Remaining"].is_object());
        assert!(top["404"]["headers"]["RateLimit-Remaining"].is_object());
        assert!(top["200"]["headers"]["Retry-After"].is_null());
        let league_me = responses("get", "/v1/leagues/{league}/me");
        assert!(league_me["429"].is_object(), "a read like any other");
        assert!(
            responses("post", "/v1/boards/{board}/join")["429"].is_null(),
            "joining is no read"
        );
        for (m, p, s) in [
            ("put", "/admin/boards/{board}", "404"),
            ("post", "/admin/boards/{board}/rollover", "404"),
            (
                "post",
                "/admin/boards/{board}/players/{player}/score",
                "409",
            ),
            ("post", "/v1/boards/{board}/runs/{run}/proof", "429"),
        ] {
            assert!(responses(m, p)[s].is_object(), "{m} {p} lacks {s}");
        }
        assert!(top["401"].is_null(), "public reads need no token");
        assert!(responses("get", "/healthz")["431"].is_object());
        assert!(responses("post", "/admin/tokens")["503"].is_null());
    }

    /// A job's payload is any JSON, optional when enqueued; a claim answers one job or, with
    /// `max`, `{"claims":[...]}`.
    #[test]
    fn queue_schemas_say_what_is_sent() {
        let doc = doc();
        let schemas = &doc["components"]["schemas"];
        let enqueue = &schemas["EnqueueBody"];
        for payload in [
            &enqueue["properties"]["payload"],
            &schemas["ClaimedJob"]["properties"]["payload"],
        ] {
            assert!(payload["type"].is_null(), "any JSON: {payload}");
        }
        assert_eq!(
            schemas["ClaimAnswer"]["oneOf"],
            json!([
                {"$ref": "#/components/schemas/ClaimResponse"},
                {"$ref": "#/components/schemas/ClaimsResponse"}
            ])
        );
        assert!(schemas["ClaimsResponse"]["properties"]["claims"].is_object());
        // Answers that extend a closed request body (the config and its id) stay satisfiable,
        // and the request body stays closed.
        for answer in [
            "BoardPut",
            "BoardInfo",
            "LeaguePut",
            "LeagueInfo",
            "PublicBoard",
        ] {
            let parts = schemas[answer]["allOf"].as_array().expect(answer);
            assert!(
                parts
                    .iter()
                    .all(|p| p["additionalProperties"].is_null() && p["$ref"].is_null()),
                "{answer}: {parts:?}"
            );
        }
        assert_eq!(schemas["BoardConfig"]["additionalProperties"], false);
        assert!(schemas["BoardInfo"]["allOf"][1]["required"]
            .as_array()
            .unwrap()
            .contains(&json!("seasons")));
        let seed = &schemas["Run"]["properties"]["seed"];
        assert_eq!(
            (&seed["maximum"], &seed["format"]),
            (&json!(u32::MAX), &json!("int64")),
            "{seed}"
        );
        assert!(!enqueue["required"]
            .as_array()
            .unwrap()
            .contains(&json!("payload")));
    }

    /// The documented bounds are the code's constants.
    #[test]
    fn bounds_match_the_constants() {
        let doc = doc();
        let limit = &param(&doc, "get", "/v1/boards/{board}/top", "limit")["schema"];
        assert_eq!(limit["minimum"], 1);
        assert_eq!(limit["maximum"], json!(protocol::MAX_TOP_LIMIT));
        assert_eq!(limit["default"], json!(protocol::DEFAULT_TOP_LIMIT));
        let offset = &param(&doc, "get", "/v1/boards/{board}/top", "offset")["schema"];
        assert_eq!(offset["maximum"], json!(public::MAX_OFFSET));
        let radius = &param(
            &doc,
            "get",
            "/v1/boards/{board}/players/{player}/around",
            "radius",
        )["schema"];
        assert_eq!(radius["maximum"], json!(protocol::MAX_RADIUS));
        let log = &param(&doc, "get", "/admin/boards/{board}/log", "limit")["schema"];
        assert_eq!(log["maximum"], json!(admin::MAX_LOG_PAGE));
        let dead = &param(&doc, "get", "/admin/queues/{q}/dead", "limit")["schema"];
        assert_eq!(dead["maximum"], json!(queues::MAX_DEAD_PAGE));

        let board = &param(&doc, "get", "/v1/boards/{board}/top", "board")["schema"];
        assert_eq!(board["maxLength"], json!(MAX_ID_LEN));
        assert_eq!(board["minLength"], 1);
        assert_eq!(board["pattern"], ID_PATTERN);
        let season = &param(&doc, "get", "/v1/boards/{board}/top", "season")["schema"];
        assert_eq!(season["pattern"], format!("^$|{ID_PATTERN}"));
        assert_eq!(season["maxLength"], json!(MAX_ID_LEN));
        let player = &param(&doc, "get", "/admin/boards/{board}/log", "player")["schema"];
        assert_eq!(player["pattern"], ID_PATTERN);

        let schemas = &doc["components"]["schemas"];
        let points = &schemas["ScoreBody"]["properties"]["points"];
        assert_eq!(points["maximum"], json!(MAX_POINTS));
        assert_eq!(points["minimum"], json!(-MAX_POINTS));
        assert_eq!(
            schemas["EnqueueBody"]["properties"]["priority"]["maximum"],
            json!(MAX_PRIORITY)
        );
        assert_eq!(
            schemas["BanBody"]["properties"]["reason"]["maxLength"],
            json!(moderation::MAX_REASON)
        );
        assert_eq!(
            schemas["TokenRequest"]["properties"]["player"]["maxLength"],
            json!(MAX_ID_LEN)
        );
        assert!(
            doc["paths"]["/admin/tokens"]["post"]["responses"]["413"]["description"]
                .as_str()
                .unwrap()
                .contains(&MAX_BODY.to_string())
        );
        // The bodies with limits of their own say so.
        let upload = &doc["paths"]["/admin/validators/{name}"]["put"]["responses"]["413"];
        assert!(upload["description"]
            .as_str()
            .unwrap()
            .contains(&super::super::validators::MAX_MODULE_BYTES.to_string()));
        let proof = &doc["paths"]["/v1/boards/{board}/runs/{run}/proof"]["post"]["responses"];
        assert!(proof["413"]["description"].as_str().unwrap().contains(
            &crate::config::Settings::default()
                .validators
                .proof_bytes
                .to_string()
        ));
        assert!(proof["409"].is_object(), "a proof may be refused `ended`");
    }

    proptest! {
        /// The documented id pattern and lengths accept exactly what `Id::parse` accepts.
        #[test]
        fn the_id_pattern_is_the_id_rule(s in "[A-Za-z0-9_.\\-{}: é\n]{0,70}") {
            let re = regex::Regex::new(ID_PATTERN).unwrap();
            let documented = re.is_match(&s) && (1..=MAX_ID_LEN).contains(&s.chars().count());
            prop_assert_eq!(documented, scorecast_shared::Id::parse(&s).is_ok(), "{:?}", s);
        }
    }

    /// The same rule on the edge cases a random string rarely hits.
    #[test]
    fn the_id_pattern_handles_dots_and_length() {
        let re = regex::Regex::new(ID_PATTERN).unwrap();
        for (s, ok) in [
            (".", false),
            ("...", false),
            (".a.", true),
            ("..-", true),
            ("a", true),
            ("a:b", false),
            ("", false),
        ] {
            assert_eq!(re.is_match(s), ok, "{s:?}");
            assert_eq!(scorecast_shared::Id::parse(s).is_ok(), ok, "{s:?}");
        }
        // `season=` is "the current season": the season pattern also takes the empty string.
        let season = regex::Regex::new(&format!("^$|{ID_PATTERN}")).unwrap();
        assert!(season.is_match("") && season.is_match("2026-11") && !season.is_match(".."));
        let long = "a".repeat(MAX_ID_LEN + 1);
        assert!(scorecast_shared::Id::parse(&long).is_err());
        assert_eq!(id_schema()["maxLength"], json!(MAX_ID_LEN));
    }
}
