-- join.lua: a player joins the tournament of a board (docs/protocol.md, "Tournaments").
-- Prepended with lib.lua.
--
-- KEYS[1]  lb:{<board>}:config   (the entrants, `lb:{<board>}:t:<season>:joined`, are built from
--                                 its prefix: one hash slot)
-- ARGV[1]  player   ARGV[2] now_ms override ('' = TIME)
--
-- A banned player is refused (`forbidden`). Joining is open until the tournament ends (before it
-- starts too). A player who joined already
-- gets the same answer again and nothing changes; otherwise, while fewer than `max_size` have
-- entered, the player enters (ZADD). The count and the write are one script, so racing joins
-- never pass the cap. On a bucketed board the entrant is placed in a bucket in the same script.
-- Returns {'ok', season, joined_ms} or {'err', code, message}; an error changes nothing.

local prefix = string.sub(KEYS[1], 1, -7)
local board = board_of(prefix)
local cfg = load_config(KEYS[1])
if not cfg then return {'err', 'unknown_board', 'no board ' .. board} end
local tour = tournament_of(cfg)
if not tour then return {'err', 'bad_request', 'board ' .. board .. ' has no tournament to join'} end
local now = now_ms(ARGV[2])
local season = current_season(prefix, cfg, now)
local joined = prefix .. 't:' .. season .. ':joined'
local at = redis.call('ZSCORE', joined, ARGV[1])
if at then return {'ok', season, tonumber(at)} end
local code, msg = ban_refusal(prefix, board, ARGV[1])
if code then return {'err', code, msg} end
code, msg = league_refusal(prefix, cfg, board, ARGV[1])
if code then return {'err', code, msg} end
code, msg = tournament_window(tour, now)
if code == 'ended' then return {'err', code, msg} end
code, msg = tournament_room(prefix, tour, season, ARGV[1], false)
if code then return {'err', code, msg} end
redis.call('ZADD', joined, fmt(now), ARGV[1])
-- A bucketed board places the player in a bucket as they enter (lib.lua, "Buckets").
local bsize = bucket_size_of(cfg)
if bsize then bucket_of(prefix, season, ARGV[1], bsize) end
return {'ok', season, now}
