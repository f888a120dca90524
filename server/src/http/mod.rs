//! The HTTP API (`docs/protocol.md`, "HTTP API"): public reads under `/v1`, admin endpoints
//! under `/admin`, operations endpoints, and the web pages.

pub mod admin;
pub mod apidoc;
pub mod asyncapi;
pub mod buckets;
pub mod console;
pub mod extract;
pub mod leagues;
pub mod moderation;
pub mod ops;
pub mod public;
pub mod queues;
pub mod tournaments;
pub mod validators;

use actix_web::error::{JsonPayloadError, PathError, QueryPayloadError};
use actix_web::web;
use scorecast_shared::ErrorCode;

use crate::error::AppError;

/// Request bodies above this are refused with 413 `payload_too_large`.
pub const MAX_BODY: usize = 64 * 1024;
/// A request head (method, target and every header) above this is refused with 431 before any
/// handler runs. actix-web itself only refuses a head that arrives slowly enough to overflow its
/// read buffer; one that arrives in a single read is parsed whatever its size.
pub const MAX_HEAD: usize = 32 * 1024;

/// The 431 answer to a request head above [`MAX_HEAD`] (code `payload_too_large`: the fix is
/// the same, send less).
#[derive(Debug)]
pub struct HeadTooLarge(usize);

impl std::fmt::Display for HeadTooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "request head of {} bytes; at most {MAX_HEAD}", self.0)
    }
}

impl actix_web::ResponseError for HeadTooLarge {
    fn status_code(&self) -> actix_web::http::StatusCode {
        actix_web::http::StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE
    }

    fn error_response(&self) -> actix_web::HttpResponse {
        actix_web::HttpResponse::build(self.status_code())
            .insert_header((actix_web::http::header::CONNECTION, "close"))
            .json(serde_json::json!({"error": {
                "code": ErrorCode::PayloadTooLarge.as_str(),
                "message": self.to_string(),
            }}))
    }
}

/// Refuses a request whose head is above [`MAX_HEAD`] bytes, counted as HTTP/1.1 sends it: the
/// request line `METHOD target HTTP/1.1\r\n`, `name: value\r\n` per header, the blank line.
pub fn check_head(head: &actix_web::dev::RequestHead) -> Result<(), HeadTooLarge> {
    /// The request line's two spaces, `HTTP/1.1` and its CRLF, and the blank line's CRLF.
    const FRAMING: usize = 2 + 8 + 2 + 2;
    let target = head.uri.path_and_query().map_or(0, |p| p.as_str().len())
        + head.uri.authority().map_or(0, |a| a.as_str().len());
    let size = head.method.as_str().len()
        + FRAMING
        + target
        + head
            .headers()
            .iter()
            .map(|(k, v)| k.as_str().len() + v.len() + 4)
            .sum::<usize>();
    if size > MAX_HEAD {
        Err(HeadTooLarge(size))
    } else {
        Ok(())
    }
}

pub fn json_config() -> web::JsonConfig {
    web::JsonConfig::default()
        .limit(MAX_BODY)
        .error_handler(|err, _req| {
            match err {
                JsonPayloadError::Overflow { .. }
                | JsonPayloadError::OverflowKnownLength { .. } => AppError::new(
                    ErrorCode::PayloadTooLarge,
                    format!("body above {MAX_BODY} bytes"),
                ),
                JsonPayloadError::ContentType => AppError::bad_request(
                    "malformed body: a JSON body with Content-Type: application/json is expected",
                ),
                JsonPayloadError::Deserialize(e) if e.is_eof() && e.column() == 0 => {
                    AppError::bad_request("malformed body: empty; a JSON object is expected ({} for none of its fields)")
                }
                other => AppError::bad_request(format!("malformed body: {other}")),
            }
            .into()
        })
}

pub fn query_config() -> web::QueryConfig {
    web::QueryConfig::default().error_handler(|err: QueryPayloadError, _req| {
        AppError::bad_request(format!("bad query: {err}")).into()
    })
}

pub fn path_config() -> web::PathConfig {
    web::PathConfig::default().error_handler(|err: PathError, _req| {
        AppError::bad_request(format!("bad path: {err}")).into()
    })
}

/// Registers every route.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.app_data(json_config())
        .app_data(query_config())
        .app_data(path_config())
        .app_data(web::PayloadConfig::new(MAX_BODY))
        .configure(ops::routes)
        .configure(public::routes)
        .configure(admin::routes)
        .configure(moderation::routes)
        .configure(console::routes)
        .configure(queues::routes)
        .service(asyncapi::asyncapi_json)
        .configure(validators::routes)
        .configure(tournaments::routes)
        .configure(leagues::routes)
        .configure(buckets::routes);
}

/// The paths a page on another allowed origin may use: the SDK (`/sdk`), the protocol code it
/// loads (`/pkg`) and the public API (`/v1`). `/admin`, `/ws` (which checks its Origin itself)
/// and the rest get no CORS headers.
pub fn cors_path(path: &str) -> bool {
    ["/sdk/", "/pkg/", "/v1/"]
        .iter()
        .any(|p| path.starts_with(p))
}

/// CORS for [`cors_path`]s, governed by `allowed_origins` (`*` allows any): an allowed origin
/// gets `Access-Control-Allow-Origin` (its own, with `Vary: Origin`), errors included, and the
/// rate-limit headers exposed; a preflight (`OPTIONS` with `Access-Control-Request-Method`) is
/// answered 200 for it and 400 for any other origin or path. A request from an origin that is
/// not allowed is served without the header, so the browser withholds the answer from the page.
pub fn cors(settings: std::sync::Arc<crate::config::Settings>) -> actix_cors::Cors {
    use actix_web::http::{header, Method};
    actix_cors::Cors::default()
        .allowed_origin_fn(move |origin, head| {
            cors_path(head.uri.path())
                && origin
                    .to_str()
                    .is_ok_and(|o| crate::ws::origin_allowed(Some(o), &settings))
        })
        .allowed_methods([Method::GET, Method::POST])
        .allowed_headers([header::CONTENT_TYPE, header::AUTHORIZATION])
        .expose_headers([
            header::RETRY_AFTER,
            header::HeaderName::from_static("ratelimit-limit"),
            header::HeaderName::from_static("ratelimit-remaining"),
            header::HeaderName::from_static("ratelimit-reset"),
        ])
        .max_age(3600)
        // Not allowed: served without CORS headers (a same-origin page, a non-browser client
        // and `/ws` keep working), never answered with an error of the middleware's own.
        .block_on_origin_mismatch(false)
}

/// The Content-Security-Policy of the HTML pages (`/`, `/play`, `/admin` and every `.html` of the
/// web directory): scripts and styles from this origin only (no inline code), WebAssembly
/// compiled by the SDK (`'wasm-unsafe-eval'`), fetch and WebSocket to this origin only, the
/// empty `data:` favicon, no plugins, no `<base>`, and no framing by anyone.
pub const PAGE_CSP: &str = "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; \
style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; \
manifest-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; \
frame-ancestors 'none'";

/// The policy of every other response (JSON, scripts, WebAssembly): it loads nothing and is never
/// framed, should a browser open it as a document.
pub const OTHER_CSP: &str = "default-src 'none'; frame-ancestors 'none'";

/// The Content-Security-Policy of a response: [`PAGE_CSP`] for HTML, [`OTHER_CSP`] otherwise. A
/// page that needs another policy gets its own arm here, by path.
fn csp_for(_path: &str, html: bool) -> &'static str {
    if html {
        PAGE_CSP
    } else {
        OTHER_CSP
    }
}

/// Every refusal is the JSON error body (`{"error":{"code","message"}}`), also those made
/// outside Scorecast's handlers: a path nothing serves (404 `not_found`), a method the path does
/// not take (405, `bad_request`), a refused CORS preflight (400 `bad_request`), a WebSocket
/// handshake the socket library refused. A 4xx answer that is not JSON already gets the body
/// for its status, its text kept as the message; its status and headers stay.
pub async fn json_errors<B: actix_web::body::MessageBody>(
    res: actix_web::dev::ServiceResponse<B>,
) -> actix_web::Result<actix_web::dev::ServiceResponse<actix_web::body::EitherBody<B>>> {
    use actix_web::http::{header, Method, StatusCode};
    let status = res.status();
    let json = res
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("application/json"));
    if !status.is_client_error() || json || res.request().method() == Method::HEAD {
        return Ok(res.map_into_left_body());
    }
    let code = match status {
        StatusCode::UNAUTHORIZED => ErrorCode::Unauthorized,
        StatusCode::FORBIDDEN => ErrorCode::Forbidden,
        StatusCode::NOT_FOUND => ErrorCode::NotFound,
        StatusCode::PAYLOAD_TOO_LARGE => ErrorCode::PayloadTooLarge,
        StatusCode::TOO_MANY_REQUESTS => ErrorCode::RateLimited,
        _ => ErrorCode::BadRequest,
    };
    let (req, res) = res.into_parts();
    let (head, body) = res.into_parts();
    let text = actix_web::body::to_bytes_limited(body, 1024)
        .await
        .ok()
        .and_then(Result::ok)
        .and_then(|b| String::from_utf8(b.to_vec()).ok())
        .map(|t| t.trim().to_owned())
        .filter(|t| !t.is_empty());
    let message = match (status, text) {
        (StatusCode::METHOD_NOT_ALLOWED, _) => {
            format!("{} is not taken at {}", req.method(), req.path())
        }
        (_, Some(t)) => t,
        (StatusCode::NOT_FOUND, None) => format!("nothing is served at {}", req.path()),
        (s, None) => s.canonical_reason().unwrap_or("refused").to_owned(),
    };
    let mut out = actix_web::HttpResponse::build(status).json(serde_json::json!({
        "error": {"code": code.as_str(), "message": message}
    }));
    for (name, value) in head.headers() {
        // The new body is plain JSON: the old one's type, length and encoding (compressed by
        // the middleware inside this one) do not describe it.
        if name != header::CONTENT_TYPE
            && name != header::CONTENT_LENGTH
            && name != header::CONTENT_ENCODING
        {
            out.headers_mut().append(name.clone(), value.clone());
        }
    }
    Ok(actix_web::dev::ServiceResponse::new(req, out).map_into_right_body())
}

/// The `RateLimit-*` headers of a public read that passed the per-address limiter
/// ([`extract::ReadLimit`]), on whatever it is answered (a 404 or a bad parameter counted too).
pub fn read_limit_headers<B>(res: &mut actix_web::dev::ServiceResponse<B>) {
    use actix_web::http::header::{HeaderName, HeaderValue};
    use actix_web::HttpMessage;
    let Some(info) = res
        .request()
        .extensions()
        .get::<crate::error::RateInfo>()
        .copied()
    else {
        return;
    };
    let h = res.headers_mut();
    for (name, value) in crate::error::rate_header_values(&info) {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(&value),
        ) {
            h.insert(name, value);
        }
    }
}

/// The security headers, in one place for every response (routes, static files, errors):
/// `Content-Security-Policy` ([`csp_for`]), `X-Frame-Options: DENY` (older browsers' framing
/// ban), `X-Content-Type-Options: nosniff` (every file is served with its real type) and
/// `Referrer-Policy: no-referrer` (page URLs carry board, player and cursor names).
pub fn security_headers<B>(res: &mut actix_web::dev::ServiceResponse<B>) {
    use actix_web::http::header::{self, HeaderValue};
    let html = res
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.trim_start().to_ascii_lowercase().starts_with("text/html"));
    let csp = csp_for(res.request().path(), html);
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(csp),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
}
