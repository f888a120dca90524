-- remove.lua: an admin removes a player's entry of the board's current season.
-- Prepended with lib.lua.
--
-- KEYS[1]  lb:{<board>}:config
-- ARGV[1]  player   ARGV[2] now_ms override ('' = TIME)
-- ARGV[3]  the name of the key that removed the entry, recorded as `by`
--
-- The entry is on the board, or held while the player is banned (lua/ban.lua); either way it is
-- removed, so a held one does not come back when the ban is lifted. A removal from the board
-- publishes a change event (a held entry is not shown, so nothing changes for views). Writes a
-- `remove` entry to the board's log and moderation history.
--
-- Returns {'ok', removed (0/1), season} or {'err', code, message}.

local prefix = string.sub(KEYS[1], 1, -7)
local board = board_of(prefix)
local cfg = load_config(KEYS[1])
if not cfg then return {'err', 'unknown_board', 'no board ' .. board} end
local now = now_ms(ARGV[2])
local season = current_season(prefix, cfg, now)
local key = prefix .. 's:' .. season
local hold = prefix .. 'held:' .. ARGV[1]
local old = redis.call('ZSCORE', score_key(prefix, cfg, season, ARGV[1]), ARGV[1])
local held = false
if old then
  -- The same event shape as submit.lua's: a `changes` list (here of one).
  publish_change(prefix, board, season,
    ',"changes":[' .. remove_entry(prefix, cfg, season, key, ARGV[1], old) .. ']')
else
  old = redis.call('HGET', hold, season)
  if not old then return {'ok', 0, season} end
  held = true
  redis.call('HDEL', hold, season)
end
audit(prefix, {
  'action', 'remove', 'player', ARGV[1], 'season', season,
  'points', fmt(decode(cfg, tonumber(old))), 'held', held and '1' or '0',
  'time_ms', fmt(now), 'by', ARGV[3] or ''})
return {'ok', 1, season}
