-- tournament_entrants.lua: a page of the players who entered one occurrence of a board's
-- tournament, in the order they entered (GET /admin/boards/{b}/tournament/entrants). Prepended
-- with lib.lua. Reads only.
--
-- KEYS[1]  lb:{<board>}:config   (the occurrence's `t:<season>:joined`, `t:<season>:attempts` and
--                                 the board's `names` are built from its prefix: one hash slot)
-- ARGV[1]  season ('' = current)   ARGV[2] now_ms override ('' = TIME)
-- ARGV[3]  offset                  ARGV[4] limit
--
-- Returns {'ok', season, total, entries...} where entries are flat groups of four: player,
-- joined_ms, attempts made, name ('' = none); or {'err', code, message}.

local prefix = string.sub(KEYS[1], 1, -7)
local board = board_of(prefix)
local cfg = load_config(KEYS[1])
if not cfg then return {'err', 'unknown_board', 'no board ' .. board} end
if not tournament_of(cfg) then return {'err', 'not_found', 'board ' .. board .. ' has no tournament'} end
local season = resolve_season(prefix, cfg, now_ms(ARGV[2]), ARGV[1])
if not season then return {'err', 'unknown_season', 'no season ' .. ARGV[1]} end
local t = prefix .. 't:' .. season
local offset = tonumber(ARGV[3])
local rows = redis.call('ZRANGE', t .. ':joined', offset, offset + tonumber(ARGV[4]) - 1, 'WITHSCORES')
local out = {'ok', season, redis.call('ZCARD', t .. ':joined')}
if #rows == 0 then return out end
local players = {}
for i = 1, #rows, 2 do players[#players + 1] = rows[i] end
local attempts = redis.call('HMGET', t .. ':attempts', unpack(players))
local names = redis.call('HMGET', prefix .. 'names', unpack(players))
for i, p in ipairs(players) do
  out[#out + 1] = p
  out[#out + 1] = tonumber(rows[2 * i])
  out[#out + 1] = tonumber(attempts[i] or '0')
  out[#out + 1] = names[i] or ''
end
return out
