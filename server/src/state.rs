//! What every request handler and WebSocket session shares.

use std::sync::Arc;

use scorecast_shared::Id;
use tracing::Instrument;

use crate::auth::{Secret, Tokens};
use crate::config::Settings;
use crate::error::AppResult;
use crate::hub::Hub;
use crate::limiter::Limiter;
use crate::metrics;
use crate::queue::Queues;
use crate::store::{Accepted, Store, Submission};

/// The front door a submission came through (the `transport` label of
/// `scorecast_submit_duration_seconds`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    Ws,
    Http,
    Internal,
}

impl Transport {
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Ws => "ws",
            Transport::Http => "http",
            Transport::Internal => "internal",
        }
    }
}

#[derive(Clone)]
pub struct AppState {
    pub store: Store,
    pub limiter: Limiter,
    pub tokens: Tokens,
    pub admin_token: Secret,
    pub settings: Arc<Settings>,
    /// Job queues (`docs/queues.md`).
    pub queues: Queues,
    /// This instance's WebSocket hub: subscriptions, the pub/sub feed, `notify` pushes.
    pub hub: Hub,
    /// This instance's compiled validators and their sandbox (`docs/validators.md`).
    pub validators: crate::validators::Registry,
}

impl AppState {
    /// The submission core: every front door (WebSocket, HTTP, jobs) submits through here.
    /// [`AppState::submit_via`] names the front door for the latency metric; this is
    /// `internal` (jobs, tools, tests).
    pub async fn submit(&self, s: &Submission) -> AppResult<Accepted> {
        self.submit_via(s, Transport::Internal).await
    }

    /// [`AppState::submit`], timed as coming through `via`.
    pub async fn submit_via(&self, s: &Submission, via: Transport) -> AppResult<Accepted> {
        let started = std::time::Instant::now();
        // `instrument`, not `span.enter()`: an entered guard held across an await would tag
        // whatever else runs on this thread meanwhile with this submission's span.
        let span = tracing::debug_span!("submit", board = %s.board, player = %s.player, id = %s.id);
        let r = self.store.submit(s).instrument(span).await;
        let outcome = match &r {
            Ok(a) if a.duplicate => "duplicate",
            Ok(_) => "ok",
            Err(e) => e.code.as_str(),
        };
        metrics::SUBMISSIONS.with_label_values(&[outcome]).inc();
        metrics::SUBMIT_SECONDS
            .with_label_values(&[via.as_str()])
            .observe(started.elapsed().as_secs_f64());
        r
    }

    /// Parses a path segment as an id (`invalid_id` otherwise).
    pub fn id(s: &str) -> AppResult<Id> {
        Ok(Id::parse(s)?)
    }
}
