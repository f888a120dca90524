//! Who is asking. Players are known only from a signed token (HS256 JWT: `sub` = player id,
//! `exp` required and at most `auth.max_token_lifetime_s` ahead, `nbf` honoured, `iat` checked
//! against revocations, optional `name`), verified with the current token secret or, during a
//! rotation, the previous one; operators and game servers present a named bearer key of one
//! [`Scope`], found in constant time. Secrets never print.

use std::fmt;

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use scorecast_shared::{ErrorCode, Id};
use serde::{Deserialize, Serialize};
use subtle::{ConditionallySelectable, ConstantTimeEq};

pub use crate::config::{Scope, Secret, ADMIN_TOKEN_NAME, DEFAULT_MAX_TOKEN_LIFETIME_S};
use crate::error::AppError;
use crate::revocation::Revocations;

/// Leeway for `exp` and `nbf`, seconds (`docs/protocol.md`, "Tokens").
pub const LEEWAY_S: u64 = 30;
/// Display names are kept short and printable.
pub const MAX_NAME_CHARS: usize = 64;
#[derive(Debug, Serialize, Deserialize)]
pub struct Claims {
    // `sub`, `exp` and `nbf` are checked by jsonwebtoken after they are read here: read as it
    // reads them (a fractional NumericDate is rounded), a missing or malformed one is refused by
    // those checks with its name (a missing claim, a claim's format), not as a JSON error.
    #[serde(default)]
    pub sub: String,
    #[serde(default, deserialize_with = "whole_seconds")]
    pub exp: u64,
    /// Issued at, seconds since the epoch; tokens issued here carry milliseconds (a JWT
    /// NumericDate may be fractional), so a token issued right after a revocation is not
    /// mistaken for one issued before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iat: Option<f64>,
    #[serde(
        default,
        deserialize_with = "whole_seconds_if_any",
        skip_serializing_if = "Option::is_none"
    )]
    pub nbf: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// An audience of any form is refused (Scorecast has none): jsonwebtoken refuses a string or
    /// an array, and this catches what it cannot read (a number, an object).
    #[serde(default, skip_serializing)]
    pub aud: Option<serde_json::Value>,
}

/// A NumericDate as jsonwebtoken reads it for its checks: seconds since the epoch, a fraction
/// rounded; 0 for anything else, which those checks refuse (see [`Claims`]).
fn whole_seconds<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    Ok(whole_seconds_if_any(d)?.unwrap_or(0))
}

fn whole_seconds_if_any<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let v = serde_json::Value::deserialize(d)?;
    Ok(v.as_u64().or_else(|| {
        v.as_f64()
            .filter(|f| f.is_finite() && *f >= 0.0)
            .map(|f| f.round() as u64)
    }))
}

/// A verified player.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Player {
    pub id: Id,
    pub name: Option<String>,
    /// Token expiry, seconds since the epoch.
    pub exp: u64,
    /// When the token was issued, ms since the epoch; 0 for a token without `iat`, which any
    /// revocation of the player therefore covers.
    pub issued_at_ms: i64,
    revocations: Revocations,
}

impl Player {
    /// Whether the token is no longer good at `now_s`: expired (with the leeway), or revoked
    /// since it was issued. Checked before every submission of a session, so a revocation also
    /// stops sessions that authenticated before it.
    pub fn expired(&self, now_s: u64) -> bool {
        now_s > self.exp + LEEWAY_S || self.revoked()
    }

    /// Whether the player's tokens were revoked after this one was issued.
    pub fn revoked(&self) -> bool {
        self.revocations.revoked(&self.id, self.issued_at_ms)
    }
}

#[derive(Clone)]
pub struct Tokens {
    enc: EncodingKey,
    /// The current secret first, then the previous one while a rotation lasts.
    dec: Vec<DecodingKey>,
    validation: Validation,
    max_lifetime_s: u64,
    revocations: Revocations,
}

fn unauthorized(msg: impl Into<String>) -> AppError {
    AppError::new(ErrorCode::Unauthorized, msg)
}

/// Why jsonwebtoken refused `token`, in words a client's developer can act on
/// (`docs/protocol.md`, "Tokens").
fn refusal(e: &jsonwebtoken::errors::Error, token: &str) -> String {
    use jsonwebtoken::errors::ErrorKind as K;
    // The header's `alg`, read as it is written (jsonwebtoken names the algorithms it knows).
    let alg = || {
        use base64::Engine as _;
        let header = token.split('.').next()?;
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(header.trim_end_matches('='))
            .ok()?;
        let v: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
        v.get("alg")
            .map(|a| a.as_str().map_or(a.to_string(), str::to_owned))
    };
    match e.kind() {
        K::ExpiredSignature => "expired (exp)".into(),
        K::ImmatureSignature => "not valid yet (nbf)".into(),
        K::InvalidSignature => "bad signature (signed with another secret?)".into(),
        K::InvalidAudience => "an aud claim is refused (Scorecast has no audience)".into(),
        K::InvalidClaimFormat(claim) => {
            format!("{claim} must be a number of seconds since the epoch")
        }
        K::MissingRequiredClaim(claim) => format!("the {claim} claim is missing or malformed"),
        _ => match alg() {
            Some(alg) if alg != "HS256" => {
                format!("alg {alg} is refused: only HS256 tokens are accepted")
            }
            _ => e.to_string(),
        },
    }
}

impl Tokens {
    pub fn new(secret: &Secret) -> Tokens {
        let mut validation = Validation::new(Algorithm::HS256);
        validation.leeway = LEEWAY_S;
        validation.validate_nbf = true;
        validation.set_required_spec_claims(&["exp", "sub"]);
        Tokens {
            enc: EncodingKey::from_secret(secret.expose().as_bytes()),
            dec: vec![DecodingKey::from_secret(secret.expose().as_bytes())],
            validation,
            max_lifetime_s: DEFAULT_MAX_TOKEN_LIFETIME_S,
            revocations: Revocations::default(),
        }
    }

    /// Also accepts tokens signed with `previous` (a secret being rotated out); new tokens are
    /// still signed with the current one.
    pub fn with_previous(mut self, previous: Option<&Secret>) -> Tokens {
        self.dec.truncate(1);
        if let Some(p) = previous {
            self.dec
                .push(DecodingKey::from_secret(p.expose().as_bytes()));
        }
        self
    }

    /// The same keys with a maximum token lifetime and this instance's revocations.
    pub fn with_limits(mut self, max_lifetime_s: u64, revocations: Revocations) -> Tokens {
        self.max_lifetime_s = max_lifetime_s;
        self.revocations = revocations;
        self
    }

    /// The longest a token may live, seconds.
    pub fn max_lifetime_s(&self) -> u64 {
        self.max_lifetime_s
    }

    pub fn revocations(&self) -> &Revocations {
        &self.revocations
    }

    /// How long a revocation must be kept: until every token it covers has expired.
    pub fn revocation_keep_ms(&self) -> u64 {
        (self.max_lifetime_s + 2 * LEEWAY_S) * 1000
    }

    /// Verifies a player token: HS256 only (never `none`), `exp` required and no further than
    /// the maximum lifetime ahead, `iat` (when present) not in the future, not revoked.
    pub fn verify(&self, token: &str) -> Result<Player, AppError> {
        // The current secret, then the previous one: a token that fails both is reported with
        // the current secret's reason.
        let mut first_err = None;
        let mut decoded = None;
        for key in &self.dec {
            match jsonwebtoken::decode::<Claims>(token, key, &self.validation) {
                Ok(d) => {
                    decoded = Some(d);
                    break;
                }
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        let data = match (decoded, first_err) {
            (Some(d), _) => d,
            (None, Some(e)) => {
                return Err(unauthorized(format!(
                    "invalid token: {}",
                    refusal(&e, token)
                )))
            }
            (None, None) => return Err(unauthorized("invalid token: no token secret")),
        };
        if data.claims.aud.is_some() {
            return Err(unauthorized(
                "invalid token: an aud claim is refused (Scorecast has no audience)",
            ));
        }
        let id =
            Id::parse(&data.claims.sub).map_err(|e| unauthorized(format!("token subject: {e}")))?;
        let now_ms = chrono::Utc::now().timestamp_millis();
        let now_s = now_ms.max(0) as u64 / 1000;
        if data.claims.exp > now_s + self.max_lifetime_s + LEEWAY_S {
            return Err(unauthorized(format!(
                "the token lives too long: exp may be at most {} s from now",
                self.max_lifetime_s
            )));
        }
        let issued_at_ms = match data.claims.iat {
            None => 0,
            Some(iat) if iat.is_finite() && iat >= 0.0 => (iat * 1000.0).floor() as i64,
            Some(_) => return Err(unauthorized("invalid token: iat is not a time")),
        };
        if issued_at_ms > now_ms + (LEEWAY_S * 1000) as i64 {
            return Err(unauthorized("invalid token: issued in the future (iat)"));
        }
        // With `iat`, the lifetime is bounded from the issue time too, so every token that a
        // revocation covers has expired when its record is dropped (see `revocation_keep_ms`).
        if data.claims.iat.is_some()
            && (data.claims.exp as i64).saturating_mul(1000) - issued_at_ms
                > ((self.max_lifetime_s + LEEWAY_S) * 1000) as i64
        {
            return Err(unauthorized(format!(
                "the token lives too long: exp may be at most {} s after iat",
                self.max_lifetime_s
            )));
        }
        let player = Player {
            id,
            name: data.claims.name.map(clean_name).filter(|n| !n.is_empty()),
            exp: data.claims.exp,
            issued_at_ms,
            revocations: self.revocations.clone(),
        };
        if player.revoked() {
            return Err(unauthorized(format!(
                "the tokens of {} issued before their revocation are no longer valid",
                player.id
            )));
        }
        Ok(player)
    }

    /// A token for `player` living `ttl_s` seconds (callers bound it by the maximum lifetime).
    pub fn issue(&self, player: &Id, name: Option<&str>, ttl_s: u64) -> String {
        let now_ms = chrono::Utc::now().timestamp_millis().max(0);
        let claims = Claims {
            sub: player.to_string(),
            exp: now_ms as u64 / 1000 + ttl_s,
            iat: Some(now_ms as f64 / 1000.0),
            nbf: None,
            name: name.map(str::to_owned),
            aud: None,
        };
        // unwrap: HS256 signing of plain claims cannot fail.
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &self.enc).unwrap()
    }
}

/// Characters that reorder or hide the text around them: the bidirectional controls (which can
/// make a name render backwards or swallow the rank beside it), line and paragraph separators,
/// the byte-order mark, and the characters that render as nothing or as a blank (zero-width
/// space, word joiner and invisible operators, soft hyphen, combining grapheme joiner, the
/// Hangul and Khmer fillers, the Braille blank, the Mongolian vowel separator, deprecated format
/// characters, interlinear annotation marks, musical formatting marks). Zero-width (non-)joiners,
/// variation selectors and tag characters are handled in [`clean_name`].
fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'                  // SOFT HYPHEN
            | '\u{034F}'            // COMBINING GRAPHEME JOINER
            | '\u{061C}'            // ARABIC LETTER MARK
            | '\u{115F}' | '\u{1160}' | '\u{3164}' | '\u{FFA0}' // Hangul fillers
            | '\u{17B4}' | '\u{17B5}' // Khmer inherent vowels
            | '\u{180E}'            // MONGOLIAN VOWEL SEPARATOR
            | '\u{200B}'            // ZERO WIDTH SPACE
            | '\u{200E}' | '\u{200F}' // LRM, RLM
            | '\u{2028}' | '\u{2029}' // line and paragraph separators
            | '\u{202A}'..='\u{202E}' // LRE, RLE, PDF, LRO, RLO
            | '\u{2060}'..='\u{2064}' // word joiner, invisible operators
            | '\u{2066}'..='\u{206F}' // LRI, RLI, FSI, PDI, deprecated format characters
            | '\u{2800}'            // BRAILLE PATTERN BLANK
            | '\u{FEFF}'            // byte-order mark / zero-width no-break space
            | '\u{FFF9}'..='\u{FFFB}' // interlinear annotation
            | '\u{1D173}'..='\u{1D17A}' // musical symbol formatting
    )
}

/// ZERO WIDTH NON-JOINER and ZERO WIDTH JOINER: needed inside emoji sequences and several
/// scripts, meaningless (and invisible) anywhere else.
fn is_joiner(c: char) -> bool {
    matches!(c, '\u{200C}' | '\u{200D}')
}

/// Variation selectors: they change how the character before them looks, and are invisible
/// without one.
fn is_variation_selector(c: char) -> bool {
    matches!(c, '\u{FE00}'..='\u{FE0F}' | '\u{E0100}'..='\u{E01EF}')
}

/// Tag characters (U+E0000–U+E007F): invisible, and only meaningful in an emoji tag sequence.
fn is_tag(c: char) -> bool {
    matches!(c, '\u{E0000}'..='\u{E007F}')
}

/// BLACK FLAG, the base of the subdivision flags (e.g. Scotland: U+1F3F4, the tags `gbsct`,
/// CANCEL TAG).
const TAG_BASE: char = '\u{1F3F4}';
const CANCEL_TAG: char = '\u{E007F}';

/// The length of the emoji tag sequence at the start of `rest` (right after a [`TAG_BASE`]):
/// 1 to 6 tag letters or digits and [`CANCEL_TAG`]; `None` if it is not one.
fn tag_sequence(rest: &[char]) -> Option<usize> {
    let spec = rest
        .iter()
        .take_while(|c| matches!(c, '\u{E0030}'..='\u{E0039}' | '\u{E0061}'..='\u{E007A}'))
        .count();
    ((1..=6).contains(&spec) && rest.get(spec) == Some(&CANCEL_TAG)).then_some(spec + 1)
}

/// One pass of [`clean_name`]: drops control and invisible characters, tag characters outside an
/// emoji tag sequence, a joiner that does not stand between two kept characters, and a variation
/// selector with no character before it.
fn drop_invisible(chars: &[char]) -> Vec<char> {
    let mut out: Vec<char> = Vec::with_capacity(chars.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        if c.is_control() || is_invisible(c) || is_tag(c) {
            continue;
        }
        if is_joiner(c) {
            let after = chars[i..]
                .iter()
                .find(|n| !(n.is_control() || is_invisible(**n) || is_tag(**n)));
            let before_ok = out
                .last()
                .is_some_and(|p| !is_joiner(*p) && !p.is_whitespace());
            let after_ok = after.is_some_and(|n| {
                !is_joiner(*n) && !is_variation_selector(*n) && !n.is_whitespace()
            });
            if before_ok && after_ok {
                out.push(c);
            }
            continue;
        }
        if is_variation_selector(c) && out.last().is_none_or(|p| p.is_whitespace()) {
            continue;
        }
        out.push(c);
        if c == TAG_BASE {
            if let Some(n) = tag_sequence(&chars[i..]) {
                out.extend_from_slice(&chars[i..i + n]);
                i += n;
            }
        }
    }
    out
}

/// Keeps display names printable, visible and short: control characters, bidirectional controls
/// and characters that render as nothing are dropped ([`is_invisible`]); zero-width
/// (non-)joiners are kept only between two visible characters, variation selectors only after
/// one, and tag characters only in an emoji tag sequence after a black flag (the subdivision
/// flags); then at most [`MAX_NAME_CHARS`] characters, trimmed. Markup is kept as text: the
/// pages render names with `textContent`, never as HTML.
pub fn clean_name(name: String) -> String {
    let chars: Vec<char> = name.chars().collect();
    let mut kept = drop_invisible(&chars);
    kept.truncate(MAX_NAME_CHARS);
    // Truncating or trimming may leave a joiner at an end or cut a tag sequence: clean again.
    let trimmed: Vec<char> = kept.iter().collect::<String>().trim().chars().collect();
    drop_invisible(&trimmed)
        .into_iter()
        .collect::<String>()
        .trim()
        .to_owned()
}

/// A configured bearer key: its name (what the audit log records), scope, and the SHA-256
/// digest of its secret (the secret itself is not kept).
#[derive(Clone)]
pub struct ApiKey {
    pub name: String,
    pub scope: Scope,
    digest: [u8; 32],
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApiKey")
            .field("name", &self.name)
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

fn digest(s: &str) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(s.as_bytes()).into()
}

/// Whether `presented` is `expected`, compared in constant time (over digests, so the
/// lengths tell nothing either).
pub fn token_ok(presented: Option<&str>, expected: &Secret) -> bool {
    presented.is_some_and(|p| bool::from(digest(p).ct_eq(&digest(expected.expose()))))
}

/// Every configured bearer key.
#[derive(Clone, Debug, Default)]
pub struct KeyRing {
    keys: Vec<ApiKey>,
}

impl KeyRing {
    /// The admin token (named [`ADMIN_TOKEN_NAME`], scope admin) and the named keys.
    pub fn new<'a>(
        admin_token: &Secret,
        named: impl IntoIterator<Item = (&'a str, Scope, &'a Secret)>,
    ) -> KeyRing {
        let mut keys = vec![ApiKey {
            name: ADMIN_TOKEN_NAME.into(),
            scope: Scope::Admin,
            digest: digest(admin_token.expose()),
        }];
        keys.extend(named.into_iter().map(|(name, scope, secret)| ApiKey {
            name: name.to_owned(),
            scope,
            digest: digest(secret.expose()),
        }));
        KeyRing { keys }
    }

    /// The key `presented` is, if any. Compares its SHA-256 digest with every key's in constant
    /// time (digests of one length, no early exit, no branch on a comparison), so the time
    /// taken does not say which key matched, nor how much or how long a key is.
    pub fn find(&self, presented: &str) -> Option<&ApiKey> {
        let presented = digest(presented);
        let mut found = 0u32; // 1-based index; 0 = none
        for (i, k) in self.keys.iter().enumerate() {
            let eq = presented.ct_eq(&k.digest);
            found = u32::conditional_select(&found, &(i as u32 + 1), eq);
        }
        found.checked_sub(1).and_then(|i| self.keys.get(i as usize))
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
    fn tokens_beyond_the_maximum_lifetime_are_refused() {
        let t = Tokens::new(&Secret::generate()).with_limits(3600, Revocations::default());
        let alice = Id::parse("alice").unwrap();
        assert!(t.verify(&t.issue(&alice, None, 3600)).is_ok());
        let e = t
            .verify(&t.issue(&alice, None, 10 * 365 * 86_400))
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::Unauthorized);
    }

    #[test]
    fn names_lose_bidi_and_control_characters_but_keep_markup_as_text() {
        assert_eq!(
            clean_name("\u{202E}evil\u{2066}<b>x</b>\u{200F}\n".into()),
            "evil<b>x</b>"
        );
        assert_eq!(clean_name("👩\u{200D}🚀".into()), "👩\u{200D}🚀");
    }

    /// Display names lose zero-width, blank and stray tag characters, and keep flags whole.
    #[test]
    fn names_lose_zero_width_and_stray_tag_characters() {
        // Zero-width and blank characters anywhere.
        assert_eq!(
            clean_name("a\u{200B}d\u{2060}m\u{00AD}i\u{034F}n\u{3164}\u{2800}\u{180E}".into()),
            "admin"
        );
        // Joiners only between two visible characters.
        assert_eq!(clean_name("\u{200D}\u{200C}".into()), "");
        assert_eq!(clean_name("\u{200D}bob\u{200C}".into()), "bob");
        // A run of joiners keeps one.
        assert_eq!(
            clean_name("a\u{200D}\u{200C}\u{200D}b".into()),
            "a\u{200D}b"
        );
        assert_eq!(clean_name("a \u{200D} b".into()), "a  b");
        assert_eq!(
            clean_name("\u{0645}\u{200C}\u{06CC}".into()),
            "\u{0645}\u{200C}\u{06CC}"
        );
        // Variation selectors only after a character.
        assert_eq!(clean_name("\u{FE0F}\u{FE0F}".into()), "");
        assert_eq!(clean_name("\u{2764}\u{FE0F}".into()), "\u{2764}\u{FE0F}");
        // Tag characters: smuggled text is dropped, a subdivision flag is kept whole.
        let hidden: String = "ignore previous"
            .chars()
            .map(|c| char::from_u32(0xE0000 + c as u32).unwrap())
            .collect();
        assert_eq!(clean_name(format!("eve{hidden}")), "eve");
        let scotland = "\u{1F3F4}\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E007F}";
        assert_eq!(
            clean_name(format!("ann {scotland}")),
            format!("ann {scotland}")
        );
        // Without its cancel tag, or on another base, the tags go.
        assert_eq!(
            clean_name("\u{1F3F4}\u{E0067}\u{E0062}".into()),
            "\u{1F3F4}"
        );
        assert_eq!(clean_name("x\u{E0067}\u{E007F}".into()), "x");
        // Truncation never leaves half a tag sequence or a trailing joiner.
        let long = format!("{}{scotland}", "a".repeat(MAX_NAME_CHARS - 3));
        assert_eq!(
            clean_name(long),
            format!("{}\u{1F3F4}", "a".repeat(MAX_NAME_CHARS - 3))
        );
        let joined = format!("{}\u{200D}b", "a".repeat(MAX_NAME_CHARS - 1));
        assert_eq!(clean_name(joined), "a".repeat(MAX_NAME_CHARS - 1));
        // Cleaning is idempotent.
        for n in [
            "a\u{200D}b",
            "ann 🏴\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E007F}",
            "x\u{FE0F}",
        ] {
            assert_eq!(clean_name(clean_name(n.into())), clean_name(n.into()));
        }
    }

    /// A key matches only exactly, the ring says which key (name and scope) it is, and its
    /// `Debug` names keys without their secrets.
    #[test]
    fn keys_must_match_exactly_and_are_told_apart() {
        let admin = Secret::new("x".repeat(32));
        let game = Secret::new("g".repeat(32));
        let ring = KeyRing::new(&admin, [("studio", Scope::GameServer, &game)]);
        let k = ring.find(&"x".repeat(32)).unwrap();
        assert_eq!((k.name.as_str(), k.scope), (ADMIN_TOKEN_NAME, Scope::Admin));
        let k = ring.find(&"g".repeat(32)).unwrap();
        assert_eq!((k.name.as_str(), k.scope), ("studio", Scope::GameServer));
        assert!(ring.find(&"x".repeat(31)).is_none());
        assert!(ring.find(&"x".repeat(33)).is_none());
        assert!(ring.find("").is_none());
        let printed = format!("{ring:?}");
        assert!(printed.contains("studio") && !printed.contains(&"g".repeat(32)));
    }

    /// Scopes nest: admin does everything, a game server also reads, a reader only reads.
    #[test]
    fn scopes_nest() {
        use Scope::*;
        assert!(Admin.allows(GameServer) && Admin.allows(Read) && Admin.allows(Admin));
        assert!(GameServer.allows(Read) && GameServer.allows(GameServer));
        assert!(!GameServer.allows(Admin));
        assert!(Read.allows(Read) && !Read.allows(GameServer) && !Read.allows(Admin));
    }

    /// During a rotation a token signed with either secret verifies; new tokens are signed with
    /// the current one; once the previous secret is dropped its tokens are refused.
    #[test]
    fn a_rotation_accepts_both_secrets_and_signs_with_the_new() {
        let (old, new) = (Secret::generate(), Secret::generate());
        let alice = Id::parse("alice").unwrap();
        let before = Tokens::new(&old).issue(&alice, None, 60);
        let rotating = Tokens::new(&new).with_previous(Some(&old));
        assert_eq!(rotating.verify(&before).unwrap().id, alice);
        let fresh = rotating.issue(&alice, None, 60);
        assert!(
            Tokens::new(&new).verify(&fresh).is_ok(),
            "signed with the new"
        );
        assert!(
            Tokens::new(&old).verify(&fresh).is_err(),
            "not with the old"
        );
        let after = Tokens::new(&new);
        assert_eq!(
            after.verify(&before).unwrap_err().code,
            ErrorCode::Unauthorized
        );
    }
}
