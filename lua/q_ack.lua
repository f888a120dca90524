-- q_ack.lua: the holder of a live lease finished the job: it leaves the queue for good.
-- Prepended with lib.lua and q_lib.lua (which lists the eight KEYS).
--
-- ARGV[1] job id   ARGV[2] lease token
--
-- Returns {'ok'} or {'err', 'lease_lost', message} (nothing changed).

local id = ARGV[1]
if not q_held(id, ARGV[2]) then return q_lost(id) end
redis.call('ZREM', Q.processing, id)
q_forget(id)
return {'ok'}
