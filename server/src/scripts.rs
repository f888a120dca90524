//! The Lua scripts in `lua/`, compiled in with `include_str!`. Scripts that need the shared
//! helpers get `lua/lib.lua` prepended, so each still runs as one EVALSHA (loaded on first use
//! by `redis::Script`).

use std::sync::LazyLock;

use redis::Script;

const LIB: &str = include_str!("../../lua/lib.lua");

fn with_lib(body: &str) -> Script {
    Script::new(&format!("{LIB}\n{body}"))
}

pub static SUBMIT: LazyLock<Script> =
    LazyLock::new(|| with_lib(include_str!("../../lua/submit.lua")));
pub static READ: LazyLock<Script> = LazyLock::new(|| with_lib(include_str!("../../lua/read.lua")));
pub static SLIDING_LOG: LazyLock<Script> =
    LazyLock::new(|| with_lib(include_str!("../../lua/ratelimit.lua")));
pub static GCRA: LazyLock<Script> = LazyLock::new(|| with_lib(include_str!("../../lua/gcra.lua")));
pub static BOARD_PUT: LazyLock<Script> =
    LazyLock::new(|| with_lib(include_str!("../../lua/board_put.lua")));
pub static ROLLOVER: LazyLock<Script> =
    LazyLock::new(|| with_lib(include_str!("../../lua/rollover.lua")));
pub static SEASON_EVENT: LazyLock<Script> =
    LazyLock::new(|| with_lib(include_str!("../../lua/season_event.lua")));
pub static REMOVE: LazyLock<Script> =
    LazyLock::new(|| with_lib(include_str!("../../lua/remove.lua")));
pub static BAN: LazyLock<Script> = LazyLock::new(|| with_lib(include_str!("../../lua/ban.lua")));
pub static UNBAN: LazyLock<Script> =
    LazyLock::new(|| with_lib(include_str!("../../lua/unban.lua")));
pub static BAN_INDEX: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../../lua/ban_index.lua")));
pub static BOARD_DELETE: LazyLock<Script> =
    LazyLock::new(|| with_lib(include_str!("../../lua/board_delete.lua")));
pub static REVOKE: LazyLock<Script> =
    LazyLock::new(|| with_lib(include_str!("../../lua/revoke.lua")));
pub static REVOKED_READ: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../../lua/revoked_read.lua")));

// Queue scripts (`docs/queues.md`): lib.lua, then the queue helpers of q_lib.lua, then the script.
const QLIB: &str = include_str!("../../lua/q_lib.lua");

fn with_qlib(body: &str) -> Script {
    Script::new(&format!("{LIB}\n{QLIB}\n{body}"))
}

pub static Q_ENQUEUE: LazyLock<Script> =
    LazyLock::new(|| with_qlib(include_str!("../../lua/q_enqueue.lua")));
pub static Q_CLAIM: LazyLock<Script> =
    LazyLock::new(|| with_qlib(include_str!("../../lua/q_claim.lua")));
pub static Q_POP: LazyLock<Script> =
    LazyLock::new(|| with_qlib(include_str!("../../lua/q_pop.lua")));
pub static Q_TAKE: LazyLock<Script> =
    LazyLock::new(|| with_qlib(include_str!("../../lua/q_take.lua")));
pub static Q_ACK: LazyLock<Script> =
    LazyLock::new(|| with_qlib(include_str!("../../lua/q_ack.lua")));
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
pub static Q_DEAD: LazyLock<Script> =
    LazyLock::new(|| with_qlib(include_str!("../../lua/q_dead.lua")));
