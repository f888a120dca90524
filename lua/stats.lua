-- stats.lua: each instance's live counters, for the admin console's charts summed over every
-- instance (`GET /admin/stats`). Prepended with lib.lua.
--
-- KEYS[1]  sc:{stats}  HASH  instance id -> '<at_ms> <snapshot JSON>' (the JSON as the instance
--                            wrote it: {"submissions":{outcome: total},"ws_connections": n})
-- ARGV[1]  'put' or 'read'
--   put:   ARGV[2] instance id  ARGV[3] snapshot JSON  ARGV[4] drop_ms  ARGV[5] now_ms override
--          Stores the instance's snapshot stamped now and drops every snapshot older than
--          drop_ms (instances that stopped). Returns {'ok', now_ms}.
--   read:  ARGV[2] fresh_ms  ARGV[3] now_ms override
--          Returns {'ok', now_ms, id1, at_ms1, json1, id2, ...}: the snapshots written in the
--          last fresh_ms.

local now = now_ms(ARGV[ARGV[1] == 'put' and 5 or 3])
local all = redis.call('HGETALL', KEYS[1])
if ARGV[1] == 'put' then
  local drop = tonumber(ARGV[4])
  redis.call('HSET', KEYS[1], ARGV[2], fmt(now) .. ' ' .. ARGV[3])
  for i = 1, #all, 2 do
    local at = tonumber(string.match(all[i + 1], '^(%-?%d+) ')) or 0
    if all[i] ~= ARGV[2] and at < now - drop then
      redis.call('HDEL', KEYS[1], all[i])
    end
  end
  return {'ok', now}
end
local fresh = tonumber(ARGV[2])
local out = {'ok', now}
for i = 1, #all, 2 do
  local at, json = string.match(all[i + 1], '^(%-?%d+) (.*)$')
  if at and tonumber(at) >= now - fresh then
    out[#out + 1] = all[i]
    out[#out + 1] = tonumber(at)
    out[#out + 1] = json
  end
end
return out
