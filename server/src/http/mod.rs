//! The HTTP API (`docs/protocol.md`, "HTTP API"): public reads under `/v1`, admin endpoints
//! under `/admin`, operations endpoints, and the web pages.

pub mod admin;
pub mod console;
pub mod extract;
pub mod moderation;
pub mod ops;
pub mod public;
pub mod queues;
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

/// Refuses a request whose head is above [`MAX_HEAD`] bytes (as sent: `name: value\r\n` each).
pub fn check_head(head: &actix_web::dev::RequestHead) -> Result<(), HeadTooLarge> {
    let target = head.uri.path_and_query().map_or(0, |p| p.as_str().len())
        + head.uri.authority().map_or(0, |a| a.as_str().len());
    let size = head.method.as_str().len()
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
        .configure(validators::routes);
}

/// `/v1` reads allow any origin (no credentials), errors included, so a browser can
/// read a 429 and its `RateLimit-*` headers; `/admin` gets no CORS headers at all.
pub fn cors_v1<B>(res: &mut actix_web::dev::ServiceResponse<B>) {
    use actix_web::http::header::{HeaderName, HeaderValue};
    if res.request().path().starts_with("/v1/") {
        let h = res.headers_mut();
        h.insert(
            HeaderName::from_static("access-control-allow-origin"),
            HeaderValue::from_static("*"),
        );
        h.insert(
            HeaderName::from_static("access-control-expose-headers"),
            HeaderValue::from_static(
                "Retry-After, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset",
            ),
        );
    }
}
