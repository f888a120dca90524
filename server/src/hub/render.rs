//! What a view's message says. Each message is serialised once per flush and the same bytes are
//! offered to every subscriber of that view; its content hash (taken over the fields the message
//! shows, not `board`, `seq` and `resync`) tells whether a view changed since it was last sent.

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use bytestring::ByteString;
use scorecast_shared::{Entry, Id, ServerMsg};

use super::board::MeState;
use super::plan::Want;
use crate::store::Page;

/// A view's message, ready to send.
pub(super) struct Built {
    /// The hash of the content.
    pub hash: u64,
    pub text: ByteString,
    pub seq: u64,
    /// `around`: the ranks it shows.
    pub window: Option<(u64, u64)>,
}

/// Renders what `want` read into the message of one view (`rows` rows of a `top` read); a `me`
/// view also updates the player's remembered standing in `me`.
pub(super) fn render(
    board: &Id,
    want: &Want,
    rows: u64,
    page: &Page,
    me: &mut HashMap<Id, MeState>,
    resync: bool,
) -> Built {
    let season = page.season.clone();
    // One serialisation per message: the content hash is taken over the fields shown.
    let mut h = DefaultHasher::new();
    let (msg, window) = match want {
        Want::Top => {
            let n = (rows as usize).min(page.entries.len());
            ("top", &season, page.total, hash_entries(&page.entries[..n])).hash(&mut h);
            let msg = ServerMsg::Top {
                board: board.to_string(),
                season,
                total: page.total,
                entries: page.entries[..n].to_vec(),
                seq: page.seq,
                resync,
            };
            (msg, None)
        }
        Want::Me(player) => {
            let e = page.entries.first();
            let st = me.entry(player.clone()).or_default();
            learn(st, e.map(|e| e.score), e.map(|e| e.rank), page.seq);
            return render_me(board, player, st, &season, page.seq, resync);
        }
        Want::Around(..) => {
            let window = match (page.entries.first(), page.entries.last()) {
                (Some(a), Some(b)) => Some((a.rank, b.rank)),
                _ => None,
            };
            ("around", &season, hash_entries(&page.entries)).hash(&mut h);
            let msg = ServerMsg::Around {
                board: board.to_string(),
                season,
                entries: page.entries.clone(),
                seq: page.seq,
                resync,
            };
            (msg, window)
        }
    };
    Built {
        hash: h.finish(),
        text: msg.to_json().into(),
        seq: page.seq,
        window,
    }
}

/// A hash of the rows a message shows.
fn hash_entries(entries: &[Entry]) -> u64 {
    let mut h = DefaultHasher::new();
    for e in entries {
        (&e.player, e.score, e.rank, &e.name, e.reached_ms).hash(&mut h);
    }
    h.finish()
}

/// Records a standing read at `seq` (unless what the hub knows is newer): `previous_rank` is the
/// rank before the last change.
pub(super) fn learn(st: &mut MeState, score: Option<i64>, rank: Option<u64>, seq: u64) {
    if st.at.is_some_and(|at| at > seq) {
        return;
    }
    if (st.score, st.rank) != (score, rank) {
        st.previous_rank = st.rank;
        st.score = score;
        st.rank = rank;
    }
    st.at = Some(seq);
}

/// The `rank` message of `player`'s standing `st` at `seq`.
pub(super) fn render_me(
    board: &Id,
    player: &Id,
    st: &MeState,
    season: &str,
    seq: u64,
    resync: bool,
) -> Built {
    // One serialisation per message: the hash is taken over the fields, not the JSON.
    let mut h = DefaultHasher::new();
    (season, st.score, st.rank, st.previous_rank).hash(&mut h);
    let msg = ServerMsg::Rank {
        board: board.to_string(),
        season: season.to_string(),
        player: player.to_string(),
        score: st.score,
        rank: st.rank,
        previous_rank: st.previous_rank,
        seq,
        resync,
    };
    Built {
        hash: h.finish(),
        text: msg.to_json().into(),
        seq,
        window: None,
    }
}

#[cfg(test)]
mod tests {
    use scorecast_shared::Entry;

    use super::*;

    fn id(s: &str) -> Id {
        Id::parse(s).expect("a valid id")
    }

    fn page(seq: u64, entries: Vec<Entry>) -> Page {
        Page {
            season: "all".into(),
            start_ms: 0,
            total: entries.len() as u64,
            seq,
            entries,
        }
    }

    fn entry(player: &str, score: i64, rank: u64) -> Entry {
        Entry {
            player: player.into(),
            score,
            rank,
            name: None,
            reached_ms: None,
        }
    }

    #[test]
    fn the_hash_ignores_seq_and_resync_but_not_content() {
        let (b, mut me) = (id("b"), HashMap::new());
        let rows = vec![entry("a", 9, 1), entry("c", 5, 2)];
        let one = render(&b, &Want::Top, 10, &page(1, rows.clone()), &mut me, false);
        let two = render(&b, &Want::Top, 10, &page(2, rows.clone()), &mut me, true);
        assert_eq!(one.hash, two.hash);
        assert_ne!(one.text, two.text);
        let fewer = render(&b, &Want::Top, 1, &page(2, rows), &mut me, false);
        assert_ne!(one.hash, fewer.hash, "a top 1 shows less than a top 10");
        let msg = ServerMsg::parse(&two.text).expect("valid JSON");
        assert!(
            matches!(msg, ServerMsg::Top { board, seq: 2, resync: true, entries, .. } if board == "b" && entries.len() == 2)
        );
    }

    #[test]
    fn me_remembers_the_previous_rank_and_around_its_window() {
        let (b, mut me) = (id("b"), HashMap::new());
        let alice = Want::Me(id("alice"));
        render(
            &b,
            &alice,
            0,
            &page(1, vec![entry("alice", 5, 4)]),
            &mut me,
            false,
        );
        let moved = render(
            &b,
            &alice,
            0,
            &page(2, vec![entry("alice", 9, 2)]),
            &mut me,
            false,
        );
        let msg = ServerMsg::parse(&moved.text).expect("valid JSON");
        assert!(matches!(
            msg,
            ServerMsg::Rank {
                rank: Some(2),
                previous_rank: Some(4),
                ..
            }
        ));
        let around = Want::Around(id("alice"), 1);
        let rows = vec![entry("x", 10, 1), entry("alice", 9, 2), entry("y", 1, 3)];
        let built = render(&b, &around, 0, &page(2, rows), &mut me, false);
        assert_eq!(built.window, Some((1, 3)));
    }
}
