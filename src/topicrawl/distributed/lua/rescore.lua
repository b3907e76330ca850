-- ARGV: now, max_per_host, then pairs: fingerprint hex, neg_score. Each URL still queued (or
-- deferred) gets the new score, higher or lower. Returns how many got a new score.
local now, maxph = tonumber(ARGV[1]), tonumber(ARGV[2])
local changed = 0
local touched = {}
for i = 3, #ARGV, 2 do
  local fp, score = hex2bin(ARGV[i]), ARGV[i + 1]
  local rec = redis.call('HGET', K_QUEUED, fp)
  if rec then
    local _, _, current = parse(rec)
    if num(score) ~= num(current) then
      touched[rekey(fp, rec, score, nil)] = true
      changed = changed + 1
    end
  end
end
for host in pairs(touched) do
  place(host, now, maxph)
end
return changed
