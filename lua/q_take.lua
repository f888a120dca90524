-- q_take.lua: the second half of the article's blocking take: BZPOPMIN (on a dedicated
-- connection) already removed the id from ready; this returns the job's body and forgets it.
-- Prepended with lib.lua and q_lib.lua (which lists the eight KEYS).
--
-- ARGV[1] job id
--
-- Returns {'ok', id, job JSON, attempts (this delivery included)} or {'none'} if it is gone.

local id = ARGV[1]
local body = redis.call('HGET', Q.jobs, id)
if not body then return {'none'} end
local attempts = q_num(id, 'a') + 1
q_forget(id)
return {'ok', id, body, attempts}
