-- q_purge.lua: deletes the jobs of one state (ready, delayed or dead; never processing, whose
-- jobs workers hold), at most `limit` per call so one call never holds Redis for long: the
-- oldest first (ready: most urgent first). Prepended with base.lua and q_lib.lua (which lists
-- the eight KEYS).
--
-- ARGV[1] state: ready | delayed | dead   ARGV[2] limit
--
-- Returns {'ok', deleted, left in that state}

local key = Q[ARGV[1]]
local ids = redis.call('ZRANGE', key, 0, tonumber(ARGV[2]) - 1)
for _, id in ipairs(ids) do
  redis.call('ZREM', key, id)
  q_forget(id)
end
return {'ok', #ids, redis.call('ZCARD', key)}
