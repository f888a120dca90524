//! The HTTP API (`docs/protocol.md`, "HTTP API"): public reads under `/v1`, admin endpoints
//! under `/admin`, operations endpoints, and the web pages.

pub mod admin;
pub mod extract;
pub mod ops;
pub mod public;
pub mod queues;

use actix_web::error::{JsonPayloadError, PathError, QueryPayloadError};
use actix_web::web;
use scorecast_shared::ErrorCode;

use crate::error::AppError;

/// Request bodies above this are refused with 413 `payload_too_large`.
pub const MAX_BODY: usize = 64 * 1024;

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
        .configure(queues::routes);
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
