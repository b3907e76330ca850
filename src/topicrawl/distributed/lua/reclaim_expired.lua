-- ARGV: now, max_per_host. Puts back every lease whose expiry has come; returns how many.
local now, maxph = tonumber(ARGV[1]), tonumber(ARGV[2])
local count = 0
local tokens = redis.call('ZRANGEBYSCORE', K_EXPIRY, '-inf', f(now))
for _, token in ipairs(tokens) do
  local lrec = redis.call('HGET', K_LEASE, token)
  redis.call('ZREM', K_EXPIRY, token)
  local node = token_node(token)
  if node then redis.call('SREM', node_leases_key(node), token) end
  if lrec then
    end_request(token, now, maxph)
    redis.call('HDEL', K_LEASE, token)
    unreserve(token)
    local t = string.find(lrec, '\t', 1, true)
    give_back(string.sub(lrec, t + 1), now, 0, maxph)
    count = count + 1
  end
end
return count
