-- ARGV: now, max_per_host, then one or more tokens. Returns {how many leases were valid (now
-- done), how many of those had a page reservation (now final: pages this call counts as
-- stored)}; unknown or expired ones change nothing.
-- A few commands for all the tokens of a call (a checkpoint acks hundreds), not six each.
local now, maxph = tonumber(ARGV[1]), tonumber(ARGV[2])
local done, final = 0, 0
for from = 3, #ARGV, 1000 do  -- bounded unpack()
  local batch, seen = {}, {}
  for i = from, math.min(from + 999, #ARGV) do
    if not seen[ARGV[i]] then
      seen[ARGV[i]] = true
      batch[#batch + 1] = ARGV[i]
    end
  end
  local lrecs = redis.call('HMGET', K_LEASE, unpack(batch))
  local valid, by_node = {}, {}
  for i = 1, #batch do
    local lrec = lrecs[i]
    if lrec and now < tonumber(string.sub(lrec, 1, string.find(lrec, '\t', 1, true) - 1)) then
      local token = batch[i]
      valid[#valid + 1] = token
      local node = token_node(token)
      if node then add_to(by_node, node, token) end
    end
  end
  if #valid > 0 then
    end_requests(valid, 1, #valid, now, maxph)  -- slots not yet given back by `fetched`
    redis.call('HDEL', K_LEASE, unpack(valid))
    redis.call('ZREM', K_EXPIRY, unpack(valid))
    for node, tokens in pairs(by_node) do
      redis.call('SREM', node_leases_key(node), unpack(tokens))
    end
    final = final + redis.call('HDEL', K_BUDGETED, unpack(valid))
    done = done + #valid
  end
end
return {done, final}
