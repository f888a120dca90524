//! A new view: register it (so events from now on are tracked for it), wait until Redis
//! delivers the board's events to this instance, read the snapshot, queue it. A change
//! committed after the read is then sure to arrive as an event.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use scorecast_shared::{ErrorCode, Id, View};
use tokio::sync::Notify;

use super::board::{Board, BoardCell, Sub, SubKey};
use super::outbox::Outbox;
use super::plan::{self, Want};
use super::render::render;
use super::{Inner, SessionId};
use crate::error::{AppError, AppResult};
use crate::store::Page;

/// How long a new subscription waits for Redis to confirm its board's channel before taking its
/// snapshot (a snapshot taken earlier could miss a change published in between). When pub/sub is
/// down the wait gives up and the resync on reconnection covers the gap.
const SUBSCRIBE_CONFIRM_WAIT: Duration = Duration::from_secs(2);

/// The work of [`super::Member::subscribe`].
pub(super) async fn subscribe(
    inner: &Arc<Inner>,
    session: SessionId,
    outbox: &Arc<Outbox>,
    board: &Id,
    view: View,
    player: Option<Id>,
) -> AppResult<()> {
    let want = Want::of(view, player.as_ref()).ok_or_else(|| {
        AppError::new(
            ErrorCode::Unauthorized,
            "this view needs a player: send hello first",
        )
    })?;
    let key = (session, view.kind());
    // A bucketed board's views live in the cell of the player's bucket (`Id::cell`), which the
    // store reads as that bucket; the view the session had of this kind in another cell of the
    // board (another bucket, or a season ago) is replaced, as one in the same cell is.
    let cell = inner.store.view_cell(board, player.as_ref()).await?;
    inner.unsubscribe_where(session, outbox, key.1, |c| {
        c != &cell && c.board_part() == board.as_str()
    });
    let gen = register(inner, key, outbox, &cell, view, player)?;
    inner.broker.wait_board(board, SUBSCRIBE_CONFIRM_WAIT).await;
    let rows = plan::rows(view);
    let page = inner.store.read(&cell, None, want.read(rows)).await;
    let sub = Registered {
        key,
        gen,
        want,
        rows,
    };
    inner.queue_snapshot(&cell, &sub, outbox, page)
}

/// A subscription registered and waiting for its snapshot.
struct Registered {
    key: SubKey,
    gen: u64,
    want: Want,
    rows: u64,
}

/// Registers the subscription (creating the board's cell and its worker if needed); returns its
/// generation. Refused once the session left the hub (it is closing).
fn register(
    inner: &Arc<Inner>,
    key: SubKey,
    outbox: &Arc<Outbox>,
    board: &Id,
    view: View,
    player: Option<Id>,
) -> AppResult<u64> {
    // The session's shard, then the board's (the lock order).
    let mut sessions = inner.sessions.lock(&key.0);
    let Some(session) = sessions.get_mut(&key.0) else {
        return Err(closing());
    };
    let slot = (board.clone(), key.1);
    if !session.views.contains(&slot) {
        session.views.push(slot);
    }
    let gen = inner.next_gen.fetch_add(1, Ordering::Relaxed) + 1;
    let mut boards = inner.boards.lock(board);
    let cell = boards.entry(board.clone()).or_insert_with(|| {
        let cell = Arc::new(BoardCell::new(Board::new(Arc::new(Notify::new()))));
        tokio::spawn(super::worker::run(
            inner.clone(),
            board.clone(),
            cell.clone(),
        ));
        inner.wake_subscribers();
        cell
    });
    cell.lock()
        .insert_sub(key, Sub::new(view, player, gen, outbox.clone()));
    Ok(gen)
}

fn closing() -> AppError {
    AppError::new(ErrorCode::Unavailable, "the session is closing")
}

impl Inner {
    /// Queues the snapshot of `sub` (if it was not replaced meanwhile), or undoes the
    /// registration when the read failed.
    fn queue_snapshot(
        &self,
        board: &Id,
        sub: &Registered,
        outbox: &Outbox,
        page: AppResult<Page>,
    ) -> AppResult<()> {
        let Registered {
            key,
            gen,
            ref want,
            rows,
        } = *sub;
        let slot = (board.clone(), key.1);
        let Some(cell) = self.cell(board) else {
            return Err(closing());
        };
        let page = match page {
            Ok(p) => p,
            Err(e) => {
                // Still ours: undo it (the session's shard, the board's, the board: the lock order), and
                // drop a snapshot of the view it replaced.
                let mut sessions = self.sessions.lock(&key.0);
                let mut boards = self.boards.lock(board);
                let mut b = cell.lock();
                if b.subs.get(&key).is_some_and(|s| s.gen == gen) {
                    b.remove_sub(&key);
                    drop(b);
                    if let Some(s) = sessions.get_mut(&key.0) {
                        s.views.retain(|v| *v != slot);
                    }
                    self.forget_board_if_unwatched(&mut boards, board);
                    drop((boards, sessions));
                    outbox.drop_view(&slot);
                }
                return Err(e);
            }
        };
        let mut guard = cell.lock();
        let b = &mut *guard;
        let built = render(board, want, rows, &page, &mut b.me, false);
        b.season.get_or_insert_with(|| page.season.clone());
        let behind = b.high_seq > page.seq;
        if let Some(sub) = b.subs.get_mut(&key).filter(|s| s.gen == gen) {
            sub.ready = true;
            sub.last_seq = page.seq;
            sub.last_hash = Some(built.hash);
            sub.window = built.window;
            outbox.offer_view(&slot.0, slot.1, built.text);
            if behind {
                // Events newer than the snapshot were seen before it was ready: catch up.
                b.force(key);
                b.dirty.any = true;
                b.wake.notify_one();
            }
        }
        Ok(())
    }
}
