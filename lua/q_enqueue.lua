-- q_enqueue.lua: adds jobs to ready, or to delayed when due later (docs/queues.md): a bulk
-- enqueue, all-or-nothing (when any id is present in the queue, or twice in the call, nothing
-- is written), or the single enqueues that arrived together (each on its own: one whose id is
-- present is refused alone, as if they had come one after another).
-- Prepended with base.lua and q_lib.lua (which lists the eight KEYS).
--
-- ARGV[1] now_ms override ('' = Redis TIME)
-- ARGV[2] '1' = each job on its own, '' = all-or-nothing
-- then six per job: id, job JSON (stored as given, never decoded), priority 0-9, max_attempts,
--   when ('' = now | 'at': the next argument is run_at_ms | 'in': it is delay_ms), that time
--
-- Returns {'ok', now_ms, then per job: 'ready' | 'delayed' | 'conflict', due_ms or message}
--      or {'err', 'conflict', message} when all-or-nothing and a job with one of the ids is
--      present (nothing written). A job is present when it is in ready, delayed, processing or
--      dead.

local now = now_ms(ARGV[1])
local each = ARGV[2] == '1'
local n = (#ARGV - 2) / 6
local ARG0 = 3

-- Undoes the bodies this call wrote, then refuses: all-or-nothing.
local function conflict(written, message)
  for id in pairs(written) do redis.call('HDEL', Q.jobs, id) end
  return {'err', 'conflict', message}
end

-- First the bodies, each written only where its id is free (HSETNX: the check and the write
-- in one command). A body in none of the four sets is what an at-most-once `take` leaves when
-- its process dies between BZPOPMIN and reading the body: that job is gone, so its id is free
-- again (its body is replaced below).
-- Refused alone (each on its own), by the job's place in the call.
local written, leftover, refused = {}, {}, {}
for i = 0, n - 1 do
  local a = ARG0 + 6 * i
  local id = ARGV[a]
  if written[id] or leftover[id] then
    if not each then return conflict(written, 'job ' .. id .. ' appears twice in this call') end
    -- An earlier single enqueue of this call took the id: this one finds it present.
    refused[i] = 'job ' .. id .. ' is already in this queue'
  elseif redis.call('HSETNX', Q.jobs, id, ARGV[a + 1]) == 1 then
    written[id] = true
  else
    local present = redis.call('ZSCORE', Q.ready, id) or redis.call('ZSCORE', Q.delayed, id)
      or redis.call('ZSCORE', Q.processing, id) or redis.call('ZSCORE', Q.dead, id)
    if present then
      if not each then return conflict(written, 'job ' .. id .. ' is already in this queue') end
      refused[i] = 'job ' .. id .. ' is already in this queue'
    else
      leftover[id] = true
    end
  end
end

-- Then every accepted job's state and place, gathered into one HSET and at most one ZADD per
-- set: ready now, in FIFO order within its priority from one block of the seq counter, or
-- delayed until due.
local out = {'ok', now}
local fields, ready, delayed = {}, {}, {}
for i = 0, n - 1 do
  local a = ARG0 + 6 * i
  local id, when = ARGV[a], ARGV[a + 4]
  if refused[i] then
    out[#out + 1] = 'conflict'
    out[#out + 1] = refused[i]
  else
    if leftover[id] then
      q_forget(id)
      redis.call('HSET', Q.jobs, id, ARGV[a + 1])
    end
    fields[#fields + 1] = id .. ':p'
    fields[#fields + 1] = ARGV[a + 2]
    fields[#fields + 1] = id .. ':m'
    fields[#fields + 1] = ARGV[a + 3]
    local due = now
    if when == 'at' then
      due = tonumber(ARGV[a + 5])
    elseif when == 'in' then
      due = now + tonumber(ARGV[a + 5])
    end
    if due > now then
      delayed[#delayed + 1] = fmt(due)
      delayed[#delayed + 1] = id
      out[#out + 1] = 'delayed'
      out[#out + 1] = due
    else
      ready[#ready + 1] = tonumber(ARGV[a + 2])
      ready[#ready + 1] = id
      out[#out + 1] = 'ready'
      out[#out + 1] = now
    end
  end
end
if #fields > 0 then redis.call('HSET', Q.state, unpack(fields)) end
if #delayed > 0 then redis.call('ZADD', Q.delayed, unpack(delayed)) end
if #ready > 0 then
  local count = #ready / 2
  local seq = redis.call('INCRBY', Q.seq, count) - count
  for k = 1, #ready, 2 do
    seq = seq + 1
    ready[k] = fmt(ready[k] * PRIORITY_SPAN + seq)
  end
  redis.call('ZADD', Q.ready, unpack(ready))
  q_wake(count)
end
return out
