//! One error type for every front door: a stable [`ErrorCode`] and a human message, rendered as
//! `{"error":{"code","message"}}` over HTTP (with rate-limit headers on 429) and as
//! `rejected`/`error` over WebSocket. Internal details are logged, never sent.

use std::fmt;

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use scorecast_shared::ErrorCode;
use serde::Serialize;

/// What a limiter said (`docs/protocol.md`, "Rate limits"): the fields behind the IETF
/// `RateLimit` headers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct RateInfo {
    pub allowed: bool,
    pub limit: u64,
    pub remaining: u64,
    pub retry_after_ms: u64,
    pub reset_ms: u64,
}

#[derive(Debug, Clone)]
pub struct AppError {
    pub code: ErrorCode,
    pub message: String,
    pub rate: Option<RateInfo>,
}

pub type AppResult<T> = Result<T, AppError>;

impl AppError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> AppError {
        AppError {
            code,
            message: message.into(),
            rate: None,
        }
    }

    pub fn bad_request(message: impl Into<String>) -> AppError {
        AppError::new(ErrorCode::BadRequest, message)
    }

    pub fn rate_limited(message: impl Into<String>, rate: RateInfo) -> AppError {
        AppError {
            code: ErrorCode::RateLimited,
            message: message.into(),
            rate: Some(rate),
        }
    }

    pub fn retry_after_ms(&self) -> Option<u64> {
        self.rate.map(|r| r.retry_after_ms)
    }
}

impl fmt::Display for AppError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl std::error::Error for AppError {}

impl From<redis::RedisError> for AppError {
    fn from(e: redis::RedisError) -> AppError {
        tracing::warn!(error = %e, "redis call failed");
        crate::metrics::REDIS_ERRORS.inc();
        AppError::new(
            ErrorCode::Unavailable,
            "the store is unreachable or did not answer in time; retry",
        )
    }
}

impl From<scorecast_shared::IdError> for AppError {
    fn from(e: scorecast_shared::IdError) -> AppError {
        AppError::new(ErrorCode::InvalidId, e.to_string())
    }
}

#[derive(Serialize)]
struct Body<'a> {
    error: Inner<'a>,
}

#[derive(Serialize)]
struct Inner<'a> {
    code: &'a str,
    message: &'a str,
}

/// Adds the IETF `RateLimit-*` headers (seconds, rounded up) and `Retry-After` when refused.
pub fn rate_headers(res: &mut actix_web::HttpResponseBuilder, r: &RateInfo) {
    for header in rate_header_values(r) {
        res.insert_header(header);
    }
}

/// The headers of [`rate_headers`], by name.
pub fn rate_header_values(r: &RateInfo) -> Vec<(&'static str, String)> {
    let secs = |ms: u64| ms.div_ceil(1000).to_string();
    let mut h = vec![
        ("RateLimit-Limit", r.limit.to_string()),
        ("RateLimit-Remaining", r.remaining.to_string()),
        ("RateLimit-Reset", secs(r.reset_ms)),
    ];
    if !r.allowed {
        h.push(("Retry-After", secs(r.retry_after_ms.max(1))));
    }
    h
}

impl ResponseError for AppError {
    fn status_code(&self) -> StatusCode {
        // unwrap: every code maps to a valid status in 400..=503.
        StatusCode::from_u16(self.code.http_status()).unwrap()
    }

    fn error_response(&self) -> HttpResponse {
        let mut res = HttpResponse::build(self.status_code());
        if let Some(r) = &self.rate {
            rate_headers(&mut res, r);
        }
        res.json(Body {
            error: Inner {
                code: self.code.as_str(),
                message: &self.message,
            },
        })
    }
}
