-- ARGV: now, max_per_host, default delay, token, expires, node ('' unpartitioned), least
-- ready hosts a node must have before an idle node takes one (0: never), time the leases'
-- request slots expire, how many leases at most, '1' if an idle node may pop from other
-- nodes' ready hosts without taking them (else '0'), then the tokens of leases whose
-- requests are done (see fetched.lua). Leases the best ready requests one after the other,
-- as that many pops at `now` would; lease i gets the token `token .. '.' .. i`. Returns the
-- records.
local now, maxph, default_delay = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local token, expires, node = ARGV[4], ARGV[5], ARGV[6]
local least, slot_expires, most = tonumber(ARGV[7]), ARGV[8], tonumber(ARGV[9])
local share = ARGV[10] == '1'
for i = 11, #ARGV do
  end_request(ARGV[i], now, maxph)
end
advance(now, maxph)
local records = {}
for i = 1, most do
  local best, ready_key = next_for(node, least, now, maxph, share)
  if not best then break end
  local tok = token .. '.' .. i
  local host = string.sub(best, 29)
  local qk = qkey(host)
  local top = redis.call('ZRANGE', qk, 0, 0)[1]
  redis.call('ZREM', qk, top)
  local fp = hex2bin(string.sub(top, 13))
  local rec = redis.call('HGET', K_QUEUED, fp)
  redis.call('HDEL', K_QUEUED, fp)
  redis.call('ZREM', ready_key, best)
  redis.call('HDEL', K_READYMEM, host)
  redis.call('HINCRBY', K_INFLIGHT, host, 1)
  redis.call('ZADD', K_FETCHING, slot_expires, tok)
  local delay = redis.call('HGET', K_DELAY, host)
  delay = delay and tonumber(delay) or default_delay
  redis.call('HSET', K_LASTPOP, host, f(now))
  redis.call('HSET', K_NEXTAT, host, f(now + delay))
  place(host, now, maxph)
  redis.call('HSET', K_LEASE, tok, expires .. '\t' .. rec)
  redis.call('ZADD', K_EXPIRY, expires, tok)
  if node ~= '' then redis.call('SADD', node_leases_key(node), tok) end
  records[i] = rec
end
return records
