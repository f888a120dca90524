//! What every request handler and WebSocket session shares.

use std::sync::Arc;

use scorecast_shared::Id;
use tracing::Instrument;

use crate::auth::{KeyRing, Tokens};
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
    /// The admin token and the named keys (`docs/protocol.md`, "HTTP API").
    pub keys: KeyRing,
    pub settings: Arc<Settings>,
    /// Job queues (`docs/queues.md`).
    pub queues: Queues,
    /// This instance's WebSocket hub: subscriptions, the pub/sub feed, `notify` pushes.
    pub hub: Hub,
    /// When `/metrics` last read the queue gauges from Redis.
    pub queue_gauges: Arc<crate::queue::QueueGauges>,
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

    /// A verified submission: the score the board's validator computes by replaying `proof`
    /// from the run's seed, recorded through the submission core ([`AppState::submit_via`]) as
    /// the player's points. The submission id is the run and the proof's length, so resending
    /// the same checkpoint is a duplicate, and each longer proof is a new checkpoint (the board
    /// keeps the best: a verified board's op is `best`).
    pub async fn submit_proof(
        &self,
        board: &Id,
        player: &crate::auth::Player,
        run: &Id,
        proof: Vec<u8>,
        via: Transport,
    ) -> AppResult<Accepted> {
        use crate::error::AppError;
        use scorecast_shared::ErrorCode;

        // Checked first, as the HTTP route does while reading the body: an oversize proof is
        // refused for its size whatever else is wrong with it.
        let limit = self.settings.validators.proof_bytes;
        if proof.len() > limit {
            return Err(AppError::new(
                ErrorCode::PayloadTooLarge,
                format!("a proof may be at most {limit} bytes"),
            ));
        }
        let (cfg, r, now) = self.store.board_and_run(board, run).await?;
        let Some(name) = cfg.validator.as_deref() else {
            return Err(AppError::bad_request(format!(
                "board {board} has no validator: submit points"
            )));
        };
        // The record outlives its run (`lua/run_start.lua`): the run ends at `expires_ms`, on
        // the clock it was started on, which `now` was read from.
        let r = r.filter(|r| now < r.expires_ms).ok_or_else(|| {
            AppError::new(
                ErrorCode::NotFound,
                format!("no run {run} on {board} (never started, or expired)"),
            )
        })?;
        if r.player != player.id.as_str() {
            return Err(AppError::new(
                ErrorCode::Forbidden,
                format!("run {run} belongs to another player"),
            ));
        }
        let validator = self.board_validator(name).await?;
        let elapsed_ms = now - r.started_ms;
        let len = proof.len();
        let score = self
            .validators
            .sandbox()
            .verify(&validator, i64::from(r.seed), proof, elapsed_ms)
            .await
            .map_err(|e| {
                use crate::validators::VerifyError;
                match e {
                    VerifyError::Busy => AppError::new(ErrorCode::Unavailable, e.to_string()),
                    VerifyError::ProofTooLarge(..) => {
                        AppError::new(ErrorCode::PayloadTooLarge, format!("{}: {e}", e.code()))
                    }
                    _ => AppError::bad_request(format!("{}: {e}", e.code())),
                }
            })?;
        let points = i64::try_from(score)
            .ok()
            .filter(|p| *p <= scorecast_shared::MAX_POINTS)
            .ok_or_else(|| {
                AppError::new(
                    ErrorCode::PointsOutOfRange,
                    format!("the validator returned {score}, above 2^53 - 1 (the exact range)"),
                )
            })?;
        let s = Submission {
            board: board.clone(),
            player: player.id.clone(),
            id: Id::parse(&format!("{run}.{len}"))?,
            points,
            op: None,
            name: player.name.clone(),
            by: None,
            verified: true,
        };
        self.submit_via(&s, via).await
    }

    /// The compiled validator a board names: the built-in one, or one uploaded to Redis. Its
    /// digest (64 bytes) finds this instance's compiled module; the module itself is read and
    /// compiled only when this instance has not compiled those bytes yet.
    async fn board_validator(&self, name: &str) -> AppResult<crate::validators::Validator> {
        use crate::error::AppError;
        use scorecast_shared::ErrorCode;

        if name == crate::validators::registry::BUILTIN_NAME {
            return Ok(self.validators.builtin().clone());
        }
        let id = Id::parse(name)?;
        if let Some(v) = self
            .store
            .validator_digest(&id)
            .await?
            .and_then(|sha| self.validators.cached_hex(&sha))
        {
            return Ok(v);
        }
        let bytes = self.store.validator(&id).await?.ok_or_else(|| {
            AppError::new(
                ErrorCode::Unavailable,
                format!("the board's validator {name} is missing; an operator must upload it"),
            )
        })?;
        let (v, _) =
            self.validators.compile(bytes.into()).await.map_err(|e| {
                AppError::new(ErrorCode::Unavailable, format!("validator {name}: {e}"))
            })?;
        Ok(v)
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
