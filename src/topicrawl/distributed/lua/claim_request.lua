-- ARGV: host, delay. A request to the host is about to start (see RequestSpacing): '0' when it
-- may start now (the host's next request may then start `delay` seconds later), else the
-- seconds to wait before asking again. Times are Redis's own clock, the same for all workers.
local K_NEXTREQ = P .. 'nextreq'     -- hash: host -> time its next request may start
local host, delay = ARGV[1], tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
local due = tonumber(redis.call('HGET', K_NEXTREQ, host) or '0')
if due > now then return f(due - now) end
redis.call('HSET', K_NEXTREQ, host, f(now + delay))
return '0'
