-- board_delete.lua: deletes a board and every key of it. Prepended with lib.lua.
--
-- KEYS[1]  lb:{<board>}:config
--
-- Every key of a board starts with `lb:{<board>}:` (config, seasons, scores, names, seq, log,
-- limiter state, dedup records, bans, holds, rewards: docs/architecture.md "Redis keys"), so
-- they are found by that prefix (SCAN inside the script: the board's keys share one slot, and
-- the whole deletion is one atomic step, so no submission lands half-way). The cost grows with
-- the number of keys in the database; it is an admin operation.
--
-- A tier board of a league is refused (`conflict`): the league's season closes need it.
-- Returns {'ok', keys deleted} or {'err', code, message}.

local prefix = string.sub(KEYS[1], 1, -7)
local cfg = load_config(KEYS[1])
if not cfg then
  return {'err', 'unknown_board', 'no board ' .. board_of(prefix)}
end
-- A league's tier is part of it (its season closes read and write every tier): not deleted.
local l = cfg.league
if l ~= nil and l ~= cjson.null then
  return {'err', 'conflict', 'board ' .. board_of(prefix) .. ' is tier ' .. l.tier .. ' of league ' .. l.league .. ': a league\'s tier boards are not deleted'}
end
local deleted = 0
local cursor = '0'
repeat
  local r = redis.call('SCAN', cursor, 'MATCH', prefix .. '*', 'COUNT', 1000)
  cursor = r[1]
  if #r[2] > 0 then deleted = deleted + redis.call('UNLINK', unpack(r[2])) end
until cursor == '0'
return {'ok', deleted}
