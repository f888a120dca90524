-- submit.lua: a batch of score submissions to one board, each applied atomically, in one round
-- trip (docs/architecture.md, "The path of a submission"). Prepended with lib.lua.
-- A batch of one is the plain case; the server groups concurrent submissions to a board.
--
-- KEYS[1]  lb:{<board>}:config   (every other key is built from the same `lb:{<board>}:` prefix,
--                                 so they share one hash slot on a cluster)
-- ARGV[1]  now_ms override ('' = Redis TIME; the injected test clock otherwise)
-- ARGV[2]  '1' to return the change event ('' = not: nobody here needs it)
-- ARGV[3]  the submissions, one msgpack array of strings (unpacked with cmsgpack), 6 each:
--   player, submission id, points (integer, in decimal), op override ('' = the board's op;
--   admin only), display name ('' = none), who: the name of the key that submits for the player
--   over HTTP (an admin or game server: skips the board's submit_limit, is accepted on a board
--   with a validator, and the audit log shows it as `by`), '#v' for a validator's replay of a
--   run's proof, '' for a player's own points (refused on a board with a validator: `forbidden`)
--   One argument, not 6 per submission: Redis parses one string instead of ~280 arguments, and
--   the audit entry stores it as it came (BENCHMARKS.md, "What changed, and what each bought").
--
-- Order for each: ban check (lua/ban.lua: a banned player changes nothing, a retried id
-- included) -> dedup (so a retried success is never rate limited) -> points allowed ->
-- tournament (lib.lua: open now, entered or room to enter, an attempt left) -> a league's tier
-- (lib.lua, "Leagues": the player plays on this tier board, else `wrong_tier`) -> limiter check ->
-- compute the new score and check its range -> write: score (on a bucketed board to the player's
-- bucket only, placing them in one if they have none: lib.lua, "Buckets"; the results' ranks
-- are then within the bucket), limiter entry, tournament entry and attempt, name, dedup record.
-- A rejection writes nothing. Order: each player's submissions together and in their order,
-- players in the order they first come in the batch (submissions of different players in one
-- batch are concurrent, so this is a valid order; the event lists changes in it, the audit entry
-- lists the batch in its own order). Per player: one HMGET of the dedup state and ids, one HSET of
-- the state and records, and the rank between two of its submissions is known without asking.
-- Once per batch: the config, the season, `seq` (bumped once if any
-- score changed), one audit-log entry carrying the batch, one event. Each result carries the
-- seq the board had once it was applied (base + 1 if it changed a score, else base).
--
-- The audit entry (if any submission was accepted): `season`, `time_ms`, `op` (the board's),
-- `subs` (ARGV[3] as it came) and `results` (the packed results below): server/src/store/log.rs
-- answers one object per submission whose result is 1 (accepted, not a duplicate). The
-- accepted submissions of an admin (a non-empty `by`: the key's name) are also copied, under the same stream id,
-- to the moderation history `modlog` (lib.lua, modlog_add), an entry of the same shape.
--
-- The hot loop formats numbers with '%d' (istr) or takes them as Redis printed them (the points
-- argument, ZINCRBY's reply), never with '%.14g'/'%.17g'; on `incr` boards without tie-break
-- packing the score moves with ZINCRBY itself.
--
-- Dedup (README, "Redis keys"): one hash per player and board, `lb:{<board>}:dd:<player>`:
-- field <id> -> the first result (msgpack, led by its generation's parity), and '#' = the current
-- generation's start (ms) × 1024 + its record count × 2 + its parity. A new generation starts
-- when the current one is DEDUP_WINDOW_MS old or holds DEDUP_CAP records; starting one deletes
-- the records of the generation before the previous one and re-arms the hash's expiry to
-- 2 × DEDUP_WINDOW_MS. So a record lives at least DEDUP_WINDOW_MS, unless its player has made
-- more than DEDUP_CAP newer accepted submissions to the board, and a player's hash never holds
-- more than 2 × DEDUP_CAP records.
-- A small hash is a listpack in Redis (up to 128 fields of up to 64 bytes, by default), where
-- finding a field is a scan of every record: for a player whose generation goes past CONVERT_AT
-- records, the hash gets field '!' = a 65-byte marker, which turns it into a hash table for
-- good (~13 % of the script's time for such players, ~2.3× their dedup memory; players below
-- it keep the compact listpack: BENCHMARKS.md, "What changed, and what each bought").
--
-- Returns two strings. The first is a msgpack array (cmsgpack) of the batch's season, then 7
-- fields per submission, in order:
--   accepted: 1 (or 2 = duplicate), season ('' = the batch's), points, rank, previous_rank
--             (-1 = none), seq, reached_ms (-1 = none)
--   refused:  error code, message, retry_after_ms, limit, reset_ms, 0, 0
-- Packed, because a batch's ~7 × 48 fields as a Redis array cost Redis a reply item each and
-- the server a parsed value each (BENCHMARKS.md, "What changed, and what each bought").
-- The second is the change event as published if ARGV[2] asks for it ('' = none, or not
-- asked): the submitting instance sends its submitters' `me` updates with their acks
-- (server/src/hub/commit.rs). (server/src/store/batch.rs reads both.)
--

-- The 6th field of a validator's replay (not an id: '#' is no id character).
local VERIFIED = '#v'
local DEDUP_WINDOW_MS = 600000
local DEDUP_CAP = 64
local CONVERT_AT = 32
local MARKER = string.rep('-', 65)
-- Audit-log entries kept (each carries one batch: at least this many submissions).
local LOG_MAXLEN = 1000

local format = string.format
-- An integer (below 2^53, as every number here) in decimal: '%d' costs a fraction of the
-- '%.14g' that '..' uses, and is exact where '%.14g' is not (above 1e14).
local function istr(x) return format('%d', x) end

local prefix = string.sub(KEYS[1], 1, -7)
local board = board_of(prefix)
local cfg = load_config(KEYS[1])
local S = cmsgpack.unpack(ARGV[3]) -- the submissions: S[i .. i + 5] for i = 1, 7, 13, ...
local n_subs = #S / 6
local out = {''} -- the results (see above)

if not cfg then
  for _ = 1, n_subs do
    local at = #out
    out[at + 1], out[at + 2], out[at + 3], out[at + 4], out[at + 5], out[at + 6], out[at + 7] =
      'unknown_board', 'no board ' .. board, 0, 0, 0, 0, 0
  end
  return {cmsgpack.pack(out), ''}
end

local now = now_ms(ARGV[1])
local season, season_start = current_season(prefix, cfg, now)
out[1] = season
local key = prefix .. 's:' .. season
local base_seq = tonumber(redis.call('GET', prefix .. 'seq') or '0')
local season_recorded = cfg.reset == 'never'
local desc = cfg.order == 'desc'
local packed = earliest(cfg)
local ordinal = cfg.ranking ~= 'shared'
local fast_incr = not packed and ordinal -- `incr` moves the score with ZINCRBY
local rank_cmd = desc and 'ZREVRANK' or 'ZRANK'
local max_p, min_p = max_points(cfg), min_points(cfg)
local maxp = cfg.max_points_per_submit
if maxp == cjson.null then maxp = nil end
local lim = cfg.submit_limit
if lim == cjson.null then lim = nil end
local any_bans = redis.call('EXISTS', prefix .. 'bans') == 1
local cfg_op = cfg.op
local verified_board = type(cfg.validator) == 'string'
local tour = tournament_of(cfg)
local t_closed, t_closed_msg -- the tournament's window refusal, if it is not open now
if tour then t_closed, t_closed_msg = tournament_window(tour, now) end
local t_prefix = prefix .. 't:' .. season

-- A validator's replay on a tournament board counts only in the occurrence (season) its run was
-- an attempt of: its submission id is `<run>.<proof length>` (server/src/state.rs) and the run's
-- record names that season (lua/run_start.lua). nil, or the refusal.
local function run_occurrence_refusal(sub_id)
  local run = string.match(sub_id, '^(.*)%.%d+$')
  local raw = run and redis.call('GET', prefix .. 'run:' .. run)
  local started_in = raw and cjson.decode(raw).season
  if started_in and started_in ~= season then
    return 'ended', 'run ' .. run .. ' was an attempt of ' .. started_in .. ', an occurrence of this tournament that has ended; start a run in ' .. season
  end
end
-- A bucketed board (lib.lua, "Buckets"): each score is written to the player's bucket only (the
-- whole board is merged from the buckets when an operator reads it), and the results' and the
-- change event's ranks are within the bucket (the event names it).
local bsize = bucket_size_of(cfg)
local league = cfg.league ~= nil and cfg.league ~= cjson.null

-- |score| of the board's extremes, read once per batch and only if an `incr` submission comes:
-- while |points| + that stays in range, ZINCRBY cannot leave the exact range, so it runs blind.
-- A bucketed board's own zset is not written by submissions: the season's buckets keep a bound
-- of it instead (`#max`, lib.lua `bucket_bound`), read as `extreme_read` and raised at the end.
local extreme, extreme_read

local function board_extreme()
  if bsize then
    extreme_read = tonumber(redis.call('HGET', prefix .. 'bk:' .. season, '#max') or '0')
    return extreme_read
  end
  local m = 0
  local lo = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  if lo[2] then m = math.abs(tonumber(lo[2])) end
  local hi = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  if hi[2] then m = math.max(m, math.abs(tonumber(hi[2]))) end
  return m
end

local function rank(player, score, k)
  k = k or key
  if ordinal then return redis.call(rank_cmd, k, player) + 1 end
  return rank_of(k, cfg, player, score)
end

local changes, nc = {}, 0 -- the change event's entries (JSON objects), in the order applied
local accepted = 0        -- submissions accepted (not duplicates): the audit entry is written if any
local by_admin = 0        -- of which an admin's (a non-empty `by`): copied to the moderation history
-- Filled in batch order first, so every later store lands in the table's array part.
for k = 2, 1 + n_subs * 7 do out[k] = false end

-- The result of the submission at S[i], at its place in the results.
local function put(i, a, b, c, d, e, f, g)
  local at = 1 + (i - 1) / 6 * 7
  out[at + 1], out[at + 2], out[at + 3], out[at + 4], out[at + 5], out[at + 6], out[at + 7] =
    a, b, c, d, e, f, g
end

local function refuse(i, code, message, retry, limit, reset)
  put(i, code, message, retry, limit, reset, 0, 0)
end

-- One player's submissions of the batch, in their order: one HMGET of their ids and one HSET
-- of their records; between two of them the player's rank is known without asking.
local ids, writes, recs = {'#'}, {}, {} -- reused by every player (counts kept apart)

local function submit_player(player, subs)
  local ns = #subs
  -- 0. A banned player changes nothing, a retried submission id included (the board's own ban
  -- and its copy of a ban on every board, lua/ban.lua; only on a board that has bans at all:
  -- `any_bans` is read once per batch).
  local banned = any_bans and redis.call('HMGET', prefix .. 'bans', player, '*' .. player)
  if banned and (banned[1] or banned[2]) then
    for k = 1, ns do refuse(subs[k], 'forbidden', player .. ' is banned from ' .. board, 0, 0, 0) end
    return
  end

  -- 1. The dedup hash: the generation state and each id's first result, if any.
  local dd_key = prefix .. 'dd:' .. player
  for k = 1, ns do ids[k + 1] = S[subs[k] + 1]; recs[k] = false end
  local dd = redis.call('HMGET', dd_key, unpack(ids, 1, ns + 1))
  local state = tonumber(dd[1])
  local fresh = not state -- a new hash (or generation): its expiry is (re)armed
  if fresh then state = now * 1024 end
  local convert = false -- the generation goes past CONVERT_AT records in this batch
  local nw = 0 -- writes: id, record pairs for the one HSET; recs: k -> the record of subs[k]
  local known              -- the player's rank now (-1 = not on the board; nil = ask)
  -- On a tournament board: whether the player has entered and how many attempts they made
  -- (read at their first submission that is not a retry).
  local t_in, t_made
  -- On a league's tier board: the tier refusal, if any (false: none; read once per player).
  local lg_code, lg_msg

  for k = 1, ns do
    local i = subs[k]
    local sub_id, points_s, op, name, by = S[i + 1], S[i + 2], S[i + 3], S[i + 4], S[i + 5]
    local rec = dd[k + 1]
    if not rec then
      for j = 1, k - 1 do
        if recs[j] and ids[j + 1] == sub_id then rec = recs[j] end
      end
    end
    if rec then
      -- A submission id seen before for this player and board returns the first result.
      local _, s, p, r, pr, q, reached = cmsgpack.unpack(rec)
      put(i, 2, s, p, r, pr, q, reached)
    else
      local points = tonumber(points_s)
      if op == '' then op = cfg_op end
      local new_points, new_s, new_score, prev_rank, new_rank, changed, t
      local bucket -- a bucketed board: the player's bucket
      local limited = lim and (by == '' or by == VERIFIED)
      local rl_key = limited and prefix .. 'rl:' .. player
      local refused
      -- 2. Points allowed on this board: on a verified board only a validator's score (or
      -- an admin's) counts.
      if verified_board and by == '' then
        refused = true
        refuse(i, 'forbidden', 'board ' .. board .. ' is verified: submit a run\'s proof (docs/validators.md), not points', 0, 0, 0)
      elseif maxp and (points > maxp or points < -maxp) then
        refused = true
        refuse(i, 'points_out_of_range', '|points| above this board\'s max_points_per_submit (' .. fmt(maxp) .. ')', 0, 0, 0)
      end
      -- 2b. The tournament: open now; the player entered (or may enter by playing: room left);
      -- an attempt left. A validator's replay was checked when its run started (lua/run_start.lua):
      -- only the window applies to it, and its run must be an attempt of this occurrence.
      if not refused and tour then
        local code, msg = t_closed, t_closed_msg
        if not code and by == VERIFIED then
          code, msg = run_occurrence_refusal(sub_id)
        elseif not code then
          if t_in == nil then
            t_in = redis.call('ZSCORE', t_prefix .. ':joined', player) ~= false
            t_made = tonumber(redis.call('HGET', t_prefix .. ':attempts', player) or '0')
          end
          if not t_in then code, msg = tournament_room(prefix, tour, season, player, true) end
          if not code then code, msg = tournament_attempt(tour, player, t_made) end
        end
        if code then
          refused = true
          refuse(i, code, msg, 0, 0, 0)
        end
      end
      -- 2c. A league's tier board: the player plays on this tier (lib.lua, "Leagues").
      if not refused and league then
        if lg_code == nil then lg_code, lg_msg = league_refusal(prefix, cfg, board, player); lg_code = lg_code or false end
        if lg_code then
          refused = true
          refuse(i, lg_code, lg_msg, 0, 0, 0)
        end
      end
      -- 3. The board's sliding-window limit for this player.
      if not refused and limited then
        local r = rl_check(rl_key, now, lim.window_ms, lim.limit)
        if r[1] == 0 then
          refused = true
          refuse(i, 'rate_limited', 'at most ' .. lim.limit .. ' submissions per ' .. lim.window_ms .. ' ms', r[4], r[2], r[5])
        end
      end
      -- 4. The new score, written. new_s: the new points in decimal.
      if not refused and op == 'incr' and fast_incr then
        if not extreme then extreme = board_extreme() end
        if points + extreme <= max_p and extreme - points <= max_p then
          -- The ladder the score is in: the board's, or the player's bucket (placed now if
          -- they have none).
          local rkey = key
          if bsize then
            bucket = bucket_of(prefix, season, player, bsize)
            rkey = bucket_key(prefix, season, bucket)
          end
          prev_rank = known
          if not prev_rank then
            local before = redis.call(rank_cmd, rkey, player)
            prev_rank = before and before + 1 or -1
          end
          -- Redis prints the new score itself (an integer below 2^53: in plain digits).
          new_s = redis.call('ZINCRBY', rkey, points_s, player)
          new_score = tonumber(new_s)
          new_points = new_score
          if new_score > extreme then extreme = new_score elseif -new_score > extreme then extreme = -new_score end
          changed = points ~= 0 or prev_rank < 0
          if changed then new_rank = redis.call(rank_cmd, rkey, player) + 1 else new_rank = prev_rank end
        end
      end
      if not refused and not new_score then
        -- The ladder the player's score is in: the board's, or on a bucketed board their
        -- bucket (none yet: placed below, once the score is accepted).
        local skey = key
        if bsize then
          bucket = bucket_of(prefix, season, player)
          skey = bucket and bucket_key(prefix, season, bucket)
        end
        local old_score = skey and redis.call('ZSCORE', skey, player)
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
          refused = true
          refuse(i, 'score_out_of_range', 'the resulting score ' .. fmt(new_points) .. ' is outside ' .. fmt(min_p) .. '..' .. fmt(max_p), 0, 0, 0)
        else
          if old_score and new_points == old_points then
            new_score, t = old_score, old_t -- unchanged: keeps the time it was first reached
          else
            t = math.floor((now - season_start) / cfg.resolution_ms)
            if packed and (t < 0 or t >= span(cfg)) then
              refused = true
              refuse(i, 'score_out_of_range', 'the tie-break clock of season ' .. season .. ' has run out; start a new season', 0, 0, 0)
            else
              new_score = encode(cfg, new_points, t)
            end
          end
          if not refused then
            changed = new_score ~= old_score
            if bsize and not skey then
              bucket = bucket_of(prefix, season, player, bsize)
              skey = bucket_key(prefix, season, bucket)
            end
            prev_rank = old_score and rank(player, old_score, skey) or -1
            if changed then redis.call('ZADD', skey, istr(new_score), player) end
            -- A bucketed board's bound is kept by every score written (see board_extreme).
            if bsize and not extreme then extreme = board_extreme() end
            if extreme and math.abs(new_score) > extreme then extreme = math.abs(new_score) end
            new_rank = rank(player, new_score, skey)
            new_s = istr(new_points)
          end
        end
      end

      if not refused then
        known = ordinal and new_rank or nil
        if not season_recorded then
          start_season(prefix, cfg, season, season_start)
          season_recorded = true
        end
        if limited then rl_take(rl_key, now, lim.window_ms, now .. ':' .. sub_id) end
        if tour and by ~= VERIFIED then
          if not t_in then
            redis.call('ZADD', t_prefix .. ':joined', 'NX', istr(now), player)
            t_in = true
          end
          t_made = t_made + 1
          redis.call('HINCRBY', t_prefix .. ':attempts', player, 1)
        end
        if name ~= '' then redis.call('HSET', prefix .. 'names', player, name) end
        local reached = packed and reached_ms(cfg, t, season_start) or -1
        if changed then
          nc = nc + 1
          changes[nc] = '{"player":"' .. player .. '","score":' .. new_s .. ',"rank":' .. istr(new_rank) ..
            ',"previous_rank":' .. (prev_rank < 0 and 'null' or istr(prev_rank)) ..
            (bucket and (',"bucket":' .. istr(bucket)) or '') ..
            (name ~= '' and (',"name":' .. cjson.encode(name) .. '}') or '}')
        end
        accepted = accepted + 1
        if by ~= '' and by ~= VERIFIED then by_admin = by_admin + 1 end

        -- 5. The dedup record (written with the player's others below; a retry later in this
        -- batch finds it in `recs`).
        local low = state % 1024
        local parity = low % 2
        if now - (state - low) / 1024 >= DEDUP_WINDOW_MS or low - parity >= 2 * DEDUP_CAP then
          -- A new generation, of the other parity: the records that had it go (a record's
          -- first byte is its parity). The records of this batch not yet written have the
          -- current parity: they stay.
          parity = 1 - parity
          local all = redis.call('HGETALL', dd_key)
          local stale, n_stale = {}, 0
          for j = 1, #all, 2 do
            if all[j] ~= '#' and all[j] ~= '!' and string.byte(all[j + 1]) == parity then
              n_stale = n_stale + 1; stale[n_stale] = all[j]
            end
          end
          if n_stale > 0 then redis.call('HDEL', dd_key, unpack(stale)) end
          state = now * 1024 + parity
          fresh = true
        end
        if (state % 1024 - parity) / 2 == CONVERT_AT then convert = true end
        state = state + 2
        local seq = changed and base_seq + 1 or base_seq
        rec = cmsgpack.pack(parity, season, new_points, new_rank, prev_rank, seq, reached)
        recs[k] = rec
        writes[nw + 1], writes[nw + 2] = sub_id, rec
        nw = nw + 2
        put(i, 1, '', new_points, new_rank, prev_rank, seq, reached)
      end
    end
  end
  if nw > 0 then
    if convert then writes[nw + 1], writes[nw + 2] = '!', MARKER; nw = nw + 2 end
    redis.call('HSET', dd_key, '#', istr(state), unpack(writes, 1, nw))
    if fresh then redis.call('PEXPIRE', dd_key, 2 * DEDUP_WINDOW_MS) end
  end
end

-- Each player's submissions together, players in the order they first come in the batch (a
-- valid order: submissions of different players in one batch are concurrent).
local players, by_player = {}, {}
for i = 1, #S, 6 do
  local p = S[i]
  local subs = by_player[p]
  if not subs then subs = {}; by_player[p] = subs; players[#players + 1] = p end
  subs[#subs + 1] = i
end
for _, p in ipairs(players) do submit_player(p, by_player[p]) end

-- A bucketed board: a bucket changed (every change is one), so the whole board is merged from
-- the buckets before it is read next (lib.lua, `whole`); the bound of |score| raised.
if bsize then
  local f, n = {}, 0
  if nc > 0 then f[1], f[2], n = '#stale', '1', 2 end
  if extreme and extreme > extreme_read then f[n + 1], f[n + 2], n = '#max', istr(extreme), n + 2 end
  if n > 0 then redis.call('HSET', prefix .. 'bk:' .. season, unpack(f, 1, n)) end
end

-- One audit entry, one seq bump and one event for the whole batch.
local results = cmsgpack.pack(out)
if accepted > 0 then
  local id = redis.call('XADD', prefix .. 'log', 'MAXLEN', '~', LOG_MAXLEN, '*',
    'season', season, 'time_ms', now, 'op', cfg_op, 'subs', ARGV[3], 'results', results)
  -- An admin's score changes (a non-empty `by`) accepted in this batch also go to the moderation
  -- history, as an entry of the same shape holding only them (lib.lua, modlog_add).
  local msubs, mres = {}, {out[1]}
  for i = 1, by_admin > 0 and #S or 0, 6 do
    local at = 1 + (i - 1) / 6 * 7
    if S[i + 5] ~= '' and S[i + 5] ~= VERIFIED and out[at + 1] == 1 then
      for f = 0, 5 do msubs[#msubs + 1] = S[i + f] end
      for f = 1, 7 do mres[#mres + 1] = out[at + f] end
    end
  end
  if #msubs > 0 then
    modlog_add(prefix, id, {'season', season, 'time_ms', now, 'op', cfg_op,
      'subs', cmsgpack.pack(msubs), 'results', cmsgpack.pack(mres)})
  end
end
local event = ''
if nc > 0 then
  local _
  _, event = publish_change(prefix, board, season, ',"changes":[' .. table.concat(changes, ',', 1, nc) .. ']')
end
return {results, ARGV[2] == '1' and event or ''}
