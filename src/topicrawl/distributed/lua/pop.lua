-- ARGV: now, max_per_host, default delay, token, expires. Returns the record or false.
local now, maxph, default_delay = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local token, expires = ARGV[4], ARGV[5]
advance(now, maxph)
local best = redis.call('ZRANGE', K_READY, 0, 0)[1]
if not best then return false end
local host = string.sub(best, 29)
local qk = qkey(host)
local top = redis.call('ZRANGE', qk, 0, 0)[1]
redis.call('ZREM', qk, top)
local fp = hex2bin(string.sub(top, 13))
local rec = redis.call('HGET', K_QUEUED, fp)
redis.call('HDEL', K_QUEUED, fp)
redis.call('ZREM', K_READY, best)
redis.call('HDEL', K_READYMEM, host)
redis.call('HINCRBY', K_LEASES, host, 1)
local delay = redis.call('HGET', K_DELAY, host)
delay = delay and tonumber(delay) or default_delay
redis.call('HSET', K_LASTPOP, host, f(now))
redis.call('HSET', K_NEXTAT, host, f(now + delay))
place(host, now, maxph)
redis.call('HSET', K_LEASE, token, expires .. '\t' .. rec)
redis.call('ZADD', K_EXPIRY, expires, token)
return rec
