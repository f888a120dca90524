-- ban_index.lua: the index of bans on every board, `sc:bans` (player -> ban record, JSON).
-- A ban on every board is a write to each board (lua/ban.lua) plus this index, which boards
-- created later consult and `GET /admin/bans` lists.
--
-- KEYS[1]  sc:bans
-- ARGV[1]  'set' | 'lift'   ARGV[2] player
-- set:  ARGV[3] record       lift: ARGV[3] expected until_ms ('' = any)
--
-- Returns {'ok', changed (0/1)}.

local player = ARGV[2]
if ARGV[1] == 'set' then
  redis.call('HSET', KEYS[1], player, ARGV[3])
  return {'ok', 1}
end
local raw = redis.call('HGET', KEYS[1], player)
if not raw then return {'ok', 0} end
if ARGV[3] ~= '' then
  local ban = cjson.decode(raw)
  if ban.until_ms == nil or ban.until_ms == cjson.null or string.format('%.17g', ban.until_ms) ~= ARGV[3] then
    return {'ok', 0}
  end
end
redis.call('HDEL', KEYS[1], player)
return {'ok', 1}
