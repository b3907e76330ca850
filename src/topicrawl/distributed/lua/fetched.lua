-- ARGV: now, max_per_host, then one or more tokens whose requests are done (their bodies
-- arrived or they failed): their request slots go back, the leases stay out until acked.
-- Returns how many slots were freed (a lease acked, reclaimed or expired holds none).
local now, maxph = tonumber(ARGV[1]), tonumber(ARGV[2])
if #ARGV < 3 then return 0 end
return end_requests(ARGV, 3, #ARGV, now, maxph)
