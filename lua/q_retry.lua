-- q_retry.lua: a dead letter goes back to ready with its priority and a fresh set of attempts.
-- Prepended with base.lua and q_lib.lua (which lists the eight KEYS).
--
-- ARGV[1] job id
--
-- Returns {'ok'} or {'err', 'not_found', message} (nothing changed).

local id = ARGV[1]
if redis.call('ZREM', Q.dead, id) == 0 then
  return {'err', 'not_found', 'no dead job ' .. id .. ' in this queue'}
end
redis.call('HSET', Q.state, id .. ':a', 0)
q_ready(id)
q_wake(1)
return {'ok'}
