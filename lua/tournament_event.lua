-- tournament_event.lua: tells the board's subscribers that an occurrence of its tournament
-- started or ends soon (the `tournament.event` job, and the `season.rollover` job of a recurring
-- tournament for the season that starts; `ended` comes from lua/tournament_end.lua).
-- Prepended with lib.lua.
--
-- KEYS[1]  lb:{<board>}:config
-- ARGV[1]  the event: 'started' | 'ending_soon'   ARGV[2] now_ms override ('' = TIME)
-- ARGV[3]  the occurrence's start_ms   ARGV[4] its end_ms
--
-- Returns {'ok', season} or {'err', code, message}.

local prefix = string.sub(KEYS[1], 1, -7)
local board = board_of(prefix)
local cfg = load_config(KEYS[1])
if not cfg then return {'err', 'unknown_board', 'no board ' .. board} end
if not tournament_of(cfg) then return {'err', 'not_found', 'board ' .. board .. ' has no tournament'} end
local season = current_season(prefix, cfg, now_ms(ARGV[2]))
tournament_publish(prefix, board, season, '{"event":"' .. ARGV[1] .. '","start_ms":' .. fmt(tonumber(ARGV[3])) ..
  ',"end_ms":' .. fmt(tonumber(ARGV[4])) .. '}')
return {'ok', season}
