-- q_list.lua: a page of one state's jobs with their bodies (read only): ready by priority (FIFO
-- within one), delayed by due time, processing by lease deadline (soonest first), dead most
-- recent first. Prepended with base.lua and q_lib.lua (which lists the eight KEYS).
--
-- ARGV[1] state: ready | delayed | processing | dead   ARGV[2] offset   ARGV[3] limit
--
-- Returns {'ok', total, then per job: id, job JSON ('' when its body is gone), attempts,
--   score (ready: priority * 1e13 + n; delayed: due ms; processing: lease deadline ms;
--   dead: when it died, ms), attempt history (the JSON array q_history keeps; '' when none)}

local key = Q[ARGV[1]]
local first = tonumber(ARGV[2])
local last = first + tonumber(ARGV[3]) - 1
local rows
if ARGV[1] == 'dead' then
  rows = redis.call('ZREVRANGE', key, first, last, 'WITHSCORES')
else
  rows = redis.call('ZRANGE', key, first, last, 'WITHSCORES')
end
local out = {'ok', redis.call('ZCARD', key)}
for i = 1, #rows, 2 do
  local id = rows[i]
  out[#out + 1] = id
  out[#out + 1] = redis.call('HGET', Q.jobs, id) or ''
  out[#out + 1] = q_num(id, 'a')
  out[#out + 1] = fmt(tonumber(rows[i + 1]))
  out[#out + 1] = q_field(id, 'h') or ''
end
return out
