-- q_reap.lua: one reaper step: lapsed leases (deadline <= now) go back to ready at once, or to
-- dead letters past max_attempts; at most a bounded batch per call.
-- Prepended with base.lua and q_lib.lua (which lists the eight KEYS).
--
-- ARGV[1] now_ms override ('' = Redis TIME)   ARGV[2] batch bound
--
-- Returns {'ok', back to ready, dead, next lease deadline ms (-1 = none), now_ms}

local now = now_ms(ARGV[1])
local back, dead = q_reap(now, tonumber(ARGV[2]))
return {'ok', back, dead, q_first(Q.processing), now}
