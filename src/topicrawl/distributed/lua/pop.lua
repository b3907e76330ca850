-- ARGV: now, max_per_host, default delay, token, expires, node ('' unpartitioned), least
-- ready hosts a node must have before an idle node takes one (0: never), time the leases'
-- request slots expire, how many leases at most, '1' if an idle node may pop from other
-- nodes' ready hosts without taking them (else '0'), then the tokens of leases whose
-- requests are done (see fetched.lua). Leases the best ready requests one after the other,
-- as that many pops at `now` would; lease i gets the token `token .. '.' .. i`. Returns the
-- records.
--
-- Pops one at a time would take a host's next URL again and again while the host stays ready
-- (no delay, a request slot free) and its next URL ranks before the ready set's next entry;
-- those are taken together here, with a few commands for all of them and the host's state
-- written once, instead of some 25 commands a lease.
local now, maxph, default_delay = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local token, expires, node = ARGV[4], ARGV[5], ARGV[6]
local least, slot_expires, most = tonumber(ARGV[7]), ARGV[8], tonumber(ARGV[9])
local share = ARGV[10] == '1'
if #ARGV >= 11 then end_requests(ARGV, 11, #ARGV, now, maxph) end
advance(now, maxph)
local records = {}
local own = node ~= '' and rkey(node) or K_READY
while #records < most do
  local best, ready_key = next_for(node, least, now, maxph, share)
  if not best then break end
  local host = string.sub(best, 29)
  local qk = qkey(host)
  local delay = redis.call('HGET', K_DELAY, host)
  delay = delay and tonumber(delay) or default_delay
  local room = 1  -- a delay makes the host wait after one
  if delay <= 0 then  -- the host's own or, shared, another node's: its limits are global
    local inflight = tonumber(redis.call('HGET', K_INFLIGHT, host) or '0')
    room = math.max(1, math.min(most - #records, maxph - inflight))
  end
  local tops = redis.call('ZRANGE', qk, 0, room - 1, 'WITHSCORES')
  local rival_score, rival_seq
  if #tops > 2 then
    -- The best ready entry after this host's (see next_rival): its score, then its sequence
    -- number (members differ in their 12 hex digits of sequence first, so those order them).
    local score, member = next_rival(node, ready_key)
    if member then
      rival_score = score
      rival_seq = tonumber(string.sub(member, 1, 12), 16)
    end
  end
  local members, fps = {}, {}
  for j = 1, #tops, 2 do
    local member = tops[j]
    if j > 1 and rival_score then
      local score = num(tops[j + 1])
      if score > rival_score or (score == rival_score
          and tonumber(string.sub(member, 1, 12), 16) > rival_seq) then
        break
      end
    end
    members[#members + 1] = member
    fps[#fps + 1] = hex2bin(string.sub(member, 13))
  end
  local n = #members
  local recs = redis.call('HMGET', K_QUEUED, unpack(fps))
  redis.call('ZREM', qk, unpack(members))
  redis.call('HDEL', K_QUEUED, unpack(fps))
  redis.call('ZREM', ready_key, best)
  redis.call('HDEL', K_READYMEM, host)
  redis.call('HINCRBY', K_INFLIGHT, host, n)
  redis.call('HSET', K_LASTPOP, host, f(now))
  redis.call('HSET', K_NEXTAT, host, f(now + delay))
  local slots, leases, expiry, toks = {}, {}, {}, {}
  for j = 1, n do
    local i = #records + 1
    local tok = token .. '.' .. i
    toks[j] = tok
    slots[#slots + 1] = slot_expires
    slots[#slots + 1] = tok
    leases[#leases + 1] = tok
    leases[#leases + 1] = expires .. '\t' .. recs[j]
    expiry[#expiry + 1] = expires
    expiry[#expiry + 1] = tok
    records[i] = recs[j]
  end
  redis.call('ZADD', K_FETCHING, unpack(slots))
  redis.call('HSET', K_LEASE, unpack(leases))
  redis.call('ZADD', K_EXPIRY, unpack(expiry))
  if node ~= '' then redis.call('SADD', node_leases_key(node), unpack(toks)) end
  place(host, now, maxph)
end
return records
