-- ARGV: now, max_per_host, fingerprint hex, neg_score. 1 if a queued URL was raised, else 0.
local now, maxph = tonumber(ARGV[1]), tonumber(ARGV[2])
local fp, score = hex2bin(ARGV[3]), ARGV[4]
local rec = redis.call('HGET', K_QUEUED, fp)
if not rec then return 0 end
local _, _, current = parse(rec)
if not (num(score) < num(current)) then return 0 end
place(rekey(fp, rec, score, nil), now, maxph)
return 1
