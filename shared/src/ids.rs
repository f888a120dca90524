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

    /// The server hub's key for the live views of bucket `bucket` of `board` in `season`
    /// (`docs/protocol.md`, "Buckets"): `<board>#<season>#<bucket>`. Not an id — `#` is no id
    /// character — so it never equals a board's id, and it never names a Redis key: the store
    /// reads it back with [`Id::cell_parts`].
    pub fn cell(board: &Id, season: &Id, bucket: u32) -> Id {
        Id(format!("{board}{CELL_SEP}{season}{CELL_SEP}{bucket}"))
    }

    /// The board, season and bucket of an [`Id::cell`] key; `None` for an id.
    pub fn cell_parts(&self) -> Option<(Id, Id, u32)> {
        let mut parts = self.0.splitn(3, CELL_SEP);
        let (board, season, bucket) = (parts.next()?, parts.next()?, parts.next()?);
        Some((
            Id(board.to_owned()),
            Id(season.to_owned()),
            bucket.parse().ok()?,
        ))
    }

    /// The board an id or an [`Id::cell`] key is of: the id itself, or the cell's board.
    pub fn board_part(&self) -> &str {
        self.0.split(CELL_SEP).next().unwrap_or(&self.0)
    }
}

/// Separates the parts of an [`Id::cell`] key.
const CELL_SEP: char = '#';

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
    fn bucket_cells_are_no_ids_and_read_back() {
        let b = Id::parse("game").unwrap();
        let s = Id::parse("2025-W11").unwrap();
        let cell = Id::cell(&b, &s, 7);
        assert_eq!(cell.as_str(), "game#2025-W11#7");
        assert!(Id::parse(cell.as_str()).is_err());
        assert_eq!(cell.cell_parts(), Some((b.clone(), s, 7)));
        assert_eq!(cell.board_part(), "game");
        assert_eq!(b.cell_parts(), None);
        assert_eq!(b.board_part(), "game");
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
