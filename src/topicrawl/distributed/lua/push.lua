-- ARGV: now, max_per_host, mode ('x' exact | 'b' bloom), bloom bits, hashes, segment bits,
-- then one group per page (several pages' pushes go in one call): the lease token to reserve
-- a page of the budget for first ('' none), how many requests follow, then two per request:
-- its host, and 'fingerprint-hex neg_score bloom-a bloom-b owner' TAB payload (a and b empty
-- in exact mode, owner empty for none; the payload is the rest, whatever it holds). Two
-- arguments, not seven: the client's cost is per argument.
-- A host without an owner is given the proposed owner ('' none) if that node is live.
-- Returns, for each group, how many of its requests were new, or (none of them queued) -1
-- when the page limit is reached, -2 when it is reached with reservations not yet final,
-- -3 when the lease is gone (see reserve_page). Hosts are filed once for the whole call.
local now, maxph = tonumber(ARGV[1]), tonumber(ARGV[2])
local exact = ARGV[3] == 'x'
local m, k, seg_bits = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local results = {}
local touched = {}
local checked = {}  -- hosts whose owner this call has settled (a page's links share a host)
local i = 7
while i <= #ARGV do
  local token, count = ARGV[i], tonumber(ARGV[i + 1])
  local first, last = i + 2, i + 1 + 2 * count
  i = last + 1
  local added = 0
  if token ~= '' then added = math.min(reserve_page(token, now), 0) end
  if added == 0 then
    for j = first, last, 2 do
      local host = ARGV[j]
      local fphex, score, bloom_a, bloom_b, owner, payload =
        string.match(ARGV[j + 1], '^(%x+) (%S+) (%d*) (%d*) (%S*)\t(.*)$')
      local fp = hex2bin(fphex)
      if owner ~= '' and not checked[host] then
        checked[host] = true  -- the same proposed owner for each of its links (see _push)
        if not redis.call('HGET', K_OWNER, host)
            and redis.call('SISMEMBER', K_MEMBERS, owner) == 1 then
          move_host(host, owner, now, maxph)
        end
      end
      local new
      if exact then
        new = redis.call('SADD', K_SEEN, fp) == 1
      else
        -- The URL is new iff one of its bits was still clear.
        new = bloom('SET', tonumber(bloom_a), tonumber(bloom_b), m, k, seg_bits)
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
  end
  results[#results + 1] = added
end
place_all(touched, now, maxph)
return results
