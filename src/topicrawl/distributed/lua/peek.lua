-- ARGV: now, max_per_host, node ('' unpartitioned). The record pop would hand out, or false.
-- For a node this looks at its own ready hosts and then the pool (not at other nodes').
local now, maxph, node = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
advance(now, maxph)
local best = nil
if node ~= '' then best = first_ready(rkey(node)) end
best = best or first_ready(K_READY)
if not best then return false end
local top = redis.call('ZRANGE', qkey(string.sub(best, 29)), 0, 0)[1]
return redis.call('HGET', K_QUEUED, hex2bin(string.sub(top, 13)))
