-- ARGV: now, max_per_host, then pairs: fingerprint hex, neg_score. Each URL still queued (or
-- deferred) gets the new score, higher or lower. Returns how many got a new score.
local now, maxph = tonumber(ARGV[1]), tonumber(ARGV[2])
local changed = 0
local touched = {}
for i = 3, #ARGV, 2 do
  changed = changed + requeue(hex2bin(ARGV[i]), ARGV[i + 1], nil, touched, false)
end
place_all(touched, now, maxph)
return changed
