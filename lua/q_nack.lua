-- q_nack.lua: the holder of a live lease gives the job back: after delay_ms when given, else
-- after exponential backoff with jitter; to dead letters when its attempts are used up.
-- Prepended with base.lua and q_lib.lua (which lists the eight KEYS).
--
-- ARGV[1] job id   ARGV[2] lease token   ARGV[3] delay_ms ('' = backoff)
-- ARGV[4] backoff base ms   ARGV[5] backoff cap ms   ARGV[6] jitter in [0, 1) (from the server)
-- ARGV[7] now_ms override ('' = Redis TIME)   ARGV[8] why it failed ('' = not said)
--
-- The failed attempt is recorded in the job's history (q_history) whatever comes next.
--
-- Backoff after attempt a: d = min(cap, base * 2^(a-1)), delay = d/2 + jitter * d/2 ("equal
-- jitter": spread out, yet never shorter than the previous attempt's longest delay).
--
-- Returns {'ok', 'ready' | 'delayed' | 'dead', due_ms (when it died for 'dead'), now_ms}
--      or {'err', 'lease_lost', message} (nothing changed).

local id = ARGV[1]
if not q_held(id, ARGV[2]) then return q_lost(id) end
local now = now_ms(ARGV[7])
local reason = ARGV[8]
if reason == '' then reason = nil end
q_history(id, now, reason)
redis.call('ZREM', Q.processing, id)
redis.call('HDEL', Q.state, id .. ':t')
local attempts = q_num(id, 'a')
if attempts >= q_num(id, 'm') then
  redis.call('ZADD', Q.dead, fmt(now), id)
  return {'ok', 'dead', now, now}
end
local delay
if ARGV[3] ~= '' then
  delay = tonumber(ARGV[3])
else
  local d = math.min(tonumber(ARGV[5]), tonumber(ARGV[4]) * 2 ^ math.max(0, attempts - 1))
  delay = math.floor(d / 2 + tonumber(ARGV[6]) * d / 2)
end
if delay <= 0 then
  q_ready(id)
  q_wake(1)
  return {'ok', 'ready', now, now}
end
redis.call('ZADD', Q.delayed, fmt(now + delay), id)
return {'ok', 'delayed', now + delay, now}
