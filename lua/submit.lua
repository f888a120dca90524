-- submit.lua: a batch of score submissions to one board, each applied atomically and in order,
-- in one round trip (DESIGN §3, §4, §8, §10 "group commit"). Prepended with lib.lua.
-- A batch of one is the plain case; the server groups concurrent submissions to a board.
--
-- KEYS[1]  lb:{<board>}:config   (every other key is built from the same `lb:{<board>}:` prefix,
--                                 so they share one hash slot on a cluster)
-- ARGV[1]  now_ms override ('' = Redis TIME; the injected test clock otherwise)
-- then 7 per submission:
--   player, submission id, points (integer), op override ('' = the board's op; admin only),
--   display name ('' = none), unique limiter member, '1' to skip the board's submit_limit
--
-- Order for each: ban check -> dedup (so a retried success is never rate limited) -> limiter check ->
-- compute the new score and check its range -> write: score, limiter entry, name, audit log,
-- dedup record. A rejection writes nothing. If any score changed, `seq` is bumped once and one
-- event is published for the batch; each result carries the seq the board had once it was
-- applied (base + 1 if it changed a score, else base).
--
-- Returns one entry per submission, in order:
--   {'ok', season, points, rank, previous_rank (-1 = none), seq, duplicate (0/1), reached_ms (-1 = none)}
--   {'err', code, message, retry_after_ms, limit, reset_ms}

local prefix = string.sub(KEYS[1], 1, -7)
local board = board_of(prefix)
local now = now_ms(ARGV[1])
local cfg = load_config(KEYS[1])

local results = {}
local changes = {}
local season, season_start
local base_seq = tonumber(redis.call('GET', prefix .. 'seq') or '0')

local function submit_one(player, sub_id, points, op, name, member, skip_limit)
  if not cfg then return {'err', 'unknown_board', 'no board ' .. board, 0, 0, 0} end

  -- 0. A banned player (lua/ban.lua) changes nothing, a retried submission id included.
  if redis.call('HEXISTS', prefix .. 'bans', player) == 1 then
    return {'err', 'forbidden', player .. ' is banned from ' .. board, 0, 0, 0}
  end

  -- 1. A submission id seen before for this player and board returns the first result.
  local dedup_key = prefix .. 'dedup:' .. player .. ':' .. sub_id
  local seen = redis.call('GET', dedup_key)
  if seen then
    local r = {}
    for field in string.gmatch(seen, '[^|]+') do r[#r + 1] = field end
    return {'ok', r[1], tonumber(r[2]), tonumber(r[3]), tonumber(r[4]), tonumber(r[5]), 1, tonumber(r[6])}
  end

  -- 2. Points allowed on this board.
  if op == '' then op = cfg.op end
  local maxp = cfg.max_points_per_submit
  if maxp ~= nil and maxp ~= cjson.null and points > maxp then
    return {'err', 'points_out_of_range', 'points above this board\'s max_points_per_submit (' .. fmt(maxp) .. ')', 0, 0, 0}
  end

  -- 3. The board's sliding-window limit for this player.
  local lim = cfg.submit_limit
  local limited = lim ~= nil and lim ~= cjson.null and skip_limit ~= '1'
  local rl_key = prefix .. 'rl:' .. player
  if limited then
    local r = rl_check(rl_key, now, lim.window_ms, lim.limit)
    if r[1] == 0 then
      return {'err', 'rate_limited', 'at most ' .. lim.limit .. ' submissions per ' .. lim.window_ms .. ' ms', r[4], r[2], r[5]}
    end
  end

  -- 4. The new score.
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
  if limited then rl_take(rl_key, now, lim.window_ms, member) end
  if cfg.reset ~= 'never' then start_season(prefix, cfg, season, season_start) end
  redis.call('ZADD', key, fmt(new_score), player)
  if name ~= '' then redis.call('HSET', prefix .. 'names', player, name) end
  local rank = rank_of(key, cfg, player, new_score)
  local reached = reached_ms(cfg, t, season_start)
  if new_score ~= old_score then
    changes[#changes + 1] = '{"player":"' .. player .. '","score":' .. fmt(new_points) .. ',"rank":' .. fmt(rank) ..
      ',"previous_rank":' .. (prev_rank < 0 and 'null' or fmt(prev_rank)) .. '}'
  end
  redis.call('XADD', prefix .. 'log', 'MAXLEN', '~', '10000', '*',
    'player', player, 'points', fmt(points), 'op', op, 'score', fmt(new_points),
    'rank', fmt(rank), 'season', season, 'id', sub_id, 'time_ms', fmt(now))
  -- The board's seq once this submission is applied: a change bumps it (once for the whole
  -- batch, below), an unchanged score leaves it where it was.
  local seq = base_seq
  if new_score ~= old_score then seq = base_seq + 1 end
  -- Recorded at once, so a retry later in this same batch is already a duplicate.
  redis.call('SET', dedup_key, season .. '|' .. fmt(new_points) .. '|' .. fmt(rank) .. '|' .. fmt(prev_rank) .. '|' .. fmt(seq) .. '|' .. fmt(reached), 'EX', 86400)
  return {'ok', season, new_points, rank, prev_rank, seq, 0, reached}
end

if cfg then season, season_start = current_season(prefix, cfg, now) end
for i = 2, #ARGV, 7 do
  results[#results + 1] = submit_one(ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2]), ARGV[i + 3], ARGV[i + 4], ARGV[i + 5], ARGV[i + 6])
end

-- One seq bump and one event for the whole batch.
if #changes > 0 then
  publish_change(prefix, board, season, ',"changes":[' .. table.concat(changes, ',') .. ']')
end
return results
