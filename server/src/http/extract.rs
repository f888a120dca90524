//! Request guards: the bearer key of each scope, a player's token, and the per-address limiter
//! on public reads.
//!
//! Each `/admin` endpoint states the scope it needs in one place, by taking one of [`Admin`],
//! [`GameServer`] or [`Reader`] as an argument: a request without a known key is refused 401
//! `unauthorized`, a known key of a narrower scope 403 `forbidden`, before the handler runs (so
//! nothing changes). Each guard carries the key's name, which audited actions record.

use std::future::Future;
use std::pin::Pin;

use actix_web::{web, FromRequest, HttpRequest};
use scorecast_shared::ErrorCode;

use crate::auth::{self, Scope};
use crate::error::{AppError, RateInfo};
use crate::state::AppState;

fn state(req: &HttpRequest) -> AppState {
    // unwrap: AppState is registered as app data by startup before any route.
    req.app_data::<web::Data<AppState>>()
        .unwrap()
        .get_ref()
        .clone()
}

/// The name of the key that made a request (never its secret).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyName(pub String);

impl KeyName {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The credential of `Authorization: Bearer <credential>`, if the request has one.
pub fn bearer(req: &HttpRequest) -> Option<&str> {
    req.headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
}

/// The key a request carries, if it is allowed `needed`.
fn authorize(req: &HttpRequest, needed: Scope) -> Result<KeyName, AppError> {
    let st = state(req);
    let presented = bearer(req);
    let Some(key) = presented.and_then(|p| st.keys.find(p)) else {
        return Err(AppError::new(
            ErrorCode::Unauthorized,
            "this endpoint needs Authorization: Bearer <key> (the admin token or a named key)",
        ));
    };
    if !key.scope.allows(needed) {
        return Err(AppError::new(
            ErrorCode::Forbidden,
            format!(
                "key {} has scope {}; this endpoint needs scope {}{}",
                key.name,
                key.scope.as_str(),
                needed.as_str(),
                if needed == Scope::Admin {
                    ""
                } else {
                    " or admin"
                }
            ),
        ));
    }
    Ok(KeyName(key.name.clone()))
}

macro_rules! scope_guard {
    ($(#[$doc:meta])* $name:ident, $scope:expr) => {
        $(#[$doc])*
        pub struct $name(pub KeyName);

        impl FromRequest for $name {
            type Error = AppError;
            type Future = std::future::Ready<Result<$name, AppError>>;

            fn from_request(req: &HttpRequest, _: &mut actix_web::dev::Payload) -> Self::Future {
                std::future::ready(authorize(req, $scope).map($name))
            }
        }
    };
}

scope_guard!(
    /// Present in a handler's arguments: the request carried a key of scope `admin`.
    Admin,
    Scope::Admin
);
scope_guard!(
    /// Present in a handler's arguments: the request carried a key of scope `game_server` (or
    /// `admin`).
    GameServer,
    Scope::GameServer
);
scope_guard!(
    /// Present in a handler's arguments: the request carried a key of any scope (`read` is the
    /// narrowest).
    Reader,
    Scope::Read
);

/// Present in a handler's arguments: the request carried a valid player token
/// (`Authorization: Bearer <player token>`, checked as `hello` checks it: signature, lifetime,
/// revocation).
pub struct PlayerAuth(pub auth::Player);

impl FromRequest for PlayerAuth {
    type Error = AppError;
    type Future = std::future::Ready<Result<PlayerAuth, AppError>>;

    fn from_request(req: &HttpRequest, _: &mut actix_web::dev::Payload) -> Self::Future {
        let st = state(req);
        std::future::ready(match bearer(req) {
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
        let addr = st
            .settings
            .client_ip(req.peer_addr(), req.headers())
            .map_or_else(|| "unknown".into(), |ip| ip.to_string());
        Box::pin(async move {
            let policy = &st.settings.public_limit;
            let info = st.limiter.try_acquire(policy, &addr).await?;
            if info.allowed {
                Ok(ReadLimit(info))
            } else {
                tracing::debug!(client = %addr, "public read limit reached");
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

impl std::fmt::Display for KeyName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
