-- ARGV: now, max_per_host. {0}: nothing queued; {1}: a pop succeeds now; {2, t}: at time t
-- a host wakes, a deferred URL comes back, or (all hosts at their lease limit) a lease expires.
local now, maxph = tonumber(ARGV[1]), tonumber(ARGV[2])
if redis.call('HLEN', K_QUEUED) == 0 then return {0} end
advance(now, maxph)
if redis.call('ZCARD', K_READY) > 0 then return {1} end
local soonest = nil
for _, key in ipairs({K_WAITING, K_DEFERRED}) do
  local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')[2]
  if first and (soonest == nil or tonumber(first) < tonumber(soonest)) then soonest = first end
end
if soonest == nil then
  soonest = redis.call('ZRANGE', K_EXPIRY, 0, 0, 'WITHSCORES')[2]
  if soonest == nil then return {0} end
end
return {2, soonest}
