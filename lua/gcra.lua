-- gcra.lua: the generic cell rate algorithm, a token bucket in O(1) memory, for
-- limits too high for one ZSET entry per request. One key holds the theoretical arrival time
-- (TAT) of the next request.
--
-- KEYS[1]  rl:{<policy>:<subject>}  (a STRING: TAT in ms)
-- ARGV[1]  limit (burst = limit)  ARGV[2] window_ms  ARGV[3] now_ms override ('' = TIME)
--
-- Prepended with base.lua (now_ms, fmt).
--
-- Returns {allowed (0/1), limit, remaining, retry_after_ms, reset_ms}.

local limit, window = tonumber(ARGV[1]), tonumber(ARGV[2])
local now = now_ms(ARGV[3])
local interval = window / limit          -- ms one request "costs"
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
local new_tat = tat + interval
local allow_at = new_tat - window        -- the request fits if the bucket has room by now
if allow_at > now then
  local retry = math.ceil(allow_at - now)
  return {0, limit, 0, retry, math.ceil(tat - now)}
end
redis.call('SET', KEYS[1], fmt(new_tat), 'PX', math.ceil(new_tat - now))
local remaining = math.floor((now + window - new_tat) / interval)
return {1, limit, remaining, 0, math.ceil(new_tat - now)}
