-- season_event.lua: tells every instance that a board's current season changed by the clock
-- (a calendar boundary passed), so open views switch to the new season even before anyone
-- scores in it. Run by the season.rollover job. Prepended with lib.lua.
--
-- KEYS[1]  lb:{<board>}:config
-- ARGV[1]  now_ms override ('' = Redis TIME)
--
-- Returns {'ok', current season, seq} or {'err', 'unknown_board', message}.

local prefix = string.sub(KEYS[1], 1, -7)
local board = board_of(prefix)
local cfg = load_config(KEYS[1])
if not cfg then return {'err', 'unknown_board', 'no board ' .. board} end
local season = current_season(prefix, cfg, now_ms(ARGV[1]))
local seq = publish_change(prefix, board, season, ',"rollover":true')
return {'ok', season, seq}
