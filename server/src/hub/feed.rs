//! The hub as the broker's listener: which boards and players it wants delivered (those with a
//! local viewer or session) and where each delivered item goes.

use scorecast_shared::Id;

use super::Inner;
use crate::broker::{Feed, Listener, Wanted};

impl Listener for Inner {
    fn wanted(&self) -> Wanted {
        // A bucket's cell (`Id::cell`) wants its board's events.
        let mut boards = std::collections::HashSet::new();
        self.boards.each(|b, _| {
            boards.insert(
                b.cell_parts()
                    .map_or_else(|| b.clone(), |(board, _, _)| board),
            );
        });
        let mut players = Vec::new();
        self.players.each(|p, _| players.push(p.clone()));
        Wanted {
            boards: boards.into_iter().collect(),
            players,
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
        for b in self.cells() {
            b.mark_resync();
        }
    }

    /// `board`'s open views are re-sent as fresh snapshots.
    fn resync(&self, board: &Id) {
        if let Some(b) = self.cell(board) {
            b.mark_resync();
        }
    }
}
