-- ARGV: mode, bloom bits, hashes, segment bits, fingerprint hex, bloom a, bloom b.
-- 1 if the URL was pushed before (in Bloom mode: or is a false positive), else 0.
if ARGV[1] == 'x' then
  return redis.call('SISMEMBER', K_SEEN, hex2bin(ARGV[5]))
end
local m, k, seg_bits = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local a, b = tonumber(ARGV[6]), tonumber(ARGV[7])
if bloom('GET', a, b, m, k, seg_bits) then return 0 end
return 1
