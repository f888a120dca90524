-- tournament_info.lua: the state of a board's tournament now (GET /v1/boards/{b}/tournament).
-- Prepended with lib.lua. Reads only.
--
-- KEYS[1]  lb:{<board>}:config
-- ARGV[1]  now_ms override ('' = TIME)
--
-- Returns {'ok', now_ms, season, entrants, ended_ms (-1 = not frozen yet), config JSON} or
-- {'err', code, message}: the board's configuration goes with it, so the endpoint reads once.

local prefix = string.sub(KEYS[1], 1, -7)
local board = board_of(prefix)
local cfg = load_config(KEYS[1])
if not cfg then return {'err', 'unknown_board', 'no board ' .. board} end
if not tournament_of(cfg) then return {'err', 'not_found', 'board ' .. board .. ' has no tournament'} end
local now = now_ms(ARGV[1])
local season = current_season(prefix, cfg, now)
local t = prefix .. 't:' .. season
return {'ok', now, season, redis.call('ZCARD', t .. ':joined'), tonumber(redis.call('GET', t .. ':ended') or '-1'),
  redis.call('GET', KEYS[1])}
