-- board_put.lua: creates or changes a board's configuration (README, "Board configuration").
-- Prepended with lib.lua.
--
-- KEYS[1]  lb:{<board>}:config
-- ARGV[1]  the new config JSON (validated by the server)   ARGV[2] now_ms override ('' = TIME)
-- ARGV[3]  a fresh random generation id, written to `lb:{<board>}:gen` only when the board is
--          created (jobs scheduled for an earlier board of the same id see another generation)
--
-- A change of order, tie_break, resolution_ms or time_bits would reinterpret stored scores, so
-- it is refused while any season of the board holds a score, or a banned player's score is
-- held aside (`held:<player>`, back when the ban is lifted). `never` boards get their first
-- season, `all`, starting now.
-- Returns {'ok', created (0/1)} or {'err', 'conflict', message}.

local prefix = string.sub(KEYS[1], 1, -7)
local new = cjson.decode(ARGV[1])
local raw = redis.call('GET', KEYS[1])
if raw then
  local old = cjson.decode(raw)
  if old.order ~= new.order or old.tie_break ~= new.tie_break
      or old.resolution_ms ~= new.resolution_ms or old.time_bits ~= new.time_bits then
    for _, s in ipairs(redis.call('ZRANGE', prefix .. 'seasons', 0, -1)) do
      if redis.call('ZCARD', whole(prefix, s)) > 0 then
        return {'err', 'conflict', 'season ' .. s .. ' has scores: changing order, tie_break, resolution_ms or time_bits would reinterpret them'}
      end
    end
    -- Scores held aside while their player is banned (lua/ban.lua) come back as stored when
    -- the ban is lifted: they count too. Only banned players have them.
    for _, f in ipairs(redis.call('HKEYS', prefix .. 'bans')) do
      local player = string.gsub(f, '^%*', '')
      if redis.call('EXISTS', prefix .. 'held:' .. player) == 1 then
        return {'err', 'conflict', player .. '\'s scores are held while they are banned: changing order, tie_break, resolution_ms or time_bits would reinterpret them'}
      end
    end
    -- calendar boards may hold a current season not yet listed
    if new.reset ~= 'never' or old.reset ~= 'never' then
      local cur = current_season(prefix, old, now_ms(ARGV[2]))
      if redis.call('ZCARD', whole(prefix, cur)) > 0 then
        return {'err', 'conflict', 'season ' .. cur .. ' has scores'}
      end
    end
  end
end
-- Buckets that come or go (lib.lua, "Buckets"): a board that becomes bucketed places the current
-- season's players with a score in buckets now, in rank order (the whole board is merged from
-- the buckets from then on, so it keeps every one of them); a board that stops being bucketed
-- has each season's whole board merged now (its own zset is read directly from then on).
if raw then
  local old = cjson.decode(raw)
  local was, is = bucket_size_of(old), bucket_size_of(new)
  if was and not is then
    for _, s in ipairs(redis.call('ZRANGE', prefix .. 'seasons', 0, -1)) do whole(prefix, s) end
    whole(prefix, current_season(prefix, old, now_ms(ARGV[2])))
  elseif is and not was then
    local season = current_season(prefix, new, now_ms(ARGV[2]))
    local cmd = new.order == 'desc' and 'ZREVRANGE' or 'ZRANGE'
    local rows = redis.call(cmd, prefix .. 's:' .. season, 0, -1, 'WITHSCORES')
    for i = 1, #rows, 2 do
      local n = bucket_of(prefix, season, rows[i], is)
      redis.call('ZADD', bucket_key(prefix, season, n), rows[i + 1], rows[i])
    end
    if #rows > 0 then
      bucket_bound(prefix, season, rows[2])
      bucket_bound(prefix, season, rows[#rows])
    end
  end
end
redis.call('SET', KEYS[1], ARGV[1])
if not raw then
  redis.call('SET', prefix .. 'gen', ARGV[3])
end
if new.reset == 'never' and redis.call('ZCARD', prefix .. 'seasons') == 0 then
  redis.call('ZADD', prefix .. 'seasons', fmt(now_ms(ARGV[2])), 'all')
end
return {'ok', raw and 0 or 1}
