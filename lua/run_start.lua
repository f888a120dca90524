-- run_start.lua: starts a run of a player on a verified board (docs/validators.md, "Runs").
-- Prepended with lib.lua.
--
-- KEYS[1]  lb:{<board>}:config
-- KEYS[2]  lb:{<board>}:run:<run id>      the run: JSON {player, seed, started_ms, expires_ms,
--                                          and on a tournament board season: the occurrence it
--                                          is an attempt of}, kept KEPT_MS past the run's end
-- KEYS[3]  lb:{<board>}:runs:<player>     the player's open runs: run id -> expires_ms
-- ARGV[1] player   ARGV[2] run id   ARGV[3] seed   ARGV[4] ttl_ms   ARGV[5] most open runs
-- ARGV[6] now_ms override ('' = TIME)
--
-- A board without a validator has no runs. A player may hold at most ARGV[5] open runs, so
-- seeds cannot be farmed; expired runs stop counting. A run id that names an open run of the
-- same player is the same request again (a WebSocket start_run re-sent with its id): that run is
-- answered, with its own seed, and nothing changes.
-- A banned player is refused (`forbidden`). On a tournament board a started run is an attempt
-- (lib.lua, "Tournaments"): refused when the
-- tournament is not open (`not_started`, `ended`), when the player has not joined a tournament
-- that needs it (`not_joined`) or it is full (`full`), and past `max_attempts`
-- (`no_attempts_left`); a run started enters the player and counts one attempt. On a league's
-- tier board a player who does not play on this tier is refused `wrong_tier`.
-- Returns {'ok', started_ms, expires_ms, seed} or {'err', code, message}; an error changes
-- nothing.

-- A run's record is kept this long past its end, so that its id is answered `conflict` (not
-- started again) for that long: longer than any dedup record of its checkpoints lives (their
-- submission ids are `<run>.<proof length>`; a record lives at most about 40 minutes after it
-- was written, lua/submit.lua), so a later run that reuses the id never meets the old run's.
local KEPT_MS = 3600000

local prefix = string.sub(KEYS[1], 1, -7)
local raw = redis.call('GET', KEYS[1])
if not raw then
  return {'err', 'unknown_board', 'no board ' .. board_of(prefix)}
end
local cfg = cjson.decode(raw)
if type(cfg.validator) ~= 'string' then
  return {'err', 'bad_request', 'board ' .. board_of(prefix) .. ' has no validator: runs are for verified boards'}
end
local now = now_ms(ARGV[6])
local ttl = tonumber(ARGV[4])
local existing = redis.call('GET', KEYS[2])
if existing then
  local run = cjson.decode(existing)
  if run.player == ARGV[1] and run.expires_ms > now then
    return {'ok', run.started_ms, run.expires_ms, run.seed}
  end
  if run.player == ARGV[1] then
    return {'err', 'conflict', 'run ' .. ARGV[2] .. ' has expired: start a run with a new id'}
  end
  return {'err', 'conflict', 'run id in use'}
end
local open = redis.call('ZCOUNT', KEYS[3], '(' .. fmt(now), '+inf')
if open >= tonumber(ARGV[5]) then
  return {'err', 'conflict', ARGV[1] .. ' already has ' .. open .. ' open runs on this board (at most ' .. ARGV[5] .. '); finish or wait for one'}
end
-- A banned player starts no run: its proofs would be refused, and on a tournament board it would
-- enter and take a place.
local ban_code, ban_msg = ban_refusal(prefix, board_of(prefix), ARGV[1])
if ban_code then return {'err', ban_code, ban_msg} end
-- A league's tier board: only a player who plays on this tier starts a run (lib.lua, "Leagues").
local lg_code, lg_msg = league_refusal(prefix, cfg, board_of(prefix), ARGV[1])
if lg_code then return {'err', lg_code, lg_msg} end
local tour = tournament_of(cfg)
local t_key, t_in, season
if tour then
  local code, msg = tournament_window(tour, now)
  season = current_season(prefix, cfg, now)
  t_key = prefix .. 't:' .. season
  t_in = redis.call('ZSCORE', t_key .. ':joined', ARGV[1]) ~= false
  if not code and not t_in then code, msg = tournament_room(prefix, tour, season, ARGV[1], true) end
  if not code then
    local made = tonumber(redis.call('HGET', t_key .. ':attempts', ARGV[1]) or '0')
    code, msg = tournament_attempt(tour, ARGV[1], made)
  end
  if code then return {'err', code, msg} end
end
-- Only now that nothing can refuse: drop the expired runs and record the new one.
if tour then
  if not t_in then redis.call('ZADD', t_key .. ':joined', 'NX', fmt(now), ARGV[1]) end
  redis.call('HINCRBY', t_key .. ':attempts', ARGV[1], 1)
end
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', fmt(now))
local expires = now + ttl
redis.call('SET', KEYS[2], cjson.encode({player = ARGV[1], seed = tonumber(ARGV[3]), started_ms = now, expires_ms = expires, season = season}), 'PX', ttl + KEPT_MS)
redis.call('ZADD', KEYS[3], fmt(expires), ARGV[2])
redis.call('PEXPIRE', KEYS[3], ttl)
return {'ok', now, expires, tonumber(ARGV[3])}
