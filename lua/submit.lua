-- submit.lua: a batch of score submissions to one board, each applied atomically and in order,
-- in one round trip (DESIGN §3, §4, §8, §10 "group commit"). Prepended with lib.lua.
-- A batch of one is the plain case; the server groups concurrent submissions to a board.
--
-- KEYS[1]  lb:{<board>}:config   (every other key is built from the same `lb:{<board>}:` prefix,
--                                 so they share one hash slot on a cluster)
-- ARGV[1]  now_ms override ('' = Redis TIME; the injected test clock otherwise)
-- then 6 per submission:
--   player, submission id, points (integer), op override ('' = the board's op; admin only),
--   display name ('' = none), '1' to skip the board's submit_limit
--
-- Order for each: ban check (lua/ban.lua: a banned player changes nothing, a retried id
-- included) -> dedup (so a retried success is never rate limited) -> limiter check ->
-- compute the new score and check its range -> write: score, limiter entry, name, dedup record.
-- A rejection writes nothing. Once per batch: the config, the season, `seq` (bumped once if any
-- score changed), one audit-log entry carrying every accepted submission, one event. Each result
-- carries the seq the board had once it was applied (base + 1 if it changed a score, else base).
--
-- The hot loop formats no number in Lua where Redis can take it as a number (Redis prints
-- numbers passed to redis.call with 17 significant digits itself), and on `incr` boards without
-- tie-break packing the score moves with ZINCRBY itself.
--
-- Dedup (README "Redis keys"): one hash per player and board, `lb:{<board>}:dd:<player>`: field
-- <id> -> the first result (msgpack, led by its generation's parity), and '#' = the current
-- generation's start (ms) × 1024 + its record count × 2 + its parity. A new generation starts
-- when the current one is DEDUP_WINDOW_MS old or holds DEDUP_CAP records; starting one deletes
-- the records of the generation before the previous one and re-arms the hash's expiry to
-- 2 × DEDUP_WINDOW_MS. So a record lives at least DEDUP_WINDOW_MS, unless its player has made
-- more than DEDUP_CAP newer accepted submissions to the board, and a player's hash never holds
-- more than 2 × DEDUP_CAP records. A lookup reads two fields.
--
-- Returns one entry per submission, in order:
--   {'ok', season, points, rank, previous_rank (-1 = none), seq, duplicate (0/1), reached_ms (-1 = none)}
--   {'err', code, message, retry_after_ms, limit, reset_ms}

local DEDUP_WINDOW_MS = 600000
local DEDUP_CAP = 64
-- Audit-log entries kept (each carries one batch: at least this many submissions).
local LOG_MAXLEN = 1000
-- Numbers below this print exactly with Lua's own 14-digit conversion ('..', table.concat).
local EXACT14 = 1e14

local prefix = string.sub(KEYS[1], 1, -7)
local board = board_of(prefix)
local cfg = load_config(KEYS[1])
local n_args = #ARGV
if not cfg then
  local results = {}
  for i = 2, n_args, 6 do
    results[#results + 1] = {'err', 'unknown_board', 'no board ' .. board, 0, 0, 0}
  end
  return results
end

local now = now_ms(ARGV[1])
local season, season_start = current_season(prefix, cfg, now)
local key = prefix .. 's:' .. season
local base_seq = tonumber(redis.call('GET', prefix .. 'seq') or '0')
local season_recorded = cfg.reset == 'never'
local desc = cfg.order == 'desc'
local packed = earliest(cfg)
local ordinal = cfg.ranking ~= 'shared'
local rank_cmd = desc and 'ZREVRANK' or 'ZRANK'
local max_p, min_p = max_points(cfg), min_points(cfg)
local maxp = cfg.max_points_per_submit
if maxp == cjson.null then maxp = nil end
local lim = cfg.submit_limit
if lim == cjson.null then lim = nil end
local any_bans = redis.call('EXISTS', prefix .. 'bans') == 1

-- |score| of the board's extremes, read once per batch and only if an `incr` submission comes:
-- while |points| + that stays in range, ZINCRBY cannot leave the exact range, so it runs blind.
local extreme

local function board_extreme()
  local m = 0
  local lo = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  if lo[2] then m = math.abs(tonumber(lo[2])) end
  local hi = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  if hi[2] then m = math.max(m, math.abs(tonumber(hi[2]))) end
  return m
end

local function rank(player, score)
  if ordinal then return redis.call(rank_cmd, key, player) + 1 end
  return rank_of(key, cfg, player, score)
end

local results = {}
local changes, nc = {}, 0 -- the change event's entries (JSON objects)
local audit, na = {}, 0   -- the audit entry's lines: 'player id points op score rank' per submission

local function submit_one(player, sub_id, points, op, name, skip_limit)
  -- 0. A banned player changes nothing, a retried submission id included (one HEXISTS, and
  -- only on a board that has bans at all: `any_bans` is read once per batch).
  if any_bans and redis.call('HEXISTS', prefix .. 'bans', player) == 1 then
    return {'err', 'forbidden', player .. ' is banned from ' .. board, 0, 0, 0}
  end

  -- 1. A submission id seen before for this player and board returns the first result.
  local dd_key = prefix .. 'dd:' .. player
  local dd = redis.call('HMGET', dd_key, '#', sub_id)
  if dd[2] then
    local _, s, p, r, pr, q, reached = cmsgpack.unpack(dd[2])
    return {'ok', s, p, r, pr, q, 1, reached}
  end

  -- 2. Points allowed on this board.
  if op == '' then op = cfg.op end
  if maxp and (points > maxp or points < -maxp) then
    return {'err', 'points_out_of_range', '|points| above this board\'s max_points_per_submit (' .. fmt(maxp) .. ')', 0, 0, 0}
  end

  -- 3. The board's sliding-window limit for this player.
  local limited = lim and skip_limit ~= '1'
  local rl_key
  if limited then
    rl_key = prefix .. 'rl:' .. player
    local r = rl_check(rl_key, now, lim.window_ms, lim.limit)
    if r[1] == 0 then
      return {'err', 'rate_limited', 'at most ' .. lim.limit .. ' submissions per ' .. lim.window_ms .. ' ms', r[4], r[2], r[5]}
    end
  end

  -- 4. The new score, written.
  local new_points, new_score, prev_rank, changed, t
  if op == 'incr' and not packed and ordinal then
    if not extreme then extreme = board_extreme() end
    if math.abs(points) + extreme <= max_p then
      local before = redis.call(rank_cmd, key, player)
      prev_rank = before and before + 1 or -1
      new_score = tonumber(redis.call('ZINCRBY', key, points, player))
      new_points = new_score
      if new_score > extreme then extreme = new_score elseif -new_score > extreme then extreme = -new_score end
      changed = points ~= 0 or not before
    end
  end
  if not new_score then
    local old_score = redis.call('ZSCORE', key, player)
    local old_points, old_t
    if old_score then
      old_score = tonumber(old_score)
      old_points, old_t = decode(cfg, old_score)
    end
    if op == 'incr' then
      new_points = (old_points or 0) + points
    elseif op == 'set' then
      new_points = points
    else -- best
      if not old_points then new_points = points
      elseif desc then new_points = math.max(old_points, points)
      else new_points = math.min(old_points, points) end
    end
    if new_points > max_p or new_points < min_p then
      return {'err', 'score_out_of_range', 'the resulting score ' .. fmt(new_points) .. ' is outside ' .. fmt(min_p) .. '..' .. fmt(max_p), 0, 0, 0}
    end
    if old_score and new_points == old_points then
      new_score, t = old_score, old_t -- unchanged: keeps the time it was first reached
    else
      t = math.floor((now - season_start) / cfg.resolution_ms)
      if packed and (t < 0 or t >= span(cfg)) then
        return {'err', 'score_out_of_range', 'the tie-break clock of season ' .. season .. ' has run out; start a new season', 0, 0, 0}
      end
      new_score = encode(cfg, new_points, t)
    end
    changed = new_score ~= old_score
    prev_rank = old_score and rank(player, old_score) or -1
    if changed then redis.call('ZADD', key, new_score, player) end
    if extreme and math.abs(new_score) > extreme then extreme = math.abs(new_score) end
  end

  if not season_recorded then
    start_season(prefix, cfg, season, season_start)
    season_recorded = true
  end
  if limited then rl_take(rl_key, now, lim.window_ms, now .. ':' .. sub_id) end
  if name ~= '' then redis.call('HSET', prefix .. 'names', player, name) end
  local new_rank = rank(player, new_score)
  local reached = packed and reached_ms(cfg, t, season_start) or -1
  local seq = base_seq
  -- One string each for the event and the audit entry (one concatenation: one allocation).
  local shown = (new_points < EXACT14 and new_points > -EXACT14) and new_points or fmt(new_points)
  if changed then
    seq = base_seq + 1
    nc = nc + 1
    changes[nc] = '{"player":"' .. player .. '","score":' .. shown .. ',"rank":' .. new_rank ..
      ',"previous_rank":' .. (prev_rank < 0 and 'null' or prev_rank) ..
      (name ~= '' and (',"name":' .. cjson.encode(name) .. '}') or '}')
  end
  na = na + 1
  audit[na] = player .. ' ' .. sub_id .. ' ' ..
    ((points < EXACT14 and points > -EXACT14) and points or fmt(points)) .. ' ' .. op .. ' ' .. shown .. ' ' .. new_rank

  -- 5. The dedup record, at once, so a retry later in this same batch is already a duplicate.
  local state = tonumber(dd[1])
  if not state then
    redis.call('HSET', dd_key, '#', now * 1024 + 2, sub_id,
      cmsgpack.pack(0, season, new_points, new_rank, prev_rank, seq, reached))
    redis.call('PEXPIRE', dd_key, 2 * DEDUP_WINDOW_MS)
  else
    local low = state % 1024
    local parity = low % 2
    if now - (state - low) / 1024 >= DEDUP_WINDOW_MS or low - parity >= 2 * DEDUP_CAP then
      -- A new generation, of the other parity: the records that had it go.
      parity = 1 - parity
      local all = redis.call('HGETALL', dd_key)
      local stale, ns = {}, 0
      for j = 1, #all, 2 do
        if all[j] ~= '#' and string.byte(all[j + 1]) == parity then ns = ns + 1; stale[ns] = all[j] end
      end
      if ns > 0 then redis.call('HDEL', dd_key, unpack(stale)) end
      redis.call('HSET', dd_key, '#', now * 1024 + 2 + parity, sub_id,
        cmsgpack.pack(parity, season, new_points, new_rank, prev_rank, seq, reached))
      redis.call('PEXPIRE', dd_key, 2 * DEDUP_WINDOW_MS)
    else
      redis.call('HSET', dd_key, '#', state + 2, sub_id,
        cmsgpack.pack(parity, season, new_points, new_rank, prev_rank, seq, reached))
    end
  end
  return {'ok', season, new_points, new_rank, prev_rank, seq, 0, reached}
end

for i = 2, n_args, 6 do
  results[#results + 1] = submit_one(ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2]), ARGV[i + 3], ARGV[i + 4], ARGV[i + 5])
end

-- One audit entry, one seq bump and one event for the whole batch.
if na > 0 then
  redis.call('XADD', prefix .. 'log', 'MAXLEN', '~', LOG_MAXLEN, '*',
    'season', season, 'time_ms', now, 'batch', table.concat(audit, '\n', 1, na))
end
if nc > 0 then
  publish_change(prefix, board, season, ',"changes":[' .. table.concat(changes, ',', 1, nc) .. ']')
end
return results
