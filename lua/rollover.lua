-- rollover.lua: an admin starts a named season on a `never` board.
-- Prepended with lib.lua.
--
-- KEYS[1]  lb:{<board>}:config
-- ARGV[1]  the new season's name   ARGV[2] now_ms override ('' = TIME)
--
-- The names of a board's manual seasons are never reused (`seasons:used`, the names started
-- here and the ones they followed).
-- Returns {'ok', season, start_ms, previous_season} or {'err', code, message}.

local prefix = string.sub(KEYS[1], 1, -7)
local board = board_of(prefix)
local cfg = load_config(KEYS[1])
if not cfg then return {'err', 'unknown_board', 'no board ' .. board} end
if cfg.reset ~= 'never' then
  return {'err', 'conflict', 'board ' .. board .. ' turns its seasons over by the calendar (' .. cfg.reset .. ')'}
end
if redis.call('ZSCORE', prefix .. 'seasons', ARGV[1]) then
  return {'err', 'conflict', 'season ' .. ARGV[1] .. ' exists already'}
end
-- A name this board had before, dropped since (keep_seasons), stays taken: records of it (a
-- banned player's held entry, the rewards granted) would otherwise carry into the new season.
local used = prefix .. 'seasons:used'
if redis.call('SISMEMBER', used, ARGV[1]) == 1 then
  return {'err', 'conflict', 'season ' .. ARGV[1] .. ' was a season of board ' .. board .. ' before: choose a new name'}
end
local now = now_ms(ARGV[2])
local previous, prev_start = current_season(prefix, cfg, now)
-- Seasons are ordered by start: a new one must start after the current one.
if now <= prev_start then now = prev_start + 1 end
start_season(prefix, cfg, ARGV[1], now)
redis.call('SADD', used, previous, ARGV[1])
publish_change(prefix, board, ARGV[1], ',"rollover":true')
return {'ok', ARGV[1], now, previous}
