-- ARGV: now, max_per_host, host, delay. The wait since the host's last fetch is redone.
local now, maxph = tonumber(ARGV[1]), tonumber(ARGV[2])
local host, delay = ARGV[3], ARGV[4]
redis.call('HSET', K_DELAY, host, delay)
local last = redis.call('HGET', K_LASTPOP, host)
if last then
  redis.call('HSET', K_NEXTAT, host, f(tonumber(last) + tonumber(delay)))
end
place(host, now, maxph)
return 1
