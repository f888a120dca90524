-- bucket_list.lua: a page of a bucketed board's buckets in one season, each with how many
-- players have a score in it (GET /admin/boards/{b}/buckets). Prepended with lib.lua. Reads only.
--
-- KEYS[1]  lb:{<board>}:config   (the season's `bk:<season>` hash and its `bk:<season>:<n>`
--                                 ladders are built from its prefix: one hash slot)
-- ARGV[1]  season ('' = current)   ARGV[2] now_ms override ('' = TIME)
-- ARGV[3]  offset (buckets skipped: the page starts at bucket offset + 1)   ARGV[4] limit
--
-- Returns {'ok', season, count, open_fill, buckets...} where count is the number of buckets
-- (the last is the one being filled, holding open_fill players) and buckets are flat pairs of
-- bucket number, players with a score in it; or {'err', code, message}.

local prefix = string.sub(KEYS[1], 1, -7)
local board = board_of(prefix)
local cfg = load_config(KEYS[1])
if not cfg then return {'err', 'unknown_board', 'no board ' .. board} end
if not bucket_size_of(cfg) then return {'err', 'not_found', 'board ' .. board .. ' has no buckets (no bucket_size)'} end
local season = resolve_season(prefix, cfg, now_ms(ARGV[2]), ARGV[1])
if not season then return {'err', 'unknown_season', 'no season ' .. ARGV[1]} end
local st = redis.call('HMGET', prefix .. 'bk:' .. season, '#open', '#fill')
local count = tonumber(st[1] or '0')
local out = {'ok', season, count, tonumber(st[2] or '0')}
local first = tonumber(ARGV[3]) + 1
local last = math.min(count, tonumber(ARGV[3]) + tonumber(ARGV[4]))
for n = first, last do
  out[#out + 1] = n
  out[#out + 1] = redis.call('ZCARD', bucket_key(prefix, season, n))
end
return out
