-- unban.lua: lifts a player's ban on one board (an admin, or the `ban.lift` job at `until_ms`).
-- Prepended with lib.lua. One board, one slot.
--
-- KEYS[1]  lb:{<board>}:config
-- ARGV[1]  player   ARGV[2] why: 'lifted' | 'expired'
-- ARGV[3]  expected until_ms ('' = lift whatever ban there is; the expiry job passes the
--          until_ms it was scheduled for, so a ban renewed meanwhile stays)
-- ARGV[4]  now_ms override ('' = TIME)
-- ARGV[5]  the layers to lift: '' this board's own ban, '*' this board's copy of a ban on every
--          board, '+' both (lua/ban.lua)
-- ARGV[6]  the version of a lift on every board ('' = none; lua/ban_index.lua): a lift older
--          than the last step of the layer on every board here (`ban_versions`) changes
--          nothing, and a newer one is recorded as that last step (so an older ban arriving
--          late changes nothing)
-- ARGV[7]  the name of the key that lifted the ban ('' = the expiry job), recorded as `by`
--
-- Writes an audit-log entry (and its copy in the moderation history). Once no layer is left,
-- puts back every held entry of a season the board still keeps (a season dropped meanwhile is
-- gone with its entries), drops the hold, and tells views of the current season the entry is
-- back.
--
-- Returns {'ok', lifted (0/1), entries restored} or {'err', code, message}.

local prefix = string.sub(KEYS[1], 1, -7)
local board = board_of(prefix)
local cfg = load_config(KEYS[1])
if not cfg then return {'err', 'unknown_board', 'no board ' .. board} end
local player = ARGV[1]
local bans = prefix .. 'bans'
if ARGV[6] ~= '' then
  local last = redis.call('HGET', prefix .. 'ban_versions', player)
  if last and tonumber(last) > tonumber(ARGV[6]) then return {'ok', 0, 0} end
  redis.call('HSET', prefix .. 'ban_versions', player, ARGV[6])
end
local layers = ARGV[5] == '+' and {'', '*'} or {ARGV[5]}
local lifted = 0
for _, layer in ipairs(layers) do
  local raw = redis.call('HGET', bans, layer .. player)
  local due = raw ~= false
  if due and ARGV[3] ~= '' then
    local ban = cjson.decode(raw)
    due = ban.until_ms ~= nil and ban.until_ms ~= cjson.null and fmt(ban.until_ms) == ARGV[3]
  end
  if due then
    redis.call('HDEL', bans, layer .. player)
    lifted = 1
  end
end
if lifted == 0 then return {'ok', 0, 0} end
local now = now_ms(ARGV[4])
local current = current_season(prefix, cfg, now)

-- Still banned in the other layer: the entries stay held.
local left = redis.call('HMGET', bans, player, '*' .. player)
local still = (left[1] or left[2]) and true or false
local hold = prefix .. 'held:' .. player
local held = still and {} or redis.call('HGETALL', hold)
local restored = 0
for i = 1, #held, 2 do
  local s, score = held[i], held[i + 1]
  if s == current or redis.call('ZSCORE', prefix .. 'seasons', s) then
    local key = prefix .. 's:' .. s
    redis.call('ZADD', key, score, player)
    -- On a bucketed board the score goes to their bucket too, placing them in one if they have
    -- none in a season that has buckets (its whole board is merged from them: lib.lua, `whole`).
    local bucketed = s == current or redis.call('EXISTS', prefix .. 'bk:' .. s) == 1
    local n, in_bucket = bucket_mirror(prefix, cfg, s, player, score,
      bucketed and bucket_size_of(cfg))
    restored = restored + 1
    if s == current then
      local points = decode(cfg, tonumber(score))
      local rank, tail = in_bucket, ',"bucket":' .. fmt(n or 0)
      if not n then rank, tail = rank_of(key, cfg, player, tonumber(score)), '' end
      publish_change(prefix, board, s,
        ',"changes":[{"player":"' .. player .. '","score":' .. fmt(points) .. ',"rank":' .. fmt(rank) .. ',"previous_rank":null' .. tail .. '}]')
    end
  end
end
if not still then redis.call('DEL', hold) end

audit(prefix, {
  'action', 'unban', 'player', player, 'scope', ARGV[5] == '*' and 'every board' or (ARGV[5] == '+' and 'all' or 'board'),
  'reason', ARGV[2], 'restored', fmt(restored), 'still_banned', still and '1' or '0',
  'time_ms', fmt(now), 'by', ARGV[7] or ''})
return {'ok', 1, restored}
