-- ARGV: now, max_per_host, node. Puts back at once every lease the node holds (it is dead);
-- returns how many.
local now, maxph, node = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
local key = node_leases_key(node)
local count = 0
for _, token in ipairs(redis.call('SMEMBERS', key)) do
  local lrec = redis.call('HGET', K_LEASE, token)
  redis.call('ZREM', K_EXPIRY, token)
  if lrec then
    end_request(token, now, maxph)
    redis.call('HDEL', K_LEASE, token)
    unreserve(token)
    local t = string.find(lrec, '\t', 1, true)
    give_back(string.sub(lrec, t + 1), now, 0, maxph)
    count = count + 1
  end
end
redis.call('DEL', key)
return count
