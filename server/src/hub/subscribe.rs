//! A new view: register it (so events from now on are tracked for it), wait until Redis
//! delivers the board's events to this instance, read the snapshot, queue it. A change
//! committed after the read is then sure to arrive as an event.

use std::sync::Arc;
use std::time::Duration;

use scorecast_shared::{ErrorCode, Id, View};
use tokio::sync::Notify;

use super::board::{Board, Sub, SubKey};
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
    let gen = register(inner, key, outbox, board, view, player);
    inner.broker.wait_board(board, SUBSCRIBE_CONFIRM_WAIT).await;
    let rows = plan::rows(view);
    let page = inner.store.read(board, None, want.read(rows)).await;
    let sub = Registered {
        key,
        gen,
        want,
        rows,
    };
    inner.queue_snapshot(board, &sub, outbox, page)
}

/// A subscription registered and waiting for its snapshot.
struct Registered {
    key: SubKey,
    gen: u64,
    want: Want,
    rows: u64,
}

/// Registers the subscription (creating the board entry and its worker if needed); returns its
/// generation.
fn register(
    inner: &Arc<Inner>,
    key: SubKey,
    outbox: &Arc<Outbox>,
    board: &Id,
    view: View,
    player: Option<Id>,
) -> u64 {
    let mut st = inner.lock();
    st.next_gen += 1;
    let gen = st.next_gen;
    let b = st.boards.entry(board.clone()).or_insert_with(|| {
        let wake = Arc::new(Notify::new());
        tokio::spawn(super::worker::run(
            inner.clone(),
            board.clone(),
            gen,
            wake.clone(),
        ));
        inner.wake_subscribers();
        Board::new(gen, wake)
    });
    b.subs
        .insert(key, Sub::new(view, player, gen, outbox.clone()));
    gen
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
        let mut st = self.lock();
        let Some(b) = st.boards.get_mut(board) else {
            return Err(AppError::new(
                ErrorCode::Unavailable,
                "the session is closing",
            ));
        };
        let page = match page {
            Ok(p) => p,
            Err(e) => {
                if b.subs.get(&key).is_some_and(|s| s.gen == gen) {
                    // Still ours: undo it, and drop a snapshot of the view it replaced.
                    b.subs.remove(&key);
                    self.forget_board_if_unwatched(&mut st, board);
                    drop(st);
                    outbox.drop_view(&slot);
                }
                return Err(e);
            }
        };
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
                sub.force = true;
                b.dirty.any = true;
                b.wake.notify_one();
            }
        }
        Ok(())
    }
}
