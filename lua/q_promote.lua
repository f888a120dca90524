-- q_promote.lua: one promoter step: due delayed jobs move to ready (with their priority, at
-- the back of it), at most a bounded batch per call so one call never blocks Redis for long.
-- Prepended with base.lua and q_lib.lua (which lists the eight KEYS).
--
-- ARGV[1] now_ms override ('' = Redis TIME)   ARGV[2] batch bound
--
-- Returns {'ok', moved, next due ms (-1 = nothing delayed), now_ms}

local now = now_ms(ARGV[1])
local moved = q_promote(now, tonumber(ARGV[2]))
return {'ok', moved, q_first(Q.delayed), now}
