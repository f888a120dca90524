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
-- and bucket place, free again if that bucket is still filling), so each player is on one tier;
-- those removals are published as one change event (the shape of lua/remove.lua's). The done marker
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
local key = prefix .. 's:' .. next_season
local removed, nr = {}, 0 -- the change event's entries: the entries removed, in order
for _, m in ipairs(moves) do
  local player, now_on = m[1], m[2]
  redis.call('HSET', placed, player, now_on)
  if now_on ~= board then
    local old = redis.call('ZSCORE', score_key(prefix, cfg, next_season, player), player)
    if old then
      nr = nr + 1
      removed[nr] = remove_entry(prefix, cfg, next_season, key, player, old)
    end
    -- Their place in a bucket goes too; in the bucket still filling, it is free again.
    local bk = prefix .. 'bk:' .. next_season
    local n = redis.call('HGET', bk, player)
    if n then
      redis.call('HDEL', bk, player)
      if n == redis.call('HGET', bk, '#open') then redis.call('HINCRBY', bk, '#fill', -1) end
    end
  end
end
-- Removed entries are a change like lua/remove.lua's: views of this board hear of it.
if nr > 0 then
  publish_change(prefix, board, next_season, ',"changes":[' .. table.concat(removed, ',') .. ']')
end
redis.call('SET', done, fmt(#moves))
return {'ok', 1}
