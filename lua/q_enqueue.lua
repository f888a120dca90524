-- q_enqueue.lua: adds a job to ready, or to delayed when it is due later (docs/queues.md).
-- Prepended with lib.lua and q_lib.lua (which lists the eight KEYS).
--
-- ARGV[1] job id                 ARGV[2] job JSON (stored as given, never decoded)
-- ARGV[3] priority 0-9           ARGV[4] max_attempts
-- ARGV[5] when: '' = now | 'at' (ARGV[6] = run_at_ms) | 'in' (ARGV[6] = delay_ms)
-- ARGV[7] now_ms override ('' = Redis TIME)
--
-- Returns {'ok', 'ready' | 'delayed', due_ms, now_ms}
--      or {'err', 'conflict', message} when a job with this id is present (nothing written).
-- A job is present when it is in ready, delayed, processing or dead.

local id = ARGV[1]
if redis.call('HEXISTS', Q.jobs, id) == 1 then
  -- A body in none of the four sets is what an at-most-once `take` leaves when its process dies
  -- between BZPOPMIN and reading the body: that job is gone, so its id is free again.
  local present = redis.call('ZSCORE', Q.ready, id) or redis.call('ZSCORE', Q.delayed, id)
    or redis.call('ZSCORE', Q.processing, id) or redis.call('ZSCORE', Q.dead, id)
  if present then
    return {'err', 'conflict', 'job ' .. id .. ' is already in this queue'}
  end
  q_forget(id)
end
local now = now_ms(ARGV[7])
local due = now
if ARGV[5] == 'at' then
  due = tonumber(ARGV[6])
elseif ARGV[5] == 'in' then
  due = now + tonumber(ARGV[6])
end
redis.call('HSET', Q.jobs, id, ARGV[2])
redis.call('HSET', Q.state, id .. ':p', ARGV[3], id .. ':m', ARGV[4], id .. ':a', 0)
if due > now then
  redis.call('ZADD', Q.delayed, fmt(due), id)
  return {'ok', 'delayed', due, now}
end
q_ready(id)
q_wake(1)
return {'ok', 'ready', now, now}
