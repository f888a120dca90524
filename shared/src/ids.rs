//! Ids of players, boards, seasons, queues, jobs and submissions (`docs/protocol.md`, "Ids"):
//! 1–64 characters of `[A-Za-z0-9_.-]`, at least one of them not a `.`. Anything else — braces
//! that would break Redis hash tags, colons that would forge key names, spaces, control
//! characters, and `.`, `..` or `...`, which read as paths in URLs and file names — is refused
//! before Redis is touched.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize};

pub const MAX_ID_LEN: usize = 64;

/// A validated id. Construct with [`Id::parse`]; the inner string is guaranteed valid.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct Id(String);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    #[error("id is empty")]
    Empty,
    #[error("id is longer than {MAX_ID_LEN} characters")]
    TooLong,
    // `escape_default`, not `{0:?}`: `Debug` of a char brings Unicode tables into the wasm module.
    #[error("id contains '{}'; allowed are A-Z a-z 0-9 _ . -", .0.escape_default())]
    BadChar(char),
    #[error("id is only dots; it needs at least one of A-Z a-z 0-9 _ -")]
    OnlyDots,
}

impl Id {
    pub fn parse(s: &str) -> Result<Id, IdError> {
        validate(s)?;
        Ok(Id(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

/// Checks `s` against the id alphabet and length.
pub fn validate(s: &str) -> Result<(), IdError> {
    if s.is_empty() {
        return Err(IdError::Empty);
    }
    if let Some(c) = s.chars().find(|c| !is_id_char(*c)) {
        return Err(IdError::BadChar(c));
    }
    if s.len() > MAX_ID_LEN {
        return Err(IdError::TooLong);
    }
    if s.bytes().all(|b| b == b'.') {
        return Err(IdError::OnlyDots);
    }
    Ok(())
}

fn is_id_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for Id {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Id::parse(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_alphabet_up_to_64_chars() {
        assert!(Id::parse("alice").is_ok());
        assert!(Id::parse("A-z_0.9").is_ok());
        assert!(Id::parse(&"a".repeat(64)).is_ok());
        assert!(Id::parse(".a.").is_ok());
        assert!(Id::parse("..-").is_ok());
    }

    #[test]
    fn refuses_ids_made_only_of_dots() {
        for bad in [".", "..", "...", &".".repeat(64)] {
            assert_eq!(Id::parse(bad), Err(IdError::OnlyDots), "{bad:?}");
        }
    }

    #[test]
    fn refuses_everything_else() {
        assert_eq!(Id::parse(""), Err(IdError::Empty));
        assert_eq!(Id::parse(&"a".repeat(65)), Err(IdError::TooLong));
        for bad in ["a{b", "a}b", "a:b", "a b", "a\nb", "é", "a/b", "a*"] {
            assert!(
                matches!(Id::parse(bad), Err(IdError::BadChar(_))),
                "{bad:?}"
            );
        }
    }
}
