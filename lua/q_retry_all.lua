-- q_retry_all.lua: dead letters go back to ready, each with its priority and a fresh set of
-- attempts (as q_retry.lua does for one), the longest dead first, at most `limit` per call so
-- one call never holds Redis for long. Prepended with base.lua and q_lib.lua (which lists the
-- eight KEYS).
--
-- ARGV[1] limit
--
-- Returns {'ok', retried, left in dead}

local ids = redis.call('ZRANGE', Q.dead, 0, tonumber(ARGV[1]) - 1)
for _, id in ipairs(ids) do
  redis.call('ZREM', Q.dead, id)
  redis.call('HSET', Q.state, id .. ':a', 0)
  q_ready(id)
end
q_wake(#ids)
return {'ok', #ids, redis.call('ZCARD', Q.dead)}
