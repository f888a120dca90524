//! Who is asking. Players are known only from a signed token (HS256 JWT: `sub` = player id,
//! `exp` required, `nbf` honoured, optional `name`); admins present a bearer token compared in
//! constant time. Secrets never print.

use std::fmt;

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use scorecast_shared::{ErrorCode, Id};
use serde::{Deserialize, Serialize};
use subtle::ConstantTimeEq;

use crate::error::AppError;

/// Leeway for `exp` and `nbf`, seconds (`docs/protocol.md`, "Tokens").
pub const LEEWAY_S: u64 = 30;
/// Display names are kept short and printable.
pub const MAX_NAME_CHARS: usize = 64;

/// A secret string: `Debug` and `Display` never show it.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub fn new(s: impl Into<String>) -> Secret {
        Secret(s.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }

    /// 32 random bytes, hex.
    pub fn generate() -> Secret {
        let bytes: [u8; 32] = rand::random();
        Secret(bytes.iter().map(|b| format!("{b:02x}")).collect())
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

#[derive(Debug, Serialize, Deserialize)]
pub struct Claims {
    pub sub: String,
    pub exp: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nbf: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// A verified player.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Player {
    pub id: Id,
    pub name: Option<String>,
    /// Token expiry, seconds since the epoch.
    pub exp: u64,
}

impl Player {
    /// Whether the token has expired (with the leeway) at `now_s`.
    pub fn expired(&self, now_s: u64) -> bool {
        now_s > self.exp + LEEWAY_S
    }
}

#[derive(Clone)]
pub struct Tokens {
    enc: EncodingKey,
    dec: DecodingKey,
    validation: Validation,
}

fn unauthorized(msg: impl Into<String>) -> AppError {
    AppError::new(ErrorCode::Unauthorized, msg)
}

impl Tokens {
    pub fn new(secret: &Secret) -> Tokens {
        let mut validation = Validation::new(Algorithm::HS256);
        validation.leeway = LEEWAY_S;
        validation.validate_nbf = true;
        validation.set_required_spec_claims(&["exp", "sub"]);
        Tokens {
            enc: EncodingKey::from_secret(secret.expose().as_bytes()),
            dec: DecodingKey::from_secret(secret.expose().as_bytes()),
            validation,
        }
    }

    /// Verifies a player token: HS256 only (never `none`), `exp` required.
    pub fn verify(&self, token: &str) -> Result<Player, AppError> {
        let data = jsonwebtoken::decode::<Claims>(token, &self.dec, &self.validation)
            .map_err(|e| unauthorized(format!("invalid token: {e}")))?;
        let id =
            Id::parse(&data.claims.sub).map_err(|e| unauthorized(format!("token subject: {e}")))?;
        Ok(Player {
            id,
            name: data.claims.name.map(clean_name).filter(|n| !n.is_empty()),
            exp: data.claims.exp,
        })
    }

    pub fn issue(&self, player: &Id, name: Option<&str>, ttl_s: u64) -> String {
        let now = chrono::Utc::now().timestamp().max(0) as u64;
        let claims = Claims {
            sub: player.to_string(),
            exp: now + ttl_s,
            nbf: None,
            name: name.map(str::to_owned),
        };
        // unwrap: HS256 signing of plain claims cannot fail.
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &self.enc).unwrap()
    }
}

/// Keeps display names printable and short.
pub fn clean_name(name: String) -> String {
    name.chars()
        .filter(|c| !c.is_control())
        .take(MAX_NAME_CHARS)
        .collect::<String>()
        .trim()
        .to_owned()
}

/// Constant-time comparison of a presented admin token with the configured one.
pub fn admin_ok(presented: Option<&str>, expected: &Secret) -> bool {
    match presented {
        Some(p) => bool::from(p.as_bytes().ct_eq(expected.expose().as_bytes())),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_do_not_print() {
        let s = Secret::new("hunter2-hunter2-hunter2-hunter2-x");
        assert_eq!(format!("{s:?}"), "Secret(***)");
    }

    #[test]
    fn tokens_round_trip_and_other_secrets_fail() {
        let t = Tokens::new(&Secret::generate());
        let alice = Id::parse("alice").unwrap();
        let p = t.verify(&t.issue(&alice, Some("Alice"), 60)).unwrap();
        assert_eq!(p.id, alice);
        assert_eq!(p.name.as_deref(), Some("Alice"));
        let other = Tokens::new(&Secret::generate());
        assert!(other.verify(&t.issue(&alice, None, 60)).is_err());
    }

    #[test]
    fn admin_token_must_match_exactly() {
        let s = Secret::new("x".repeat(32));
        assert!(admin_ok(Some(&"x".repeat(32)), &s));
        assert!(!admin_ok(Some(&"x".repeat(31)), &s));
        assert!(!admin_ok(None, &s));
    }
}
