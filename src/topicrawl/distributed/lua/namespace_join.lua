-- Join a namespace (one crawl), creating it when absent: settings, page limit, seeds, domains.
-- KEYS: settings, budget, seeds, domains
-- ARGV: settings JSON, max_pages, number of seeds n, n seeds, then the seeds' domains
-- Returns {1 if created, the stored settings JSON}. An existing namespace is left unchanged.
if redis.call('EXISTS', KEYS[1]) == 1 then
  return {0, redis.call('GET', KEYS[1])}
end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('HSET', KEYS[2], 'max_pages', ARGV[2])
local n = tonumber(ARGV[3])
for i = 4, 3 + n do
  redis.call('SADD', KEYS[3], ARGV[i])
end
for i = 4 + n, #ARGV do
  redis.call('SADD', KEYS[4], ARGV[i])
end
return {1, ARGV[1]}
