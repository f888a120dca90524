-- tournament_end.lua: freezes the final standings of one occurrence (season) of a board's
-- tournament (docs/protocol.md, "Tournaments"), once. Run by the `tournament.end` job of a
-- one-off tournament and by the `season.rollover` job of a recurring one. Prepended with lib.lua.
--
-- KEYS[1]  lb:{<board>}:config   (every other key is built from its prefix: one hash slot)
-- ARGV[1]  the season ('' = the board's current one)   ARGV[2] now_ms override ('' = TIME)
--
-- The first run copies the season's scores `s:<season>` (on a bucketed board merged from its
-- buckets first: lib.lua, `whole`) to `t:<season>:final` (ZUNIONSTORE: a sorted set with the
-- same members and scores; none when nobody scored), records when it ended
-- in `t:<season>:ended` and names the season in `t:last` (what `GET /v1/boards/{b}/final` reads
-- by default), and publishes the `ended` event (tournament_publish in lib.lua). A later run finds `t:<season>:ended` and changes nothing, so the standings stay
-- as they were frozen even if the job runs twice.
-- Returns {'ok', season, frozen (1 = now, 0 = already)} or {'err', code, message}.

local prefix = string.sub(KEYS[1], 1, -7)
local board = board_of(prefix)
local cfg = load_config(KEYS[1])
if not cfg then return {'err', 'unknown_board', 'no board ' .. board} end
local now = now_ms(ARGV[2])
local season = ARGV[1]
if season == '' then season = current_season(prefix, cfg, now) end
local t = prefix .. 't:' .. season
if redis.call('EXISTS', t .. ':ended') == 1 then return {'ok', season, 0} end
redis.call('ZUNIONSTORE', t .. ':final', 1, whole(prefix, season))
redis.call('SET', t .. ':ended', fmt(now))
redis.call('SET', prefix .. 't:last', season)
-- The `ended` event for the board's subscribers: the top RANKED of the final standings, the
-- first TOP of them shown to everyone, each player among them told their own rank.
local RANKED, TOP = 1000, 10
local start = tonumber(redis.call('ZSCORE', prefix .. 'seasons', season) or '0')
local rows = entries(prefix, t .. ':final', cfg, 0, RANKED - 1, start)
local top, ranks = {}, {}
for i = 1, #rows, 5 do
  local player, points, rank, name, reached = rows[i], rows[i + 1], rows[i + 2], rows[i + 3], rows[i + 4]
  if #top < TOP then
    local e = '{"rank":' .. fmt(rank) .. ',"player":"' .. player .. '","score":' .. fmt(points)
    if name ~= '' then e = e .. ',"name":' .. cjson.encode(name) end
    if reached >= 0 then e = e .. ',"reached_ms":' .. fmt(reached) end
    top[#top + 1] = e .. '}'
  end
  ranks[#ranks + 1] = '"' .. player .. '":' .. fmt(rank)
end
local tour = tournament_of(cfg)
local s = tour and tour.schedule or {}
local end_ms = opt_num(s.end_ms) or now
tournament_publish(prefix, board, season, '{"event":"ended","end_ms":' .. fmt(end_ms) ..
  ',"total":' .. fmt(redis.call('ZCARD', t .. ':final')) ..
  ',"standings":[' .. table.concat(top, ',') .. '],"ranks":{' .. table.concat(ranks, ',') .. '}}')
return {'ok', season, 1}
