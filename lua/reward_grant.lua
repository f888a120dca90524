-- reward_grant.lua: records one reward of a finished season (the `reward.grant` job), once, and
-- only on the board generation the job was scheduled for.
--
-- KEYS[1]  lb:{<board>}:config   KEYS[2] lb:{<board>}:gen   KEYS[3] lb:{<board>}:rewards
-- ARGV[1]  the generation the job carries ('' = a board from before generations)
-- ARGV[2]  the grant's field `<season>:<player>`   ARGV[3] the grant record (JSON)
--
-- A board that was deleted (no config) or deleted and created again (another generation) gets
-- nothing: a stale job writes no key. HSETNX makes a job that runs twice grant once.
-- Returns 1 granted, 0 already granted, -1 no such board generation (nothing written).

if redis.call('EXISTS', KEYS[1]) == 0 then
  return -1
end
if (redis.call('GET', KEYS[2]) or '') ~= ARGV[1] then
  return -1
end
return redis.call('HSETNX', KEYS[3], ARGV[2], ARGV[3])
