-- q_enqueue.lua: adds jobs — one, or a bulk of them — to ready, or to delayed when due later
-- (docs/queues.md). All-or-nothing: when any id is present in the queue, or twice in the
-- call, nothing is written.
-- Prepended with base.lua and q_lib.lua (which lists the eight KEYS).
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

-- Undoes the bodies this call wrote, then refuses: all-or-nothing.
local function conflict(written, message)
  for id in pairs(written) do redis.call('HDEL', Q.jobs, id) end
  return {'err', 'conflict', message}
end

-- First the bodies, each written only where its id is free (HSETNX: the check and the write
-- in one command). A body in none of the four sets is what an at-most-once `take` leaves when
-- its process dies between BZPOPMIN and reading the body: that job is gone, so its id is free
-- again (its body is replaced below).
local written, leftover = {}, {}
for i = 0, n - 1 do
  local a = 2 + 6 * i
  local id = ARGV[a]
  if written[id] or leftover[id] then
    return conflict(written, 'job ' .. id .. ' appears twice in this call')
  end
  if redis.call('HSETNX', Q.jobs, id, ARGV[a + 1]) == 1 then
    written[id] = true
  else
    local present = redis.call('ZSCORE', Q.ready, id) or redis.call('ZSCORE', Q.delayed, id)
      or redis.call('ZSCORE', Q.processing, id) or redis.call('ZSCORE', Q.dead, id)
    if present then
      return conflict(written, 'job ' .. id .. ' is already in this queue')
    end
    leftover[id] = true
  end
end

local out = {'ok', now}
local ready = 0
for i = 0, n - 1 do
  local a = 2 + 6 * i
  local id, priority, when = ARGV[a], tonumber(ARGV[a + 2]), ARGV[a + 4]
  if leftover[id] then
    q_forget(id)
    redis.call('HSET', Q.jobs, id, ARGV[a + 1])
  end
  local due = now
  if when == 'at' then
    due = tonumber(ARGV[a + 5])
  elseif when == 'in' then
    due = now + tonumber(ARGV[a + 5])
  end
  redis.call('HSET', Q.state, id .. ':p', ARGV[a + 2], id .. ':m', ARGV[a + 3])
  if due > now then
    redis.call('ZADD', Q.delayed, fmt(due), id)
    out[#out + 1] = 'delayed'
    out[#out + 1] = due
  else
    q_ready(id, priority)
    ready = ready + 1
    out[#out + 1] = 'ready'
    out[#out + 1] = now
  end
end
q_wake(ready)
return out
