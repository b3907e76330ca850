-- ARGV: now, max_per_host, then one or more tokens. Returns how many leases were valid (and
-- are now done, their pages' reservations final); unknown or expired ones change nothing.
local now, maxph = tonumber(ARGV[1]), tonumber(ARGV[2])
local done = 0
for i = 3, #ARGV do
  if take_lease(ARGV[i], now, maxph) then
    redis.call('HDEL', K_BUDGETED, ARGV[i])
    done = done + 1
  end
end
return done
