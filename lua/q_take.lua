-- q_take.lua: the second half of the article's blocking take: BZPOPMIN (on a dedicated
-- connection) already removed the id from ready; this returns the job's body and forgets it.
-- Prepended with base.lua and q_lib.lua (which lists the eight KEYS).
--
-- ARGV[1] job id
--
-- Returns {'ok', id, job JSON, attempts (this delivery included)} or {'none'} if it is gone.

local id = ARGV[1]
local body = redis.call('HGET', Q.jobs, id)
if not body then return {'none'} end
-- Between the pop and this step the id was free (q_enqueue treats a body in no set as gone),
-- so a new job may have taken it: that one is not ours to deliver or forget.
if redis.call('ZSCORE', Q.ready, id) or redis.call('ZSCORE', Q.delayed, id)
    or redis.call('ZSCORE', Q.processing, id) or redis.call('ZSCORE', Q.dead, id) then
  return {'none'}
end
local attempts = q_num(id, 'a') + 1
q_forget(id)
return {'ok', id, body, attempts}
