-- ARGV: now, max_per_host, token. Returns 1 if the lease was valid, else 0.
local now, maxph = tonumber(ARGV[1]), tonumber(ARGV[2])
local rec = take_lease(ARGV[3], now)
if not rec then return 0 end
local _, _, _, host = parse(rec)
release(host, now, maxph)
return 1
