-- read.lua: every leaderboard read, resolved against the same season rules as submit.lua.
-- Prepended with lib.lua. Reads only, but for the whole board of a bucketed board, which is
-- merged from its buckets first if one changed since (lib.lua, `whole`).
--
-- KEYS[1]  lb:{<board>}:config
-- ARGV[1]  mode: 'top' | 'player' | 'around' | 'players' | 'final' (a tournament's final
--          standings, t:<season>:final, as `top`; season '' = the last frozen: t:last)
-- ARGV[2]  season ('' = current)     ARGV[3] now_ms override ('' = Redis TIME)
-- ARGV[4]  which ladder, on a bucketed board (lib.lua, "Buckets"; ignored on other boards and
--          by `final`): '' = the players' own: `player`, `around`, `arounds` and `players` read
--          each named player within their bucket (a player without one has no row; `player` and
--          `around` answer `not_found`), `top` is refused (`bad_request`: name a bucket);
--          '*' = the whole board; '<n>' = bucket n; '@<player>' = that player's bucket
-- top, final: ARGV[5] offset, ARGV[6] limit
-- player:  ARGV[5] player
-- around:  ARGV[5] player, ARGV[6] radius
-- players: ARGV[5..] players
-- arounds: ARGV[5..] pairs of player, radius (every `around` view of a flush, in one call)
--
-- Returns {'ok', season, total, seq, season start_ms, bucket, buckets, entries...} where bucket
-- is the bucket read (0 = the whole board or an unbucketed one; `player` and `around` of one
-- player in their own: theirs; `players`, `arounds`: 0), buckets the season's number of buckets
-- when one bucket is named (`<n>` or `@<player>`; else 0), and entries are flat groups of five:
-- player, points, rank, name ('' = none), reached_ms (-1 = none); or {'err', code, message}.
-- `total` counts the ladder read (the bucket's players when one bucket is read).
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
    if ARGV[2] ~= '' and not resolve_season(prefix, cfg, now, ARGV[2]) then
      return {'err', 'unknown_season', 'no season ' .. ARGV[2]}
    end
    if not season and not tournament_of(cfg) then
      return {'err', 'not_found', 'board ' .. board_of(prefix) .. ' has no tournament'}
    end
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

-- A bucketed board: which bucket's zset is read (see ARGV[4]); `own` = each player's own.
local bsize = ARGV[1] ~= 'final' and bucket_size_of(cfg)
local scope = ARGV[4]
local bucket, own = 0, false
if bsize and scope ~= '*' then
  if scope == '' then
    if mode == 'top' then
      return {'err', 'bad_request', 'board ' .. board_of(prefix) .. ' is bucketed: a top names a bucket (or a player, whose bucket is read)'}
    end
    own = true
  else
    if string.sub(scope, 1, 1) == '@' then
      local p = string.sub(scope, 2)
      bucket = bucket_of(prefix, season, p)
      if not bucket then
        return {'err', 'not_found', p .. ' has no bucket on ' .. board_of(prefix) .. ' in season ' .. season .. ': a bucket is given on the first score (or join)'}
      end
    else
      bucket = tonumber(scope)
    end
    key = bucket_key(prefix, season, bucket)
  end
elseif bsize then
  key = whole(prefix, season)
end
-- The season's buckets are numbered 1 to the last one opened (lib.lua, "Buckets").
local buckets = bucket > 0 and tonumber(redis.call('HGET', prefix .. 'bk:' .. season, '#open') or '0') or 0
-- The ladder of `player` when each is read in their own bucket (nil: they have none), and the
-- bucket's number.
local function own_key(player)
  if not own then return key, bucket end
  local n = bucket_of(prefix, season, player)
  return n and bucket_key(prefix, season, n), n
end
local function no_bucket(player)
  return {'err', 'not_found', player .. ' has no bucket on ' .. board_of(prefix) .. ' in season ' .. season .. ': a bucket is given on the first score (or join)'}
end

local seq = tonumber(redis.call('GET', prefix .. 'seq') or '0')
local out = {'ok', season, 0, seq, start, bucket, buckets}
local function append(rows)
  for _, v in ipairs(rows) do out[#out + 1] = v end
end
local function index_of(k, player)
  if cfg.order == 'desc' then return redis.call('ZREVRANK', k, player) end
  return redis.call('ZRANK', k, player)
end

if mode == 'top' then
  out[3] = redis.call('ZCARD', key)
  local offset, limit = tonumber(ARGV[5]), tonumber(ARGV[6])
  if limit > 0 then append(entries(prefix, key, cfg, offset, offset + limit - 1, start)) end
elseif mode == 'player' then
  local k, n = own_key(ARGV[5])
  if not k then return no_bucket(ARGV[5]) end
  out[3], out[6] = redis.call('ZCARD', k), n
  local i = index_of(k, ARGV[5])
  if i then append(entries(prefix, k, cfg, i, i, start)) end
elseif mode == 'around' or mode == 'arounds' then
  local function around(player, r)
    local k, b = own_key(player)
    if not k then return {}, nil end
    local total = redis.call('ZCARD', k)
    local i = index_of(k, player)
    if not i then return {}, total, b end
    -- Near the edges, still 2r+1 rows when the board has them.
    local first = math.max(0, math.min(i - r, total - (2 * r + 1)))
    return entries(prefix, k, cfg, first, first + 2 * r, start), total, b
  end
  if mode == 'around' then
    local rows, total, b = around(ARGV[5], tonumber(ARGV[6]))
    if not total then return no_bucket(ARGV[5]) end
    out[3], out[6] = total, b
    append(rows)
  else
    if not own then out[3] = redis.call('ZCARD', key) end
    for n = 5, #ARGV - 1, 2 do
      local rows = around(ARGV[n], tonumber(ARGV[n + 1]))
      out[#out + 1] = #rows / 5
      append(rows)
    end
  end
else -- players
  if not own then out[3] = redis.call('ZCARD', key) end
  for n = 5, #ARGV do
    local k = own_key(ARGV[n])
    local i = k and index_of(k, ARGV[n])
    if i then append(entries(prefix, k, cfg, i, i, start)) end
  end
end
return out
