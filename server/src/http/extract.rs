//! Request guards: the bearer key of each scope, a player's token, and the per-address limiter
//! on public reads; and [`Object`], every JSON request body.
//!
//! Each `/admin` endpoint states the scope it needs in one place, by taking one of [`Admin`],
//! [`GameServer`] or [`Reader`] as an argument: a request without a known key is refused 401
//! `unauthorized`, a known key of a narrower scope 403 `forbidden`, before the handler runs (so
//! nothing changes). Each guard carries the key's name, which audited actions record.

use std::future::Future;
use std::pin::Pin;

use actix_web::{web, FromRequest, HttpMessage, HttpRequest};
use scorecast_shared::ErrorCode;

use crate::auth::{self, Scope};
use crate::error::AppError;
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
/// The scheme's name is case-insensitive (RFC 9110): `bearer` and `BEARER` are `Bearer`.
pub fn bearer(req: &HttpRequest) -> Option<&str> {
    let v = req.headers().get("authorization")?.to_str().ok()?;
    let (scheme, credential) = v.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| credential.trim_start())
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
/// What the limiter said goes with the request, for the answer's headers.
pub struct ReadLimit;

impl FromRequest for ReadLimit {
    type Error = AppError;
    type Future = Pin<Box<dyn Future<Output = Result<ReadLimit, AppError>>>>;

    fn from_request(req: &HttpRequest, _: &mut actix_web::dev::Payload) -> Self::Future {
        let st = state(req);
        let addr = st
            .settings
            .client_ip(req.peer_addr(), req.headers())
            .map_or_else(|| "unknown".into(), |ip| ip.to_string());
        let req = req.clone();
        Box::pin(async move {
            let policy = &st.settings.public_limit;
            let info = st.limiter.try_acquire(policy, &addr).await?;
            if info.allowed {
                // Whatever the answer (a 404 counted too), it carries the headers
                // (`super::read_limit_headers`).
                req.extensions_mut().insert(info);
                Ok(ReadLimit)
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

/// A JSON request body read as `T`, which must be a JSON object: serde would read a struct from
/// an array of its fields in order (`[]` would pass as every default). Anything else is 400
/// `bad_request` (`malformed body: …`), a body above [`super::MAX_BODY`] 413.
pub struct Object<T>(pub T);

impl<T> Object<T> {
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> std::ops::Deref for Object<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: serde::de::DeserializeOwned + 'static> FromRequest for Object<T> {
    type Error = actix_web::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self, Self::Error>>>>;

    fn from_request(req: &HttpRequest, payload: &mut actix_web::dev::Payload) -> Self::Future {
        // The body limit and the refusals of unreadable JSON are `super::json_config`'s.
        // Raw, so that what `T` keeps as sent (a job's payload) is read from the text itself.
        let json = web::Json::<Box<serde_json::value::RawValue>>::from_request(req, payload);
        Box::pin(async move {
            let raw = json.await?.into_inner();
            object(raw.get())
                .map(Object)
                .map_err(|e| AppError::bad_request(format!("malformed body: {e}")).into())
        })
    }
}

/// `text`, a JSON object, as `T` (an array of `T`'s fields is refused).
pub fn object<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, String> {
    if !text.trim_start().starts_with('{') {
        return Err("a JSON object is expected".into());
    }
    serde_json::from_str(text).map_err(|e| e.to_string())
}
