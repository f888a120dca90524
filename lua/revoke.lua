-- revoke.lua: revokes every token of a player issued before now (docs/protocol.md, "Tokens").
-- Prepended with lib.lua.
--
-- KEYS[1]  sc:{revoked}       ZSET   player -> revoked_at_ms
-- KEYS[2]  sc:{revoked}:seq   STRING bumped on every revocation, so instances notice a change
--                                    with one GET instead of reading the whole set
-- ARGV[1]  player   ARGV[2] keep_ms   ARGV[3] now_ms override ('' = Redis TIME)
--
-- An entry older than keep_ms (the longest a token may live, plus leeway) is dropped: every
-- token it covered has expired by then. A later revocation of the same player moves its time
-- forward, never back. Returns {'ok', revoked_at_ms, seq}.

local now = now_ms(ARGV[3])
local keep = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. fmt(now - keep))
redis.call('ZADD', KEYS[1], 'GT', fmt(now), ARGV[1])
redis.call('PEXPIRE', KEYS[1], fmt(keep))
local seq = redis.call('INCR', KEYS[2])
return {'ok', now, seq}
