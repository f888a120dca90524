//! Finding players of a board by display name or id without reading the whole board: a bounded
//! walk of the board's names hash (`lb:{<board>}:names`, player -> display name) with `HSCAN`,
//! resumable by cursor. There is no index of names; a search never examines more than
//! [`SCAN_BUDGET`] fields per call, however large the board.

use redis::Value;
use scorecast_shared::Id;

use super::Store;
use crate::error::AppResult;
use crate::{keys, reply};

/// Most fields of the names hash one search call examines (`HSCAN` counts are hints, so a call
/// may see a few more: each `HSCAN` reply is a bounded page of the hash table).
pub const SCAN_BUDGET: usize = 5000;

/// `COUNT` of each `HSCAN`.
const SCAN_COUNT: usize = 500;

/// What one search call found.
#[derive(Debug, PartialEq, Eq)]
pub struct NameHits {
    /// Players whose display name or id contains the text (case-insensitively), with that name.
    pub players: Vec<(Id, String)>,
    /// Where the next call goes on; `None` once the whole hash was walked.
    pub next_cursor: Option<u64>,
}

/// Whether `hay` contains `needle_lower` (already lower-cased), ignoring case.
fn contains_ci(hay: &str, needle_lower: &str) -> bool {
    hay.to_lowercase().contains(needle_lower)
}

impl Store {
    /// Walks the board's names hash from `cursor` (0: the start) until `max` players match
    /// `text` in their name or id, the hash ends, or [`SCAN_BUDGET`] fields were examined. Every
    /// match of the last `HSCAN` page is kept (so resuming at the cursor skips none): a call
    /// returns fewer than `max` plus one page of players.
    pub async fn find_names(
        &self,
        board: &Id,
        text: &str,
        cursor: u64,
        max: usize,
    ) -> AppResult<NameHits> {
        let mut c = self.conn.clone();
        let needle = text.to_lowercase();
        let mut cursor = cursor;
        let mut seen = 0;
        let mut players = Vec::new();
        loop {
            let (next, fields): (u64, Vec<Value>) = redis::cmd("HSCAN")
                .arg(keys::names(board))
                .arg(cursor)
                .arg("COUNT")
                .arg(SCAN_COUNT)
                .query_async(&mut c)
                .await?;
            for pair in fields.chunks_exact(2) {
                let (Some(player), Some(name)) = (reply::text(&pair[0]), reply::text(&pair[1]))
                else {
                    continue;
                };
                seen += 1;
                if contains_ci(&name, &needle) || contains_ci(&player, &needle) {
                    if let Ok(id) = Id::parse(&player) {
                        if !players.iter().any(|(p, _)| *p == id) {
                            players.push((id, name));
                        }
                    }
                }
            }
            cursor = next;
            if cursor == 0 || players.len() >= max || seen >= SCAN_BUDGET {
                break;
            }
        }
        Ok(NameHits {
            players,
            next_cursor: (cursor != 0).then_some(cursor),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::contains_ci;

    #[test]
    fn contains_ignores_case() {
        assert!(contains_ci("Zoë Queen", "zoë q"));
        assert!(contains_ci("ANN", "ann"));
        assert!(!contains_ci("Ann", "anna"));
    }
}
