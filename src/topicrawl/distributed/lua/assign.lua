-- ARGV: now, max_per_host, then pairs host, node ('' = the shared pool). Gives each host to
-- its node, moving its ready entry; returns how many hosts changed owner.
local now, maxph = tonumber(ARGV[1]), tonumber(ARGV[2])
local moved = 0
for i = 3, #ARGV, 2 do
  moved = moved + move_host(ARGV[i], ARGV[i + 1], now, maxph)
end
return moved
