-- q_delete.lua: deletes one job that is ready, delayed or dead, with every trace of it. A job in
-- processing is refused: a worker holds its lease (let it finish, or let the lease lapse).
-- Prepended with base.lua and q_lib.lua (which lists the eight KEYS).
--
-- ARGV[1] job id
--
-- Returns {'ok', state it was in ('ready' | 'delayed' | 'dead')}
--      or {'err', 'conflict' | 'not_found', message} (nothing changed).

local id = ARGV[1]
if redis.call('ZSCORE', Q.processing, id) then
  return {'err', 'conflict', 'job ' .. id .. ' is being processed (a worker holds its lease); it can be deleted once it is back in ready, delayed or dead'}
end
for _, state in ipairs({'ready', 'delayed', 'dead'}) do
  if redis.call('ZREM', Q[state], id) == 1 then
    q_forget(id)
    return {'ok', state}
  end
end
return {'err', 'not_found', 'no job ' .. id .. ' in this queue'}
