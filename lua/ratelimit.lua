-- ratelimit.lua: the article's sliding-window log, one ZSET per subject.
-- Prepended with lib.lua.
--
-- KEYS[1]  the subject's ZSET (rl:{<policy>:<subject>} or lb:{<board>}:rl:<player>)
-- ARGV[1]  limit   ARGV[2] window_ms   ARGV[3] unique member   ARGV[4] now_ms override ('' = TIME)
--
-- Returns {allowed (0/1), limit, remaining, retry_after_ms, reset_ms}.

local now = now_ms(ARGV[4])
local limit, window = tonumber(ARGV[1]), tonumber(ARGV[2])
local r = rl_check(KEYS[1], now, window, limit)
if r[1] == 1 then rl_take(KEYS[1], now, window, ARGV[3]) end
return r
