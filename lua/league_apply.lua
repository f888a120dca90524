-- league_apply.lua: applies a league's season-end moves to one of its tier boards, once
-- (docs/protocol.md, "Leagues"; docs/queues.md, `league.close`). Prepended with lib.lua.
--
-- KEYS[1]  lb:{<board>}:config   (lb:{<board>}:lg and lb:{<board>}:lg:done:<season> share its
--                                 slot: one script, one slot, whatever slot the other tiers are in)
-- ARGV[1]  the ended season   ARGV[2] the season after it
-- ARGV[3]  the moves touching this board, JSON [[player, board they play on now], ...]: players
--          leaving this board (the other board) and players arriving here (this board)
--
-- Every write is absolute: `lg` player -> the board they play on now (HSET of a computed value,
-- never a count), so applying the same moves again ends in the same state. A player leaving
-- loses any entry they made here in the next season before this ran (its score, bucket entry
-- and bucket place), so each player is on one tier. The done marker
-- `lg:done:<season>` (the moves' count) is written in the same script: a second call changes
-- nothing and answers 0.
-- Returns {'ok', applied (1) or 0 (done before)} or {'err', code, message}.

local prefix = string.sub(KEYS[1], 1, -7)
local board = board_of(prefix)
local cfg = load_config(KEYS[1])
if not cfg then return {'err', 'unknown_board', 'no board ' .. board} end
local done = prefix .. 'lg:done:' .. ARGV[1]
if redis.call('EXISTS', done) == 1 then return {'ok', 0} end
local moves = cjson.decode(ARGV[3])
local next_season = ARGV[2]
local placed = prefix .. 'lg'
for _, m in ipairs(moves) do
  local player, now_on = m[1], m[2]
  redis.call('HSET', placed, player, now_on)
  if now_on ~= board then
    if redis.call('ZREM', prefix .. 's:' .. next_season, player) == 1 then
      bucket_mirror(prefix, next_season, player, nil)
    end
    redis.call('HDEL', prefix .. 'bk:' .. next_season, player)
  end
end
redis.call('SET', done, fmt(#moves))
return {'ok', 1}
