-- q_lib.lua: helpers of the queue scripts (docs/queues.md). The server prepends base.lua and then
-- this file to every q_*.lua script, so each still runs as one EVALSHA.
--
-- Every queue script takes the same eight keys of one queue `q` (one hash tag, one slot):
-- KEYS[1] q:{<q>}:ready       ZSET  id -> priority * 1e13 + n (n from seq: exact FIFO)
-- KEYS[2] q:{<q>}:delayed     ZSET  id -> run_at_ms
-- KEYS[3] q:{<q>}:processing  ZSET  id -> lease deadline (ms)
-- KEYS[4] q:{<q>}:dead        ZSET  id -> when it died (ms)
-- KEYS[5] q:{<q>}:jobs        HASH  id -> job JSON, written by the server and never decoded here
--                                   (cjson would mangle big integers and empty arrays)
-- KEYS[6] q:{<q>}:state       HASH  <id>:p priority, <id>:m max_attempts, <id>:a attempts
--                                   (absent until the first claim: 0),
--                                   <id>:t lease token, <id>:h attempt history (JSON array of
--                                   {attempt, lease?, at_ms, reason?}, the last HISTORY_CAP
--                                   failures; ids never contain ':', so the fields of two jobs
--                                   cannot collide)
-- KEYS[7] q:{<q>}:seq         STRING FIFO counter
-- KEYS[8] q:{<q>}:wake        LIST  one entry per job made ready, for blocked claimers (BLPOP)

local Q = {
  ready = KEYS[1], delayed = KEYS[2], processing = KEYS[3], dead = KEYS[4],
  jobs = KEYS[5], state = KEYS[6], seq = KEYS[7], wake = KEYS[8],
}
-- priority * 1e13 + n stays below 2^53 (exact in a double) for n < 1e13.
local PRIORITY_SPAN = 1e13
-- The wake list only has to be non-empty while a job is ready; a bound keeps it small.
local WAKE_CAP = 1024
-- Failed attempts remembered per job (nack or lapsed lease), the oldest dropped first.
local HISTORY_CAP = 10

local function q_field(id, f)
  return redis.call('HGET', Q.state, id .. ':' .. f)
end

local function q_num(id, f)
  return tonumber(q_field(id, f) or '0')
end

-- Tells up to n blocked claimers that jobs are ready. The list is filled up to WAKE_CAP and
-- never trimmed: an LTRIM on every enqueue of a long list cost more than the rest of the
-- enqueue script together.
local function q_wake(n)
  n = math.min(n, WAKE_CAP - redis.call('LLEN', Q.wake))
  if n <= 0 then return end
  local ones = {}
  for i = 1, n do ones[i] = '1' end
  redis.call('LPUSH', Q.wake, unpack(ones))
end

-- Puts a job at the back of its priority in ready (the caller wakes claimers). `p`, the job's
-- priority, is read from state when not given.
local function q_ready(id, p)
  local n = redis.call('INCR', Q.seq)
  redis.call('ZADD', Q.ready, fmt((p or q_num(id, 'p')) * PRIORITY_SPAN + n), id)
end

-- Removes every trace of a job.
local function q_forget(id)
  redis.call('HDEL', Q.jobs, id)
  redis.call('HDEL', Q.state, id .. ':p', id .. ':m', id .. ':a', id .. ':t', id .. ':h')
end

-- Records a failed attempt of a job still holding its lease fields: its number, the first 8
-- characters of its lease token (enough to tell leases apart, useless to act with), when, and
-- why (reason: a string or nil). Keeps the last HISTORY_CAP entries. The history is JSON this
-- script wrote itself (small integers and strings), so cjson round-trips it exactly.
local function q_history(id, now, reason)
  local raw = q_field(id, 'h')
  local h = {}
  if raw then h = cjson.decode(raw) end
  local token = q_field(id, 't')
  local entry = {attempt = q_num(id, 'a'), at_ms = now}
  if token then entry.lease = string.sub(token, 1, 8) end
  if reason then entry.reason = reason end
  h[#h + 1] = entry
  while #h > HISTORY_CAP do table.remove(h, 1) end
  redis.call('HSET', Q.state, id .. ':h', cjson.encode(h))
end

-- Due delayed jobs to ready, at most `limit`. Returns how many moved.
local function q_promote(now, limit)
  local ids = redis.call('ZRANGEBYSCORE', Q.delayed, '-inf', fmt(now), 'LIMIT', 0, limit)
  for _, id in ipairs(ids) do
    redis.call('ZREM', Q.delayed, id)
    q_ready(id)
  end
  q_wake(#ids)
  return #ids
end

-- Lapsed leases (deadline <= now), at most `limit`: back to ready at once (the claim already
-- counted the attempt), or to dead letters when no attempt is left. Recovery goes by deadline
-- only: whoever held the lease does not matter. Returns (back to ready, dead).
local function q_reap(now, limit)
  local ids = redis.call('ZRANGEBYSCORE', Q.processing, '-inf', fmt(now), 'LIMIT', 0, limit)
  local back, dead = 0, 0
  for _, id in ipairs(ids) do
    redis.call('ZREM', Q.processing, id)
    q_history(id, now, 'lease lapsed')
    redis.call('HDEL', Q.state, id .. ':t')
    if q_num(id, 'a') >= q_num(id, 'm') then
      redis.call('ZADD', Q.dead, fmt(now), id)
      dead = dead + 1
    else
      q_ready(id)
      back = back + 1
    end
  end
  q_wake(back)
  return back, dead
end

-- The lowest score of a ZSET (the next due time or deadline), -1 when empty.
local function q_first(key)
  local r = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  if #r == 0 then return -1 end
  return tonumber(r[2])
end

-- Whether `token` is the live lease of job `id`.
local function q_held(id, token)
  if not redis.call('ZSCORE', Q.processing, id) then return false end
  return q_field(id, 't') == token
end

local function q_lost(id)
  return {'err', 'lease_lost', 'the lease on job ' .. id .. ' is no longer yours (acked, nacked, expired or re-claimed)'}
end

-- The claim (docs/queues.md): reaps lapsed leases and promotes due delayed jobs first (at most
-- `bound` each), so a due job is claimable exactly when due even if the promoter runs late;
-- then the best ready jobs, one per token in ARGV[first..], move to processing with the lease
-- deadline now + lease_ms and one attempt counted each — all in one step, so two workers never
-- hold the same job and a worker killed after this step loses nothing (the lease lapses and
-- the job comes back). `clock` is the now_ms override argument.
--
-- Returns {'ok', deadline, then per job: id, job JSON, attempts} ({'ok', 0} when no token is
-- given: nothing is claimed, reaped or promoted)
--      or {'none', next_ms (earliest delayed due time or lease deadline; -1 = none), now_ms}
local function q_claim_batch(clock, lease_ms, bound, first)
  local want = #ARGV - first + 1
  if want <= 0 then return {'ok', 0} end
  local now = now_ms(clock)
  q_reap(now, bound)
  q_promote(now, bound)
  local popped = redis.call('ZPOPMIN', Q.ready, want)
  if #popped == 0 then
    -- Nothing is ready, so every wake-up in the list is stale: drop them, so that a claimer
    -- about to block waits for the next job instead of spinning through old wake-ups.
    redis.call('DEL', Q.wake)
    local d, p = q_first(Q.delayed), q_first(Q.processing)
    local nxt = d
    if p >= 0 and (nxt < 0 or p < nxt) then nxt = p end
    return {'none', nxt, now}
  end
  local deadline = now + lease_ms
  local out = {'ok', deadline}
  for i = 1, #popped, 2 do
    local id = popped[i]
    local attempts = redis.call('HINCRBY', Q.state, id .. ':a', 1)
    redis.call('HSET', Q.state, id .. ':t', ARGV[first + (i - 1) / 2])
    redis.call('ZADD', Q.processing, fmt(deadline), id)
    out[#out + 1] = id
    out[#out + 1] = redis.call('HGET', Q.jobs, id)
    out[#out + 1] = attempts
  end
  return out
end
