-- q_dead.lua: a page of dead letters, most recent first, with their bodies (read only).
-- Prepended with lib.lua and q_lib.lua (which lists the eight KEYS).
--
-- ARGV[1] offset   ARGV[2] limit
--
-- Returns {'ok', total, then per job: id, job JSON, attempts, died_at_ms, attempt history
--   (the JSON array q_history keeps; '' when none)}

local rows = redis.call('ZREVRANGE', Q.dead, tonumber(ARGV[1]), tonumber(ARGV[1]) + tonumber(ARGV[2]) - 1, 'WITHSCORES')
local out = {'ok', redis.call('ZCARD', Q.dead)}
for i = 1, #rows, 2 do
  local id = rows[i]
  out[#out + 1] = id
  out[#out + 1] = redis.call('HGET', Q.jobs, id) or ''
  out[#out + 1] = q_num(id, 'a')
  out[#out + 1] = tonumber(rows[i + 1])
  out[#out + 1] = q_field(id, 'h') or ''
end
return out
