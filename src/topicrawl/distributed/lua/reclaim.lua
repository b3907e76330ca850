-- ARGV: now, max_per_host, token, delay[, keep]. Returns 0 if the lease was not valid, else
-- 1, or 2 when keep made a reservation final. keep = '1' (a revisit: the page was stored)
-- makes the page's reservation final instead of giving it back.
local now, maxph = tonumber(ARGV[1]), tonumber(ARGV[2])
local rec = take_lease(ARGV[3], now, maxph)
if not rec then return 0 end
local back = 1
if ARGV[5] == '1' then
  back = back + redis.call('HDEL', K_BUDGETED, ARGV[3])
else
  unreserve(ARGV[3])
end
give_back(rec, now, tonumber(ARGV[4]), maxph)
return back
