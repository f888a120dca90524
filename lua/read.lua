-- read.lua: every leaderboard read, resolved against the same season rules as submit.lua.
-- Prepended with lib.lua. Reads only.
--
-- KEYS[1]  lb:{<board>}:config
-- ARGV[1]  mode: 'top' | 'player' | 'around' | 'players' | 'final' (a tournament's final
--          standings, t:<season>:final, as `top`; season '' = the last frozen: t:last)
-- ARGV[2]  season ('' = current)     ARGV[3] now_ms override ('' = Redis TIME)
-- top, final: ARGV[4] offset, ARGV[5] limit
-- player:  ARGV[4] player
-- around:  ARGV[4] player, ARGV[5] radius
-- players: ARGV[4..] players
-- arounds: ARGV[4..] pairs of player, radius (every `around` view of a flush, in one call)
--
-- Returns {'ok', season, total, seq, season start_ms, entries...} where entries are flat groups of five:
-- player, points, rank, name ('' = none), reached_ms (-1 = none); or {'err', code, message}.
-- For `arounds`, each pair's rows are preceded by their count: {..., n1, rows1..., n2, rows2...}.

local prefix = string.sub(KEYS[1], 1, -7)
local cfg = load_config(KEYS[1])
if not cfg then return {'err', 'unknown_board', 'no board ' .. board_of(prefix)} end
local now = now_ms(ARGV[3])
local mode = ARGV[1]
local season, start, key
if mode == 'final' then
  -- A tournament's frozen standings (lua/tournament_end.lua), read as `top`.
  season = ARGV[2]
  if season == '' then season = redis.call('GET', prefix .. 't:last') end
  if not season or redis.call('EXISTS', prefix .. 't:' .. season .. ':ended') == 0 then
    return {'err', 'not_found', 'no final standings' .. (ARGV[2] ~= '' and (' of season ' .. ARGV[2]) or '') .. ': the tournament has not ended'}
  end
  start = tonumber(redis.call('ZSCORE', prefix .. 'seasons', season) or '0')
  key = prefix .. 't:' .. season .. ':final'
  mode = 'top'
else
  season, start = resolve_season(prefix, cfg, now, ARGV[2])
  if not season then return {'err', 'unknown_season', 'no season ' .. ARGV[2]} end
  key = prefix .. 's:' .. season
end

local total = redis.call('ZCARD', key)
local seq = tonumber(redis.call('GET', prefix .. 'seq') or '0')
local out = {'ok', season, total, seq, start}
local function append(rows)
  for _, v in ipairs(rows) do out[#out + 1] = v end
end
local function index_of(player)
  if cfg.order == 'desc' then return redis.call('ZREVRANK', key, player) end
  return redis.call('ZRANK', key, player)
end

if mode == 'top' then
  local offset, limit = tonumber(ARGV[4]), tonumber(ARGV[5])
  if limit > 0 then append(entries(prefix, key, cfg, offset, offset + limit - 1, start)) end
elseif mode == 'player' then
  local i = index_of(ARGV[4])
  if i then append(entries(prefix, key, cfg, i, i, start)) end
elseif mode == 'around' or mode == 'arounds' then
  local function around(player, r)
    local i = index_of(player)
    if not i then return {} end
    -- Near the edges, still 2r+1 rows when the board has them.
    local first = math.max(0, math.min(i - r, total - (2 * r + 1)))
    return entries(prefix, key, cfg, first, first + 2 * r, start)
  end
  if mode == 'around' then
    append(around(ARGV[4], tonumber(ARGV[5])))
  else
    for n = 4, #ARGV - 1, 2 do
      local rows = around(ARGV[n], tonumber(ARGV[n + 1]))
      out[#out + 1] = #rows / 5
      append(rows)
    end
  end
else -- players
  for n = 4, #ARGV do
    local i = index_of(ARGV[n])
    if i then append(entries(prefix, key, cfg, i, i, start)) end
  end
end
return out
