-- tournament_event.lua: tells the board's subscribers that its one-off tournament started or
-- ends soon (the `tournament.event` job; `ended` comes from lua/tournament_end.lua).
-- Prepended with lib.lua.
--
-- KEYS[1]  lb:{<board>}:config
-- ARGV[1]  the event: 'started' | 'ending_soon'   ARGV[2] now_ms override ('' = TIME)
--
-- Returns {'ok', season} or {'err', code, message}.

local prefix = string.sub(KEYS[1], 1, -7)
local board = board_of(prefix)
local cfg = load_config(KEYS[1])
if not cfg then return {'err', 'unknown_board', 'no board ' .. board} end
local tour = tournament_of(cfg)
if not tour then return {'err', 'not_found', 'board ' .. board .. ' has no tournament'} end
local season = current_season(prefix, cfg, now_ms(ARGV[2]))
local s = tour.schedule
tournament_publish(prefix, board, season, '{"event":"' .. ARGV[1] .. '","start_ms":' .. fmt(s.start_ms) ..
  ',"end_ms":' .. fmt(s.end_ms) .. '}')
return {'ok', season}
