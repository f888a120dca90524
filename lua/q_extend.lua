-- q_extend.lua: the holder of a live lease pushes its deadline to now + lease_ms.
-- Prepended with base.lua and q_lib.lua (which lists the eight KEYS).
--
-- ARGV[1] job id   ARGV[2] lease token   ARGV[3] lease_ms   ARGV[4] now_ms override ('' = TIME)
--
-- Returns {'ok', new deadline ms} or {'err', 'lease_lost', message} (nothing changed).

local id = ARGV[1]
if not q_held(id, ARGV[2]) then return q_lost(id) end
local deadline = now_ms(ARGV[4]) + tonumber(ARGV[3])
redis.call('ZADD', Q.processing, 'XX', fmt(deadline), id)
return {'ok', deadline}
