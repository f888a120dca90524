-- q_enqueue.lua: adds jobs — one, or a bulk of them — to ready, or to delayed when due later
-- (docs/queues.md). All-or-nothing: when any id is present in the queue, or twice in the
-- call, nothing is written.
-- Prepended with lib.lua and q_lib.lua (which lists the eight KEYS).
--
-- ARGV[1] now_ms override ('' = Redis TIME)
-- then six per job: id, job JSON (stored as given, never decoded), priority 0-9, max_attempts,
--   when ('' = now | 'at': the next argument is run_at_ms | 'in': it is delay_ms), that time
--
-- Returns {'ok', now_ms, then per job: 'ready' | 'delayed', due_ms}
--      or {'err', 'conflict', message} when a job with one of the ids is present (nothing
--      written). A job is present when it is in ready, delayed, processing or dead.

local now = now_ms(ARGV[1])
local n = (#ARGV - 1) / 6
local seen, leftover = {}, {}
for i = 0, n - 1 do
  local id = ARGV[2 + 6 * i]
  if seen[id] then
    return {'err', 'conflict', 'job ' .. id .. ' appears twice in this call'}
  end
  seen[id] = true
  if redis.call('HEXISTS', Q.jobs, id) == 1 then
    -- A body in none of the four sets is what an at-most-once `take` leaves when its process
    -- dies between BZPOPMIN and reading the body: that job is gone, so its id is free again.
    local present = redis.call('ZSCORE', Q.ready, id) or redis.call('ZSCORE', Q.delayed, id)
      or redis.call('ZSCORE', Q.processing, id) or redis.call('ZSCORE', Q.dead, id)
    if present then
      return {'err', 'conflict', 'job ' .. id .. ' is already in this queue'}
    end
    leftover[id] = true
  end
end
local out = {'ok', now}
local ready = 0
for i = 0, n - 1 do
  local a = 2 + 6 * i
  local id, when = ARGV[a], ARGV[a + 4]
  if leftover[id] then q_forget(id) end
  local due = now
  if when == 'at' then
    due = tonumber(ARGV[a + 5])
  elseif when == 'in' then
    due = now + tonumber(ARGV[a + 5])
  end
  redis.call('HSET', Q.jobs, id, ARGV[a + 1])
  redis.call('HSET', Q.state, id .. ':p', ARGV[a + 2], id .. ':m', ARGV[a + 3], id .. ':a', 0)
  if due > now then
    redis.call('ZADD', Q.delayed, fmt(due), id)
    out[#out + 1] = 'delayed'
    out[#out + 1] = due
  else
    q_ready(id)
    ready = ready + 1
    out[#out + 1] = 'ready'
    out[#out + 1] = now
  end
end
q_wake(ready)
return out
