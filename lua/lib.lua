-- lib.lua: helpers shared by the board scripts. The server prepends base.lua and then this file
-- to each script that needs them (see server/src/scripts.rs), so every script still runs as one
-- EVALSHA. Numbers follow base.lua: exact integers below 2^53, printed with fmt().

-- How change events are published: plain PUBLISH on one Redis (any version); on a cluster
-- server/src/scripts.rs swaps this line for SPUBLISH (the sharded channel of the board's slot,
-- Redis >= 7), so only the node owning the slot and its replicas carry the event.
local PUBLISH_CMD = 'PUBLISH'

-- Sliding-window log (the article's limiter). check() drops entries that left the window and
-- says whether one more fits; take() records the request with a unique member (never the
-- timestamp alone: two requests in one millisecond would collapse into one).
-- Returns allowed (0/1), limit, remaining, retry_after_ms, reset_ms.
local function rl_check(key, now, window, limit)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', fmt(now - window))
  local count = redis.call('ZCARD', key)
  local reset = 0
  if count > 0 then
    local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
    reset = math.max(1, tonumber(oldest[2]) + window - now)
  end
  if count < limit then
    return {1, limit, limit - count - 1, 0, reset == 0 and window or reset}
  end
  return {0, limit, 0, reset, reset}
end

local function rl_take(key, now, window, member)
  redis.call('ZADD', key, fmt(now), member)
  redis.call('PEXPIRE', key, window)
end

-- Calendar arithmetic (UTC), after H. Hinnant's civil-from-days algorithms.
local function days_from_civil(y, m, d)
  if m <= 2 then y = y - 1 end
  local era = math.floor(y / 400)
  local yoe = y - era * 400
  local mp = (m + 9) % 12
  local doy = math.floor((153 * mp + 2) / 5) + d - 1
  local doe = yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + doy
  return era * 146097 + doe - 719468
end

local function civil_from_days(z)
  z = z + 719468
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524) - math.floor(doe / 146096)) / 365)
  local y = yoe + era * 400
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local d = doy - math.floor((153 * mp + 2) / 5) + 1
  local m = mp < 10 and mp + 3 or mp - 9
  if m <= 2 then y = y + 1 end
  return y, m, d
end

local DAY = 86400000

-- The calendar season containing `now`: name, start_ms, end_ms.
local function calendar_season(reset, now)
  local days = math.floor(now / DAY)
  if reset == 'daily' then
    local y, m, d = civil_from_days(days)
    return string.format('%04d-%02d-%02d', y, m, d), days * DAY, (days + 1) * DAY
  elseif reset == 'weekly' then
    local wd = (days + 3) % 7 -- Monday = 0 (1970-01-01 was a Thursday)
    local monday = days - wd
    local ty = civil_from_days(monday + 3) -- the ISO year is the year of the week's Thursday
    local week = math.floor((monday + 3 - days_from_civil(ty, 1, 1)) / 7) + 1
    return string.format('%04d-W%02d', ty, week), monday * DAY, (monday + 7) * DAY
  else -- monthly
    local y, m = civil_from_days(days)
    local ny, nm = y, m + 1
    if nm == 13 then ny, nm = y + 1, 1 end
    return string.format('%04d-%02d', y, m), days_from_civil(y, m, 1) * DAY, days_from_civil(ny, nm, 1) * DAY
  end
end

-- The board's current season: name, start_ms. `never` boards take the latest season an admin
-- started (or `all`); calendar boards derive it from the clock, so a boundary is exact even
-- when the rollover job runs late.
local function current_season(prefix, cfg, now)
  if cfg.reset == 'never' then
    local s = redis.call('ZREVRANGE', prefix .. 'seasons', 0, 0, 'WITHSCORES')
    if #s == 0 then return 'all', 0 end
    return s[1], tonumber(s[2])
  end
  local name, start = calendar_season(cfg.reset, now)
  return name, start
end

-- Resolves a season asked for by a reader ('' = current): name, start_ms, or nil if unknown.
local function resolve_season(prefix, cfg, now, asked)
  local cur, cur_start = current_season(prefix, cfg, now)
  if asked == '' or asked == cur then return cur, cur_start end
  local start = redis.call('ZSCORE', prefix .. 'seasons', asked)
  if not start then return nil end
  return asked, tonumber(start)
end

-- Buckets (docs/protocol.md, "Buckets"): on a board with `bucket_size`, each player is placed,
-- on their first accepted score (or join) of a season, in a bucket of at most that many rivals:
--   bk:<season>        HASH player -> bucket number (1, 2, ...); '#open' the bucket being filled,
--                      '#fill' how many it holds ('#' is no id character: no player's field)
--   bk:<season>:<n>    ZSET bucket n's scores, written beside the season's own zset `s:<season>`
-- Per season, so each season forms new buckets; the keys go with their season (start_season).
local function bucket_size_of(cfg)
  local n = cfg.bucket_size
  if n == nil or n == cjson.null then return nil end
  return n
end

-- The bucket of `player` in `season` (a number), or nil if they have none. With `size`, a player
-- without one is placed in the open bucket, and the next bucket opens once it holds `size`.
local function bucket_of(prefix, season, player, size)
  local h = prefix .. 'bk:' .. season
  local n = redis.call('HGET', h, player)
  if n then return tonumber(n) end
  if not size then return nil end
  local st = redis.call('HMGET', h, '#open', '#fill')
  local open, fill = tonumber(st[1] or '1'), tonumber(st[2] or '0')
  if fill >= size then open, fill = open + 1, 0 end
  redis.call('HSET', h, player, open, '#open', open, '#fill', fill + 1)
  return open
end

local function bucket_key(prefix, season, n)
  return prefix .. 'bk:' .. season .. ':' .. string.format('%d', n)
end

-- The buckets hold a bucketed board's scores. A submission writes only the player's bucket and
-- marks the season's buckets changed (`bk:<season>` field '#stale'); the season's own zset
-- `s:<season>`, the whole board that operators read (ranks over every player, `rewards_top`, a
-- tournament's final standings), is merged from the buckets by `whole` when it is read after a
-- change. So the merge, O(players), is paid by an operator's read, not a walk of the whole
-- board's skiplist by each submission. Moderation writes the bucket and `s:<season>` both
-- (remove_entry, bucket_mirror), which keeps a merged zset merged.

-- The zset holding `player`'s score in `season`: their bucket's on a bucketed board, else (no
-- bucket, or no buckets) the season's own. With the bucket's number, if any.
local function score_key(prefix, cfg, season, player)
  local own = prefix .. 's:' .. season
  if not bucket_size_of(cfg) then return own end
  local n = bucket_of(prefix, season, player)
  if not n then return own end
  return bucket_key(prefix, season, n), n
end

-- Raises the season's bound of |score| in its buckets (`bk:<season>` field '#max', which
-- lua/submit.lua reads to let ZINCRBY run blind) to cover `score`.
local function bucket_bound(prefix, season, score)
  local h = prefix .. 'bk:' .. season
  local a = math.abs(tonumber(score))
  if a > tonumber(redis.call('HGET', h, '#max') or '0') then redis.call('HSET', h, '#max', fmt(a)) end
end

-- Buckets merged by one ZUNIONSTORE (below Lua's unpack limit of 8000 values).
local MERGE_CHUNK = 7000

-- The season's own zset, the whole board: first merged from the season's buckets if one changed
-- since the last merge (see above).
local function whole(prefix, season)
  local key = prefix .. 's:' .. season
  local h = prefix .. 'bk:' .. season
  local st = redis.call('HMGET', h, '#stale', '#open')
  if not st[1] then return key end
  local open = tonumber(st[2] or '0')
  redis.call('DEL', key)
  for first = 1, open, MERGE_CHUNK do
    local keys, n = {key}, 1
    for b = first, math.min(open, first + MERGE_CHUNK - 1) do
      n = n + 1
      keys[n] = bucket_key(prefix, season, b)
    end
    redis.call('ZUNIONSTORE', key, n, unpack(keys))
  end
  redis.call('HDEL', h, '#stale')
  return key
end

-- Drops the bucket keys of `season`.
local function drop_buckets(prefix, season)
  local h = prefix .. 'bk:' .. season
  local open = tonumber(redis.call('HGET', h, '#open') or '0')
  for n = 1, open do redis.call('UNLINK', bucket_key(prefix, season, n)) end
  redis.call('UNLINK', h)
end

-- Whether `player` is banned from the board (its own ban or its copy of a ban on every board,
-- lua/ban.lua): nil, or the refusal's code and message. lua/submit.lua reads the same two
-- fields inline: its per-player function is at Lua's limit of 60 upvalues.
local function ban_refusal(prefix, board, player)
  local b = redis.call('HMGET', prefix .. 'bans', player, '*' .. player)
  if b[1] or b[2] then return 'forbidden', player .. ' is banned from ' .. board end
  return nil
end

-- Leagues (docs/protocol.md, "Leagues"): a tier board's config names its league and tier;
--   lg                 HASH player -> the tier board they play on now, written for the players
--                      the `league.close` job moved (lua/league_apply.lua), on both boards
--   lg:done:<season>   STRING the moves of that ended season were applied here (their count)
-- Whether `player` may play on this tier board: nil, or the refusal's code and message. A player
-- the job never moved plays on the lowest tier, where new players enter.
local function league_refusal(prefix, cfg, board, player)
  local l = cfg.league
  if l == nil or l == cjson.null then return nil end
  local on = redis.call('HGET', prefix .. 'lg', player)
  if on then
    if on == board then return nil end
    return 'wrong_tier', player .. ' plays on ' .. on .. ' in league ' .. l.league .. ', not on ' .. board
  end
  if l.tier == 0 then return nil end
  -- Only this board's placements are in its slot: whether the player was moved to another tier
  -- is not known here, so the message says where to ask.
  return 'wrong_tier', player .. ' does not play on ' .. board .. ' in league ' .. l.league ..
    ' (new players enter on ' .. l.entry .. '; GET /v1/leagues/' .. l.league .. '/me tells a player\'s tier)'
end

-- Records a newly started season and drops those beyond keep_seasons (current + keep past),
-- with their tournament keys.
local function start_season(prefix, cfg, name, start)
  if redis.call('ZADD', prefix .. 'seasons', 'NX', fmt(start), name) == 0 then return false end
  local old = redis.call('ZREVRANGE', prefix .. 'seasons', cfg.keep_seasons + 1, -1)
  for _, s in ipairs(old) do
    local t = prefix .. 't:' .. s
    redis.call('UNLINK', prefix .. 's:' .. s, t .. ':joined', t .. ':attempts', t .. ':final', t .. ':ended')
    drop_buckets(prefix, s)
    redis.call('ZREM', prefix .. 'seasons', s)
  end
  return true
end

-- The score codec, the same arithmetic as scorecast_shared::codec.
local function span(cfg) return 2 ^ cfg.time_bits end
local function earliest(cfg) return cfg.tie_break == 'earliest' end

local function decode(cfg, score)
  if not earliest(cfg) then return score, 0 end
  local sp = span(cfg)
  local points = math.floor(score / sp)
  local f = score - points * sp
  if cfg.order == 'desc' then return points, sp - 1 - f end
  return points, f
end

local function encode(cfg, points, t)
  if not earliest(cfg) then return points end
  local sp = span(cfg)
  if cfg.order == 'desc' then return points * sp + (sp - 1 - t) end
  return points * sp + t
end

local function max_points(cfg)
  if earliest(cfg) then return 2 ^ (53 - cfg.time_bits) - 1 end
  return 9007199254740991
end

local function min_points(cfg)
  if earliest(cfg) then return 0 end
  return -9007199254740991
end

-- When a score of an `earliest` board was reached, in ms since the epoch (-1 otherwise).
local function reached_ms(cfg, t, season_start)
  if not earliest(cfg) then return -1 end
  return season_start + t * cfg.resolution_ms
end

-- 1-based rank of `player` whose stored score is `score`. `shared` ranking: one more than the
-- number of players with strictly better *points*.
local function rank_of(key, cfg, player, score)
  if cfg.ranking == 'shared' then
    local points = decode(cfg, score)
    if cfg.order == 'desc' then
      local lo = earliest(cfg) and fmt((points + 1) * span(cfg)) or '(' .. fmt(score)
      return redis.call('ZCOUNT', key, lo, '+inf') + 1
    end
    local hi = earliest(cfg) and '(' .. fmt(points * span(cfg)) or '(' .. fmt(score)
    return redis.call('ZCOUNT', key, '-inf', hi) + 1
  end
  if cfg.order == 'desc' then return redis.call('ZREVRANK', key, player) + 1 end
  return redis.call('ZRANK', key, player) + 1
end

-- Mirrors a moderation change of `player`'s entry in `season` to their bucket, if they have
-- one (lua/remove.lua, ban.lua, unban.lua): `score` nil removes it; with `size`, a score is
-- placed in a bucket if they have none. Returns the bucket's number and the player's rank in
-- it (before a removal, after an addition), or nil: a bucketed board's change events give the
-- ranks within the bucket and name it.
local function bucket_mirror(prefix, cfg, season, player, score, size)
  local n = bucket_of(prefix, season, player, score and size)
  if not n then return nil end
  local k = bucket_key(prefix, season, n)
  local r
  if score then
    redis.call('ZADD', k, score, player)
    bucket_bound(prefix, season, score)
    r = rank_of(k, cfg, player, tonumber(score))
  else
    local had = redis.call('ZSCORE', k, player)
    r = had and rank_of(k, cfg, player, tonumber(had))
    redis.call('ZREM', k, player)
  end
  return tonumber(n), r
end

-- Removes `player`'s entry (stored score `old`) from the season's zset `key` and from their
-- bucket (lua/remove.lua, ban.lua, league_apply.lua). Returns the change event's entry for it:
-- score and rank null, `previous_rank` the rank it had (within the bucket on a bucketed board,
-- which it names).
local function remove_entry(prefix, cfg, season, key, player, old)
  local n, prev_rank = bucket_mirror(prefix, cfg, season, player, nil)
  local tail = ''
  if n then tail = ',"bucket":' .. fmt(n) end
  -- No bucket (or not in it): the entry is the season's own (`old` was read there).
  if not prev_rank then prev_rank = rank_of(key, cfg, player, tonumber(old)) end
  redis.call('ZREM', key, player)
  return '{"player":"' .. player .. '","score":null,"rank":null,"previous_rank":' ..
    fmt(prev_rank) .. tail .. '}'
end

-- Board rows from index `start` to `stop` (0-based, inclusive) in rank order, as a flat list:
-- player, points, rank, name ('' if none), reached_ms (-1 if none) for each.
local function entries(prefix, key, cfg, start, stop, season_start)
  local cmd = cfg.order == 'desc' and 'ZREVRANGE' or 'ZRANGE'
  local rows = redis.call(cmd, key, start, stop, 'WITHSCORES')
  local out = {}
  if #rows == 0 then return out end
  local players = {}
  for i = 1, #rows, 2 do players[#players + 1] = rows[i] end
  local names = redis.call('HMGET', prefix .. 'names', unpack(players))
  local prev_points, prev_rank
  for i = 1, #rows, 2 do
    local idx = (i - 1) / 2
    local score = tonumber(rows[i + 1])
    local points, t = decode(cfg, score)
    local rank = start + idx + 1
    if cfg.ranking == 'shared' then
      if idx == 0 then rank = rank_of(key, cfg, rows[i], score)
      elseif points == prev_points then rank = prev_rank end
    end
    prev_points, prev_rank = points, rank
    out[#out + 1] = rows[i]
    out[#out + 1] = points
    out[#out + 1] = rank
    out[#out + 1] = names[idx + 1] or ''
    out[#out + 1] = reached_ms(cfg, t, season_start)
  end
  return out
end

local function load_config(key)
  local raw = redis.call('GET', key)
  if not raw then return nil end
  return cjson.decode(raw)
end

-- Bumps the board's change counter and tells every instance (the same script that changes a
-- score bumps seq, so events are ordered with the data). The channel is keys::events in
-- server/src/keys.rs; `body` is `,"changes":[{player, score, rank, previous_rank}, ...]` or
-- `,"rollover":true` (the shape server/src/hub/events.rs reads). Returns the new seq and the
-- event as published.
local function publish_change(prefix, board, season, body)
  local seq = redis.call('INCR', prefix .. 'seq')
  local event = '{"board":"' .. board .. '","season":"' .. season .. '","seq":' .. fmt(seq) .. body .. '}'
  redis.call(PUBLISH_CMD, 'ev:{' .. board .. '}', event)
  return seq, event
end

local function board_of(prefix)
  return string.sub(prefix, 5, -3) -- 'lb:{' .. board .. '}:'
end

-- The moderation history (docs/protocol.md "Moderation"): a moderation entry of the board's
-- log is copied, under the same stream id, to `modlog`, which nothing else writes and which
-- keeps its own MODLOG_MAXLEN entries, so the submission traffic that trims the log cannot
-- evict it (server/src/store/log.rs reads the log, then the history older than the log).
local MODLOG_MAXLEN = 10000
local function modlog_add(prefix, id, fields)
  local ok = redis.pcall('XADD', prefix .. 'modlog', 'MAXLEN', '~', MODLOG_MAXLEN, id, unpack(fields))
  -- Only if the history got ahead of the log (it never does: every id of it was a log id).
  if type(ok) == 'table' and ok.err then
    redis.call('XADD', prefix .. 'modlog', 'MAXLEN', '~', MODLOG_MAXLEN, '*', unpack(fields))
  end
end

-- Writes a moderation entry to the board's log and to its moderation history.
local function audit(prefix, fields)
  local id = redis.call('XADD', prefix .. 'log', 'MAXLEN', '~', '10000', '*', unpack(fields))
  modlog_add(prefix, id, fields)
  return id
end

-- Tournaments (docs/protocol.md, "Tournaments"). One occurrence of a board's tournament is one
-- season of the board, with its keys beside the season's scores:
--   t:<season>:joined    ZSET player -> when they entered (ms): the entrants (ZCARD: how many)
--   t:<season>:attempts  HASH player -> accepted submissions (a verified board: started runs)
--   t:<season>:final     ZSET, the season's scores as they were when the tournament ended
--   t:<season>:ended     when it ended (ms), written with `final` (lua/tournament_end.lua)
-- and `t:last`, the season whose standings were frozen last.
-- The board config's `tournament` (nil when none).
local function tournament_of(cfg)
  local t = cfg.tournament
  if t == nil or t == cjson.null then return nil end
  return t
end

-- A config number that may be absent or JSON null: nil then.
local function opt_num(v)
  if v == nil or v == cjson.null then return nil end
  return v
end

-- Whether the tournament is open at `now`: nil, or the refusal's code and message. A recurring
-- tournament is always open: its occurrence is the current season of the calendar.
local function tournament_window(t, now)
  local s = t.schedule
  if s.recurring then return nil end
  if now < s.start_ms then
    return 'not_started', 'the tournament starts at ' .. fmt(s.start_ms) .. ' (now ' .. fmt(now) .. ')'
  end
  if now >= s.end_ms then
    return 'ended', 'the tournament ended at ' .. fmt(s.end_ms)
  end
  return nil
end

-- Whether `player`, who has not entered yet, may enter now: nil, or the refusal's code and
-- message. `playing`: entering by playing (a submission or a started run) rather than by `join`.
local function tournament_room(prefix, t, season, player, playing)
  if playing and t.join_required then
    return 'not_joined', player .. ' has not joined this tournament: join first'
  end
  local max = opt_num(t.max_size)
  if max and redis.call('ZCARD', prefix .. 't:' .. season .. ':joined') >= max then
    return 'full', 'the tournament is full (' .. fmt(max) .. ' entrants)'
  end
  return nil
end

-- Whether `player` may make one more attempt, having made `made`: nil, or code and message.
local function tournament_attempt(t, player, made)
  local max = opt_num(t.max_attempts)
  if max and made >= max then
    return 'no_attempts_left', player .. ' has used all ' .. fmt(max) .. ' attempts'
  end
  return nil
end

-- Publishes a tournament event (`body`: a JSON object with its `event`) on the board's event
-- channel, for the board's subscribers on every instance (server/src/hub/events.rs). It carries
-- the board's current seq and does not bump it: no score changed.
local function tournament_publish(prefix, board, season, body)
  local seq = redis.call('GET', prefix .. 'seq') or '0'
  redis.call(PUBLISH_CMD, 'ev:{' .. board .. '}', '{"board":"' .. board .. '","season":"' .. season ..
    '","seq":' .. seq .. ',"tournament":' .. body .. '}')
end
