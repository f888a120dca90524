//! Every Redis key and channel name the server spells, in one place (the schema is in
//! `docs/architecture.md`, "Redis keys"). Keys of one board share the hash tag
//! `{<board>}` and so one cluster slot; the scripts derive the rest of a board's keys from the
//! `lb:{<board>}:` prefix of the config key they are given.

use scorecast_shared::Id;

/// `sc:boards`: ids of all boards (an index only).
pub const BOARDS: &str = "sc:boards";

pub fn config(board: &Id) -> String {
    format!("lb:{{{board}}}:config")
}

pub fn seasons(board: &Id) -> String {
    format!("lb:{{{board}}}:seasons")
}

/// `lb:{<board>}:names`: player -> display name, written by `lua/submit.lua` when a submission
/// carries a name (the admin console's player search walks it, `store/names.rs`).
pub fn names(board: &Id) -> String {
    format!("lb:{{{board}}}:names")
}

pub fn log(board: &Id) -> String {
    format!("lb:{{{board}}}:log")
}

/// `lb:{<board>}:gen`: the board's generation, a random id written when the board is created
/// (`lua/board_put.lua`). Each per-board job carries the generation it was scheduled for and
/// does nothing once the board is gone or is another board of the same id. Boards created
/// before generations existed have none (read as `""`).
pub fn generation(board: &Id) -> String {
    format!("lb:{{{board}}}:gen")
}

/// `lb:{<board>}:modlog` STREAM: the board's moderation history, a copy of the log's moderation
/// entries under the same ids that only moderation writes (`modlog_add` in `lua/lib.lua`).
pub fn modlog(board: &Id) -> String {
    format!("lb:{{{board}}}:modlog")
}

pub fn rewards(board: &Id) -> String {
    format!("lb:{{{board}}}:rewards")
}

/// `lb:{<board>}:bans`: player -> ban record (JSON); `lua/submit.lua` refuses their submissions.
/// `*<player>` is the board's copy of a ban on every board. Beside it, `lb:{<board>}:ban_versions`
/// (player -> the version of the last step of a ban or lift on every board applied here,
/// `lua/ban_index.lua`), built by the scripts from the board's prefix.
pub fn bans(board: &Id) -> String {
    format!("lb:{{{board}}}:bans")
}

/// `sc:audit`: the admin audit log, a stream of admin changes with the key that made each
/// (`store/audit.rs`).
pub const AUDIT: &str = "sc:audit";

/// `sc:bans`: player -> record of a ban on every board (an index: each board holds the ban too,
/// and boards created later take it from here); `#<player>` its version, `#` the last version.
pub const BANS: &str = "sc:bans";

/// `{sc:bans}:intents`: player -> the intent of a ban or lift on every board not yet applied to
/// every board (`lua/ban_index.lua`). Its hash tag is `sc:bans`, so it shares that key's slot.
pub const BAN_INTENTS: &str = "{sc:bans}:intents";

/// `lb:{<board>}:run:<run id>`: a run on a verified board (`lua/run_start.lua`), expiring with it.
pub fn run(board: &Id, run: &str) -> String {
    format!("lb:{{{board}}}:run:{run}")
}

/// `lb:{<board>}:runs:<player>`: the player's open runs on the board, run id -> expiry (ms).
pub fn runs_of(board: &Id, player: &Id) -> String {
    format!("lb:{{{board}}}:runs:{player}")
}

/// `lb:{<board>}:t:<season>:<part>`: one occurrence (season) of the board's tournament
/// (`lua/lib.lua`, "Tournaments"): `joined` (ZSET player -> when they entered, ms), `attempts`
/// (HASH player -> attempts made), `final` (ZSET: the season's scores frozen at its end).
pub fn tournament(board: &Id, season: &str, part: &str) -> String {
    format!("lb:{{{board}}}:t:{season}:{part}")
}

/// `lb:{<board>}:bk:<season>`: a bucketed board's buckets of one season (`lua/lib.lua`,
/// "Buckets"): player -> bucket number, `#open` the bucket being filled, `#fill` how many it
/// holds.
pub fn buckets(board: &Id, season: &str) -> String {
    format!("lb:{{{board}}}:bk:{season}")
}

/// `lb:{<board>}:bk:<season>:<n>`: bucket `n`'s scores in that season (a zset beside the
/// season's own `lb:{<board>}:s:<season>`, written by the same script).
pub fn bucket(board: &Id, season: &str, n: u32) -> String {
    format!("lb:{{{board}}}:bk:{season}:{n}")
}

/// `sc:leagues`: ids of all leagues (an index only; each league's config is the truth).
pub const LEAGUES: &str = "sc:leagues";

/// `lg:{<league>}:<part>`: a league's own keys, in its own slot: `config` (JSON: tiers,
/// bucket_size, promote, relegate, reset), `moves:<season>` (JSON: the moves computed from that
/// season's frozen standings, written once) and `closed:<season>` (when its moves were applied
/// to every tier, ms).
pub fn league(league: &Id, part: &str) -> String {
    format!("lg:{{{league}}}:{part}")
}

/// `lb:{<board>}:lg`: on a league's tier board, player -> the tier board they play on now
/// (written by `lua/league_apply.lua` for the players moved; read by `lua/submit.lua`).
pub fn placed(board: &Id) -> String {
    format!("lb:{{{board}}}:lg")
}

/// `sc:validators`: validator name -> the module's bytes, and `<name>#sha256` -> their SHA-256
/// in hex (`docs/validators.md`). One hash, so every write is one command on one slot; every
/// instance reads the same bytes.
pub const VALIDATORS: &str = "sc:validators";

/// The field of [`VALIDATORS`] holding the SHA-256 of validator `name`'s module (`#` is not an
/// id character, so it cannot be a validator's name).
pub fn validator_digest_field(name: &Id) -> String {
    format!("{name}#sha256")
}

/// The channel that carries a board's change events. `publish_change` in `lua/lib.lua` spells
/// the same name (the scripts publish there); the two are checked against each other by the
/// end-to-end tests.
pub fn events(board: &Id) -> String {
    format!("ev:{{{board}}}")
}

/// The channel that carries `notify` pushes to one player's sessions, on every instance.
pub fn notify(player: &Id) -> String {
    format!("notify:{{{player}}}")
}

/// What a pub/sub channel carries, read back from its name.
#[derive(Debug, PartialEq, Eq)]
pub enum Channel<'a> {
    /// [`events`] of this board (unchecked).
    Events(&'a str),
    /// [`notify`] of this player (unchecked).
    Notify(&'a str),
}

impl<'a> Channel<'a> {
    pub fn parse(name: &'a str) -> Option<Channel<'a>> {
        let tagged = |prefix: &str| name.strip_prefix(prefix)?.strip_suffix('}');
        tagged("ev:{")
            .map(Channel::Events)
            .or_else(|| tagged("notify:{").map(Channel::Notify))
    }
}

/// The Redis Cluster hash slot of a key or sharded channel: CRC16 (XMODEM) of its hash tag
/// (the text between the first `{` and the next `}`, when not empty) or of the whole name,
/// modulo 16384.
pub fn slot(name: &str) -> u16 {
    let b = name.as_bytes();
    let tagged = b.iter().position(|&c| c == b'{').and_then(|open| {
        let close = b[open + 1..].iter().position(|&c| c == b'}')?;
        (close > 0).then(|| &b[open + 1..open + 1 + close])
    });
    let mut crc: u16 = 0;
    for &byte in tagged.unwrap_or(b) {
        crc ^= u16::from(byte) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc % 16384
}

/// Limiter state outside boards, e.g. public reads per client address.
pub fn limiter(policy: &str, subject: &str) -> String {
    format!("rl:{{{policy}:{subject}}}")
}

/// `sc:{revoked}`: player -> when their tokens were last revoked (ms); and `sc:{revoked}:seq`,
/// bumped on each revocation. One hash tag, so one cluster slot for `lua/revoke.lua`.
pub const REVOKED: &str = "sc:{revoked}";
pub const REVOKED_SEQ: &str = "sc:{revoked}:seq";

/// `sc:{stats}`: instance id -> its live counters, stamped (`lua/stats.lua`): the admin
/// console's charts, summed over every instance.
pub const STATS: &str = "sc:{stats}";

/// `sc:queues`: names of the queues that have had a job (an index for the promoter and reaper).
pub const QUEUES: &str = "sc:queues";

/// The keys of queue `q`, in the order every `lua/q_*.lua` script takes them (see
/// `lua/q_lib.lua`): ready, delayed, processing, dead, jobs, state, seq, wake. One hash tag,
/// so one cluster slot.
pub fn queue(q: &Id) -> [String; 8] {
    [
        "ready",
        "delayed",
        "processing",
        "dead",
        "jobs",
        "state",
        "seq",
        "wake",
    ]
    .map(|part| format!("q:{{{q}}}:{part}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn board_keys_share_the_hash_tag() {
        let b = Id::parse("game-2048").unwrap();
        assert_eq!(config(&b), "lb:{game-2048}:config");
        assert_eq!(seasons(&b), "lb:{game-2048}:seasons");
        assert_eq!(events(&b), "ev:{game-2048}");
        assert_eq!(
            tournament(&b, "all", "joined"),
            "lb:{game-2048}:t:all:joined"
        );
        assert_eq!(slot(&tournament(&b, "all", "final")), slot(&config(&b)));
        assert_eq!(buckets(&b, "all"), "lb:{game-2048}:bk:all");
        assert_eq!(bucket(&b, "all", 7), "lb:{game-2048}:bk:all:7");
        assert_eq!(slot(&bucket(&b, "2025-W01", 7)), slot(&config(&b)));
        assert_eq!(slot(&placed(&b)), slot(&config(&b)));
        let l = Id::parse("weekly").unwrap();
        assert_eq!(league(&l, "moves:2025-W01"), "lg:{weekly}:moves:2025-W01");
        assert_eq!(slot(&league(&l, "config")), slot(&league(&l, "closed:x")));
        assert_eq!(limiter("read", "127.0.0.1"), "rl:{read:127.0.0.1}");
    }

    #[test]
    fn slots_are_redis_cluster_slots() {
        // Values from `CLUSTER KEYSLOT`.
        assert_eq!(slot("foo"), 12182);
        assert_eq!(slot("bar"), 5061);
        assert_eq!(slot("123456789"), 0x31C3);
        assert_eq!(slot("ev:{foo}"), 12182);
        assert_eq!(slot("lb:{foo}:config"), 12182);
        assert_eq!(slot("{}foo"), slot("{}foo"));
        assert_ne!(slot("{}foo"), slot("foo"));
        // lua/ban_index.lua writes both in one script.
        assert_eq!(slot(BAN_INTENTS), slot(BANS));
    }

    #[test]
    fn channel_names_read_back() {
        let b = Id::parse("game-2048").unwrap();
        assert_eq!(
            Channel::parse(&events(&b)),
            Some(Channel::Events("game-2048"))
        );
        assert_eq!(
            Channel::parse(&notify(&b)),
            Some(Channel::Notify("game-2048"))
        );
        assert_eq!(Channel::parse("ev:game"), None);
        assert_eq!(Channel::parse("other:{x}"), None);
    }
}
