//! The hub as the broker's listener: which boards and players it wants delivered (those with a
//! local viewer or session) and where each delivered item goes.

use scorecast_shared::Id;

use super::Inner;
use crate::broker::{Feed, Listener, Wanted};

impl Listener for Inner {
    fn wanted(&self) -> Wanted {
        let st = self.lock();
        Wanted {
            // A bucket's cell (`Id::cell`) wants its board's events.
            boards: st
                .boards
                .keys()
                .map(|b| {
                    b.cell_parts()
                        .map_or_else(|| b.clone(), |(board, _, _)| board)
                })
                .collect::<std::collections::HashSet<Id>>()
                .into_iter()
                .collect(),
            players: st.players.keys().cloned().collect(),
        }
    }

    fn feed(&self, item: Feed<'_>) {
        match item {
            Feed::Board { board, payload } => self.on_event(board, payload),
            Feed::Notify { player, payload } => self.on_notify(player, payload),
            Feed::Resync(None) => self.resync_all(),
            Feed::Resync(Some(board)) => self.resync(board),
        }
    }
}

impl Inner {
    /// Every open view is re-sent as a fresh snapshot: events may have been missed, and `seq`
    /// may have restarted.
    fn resync_all(&self) {
        for b in self.lock().boards.values() {
            b.mark_resync();
        }
    }

    /// `board`'s open views are re-sent as fresh snapshots.
    fn resync(&self, board: &Id) {
        if let Some(b) = self.lock().boards.get(board) {
            b.mark_resync();
        }
    }
}
