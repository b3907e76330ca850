-- ARGV: now, max_per_host, token, delay. Returns 1 if the lease was valid, else 0.
local now, maxph = tonumber(ARGV[1]), tonumber(ARGV[2])
local rec = take_lease(ARGV[3], now, maxph)
if not rec then return 0 end
unreserve(ARGV[3])
give_back(rec, now, tonumber(ARGV[4]), maxph)
return 1
