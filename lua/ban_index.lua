-- ban_index.lua: the index of bans on every board, `sc:bans`, and the intents of bans and lifts
-- on every board, `{sc:bans}:intents` (the same hash slot: `sc:bans` is its own hash tag).
-- A ban or lift on every board is recorded here first, in this one script (the index and the
-- intent together), then applied board by board (lua/ban.lua, lua/unban.lua, each one board's
-- slot, each idempotent); the intent is dropped once every board has it. An instance killed
-- meanwhile leaves the intent, which the intent resumer applies again (server/src/store/
-- moderation.rs). Each intent has a version, higher than every earlier one: a board takes a
-- step of the layer on every board only if no later one reached it, so a stale step (of an
-- intent replaced meanwhile) changes nothing.
--
-- KEYS[1]  sc:bans              fields: <player> -> ban record (JSON), #<player> -> its version,
--                                       '#' -> the last version given
-- KEYS[2]  {sc:bans}:intents    <player> -> intent (JSON: {op, v, record | layer, why, by})
-- ARGV[1]  'set' | 'lift' | 'done'   ARGV[2] player
-- set:  ARGV[3] record
-- lift: ARGV[3] expected until_ms ('' = any; the expiry job passes the one it was scheduled
--       for, so a ban renewed meanwhile stays)   ARGV[4] layers ('*' | '+', lua/unban.lua)
--       ARGV[5] why ('lifted' | 'expired')   ARGV[6] the name of the key that lifted it
--       ('' = the expiry job)
-- done: ARGV[3] the version applied
--
-- Returns set: {'ok', 1, version}; lift: {'ok', 1, version}, or {'ok', 0, 0} when the index
-- has no such ban (none, or an expiry of a ban renewed meanwhile);
-- done: {'ok', intent dropped (0/1)}.

local player = ARGV[2]
if ARGV[1] == 'done' then
  local raw = redis.call('HGET', KEYS[2], player)
  if raw and tostring(cjson.decode(raw).v) == ARGV[3] then
    redis.call('HDEL', KEYS[2], player)
    return {'ok', 1}
  end
  return {'ok', 0}
end

if ARGV[1] == 'set' then
  local v = redis.call('HINCRBY', KEYS[1], '#', 1)
  redis.call('HSET', KEYS[1], player, ARGV[3], '#' .. player, v)
  redis.call('HSET', KEYS[2], player, cjson.encode({op = 'ban', v = v, record = ARGV[3]}))
  return {'ok', 1, v}
end

local raw = redis.call('HGET', KEYS[1], player)
local lifted = raw and 1 or 0
if raw and ARGV[3] ~= '' then
  local ban = cjson.decode(raw)
  if ban.until_ms == nil or ban.until_ms == cjson.null or string.format('%.17g', ban.until_ms) ~= ARGV[3] then
    lifted = 0
  end
end
-- No ban on every board to lift (or an expiry of one renewed): no intent (an admin's lift of
-- each board's own ban is then the caller's, board by board).
if lifted == 0 then return {'ok', 0, 0} end
local v = redis.call('HINCRBY', KEYS[1], '#', 1)
redis.call('HDEL', KEYS[1], player, '#' .. player)
redis.call('HSET', KEYS[2], player, cjson.encode({op = 'lift', v = v, layer = ARGV[4], why = ARGV[5], by = ARGV[6] or ''}))
return {'ok', lifted, v}
