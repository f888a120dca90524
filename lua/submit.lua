-- submit.lua: one score submission, atomically, in one round trip (DESIGN §3, §4, §8).
-- Prepended with lib.lua.
--
-- KEYS[1]  lb:{<board>}:config   (every other key is built from the same `lb:{<board>}:` prefix,
--                                 so they share one hash slot on a cluster)
-- ARGV[1]  player id             ARGV[2] submission id
-- ARGV[3]  points (integer)      ARGV[4] op override ('' = the board's op; admin only)
-- ARGV[5]  display name ('' = none)
-- ARGV[6]  now_ms override ('' = Redis TIME; the injected test clock otherwise)
-- ARGV[7]  unique limiter member ARGV[8] '1' to skip the board's submit_limit (admin)
--
-- Order: dedup (so a retried success is never rate limited) -> limiter check -> compute the new
-- score and check its range -> write: score, limiter entry, name, seq, audit log, event, dedup.
-- A rejection writes nothing.
--
-- Returns {'ok', season, points, rank, previous_rank (-1 = none), seq, duplicate (0/1),
--          reached_ms (-1 = none)}
--      or {'err', code, message, retry_after_ms, limit, reset_ms}

local prefix = string.sub(KEYS[1], 1, -7)
local board = board_of(prefix)
local player, sub_id = ARGV[1], ARGV[2]
local points = tonumber(ARGV[3])
local now = now_ms(ARGV[6])

local cfg = load_config(KEYS[1])
if not cfg then return {'err', 'unknown_board', 'no board ' .. board, 0, 0, 0} end

-- 1. A submission id seen before for this player and board returns the first result.
local dedup_key = prefix .. 'dedup:' .. player .. ':' .. sub_id
local seen = redis.call('GET', dedup_key)
if seen then
  local r = {}
  for field in string.gmatch(seen, '[^|]+') do r[#r + 1] = field end
  return {'ok', r[1], tonumber(r[2]), tonumber(r[3]), tonumber(r[4]), tonumber(r[5]), 1, tonumber(r[6])}
end

-- 2. Points allowed on this board.
local op = ARGV[4] ~= '' and ARGV[4] or cfg.op
if cfg.max_points_per_submit ~= cjson.null and cfg.max_points_per_submit ~= nil and points > cfg.max_points_per_submit then
  return {'err', 'points_out_of_range', 'points above this board\'s max_points_per_submit (' .. fmt(cfg.max_points_per_submit) .. ')', 0, 0, 0}
end

-- 3. The board's sliding-window limit for this player.
local lim = cfg.submit_limit
local limited = lim ~= nil and lim ~= cjson.null and ARGV[8] ~= '1'
local rl_key = prefix .. 'rl:' .. player
if limited then
  local r = rl_check(rl_key, now, lim.window_ms, lim.limit)
  if r[1] == 0 then
    return {'err', 'rate_limited', 'at most ' .. lim.limit .. ' submissions per ' .. lim.window_ms .. ' ms', r[4], r[2], r[5]}
  end
end

-- 4. The new score.
local season, season_start = current_season(prefix, cfg, now)
local key = prefix .. 's:' .. season
local old_score = redis.call('ZSCORE', key, player)
local old_points, old_t
if old_score then
  old_score = tonumber(old_score)
  old_points, old_t = decode(cfg, old_score)
end

local new_points
if op == 'incr' then
  new_points = (old_points or 0) + points
elseif op == 'set' then
  new_points = points
else -- best
  if not old_points then new_points = points
  elseif cfg.order == 'desc' then new_points = math.max(old_points, points)
  else new_points = math.min(old_points, points) end
end
if new_points > max_points(cfg) or new_points < min_points(cfg) then
  return {'err', 'score_out_of_range', 'the resulting score ' .. fmt(new_points) .. ' is outside ' .. fmt(min_points(cfg)) .. '..' .. fmt(max_points(cfg)), 0, 0, 0}
end

local new_score, t
if old_score and new_points == old_points then
  new_score, t = old_score, old_t -- unchanged: keeps the time it was first reached
else
  t = math.floor((now - season_start) / cfg.resolution_ms)
  if earliest(cfg) and (t < 0 or t >= span(cfg)) then
    return {'err', 'score_out_of_range', 'the tie-break clock of season ' .. season .. ' has run out; start a new season', 0, 0, 0}
  end
  new_score = encode(cfg, new_points, t)
end

-- 5. Write.
local prev_rank = old_score and rank_of(key, cfg, player, old_score) or -1
if limited then rl_take(rl_key, now, lim.window_ms, ARGV[7]) end
if cfg.reset ~= 'never' then start_season(prefix, cfg, season, season_start) end
redis.call('ZADD', key, fmt(new_score), player)
if ARGV[5] ~= '' then redis.call('HSET', prefix .. 'names', player, ARGV[5]) end
local rank = rank_of(key, cfg, player, new_score)
local reached = reached_ms(cfg, t, season_start)

local seq
if new_score ~= old_score then
  seq = publish_change(prefix, board, season,
    ',"player":"' .. player .. '","score":' .. fmt(new_points) .. ',"rank":' .. fmt(rank) ..
    ',"previous_rank":' .. (prev_rank < 0 and 'null' or fmt(prev_rank)))
else
  seq = tonumber(redis.call('GET', prefix .. 'seq') or '0')
end
redis.call('XADD', prefix .. 'log', 'MAXLEN', '~', '10000', '*',
  'player', player, 'points', fmt(points), 'op', op, 'score', fmt(new_points),
  'rank', fmt(rank), 'season', season, 'id', sub_id, 'time_ms', fmt(now))
redis.call('SET', dedup_key,
  season .. '|' .. fmt(new_points) .. '|' .. fmt(rank) .. '|' .. fmt(prev_rank) .. '|' .. fmt(seq) .. '|' .. fmt(reached),
  'EX', 86400)
return {'ok', season, new_points, rank, prev_rank, seq, 0, reached}
