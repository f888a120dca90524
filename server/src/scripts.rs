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
pub static GCRA: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../../lua/gcra.lua")));
pub static BOARD_PUT: LazyLock<Script> =
    LazyLock::new(|| with_lib(include_str!("../../lua/board_put.lua")));
pub static ROLLOVER: LazyLock<Script> =
    LazyLock::new(|| with_lib(include_str!("../../lua/rollover.lua")));
pub static REMOVE: LazyLock<Script> =
    LazyLock::new(|| with_lib(include_str!("../../lua/remove.lua")));
