//! What a view's message says. Each message is serialised once per flush and the same bytes are
//! offered to every subscriber of that view; its content hash (taken over the fields the message
//! shows, not `board`, `seq` and `resync`) tells whether a view changed since it was last sent.

use std::collections::hash_map::DefaultHasher;
use std::fmt::Write;
use std::hash::{BuildHasher, Hash, Hasher};

use bytestring::ByteString;
use scorecast_shared::{Entry, Id, ServerMsg};

use super::derive::{MeState, Standings};
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
    me: &mut Standings,
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
                board: board.board_part().to_owned(),
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
            let st = me.learn(player, e.map(|e| e.score), e.map(|e| e.rank), page.seq);
            return render_me(board, player, &st, &season, page.seq, resync);
        }
        Want::Around(..) => {
            let window = match (page.entries.first(), page.entries.last()) {
                (Some(a), Some(b)) => Some((a.rank, b.rank)),
                _ => None,
            };
            ("around", &season, hash_entries(&page.entries)).hash(&mut h);
            let msg = ServerMsg::Around {
                board: board.board_part().to_owned(),
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

/// The `rank` message of `player`'s standing `st` at `seq`: one per player and flush, so it is
/// written by hand into one buffer (the same bytes `ServerMsg::Rank`'s serialisation gives, which
/// a test checks), and its change hash is taken over season, score and rank with a fast fixed
/// hasher. Not over `previous_rank`: it changes only with them, except that an update sent with
/// an ack carries the rank before the submission where the next flush would say the rank before
/// the previous flush (`commit.rs`): the same standing, not to be sent twice.
pub(super) fn render_me(
    board: &Id,
    player: &Id,
    st: &MeState,
    season: &str,
    seq: u64,
    resync: bool,
) -> Built {
    let hash = foldhash::fast::FixedState::with_seed(0).hash_one((season, st.score, st.rank));
    // A bucket's cell (`Id::cell`) renders its board's id.
    let board = board.board_part();
    let mut out = String::with_capacity(96 + board.len() + season.len() + player.as_str().len());
    out.push_str(r#"{"type":"rank","board":"#);
    json_str(&mut out, board);
    out.push_str(r#","season":"#);
    json_str(&mut out, season);
    out.push_str(r#","player":"#);
    json_str(&mut out, player.as_str());
    out.push_str(r#","score":"#);
    json_num(&mut out, st.score);
    out.push_str(r#","rank":"#);
    json_num(&mut out, st.rank);
    out.push_str(r#","previous_rank":"#);
    json_num(&mut out, st.previous_rank);
    out.push_str(r#","seq":"#);
    json_num(&mut out, Some(seq));
    if resync {
        out.push_str(r#","resync":true"#);
    }
    out.push('}');
    Built {
        hash,
        text: out.into(),
        seq,
        window: None,
    }
}

/// A JSON string (RFC 8259 escapes, as serde_json writes them).
fn json_str(out: &mut String, s: &str) {
    out.push('"');
    // A string with nothing to escape (ids and seasons, as a rule) is copied whole.
    if !s.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20) {
        out.push_str(s);
        out.push('"');
        return;
    }
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A JSON number, or `null`.
fn json_num(out: &mut String, n: Option<impl itoa::Integer>) {
    match n {
        Some(n) => out.push_str(itoa::Buffer::new().format(n)),
        None => out.push_str("null"),
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
        let (b, mut me) = (id("b"), Standings::default());
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
        let (b, mut me) = (id("b"), Standings::default());
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

    /// The hand-written `rank` message is byte for byte what serialising `ServerMsg::Rank`
    /// gives, escapes included: each character to escape alone (a string with none is copied
    /// whole), and all of them together.
    #[test]
    fn the_rank_message_is_the_serialised_one() {
        let st = MeState {
            score: Some(-42),
            rank: None,
            previous_rank: Some(7),
            at: Some(3),
        };
        let seasons = [
            ("all", false),
            ("q\"", false),
            ("b\\s", false),
            ("n\n", false),
            ("c\u{1f}", false),
            ("2026-W48 \"q\" \\ \n\u{1f} é", true),
        ];
        for (season, resync) in seasons {
            let built = render_me(&id("b-1"), &id("ann"), &st, season, 9, resync);
            let want = ServerMsg::Rank {
                board: "b-1".into(),
                season: season.into(),
                player: "ann".into(),
                score: Some(-42),
                rank: None,
                previous_rank: Some(7),
                seq: 9,
                resync,
            }
            .to_json();
            assert_eq!(&*built.text, want.as_str());
        }
    }
}
