-- remove.lua: an admin removes a player from the board's current season.
-- Prepended with lib.lua.
--
-- KEYS[1]  lb:{<board>}:config
-- ARGV[1]  player   ARGV[2] now_ms override ('' = TIME)
--
-- Returns {'ok', removed (0/1)} or {'err', code, message}.

local prefix = string.sub(KEYS[1], 1, -7)
local board = board_of(prefix)
local cfg = load_config(KEYS[1])
if not cfg then return {'err', 'unknown_board', 'no board ' .. board} end
local season = current_season(prefix, cfg, now_ms(ARGV[2]))
local key = prefix .. 's:' .. season
local old = redis.call('ZSCORE', key, ARGV[1])
if not old then return {'ok', 0} end
local prev_rank = rank_of(key, cfg, ARGV[1], tonumber(old))
redis.call('ZREM', key, ARGV[1])
-- The same event shape as submit.lua's: a `changes` list (here of one).
publish_change(prefix, board, season,
  ',"changes":[{"player":"' .. ARGV[1] .. '","score":null,"rank":null,"previous_rank":' .. fmt(prev_rank) .. '}]')
return {'ok', 1}
