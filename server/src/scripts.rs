//! The Lua scripts in `lua/`, compiled in with `include_str!`. Scripts that need the shared
//! helpers get them prepended — `lua/base.lua` and then `lua/lib.lua` for the board scripts,
//! `lua/base.lua` and then `lua/q_lib.lua` for the queue scripts — so each still runs as one
//! EVALSHA (loaded on first use by `redis::Script`). Every call runs the prepended text again,
//! so a script gets only the helpers of its kind.
//!
//! The scripts that publish a board's change event (`publish_change` in lib.lua) come in two
//! sets of one Lua text: [`PLAIN`] (`PUBLISH`, one Redis of any version) and [`SHARDED`]
//! (`SPUBLISH` on the board's slot, Redis Cluster ≥ 7); [`publishing`] picks the set of a
//! connection.

use std::sync::LazyLock;

use redis::Script;

use crate::conn::RedisConn;

const BASE: &str = include_str!("../../lua/base.lua");
const LIB: &str = include_str!("../../lua/lib.lua");

/// The line of lib.lua that names the publishing command.
const PUBLISH_LINE: &str = "local PUBLISH_CMD = 'PUBLISH'";

fn with_base(body: &str) -> Script {
    Script::new(&format!("{BASE}\n{body}"))
}

fn with_lib(body: &str) -> Script {
    Script::new(&format!("{BASE}\n{LIB}\n{body}"))
}

/// lib.lua with `SPUBLISH` for `PUBLISH`, then `body`.
fn with_sharded_lib(body: &str) -> Script {
    assert!(
        LIB.contains(PUBLISH_LINE),
        "lib.lua names its publish command"
    );
    let lib = LIB.replacen(PUBLISH_LINE, "local PUBLISH_CMD = 'SPUBLISH'", 1);
    Script::new(&format!("{BASE}\n{lib}\n{body}"))
}

/// The scripts that publish change events.
pub struct Publishing {
    pub submit: Script,
    pub ban: Script,
    pub unban: Script,
    pub rollover: Script,
    pub season_event: Script,
    pub remove: Script,
    pub tournament_end: Script,
    pub tournament_event: Script,
    pub league_apply: Script,
}

impl Publishing {
    fn new(lib: fn(&str) -> Script) -> Publishing {
        Publishing {
            submit: lib(include_str!("../../lua/submit.lua")),
            ban: lib(include_str!("../../lua/ban.lua")),
            unban: lib(include_str!("../../lua/unban.lua")),
            rollover: lib(include_str!("../../lua/rollover.lua")),
            season_event: lib(include_str!("../../lua/season_event.lua")),
            remove: lib(include_str!("../../lua/remove.lua")),
            tournament_end: lib(include_str!("../../lua/tournament_end.lua")),
            tournament_event: lib(include_str!("../../lua/tournament_event.lua")),
            league_apply: lib(include_str!("../../lua/league_apply.lua")),
        }
    }

    /// Every script of the set.
    pub fn all(&self) -> [&Script; 9] {
        [
            &self.submit,
            &self.ban,
            &self.unban,
            &self.rollover,
            &self.season_event,
            &self.remove,
            &self.tournament_end,
            &self.tournament_event,
            &self.league_apply,
        ]
    }
}

/// Publishing with `PUBLISH` (one Redis).
pub static PLAIN: LazyLock<Publishing> = LazyLock::new(|| Publishing::new(with_lib));
/// Publishing with `SPUBLISH` (a cluster: only the slot's shard carries the event).
pub static SHARDED: LazyLock<Publishing> = LazyLock::new(|| Publishing::new(with_sharded_lib));

/// The publishing scripts for what `conn` talks to.
pub fn publishing(conn: &RedisConn) -> &'static Publishing {
    match conn {
        RedisConn::Single(_) => &PLAIN,
        RedisConn::Cluster(_) => &SHARDED,
    }
}
pub static READ: LazyLock<Script> = LazyLock::new(|| with_lib(include_str!("../../lua/read.lua")));
pub static SLIDING_LOG: LazyLock<Script> =
    LazyLock::new(|| with_lib(include_str!("../../lua/ratelimit.lua")));
pub static GCRA: LazyLock<Script> = LazyLock::new(|| with_base(include_str!("../../lua/gcra.lua")));
pub static BOARD_PUT: LazyLock<Script> =
    LazyLock::new(|| with_lib(include_str!("../../lua/board_put.lua")));
pub static REWARD_GRANT: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../../lua/reward_grant.lua")));
pub static RUN_START: LazyLock<Script> =
    LazyLock::new(|| with_lib(include_str!("../../lua/run_start.lua")));
pub static RUN_READ: LazyLock<Script> =
    LazyLock::new(|| with_base(include_str!("../../lua/run_read.lua")));
pub static JOIN: LazyLock<Script> = LazyLock::new(|| with_lib(include_str!("../../lua/join.lua")));
pub static TOURNAMENT_INFO: LazyLock<Script> =
    LazyLock::new(|| with_lib(include_str!("../../lua/tournament_info.lua")));
pub static TOURNAMENT_ENTRANTS: LazyLock<Script> =
    LazyLock::new(|| with_lib(include_str!("../../lua/tournament_entrants.lua")));
pub static BUCKET_LIST: LazyLock<Script> =
    LazyLock::new(|| with_lib(include_str!("../../lua/bucket_list.lua")));
pub static LEAGUE_STANDINGS: LazyLock<Script> =
    LazyLock::new(|| with_lib(include_str!("../../lua/league_standings.lua")));
pub static BAN_INDEX: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../../lua/ban_index.lua")));
pub static BOARD_DELETE: LazyLock<Script> =
    LazyLock::new(|| with_lib(include_str!("../../lua/board_delete.lua")));
pub static REVOKE: LazyLock<Script> =
    LazyLock::new(|| with_lib(include_str!("../../lua/revoke.lua")));
pub static STATS: LazyLock<Script> =
    LazyLock::new(|| with_lib(include_str!("../../lua/stats.lua")));
pub static REVOKED_READ: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../../lua/revoked_read.lua")));

// Queue scripts (`docs/queues.md`): base.lua, then the queue helpers of q_lib.lua, then the
// script (none of lib.lua's board helpers: they would cost every enqueue their set-up).
const QLIB: &str = include_str!("../../lua/q_lib.lua");

fn with_qlib(body: &str) -> Script {
    Script::new(&format!("{BASE}\n{QLIB}\n{body}"))
}

pub static Q_ENQUEUE: LazyLock<Script> =
    LazyLock::new(|| with_qlib(include_str!("../../lua/q_enqueue.lua")));
pub static Q_CLAIM: LazyLock<Script> =
    LazyLock::new(|| with_qlib(include_str!("../../lua/q_claim.lua")));
pub static Q_POP: LazyLock<Script> =
    LazyLock::new(|| with_qlib(include_str!("../../lua/q_pop.lua")));
pub static Q_TAKE: LazyLock<Script> =
    LazyLock::new(|| with_qlib(include_str!("../../lua/q_take.lua")));
pub static Q_NACK: LazyLock<Script> =
    LazyLock::new(|| with_qlib(include_str!("../../lua/q_nack.lua")));
pub static Q_EXTEND: LazyLock<Script> =
    LazyLock::new(|| with_qlib(include_str!("../../lua/q_extend.lua")));
pub static Q_PROMOTE: LazyLock<Script> =
    LazyLock::new(|| with_qlib(include_str!("../../lua/q_promote.lua")));
pub static Q_REAP: LazyLock<Script> =
    LazyLock::new(|| with_qlib(include_str!("../../lua/q_reap.lua")));
pub static Q_RETRY: LazyLock<Script> =
    LazyLock::new(|| with_qlib(include_str!("../../lua/q_retry.lua")));
pub static Q_LIST: LazyLock<Script> =
    LazyLock::new(|| with_qlib(include_str!("../../lua/q_list.lua")));
pub static Q_DELETE: LazyLock<Script> =
    LazyLock::new(|| with_qlib(include_str!("../../lua/q_delete.lua")));
pub static Q_PURGE: LazyLock<Script> =
    LazyLock::new(|| with_qlib(include_str!("../../lua/q_purge.lua")));
pub static Q_RETRY_ALL: LazyLock<Script> =
    LazyLock::new(|| with_qlib(include_str!("../../lua/q_retry_all.lua")));

#[cfg(test)]
mod tests {
    use super::*;

    /// A script that publishes a change event must be one of [`Publishing`]: on a cluster only
    /// its `SPUBLISH` variant reaches the instances (they listen with `SSUBSCRIBE`); a plain
    /// script's `PUBLISH` would be heard by nobody.
    #[test]
    fn every_script_that_publishes_is_a_publishing_one() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../lua");
        let sharded: Vec<String> = SHARDED
            .all()
            .iter()
            .map(|s| s.get_hash().to_owned())
            .collect();
        let mut publishing = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let body = std::fs::read_to_string(&path).unwrap();
            let publishes = ["publish_change(", "tournament_publish(", "PUBLISH"]
                .iter()
                .any(|p| body.contains(p));
            if name == "lib.lua" || !publishes {
                continue;
            }
            publishing += 1;
            let hash = with_sharded_lib(&body).get_hash().to_owned();
            assert!(
                sharded.contains(&hash),
                "{name} publishes but is not in Publishing"
            );
        }
        assert_eq!(
            publishing,
            SHARDED.all().len(),
            "every Publishing script publishes"
        );
    }
}
