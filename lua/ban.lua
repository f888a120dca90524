-- ban.lua: bans a player from one board (docs/protocol.md, "Moderation"). Prepended
-- with lib.lua. One board, one slot.
--
-- KEYS[1]  lb:{<board>}:config
-- ARGV[1]  player   ARGV[2] the ban record (JSON, stored as is)   ARGV[3] reason ('' = none)
-- ARGV[4]  until_ms ('' = until lifted)   ARGV[5] now_ms override ('' = TIME)
-- ARGV[6]  '' for this board's own ban, '*' for this board's copy of a ban on every board
-- ARGV[7]  the version of that ban on every board ('' = none; lua/ban_index.lua)
-- ARGV[8]  the name of the key that placed the ban ('' = none), recorded as `by`
--
-- Records the ban in `bans` under `<player>` (this board's own) or `*<player>` (a ban on every
-- board; `*` is not an id character): two layers that neither replaces nor lifts the other.
-- lua/submit.lua refuses the player's submissions while either is there. Moves the player's entry of every kept season (and the current one) to
-- `held:<player>` (season -> stored score), so reads and views no longer see it, and writes an
-- audit-log entry (and its copy in the moderation history, lib.lua `audit`). A change event
-- tells views of the current season the entry is gone.
-- Banning a player banned in the same layer replaces that layer's record (entries are already
-- held).
--
-- Idempotent: the same record again changes nothing (an intent resumed after a crash). A ban
-- on every board older than the last step of that layer here (`ban_versions`, player -> the
-- version) changes nothing either: a lift or a ban given later reached this board first. The
-- versions are a hash of their own, so `bans` still disappears with its last ban (submit.lua
-- reads it only where it exists).
--
-- Returns {'ok', seasons held (count)} or {'err', code, message}.

local prefix = string.sub(KEYS[1], 1, -7)
local board = board_of(prefix)
local cfg = load_config(KEYS[1])
if not cfg then return {'err', 'unknown_board', 'no board ' .. board} end
local player = ARGV[1]
local now = now_ms(ARGV[5])
local current = current_season(prefix, cfg, now)

local bans = prefix .. 'bans'
if ARGV[7] ~= '' then
  local last = redis.call('HGET', prefix .. 'ban_versions', player)
  if last and tonumber(last) > tonumber(ARGV[7]) then return {'ok', 0} end
  redis.call('HSET', prefix .. 'ban_versions', player, ARGV[7])
end
if redis.call('HGET', bans, ARGV[6] .. player) == ARGV[2] then return {'ok', 0} end
redis.call('HSET', bans, ARGV[6] .. player, ARGV[2])

local seasons = redis.call('ZRANGE', prefix .. 'seasons', 0, -1)
local seen = false
for _, s in ipairs(seasons) do if s == current then seen = true end end
if not seen then seasons[#seasons + 1] = current end

local held = 0
for _, s in ipairs(seasons) do
  local key = prefix .. 's:' .. s
  local score = redis.call('ZSCORE', score_key(prefix, cfg, s, player), player)
  if score then
    redis.call('HSET', prefix .. 'held:' .. player, s, score)
    local entry = remove_entry(prefix, cfg, s, key, player, score)
    held = held + 1
    if s == current then
      publish_change(prefix, board, s, ',"changes":[' .. entry .. ']')
    end
  end
end

audit(prefix, {
  'action', 'ban', 'player', player, 'scope', ARGV[6] == '*' and 'every board' or 'board',
  'reason', ARGV[3], 'until_ms', ARGV[4], 'held', fmt(held),
  'time_ms', fmt(now), 'by', ARGV[8] or ''})
return {'ok', held}
