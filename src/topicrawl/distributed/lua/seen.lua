-- ARGV: mode, bloom bits, hashes, segment bits, fingerprint hex, bloom a, bloom b.
-- 1 if the URL was pushed before (in Bloom mode: or is a false positive), else 0.
if ARGV[1] == 'x' then
  return redis.call('SISMEMBER', K_SEEN, hex2bin(ARGV[5]))
end
local m, k, seg_bits = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local a, b = tonumber(ARGV[6]), tonumber(ARGV[7])
for j = 0, k - 1 do
  local pos = (a + j * b) % m
  local seg = math.floor(pos / seg_bits)
  if redis.call('GETBIT', P .. 'bloom:' .. seg, pos - seg * seg_bits) == 0 then return 0 end
end
return 1
