//! Request guards: the admin bearer token, a player's token, and the per-address limiter on
//! public reads.

use std::future::Future;
use std::pin::Pin;

use actix_web::{web, FromRequest, HttpRequest};
use scorecast_shared::ErrorCode;

use crate::auth;
use crate::error::{AppError, RateInfo};
use crate::state::AppState;

fn state(req: &HttpRequest) -> AppState {
    // unwrap: AppState is registered as app data by startup before any route.
    req.app_data::<web::Data<AppState>>()
        .unwrap()
        .get_ref()
        .clone()
}

/// Present in a handler's arguments: the request carried the admin token.
pub struct Admin;

impl FromRequest for Admin {
    type Error = AppError;
    type Future = std::future::Ready<Result<Admin, AppError>>;

    fn from_request(req: &HttpRequest, _: &mut actix_web::dev::Payload) -> Self::Future {
        let st = state(req);
        let presented = req
            .headers()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        std::future::ready(if auth::admin_ok(presented, &st.admin_token) {
            Ok(Admin)
        } else {
            Err(AppError::new(
                ErrorCode::Unauthorized,
                "admin endpoints need Authorization: Bearer <admin token>",
            ))
        })
    }
}

/// Present in a handler's arguments: the request carried a valid player token
/// (`Authorization: Bearer <player token>`, checked as `hello` checks it: signature, lifetime,
/// revocation).
pub struct PlayerAuth(pub auth::Player);

impl FromRequest for PlayerAuth {
    type Error = AppError;
    type Future = std::future::Ready<Result<PlayerAuth, AppError>>;

    fn from_request(req: &HttpRequest, _: &mut actix_web::dev::Payload) -> Self::Future {
        let st = state(req);
        let presented = req
            .headers()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        std::future::ready(match presented {
            Some(token) => st.tokens.verify(token).map(PlayerAuth),
            None => Err(AppError::new(
                ErrorCode::Unauthorized,
                "this endpoint needs Authorization: Bearer <player token>",
            )),
        })
    }
}

/// Present in a handler's arguments: the client's address is within the public read limit.
pub struct ReadLimit(pub RateInfo);

impl FromRequest for ReadLimit {
    type Error = AppError;
    type Future = Pin<Box<dyn Future<Output = Result<ReadLimit, AppError>>>>;

    fn from_request(req: &HttpRequest, _: &mut actix_web::dev::Payload) -> Self::Future {
        let st = state(req);
        let addr = req
            .peer_addr()
            .map(|a| a.ip().to_string())
            .unwrap_or_else(|| "unknown".into());
        Box::pin(async move {
            let policy = &st.settings.public_limit;
            let info = st.limiter.try_acquire(policy, &addr).await?;
            if info.allowed {
                Ok(ReadLimit(info))
            } else {
                Err(AppError::rate_limited(
                    format!(
                        "at most {} reads per {} ms from one address",
                        policy.limit, policy.window_ms
                    ),
                    info,
                ))
            }
        })
    }
}
