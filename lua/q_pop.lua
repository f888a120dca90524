-- q_pop.lua: the article's at-most-once poll (ZPOPMIN): the best ready job leaves Redis
-- entirely in one step. A worker that dies after this loses the job — use q_claim for
-- at-least-once. Prepended with base.lua and q_lib.lua (which lists the eight KEYS).
--
-- ARGV[1] now_ms override ('' = Redis TIME)   ARGV[2] maintenance bound (due jobs promoted first)
--
-- Returns {'ok', id, job JSON, attempts (this delivery included)} or {'none'}

local now = now_ms(ARGV[1])
q_promote(now, tonumber(ARGV[2]))
local popped = redis.call('ZPOPMIN', Q.ready)
if #popped == 0 then return {'none'} end
local id = popped[1]
local body = redis.call('HGET', Q.jobs, id)
local attempts = q_num(id, 'a') + 1
q_forget(id)
return {'ok', id, body, attempts}
