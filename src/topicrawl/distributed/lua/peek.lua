-- ARGV: now, max_per_host. The record pop would hand out, or false.
local now, maxph = tonumber(ARGV[1]), tonumber(ARGV[2])
advance(now, maxph)
local best = redis.call('ZRANGE', K_READY, 0, 0)[1]
if not best then return false end
local top = redis.call('ZRANGE', qkey(string.sub(best, 29)), 0, 0)[1]
return redis.call('HGET', K_QUEUED, hex2bin(string.sub(top, 13)))
