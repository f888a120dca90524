-- revoked_read.lua: what an instance polls to learn of revocations made anywhere.
-- Reads only.
--
-- KEYS[1]  sc:{revoked}       ZSET   player -> revoked_at_ms
-- KEYS[2]  sc:{revoked}:seq   STRING bumped on every revocation
-- ARGV[1]  the seq the caller already knows
--
-- Returns {seq} when nothing changed since ARGV[1], else {seq, player, revoked_at_ms, ...} with
-- every entry (times as Redis prints scores: integers here).

local seq = tonumber(redis.call('GET', KEYS[2]) or '0')
if seq == tonumber(ARGV[1]) then return {seq} end
local out = {seq}
local rows = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
for i = 1, #rows do out[#out + 1] = rows[i] end
return out
