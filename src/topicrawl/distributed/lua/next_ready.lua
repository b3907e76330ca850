-- ARGV: now, max_per_host, node ('' unpartitioned), least ready hosts to take one, '1' if
-- the node may pop other nodes' ready hosts (see pop).
-- {0}: nothing queued; {1}: a pop succeeds now; {2, t}: at time t a host wakes, a deferred URL
-- comes back, or (all hosts at their limit) a request slot or lease expires; {3}: for a node,
-- nothing of its own is due while URLs are queued (poll again soon: others' work may free up).
local now, maxph, node, least = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])
local share = ARGV[5] == '1'
if redis.call('HLEN', K_QUEUED) == 0 then return {0} end
advance(now, maxph)
if redis.call('ZCARD', K_READY) > 0 then return {1} end
if node ~= '' then
  if redis.call('ZCARD', rkey(node)) > 0 or steal_victim(node, least) then return {1} end
  if share and shared_ready(node) then return {1} end
end
local soonest = nil
for _, key in ipairs({K_WAITING, K_DEFERRED}) do
  local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')[2]
  if first and (soonest == nil or tonumber(first) < tonumber(soonest)) then soonest = first end
end
if soonest == nil then
  if node ~= '' then return {3} end
  -- Every host with queued URLs is at its limit: the first request slot or lease to expire.
  for _, key in ipairs({K_FETCHING, K_EXPIRY}) do
    local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')[2]
    if first and (soonest == nil or tonumber(first) < tonumber(soonest)) then soonest = first end
  end
  if soonest == nil then return {0} end
end
return {2, soonest}
