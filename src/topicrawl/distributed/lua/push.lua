-- ARGV: now, max_per_host, mode ('x' exact | 'b' bloom), bloom bits, hashes, segment bits,
-- then two per request: its host, and 'fingerprint-hex neg_score bloom-a bloom-b owner'
-- TAB payload (a and b empty in exact mode, owner empty for none; the payload is the rest,
-- whatever it holds). Two arguments, not seven: the client's cost is per argument.
-- A host without an owner is given the proposed owner ('' none) if that node is live.
-- Returns how many requests were new.
local now, maxph = tonumber(ARGV[1]), tonumber(ARGV[2])
local exact = ARGV[3] == 'x'
local m, k, seg_bits = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local added = 0
local touched = {}
for i = 7, #ARGV, 2 do
  local host = ARGV[i]
  local fphex, score, bloom_a, bloom_b, owner, payload =
    string.match(ARGV[i + 1], '^(%x+) (%S+) (%d*) (%d*) (%S*)\t(.*)$')
  local fp = hex2bin(fphex)
  if owner ~= '' and not redis.call('HGET', K_OWNER, host)
      and redis.call('SISMEMBER', K_MEMBERS, owner) == 1 then
    move_host(host, owner, now, maxph)
  end
  local new = false
  if exact then
    new = redis.call('SADD', K_SEEN, fp) == 1
  else
    -- SETBIT returns the old bit: the URL is new iff one of its bits was still clear.
    local a, b = tonumber(bloom_a), tonumber(bloom_b)
    for j = 0, k - 1 do
      local pos = (a + j * b) % m
      local seg = math.floor(pos / seg_bits)
      if redis.call('SETBIT', P .. 'bloom:' .. seg, pos - seg * seg_bits, 1) == 0 then
        new = true
      end
    end
  end
  if new then
    local seq = redis.call('INCR', K_SEQ)
    local member = string.format('%012x', seq) .. fphex
    redis.call('ZADD', qkey(host), score, member)
    redis.call('HSET', K_QUEUED, fp, 'Q' .. member .. score .. '\t' .. host .. '\t' .. payload)
    added = added + 1
    touched[host] = true
  else
    requeue(fp, score, payload, touched, true)
  end
end
place_all(touched, now, maxph)
return added
