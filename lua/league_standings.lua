-- league_standings.lua: the frozen standings of every bucket of one season of a league's tier
-- board, in one call (docs/protocol.md, "Leagues"; the `league.close` job reads them).
-- Prepended with lib.lua. Reads only.
--
-- KEYS[1]  lb:{<board>}:config   (the buckets, lb:{<board>}:bk:<season>[:<n>], share its slot)
-- ARGV[1]  the season (an ended one: nothing writes its buckets any more)
--
-- Returns {'ok', n_buckets, count1, players of bucket 1 in rank order..., count2, ...} or
-- {'err', code, message}. Rank order is the board's (order desc: highest first); equal scores
-- in Redis's member order, so the same standings give the same list.

local prefix = string.sub(KEYS[1], 1, -7)
local cfg = load_config(KEYS[1])
if not cfg then return {'err', 'unknown_board', 'no board ' .. board_of(prefix)} end
local season = ARGV[1]
local open = tonumber(redis.call('HGET', prefix .. 'bk:' .. season, '#open') or '0')
local cmd = cfg.order == 'desc' and 'ZREVRANGE' or 'ZRANGE'
local out = {'ok', open}
for n = 1, open do
  local members = redis.call(cmd, bucket_key(prefix, season, n), 0, -1)
  out[#out + 1] = #members
  for _, m in ipairs(members) do out[#out + 1] = m end
end
return out
