-- ARGV: now, max_per_host, the new expiry, then tokens. Extends each lease still out and not
-- expired to the new expiry (its holder is alive and still working on its page); a lease
-- acked, reclaimed or expired is left alone (its URL may be another worker's by now).
-- Returns the tokens renewed.
local now, expires = tonumber(ARGV[1]), ARGV[3]
local renewed = {}
for i = 4, #ARGV do
  local token = ARGV[i]
  local lrec = redis.call('HGET', K_LEASE, token)
  if lrec then
    local tab = string.find(lrec, '\t', 1, true)
    if now < tonumber(string.sub(lrec, 1, tab - 1)) then
      redis.call('HSET', K_LEASE, token, expires .. string.sub(lrec, tab))
      redis.call('ZADD', K_EXPIRY, expires, token)
      renewed[#renewed + 1] = token
    end
  end
end
return renewed
