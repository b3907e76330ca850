-- Shared by every frontier script (prepended to each). KEYS[1] is the namespace prefix
-- "topicrawl:{ns}:". Times and scores are passed in as strings and stored with %.17g so
-- nothing is rounded. A queued URL's record is
--   state (Q queued, D deferred) .. member (28 chars: 12 hex seq, 16 hex fingerprint)
--   .. neg_score .. TAB .. host .. TAB .. payload
-- and a host queue orders members by neg_score, ties by member (so by sequence: FIFO).
local P = KEYS[1]
local K_READY = P .. 'ready'         -- zset: (host's top member .. host) -> host's top neg_score
local K_READYMEM = P .. 'readymem'   -- hash: host -> its member in K_READY
local K_WAITING = P .. 'waiting'     -- zset: host -> next allowed fetch time
local K_DEFERRED = P .. 'deferred'   -- zset: fingerprint -> time a reclaimed URL comes back
local K_QUEUED = P .. 'queued'       -- hash: fingerprint (8 bytes) -> record
local K_INFLIGHT = P .. 'inflight'   -- hash: host -> requests in flight (see K_FETCHING)
local K_DELAY = P .. 'delay'         -- hash: host -> seconds between fetches
local K_LASTPOP = P .. 'lastpop'     -- hash: host -> time of its last hand-out
local K_NEXTAT = P .. 'nextat'       -- hash: host -> next allowed fetch time
local K_LEASE = P .. 'lease'         -- hash: token -> expires .. TAB .. record
local K_EXPIRY = P .. 'expiry'       -- zset: token -> expires
-- A lease's request slot: from pop until its holder reports the fetch done ('fetched'), acks
-- or reclaims it, or the slot expires; only these count against max_per_host. A lease whose
-- page is being parsed or stored (or whose ack waits for the storage flush) holds none.
local K_FETCHING = P .. 'fetching'   -- zset: token -> time its request slot expires
local K_SEQ = P .. 'seq'
local K_SEEN = P .. 'seen'           -- set of 8-byte fingerprints (exact mode)
-- Partitioned crawls: each host may have an owner node, whose own ready set ('ready:<node>')
-- holds the host when it is ready; hosts without an owner use K_READY, the shared pool.
local K_OWNER = P .. 'owner'         -- hash: host -> node holding it
local K_MEMBERS = P .. 'members'     -- set: live nodes (kept by the registry and coordinator)
-- The crawl's page budget (see namespace.py): a page is reserved before it is stored, under
-- its lease; the reservation is final once the lease is acked and goes back when the lease
-- is reclaimed (by its worker, on expiry, or when its node is found dead).
local K_BUDGET = P .. 'budget'       -- hash: max_pages (0: none), reserved
local K_BUDGETED = P .. 'budgeted'   -- hash: lease token -> 1 while its reservation is not final

local function rkey(owner)
  if owner then return P .. 'ready:' .. owner end
  return K_READY
end

local function hosts_key(node)
  return P .. 'hosts:' .. node       -- set: hosts a node holds
end

local function node_leases_key(node)
  return P .. 'nl:' .. node          -- set: lease tokens a node holds
end

-- The node in a lease token '<node>~<suffix>', or nil for a token of an unpartitioned frontier.
local function token_node(token)
  return string.match(token, '^(.-)~')
end

local function f(x)
  return string.format('%.17g', x)
end

-- Append `value` to the list `groups[key]`, made when missing.
local function add_to(groups, key, value)
  local list = groups[key]
  if not list then
    list = {}
    groups[key] = list
  end
  list[#list + 1] = value
end

local function num(s)
  if s == 'inf' or s == '+inf' then return math.huge end
  if s == '-inf' then return -math.huge end
  return tonumber(s)
end

-- Reserve one page of the budget for the lease `token`: the pages reserved with it; -1 when
-- the limit is reached, -2 when it is reached only with reservations not yet final (leases
-- not acked: some may come back, e.g. a dead worker's), -3 when the lease is gone or expired
-- (no ack or reclaim would ever settle a reservation made for it).
local function reserve_page(token, now)
  if redis.call('HEXISTS', K_BUDGETED, token) == 1 then  -- a retried call: reserved already
    return tonumber(redis.call('HGET', K_BUDGET, 'reserved'))
  end
  local lrec = redis.call('HGET', K_LEASE, token)
  if not lrec or now >= tonumber(string.sub(lrec, 1, string.find(lrec, '\t', 1, true) - 1)) then
    return -3
  end
  local most = tonumber(redis.call('HGET', K_BUDGET, 'max_pages') or '0')
  local used = tonumber(redis.call('HGET', K_BUDGET, 'reserved') or '0')
  if most > 0 and used >= most then
    if redis.call('HLEN', K_BUDGETED) > 0 then return -2 end
    return -1
  end
  redis.call('HSET', K_BUDGETED, token, 1)
  return redis.call('HINCRBY', K_BUDGET, 'reserved', 1)
end

-- A lease given back unstored: its page's reservation (if any) is returned to the budget.
local function unreserve(token)
  if redis.call('HDEL', K_BUDGETED, token) == 1 then
    redis.call('HINCRBY', K_BUDGET, 'reserved', -1)
  end
end

-- The Bloom filter's k bit positions of a URL (double hashing from a and b over m bits),
-- read ('GET') or set ('SET') with one BITFIELD per segment key instead of one call per bit.
-- Returns true when one of them was clear (for 'SET': the URL is new).
local function bloom(op, a, b, m, k, seg_bits)
  if m <= seg_bits then  -- one segment (filters up to 2^30 bits): ~25 % less work in Redis
    local ops, n = {}, 0
    local set = op == 'SET'
    for j = 0, k - 1 do
      ops[n + 1] = op
      ops[n + 2] = 'u1'
      ops[n + 3] = (a + j * b) % m
      if set then
        ops[n + 4] = 1
        n = n + 4
      else
        n = n + 3
      end
    end
    for _, bit in ipairs(redis.call('BITFIELD', P .. 'bloom:0', unpack(ops))) do
      if bit == 0 then return true end
    end
    return false
  end
  local by_seg = {}
  for j = 0, k - 1 do
    local pos = (a + j * b) % m
    local seg = math.floor(pos / seg_bits)
    add_to(by_seg, seg, op)
    local ops = by_seg[seg]
    ops[#ops + 1] = 'u1'
    ops[#ops + 1] = pos - seg * seg_bits
    if op == 'SET' then ops[#ops + 1] = 1 end
  end
  local clear = false
  for seg, ops in pairs(by_seg) do
    for _, bit in ipairs(redis.call('BITFIELD', P .. 'bloom:' .. seg, unpack(ops))) do
      if bit == 0 then clear = true end
    end
  end
  return clear
end

local function qkey(host)
  return P .. 'q:' .. host
end

-- A fingerprint's 16 hex digits as its 8 bytes (two 32-bit halves: exact in a double). A
-- gsub with a function per byte cost ~2.5 us a URL inside Redis, this ~0.5 us.
local function hex2bin(hex)
  return struct.pack('>I4I4', tonumber(string.sub(hex, 1, 8), 16),
    tonumber(string.sub(hex, 9, 16), 16))
end

local function parse(rec)
  local t1 = string.find(rec, '\t', 30, true)
  local t2 = string.find(rec, '\t[^\t]*$', t1 + 1)  -- the payload (JSON) has no raw tab
  return string.sub(rec, 1, 1), string.sub(rec, 2, 29), string.sub(rec, 30, t1 - 1),
    string.sub(rec, t1 + 1, t2 - 1), string.sub(rec, t2 + 1)
end

-- File the host where its state puts it: ready (by its best URL), waiting (by time), or
-- neither (empty, or with max_per_host requests in flight).
local function place(host, now, maxph)
  local qk = qkey(host)
  local ready_key = rkey(redis.call('HGET', K_OWNER, host))
  local old = redis.call('HGET', K_READYMEM, host)
  local fetching = tonumber(redis.call('HGET', K_INFLIGHT, host) or '0')
  if redis.call('ZCARD', qk) == 0 or fetching >= maxph then
    if old then
      redis.call('ZREM', ready_key, old)
      redis.call('HDEL', K_READYMEM, host)
    end
    redis.call('ZREM', K_WAITING, host)
    return
  end
  local next_at = redis.call('HGET', K_NEXTAT, host)
  if next_at and tonumber(next_at) > now then
    if old then
      redis.call('ZREM', ready_key, old)
      redis.call('HDEL', K_READYMEM, host)
    end
    redis.call('ZADD', K_WAITING, next_at, host)
    return
  end
  redis.call('ZREM', K_WAITING, host)
  local top = redis.call('ZRANGE', qk, 0, 0, 'WITHSCORES')
  local member = top[1] .. host
  if old ~= member then
    if old then redis.call('ZREM', ready_key, old) end
    redis.call('ZADD', ready_key, top[2], member)
    redis.call('HSET', K_READYMEM, host, member)
  end
end

local function release(host, now, maxph)
  if redis.call('HINCRBY', K_INFLIGHT, host, -1) <= 0 then
    redis.call('HDEL', K_INFLIGHT, host)
  end
  place(host, now, maxph)
end

-- Free the request slot of a lease (1), or nothing if it holds none (0).
local function end_request(token, now, maxph)
  if redis.call('ZREM', K_FETCHING, token) == 0 then return 0 end
  local lrec = redis.call('HGET', K_LEASE, token)
  if lrec then
    local _, _, _, host = parse(string.sub(lrec, string.find(lrec, '\t', 1, true) + 1))
    release(host, now, maxph)
  end
  return 1
end

-- end_request for tokens[first..last], with a few commands for all of them and one
-- release per host instead of a dozen commands per token. Returns how many slots were freed.
local function end_requests(tokens, first, last, now, maxph)
  local freed = 0
  for from = first, last, 1000 do  -- bounded unpack()
    local to = math.min(from + 999, last)
    local batch, seen = {}, {}
    for i = from, to do
      local token = tokens[i]
      if not seen[token] then
        seen[token] = true
        batch[#batch + 1] = token
      end
    end
    local slots = redis.call('ZMSCORE', K_FETCHING, unpack(batch))
    local live = {}
    for i = 1, #batch do
      if slots[i] then live[#live + 1] = batch[i] end
    end
    if #live > 0 then
      redis.call('ZREM', K_FETCHING, unpack(live))
      local lrecs = redis.call('HMGET', K_LEASE, unpack(live))
      local per_host = {}
      for i = 1, #live do
        local lrec = lrecs[i]
        if lrec then
          local _, _, _, host = parse(string.sub(lrec, string.find(lrec, '\t', 1, true) + 1))
          per_host[host] = (per_host[host] or 0) + 1
        end
      end
      for host, n in pairs(per_host) do
        if redis.call('HINCRBY', K_INFLIGHT, host, -n) <= 0 then
          redis.call('HDEL', K_INFLIGHT, host)
        end
        place(host, now, maxph)
      end
      freed = freed + #live
    end
  end
  return freed
end

-- Bring due deferred URLs back, free expired request slots, and wake hosts whose politeness
-- delay has passed.
local function advance(now, maxph)
  local expired = redis.call('ZRANGEBYSCORE', K_FETCHING, '-inf', f(now))
  end_requests(expired, 1, #expired, now, maxph)
  local due = redis.call('ZRANGEBYSCORE', K_DEFERRED, '-inf', f(now))
  for _, fp in ipairs(due) do
    redis.call('ZREM', K_DEFERRED, fp)
    local rec = redis.call('HGET', K_QUEUED, fp)
    if rec then
      local _, member, score, host = parse(rec)
      redis.call('HSET', K_QUEUED, fp, 'Q' .. string.sub(rec, 2))
      redis.call('ZADD', qkey(host), score, member)
      place(host, now, maxph)
    end
  end
  local hosts = redis.call('ZRANGEBYSCORE', K_WAITING, '-inf', f(now))
  for _, host in ipairs(hosts) do
    place(host, now, maxph)
  end
end

-- A valid lease's record, removed from the lease tables (its request slot freed); nil for an
-- unknown or expired one.
local function take_lease(token, now, maxph)
  local lrec = redis.call('HGET', K_LEASE, token)
  if not lrec then return nil end
  local t = string.find(lrec, '\t', 1, true)
  if now >= tonumber(string.sub(lrec, 1, t - 1)) then return nil end
  end_request(token, now, maxph)
  redis.call('HDEL', K_LEASE, token)
  redis.call('ZREM', K_EXPIRY, token)
  local node = token_node(token)
  if node then redis.call('SREM', node_leases_key(node), token) end
  return string.sub(lrec, t + 1)
end

-- Put a leased URL back under its old key (at once, or from now + delay on).
local function give_back(rec, now, delay, maxph)
  local _, member, score, host = parse(rec)
  local fp = hex2bin(string.sub(member, 13))
  if delay > 0 then
    redis.call('HSET', K_QUEUED, fp, 'D' .. string.sub(rec, 2))
    redis.call('ZADD', K_DEFERRED, f(now + delay), fp)
  else
    redis.call('HSET', K_QUEUED, fp, 'Q' .. string.sub(rec, 2))
    redis.call('ZADD', qkey(host), score, member)
  end
  place(host, now, maxph)
end

-- A queued URL gets a higher priority (a new sequence too); returns its host.
local function rekey(fp, rec, score, payload)
  local state, member, _, host, old_payload = parse(rec)
  local seq = redis.call('INCR', K_SEQ)
  local new_member = string.format('%012x', seq) .. string.sub(member, 13)
  if state == 'Q' then
    redis.call('ZREM', qkey(host), member)
    redis.call('ZADD', qkey(host), score, new_member)
  end
  redis.call('HSET', K_QUEUED, fp,
    state .. new_member .. score .. '\t' .. host .. '\t' .. (payload or old_payload))
  return host
end

-- Re-file a queued (or deferred) URL under a new neg_score: any different one, or with
-- `only_better` only a better (smaller) one. Marks its host in `touched` (for `place_all`).
local function requeue(fp, score, payload, touched, only_better)
  local rec = redis.call('HGET', K_QUEUED, fp)
  if not rec then return 0 end
  local _, _, current = parse(rec)
  local new, old = num(score), num(current)
  if new == old or (only_better and new > old) then return 0 end
  touched[rekey(fp, rec, score, payload)] = true
  return 1
end

-- File every host of `touched` where its state now puts it.
local function place_all(touched, now, maxph)
  for host in pairs(touched) do
    place(host, now, maxph)
  end
end

-- Give a host to another node ('' = the shared pool), moving its ready entry along.
-- Returns 1 if the owner changed, else 0.
local function move_host(host, node, now, maxph)
  local old = redis.call('HGET', K_OWNER, host)
  if (old or '') == node then return 0 end
  local mem = redis.call('HGET', K_READYMEM, host)
  if mem then
    redis.call('ZREM', rkey(old), mem)
    redis.call('HDEL', K_READYMEM, host)
  end
  if old then redis.call('SREM', hosts_key(old), host) end
  if node == '' then
    redis.call('HDEL', K_OWNER, host)
  else
    redis.call('HSET', K_OWNER, host, node)
    redis.call('SADD', hosts_key(node), host)
  end
  place(host, now, maxph)
  return 1
end

-- The first (best) member of a ready set, or nil.
local function first_ready(key)
  return redis.call('ZRANGE', key, 0, 0)[1]
end

-- Hosts that refused `node` (set: the success table's shared outcomes, see outcomes.py): an
-- idle node does not pop them from, or take them off, other nodes.
local function refuses_key(node)
  return P .. 'refuses:' .. node
end

-- The first member of another node's ready set that `node` may pop (its host has not
-- refused `node`), looking at most 8 deep, with its score; or nil.
local function first_allowed(key, node)
  local refused = refuses_key(node)
  local depth = redis.call('EXISTS', refused) == 1 and 7 or 0
  local top = redis.call('ZRANGE', key, 0, depth, 'WITHSCORES')
  for i = 1, #top, 2 do
    if depth == 0 or redis.call('SISMEMBER', refused, string.sub(top[i], 29)) == 0 then
      return top[i], tonumber(top[i + 1])
    end
  end
  return nil
end

-- The live node other than `node` with the most ready hosts, if it has at least `least`.
local function steal_victim(node, least)
  if least <= 0 then return nil end
  local victim, most = nil, least - 1
  for _, other in ipairs(redis.call('SMEMBERS', K_MEMBERS)) do
    if other ~= node then
      local n = redis.call('ZCARD', rkey(other))
      if n > most then victim, most = other, n end
    end
  end
  return victim
end

-- The best ready host of another live node, for `node` to pop from without taking it:
-- the member and its ready key, or nil. The host keeps its owner and its politeness state
-- (requests in flight, next allowed time) is the same for every node, so several nodes can
-- serve one big host at once while its limits hold.
local function shared_ready(node)
  local best, best_key, best_score = nil, nil, nil
  for _, other in ipairs(redis.call('SMEMBERS', K_MEMBERS)) do
    if other ~= node then
      local key = rkey(other)
      local member, score = first_allowed(key, node)
      if member and (best_score == nil or score < best_score) then
        best, best_key, best_score = member, key, score
      end
    end
  end
  return best, best_key
end

-- The best ready-set entry after `ready_key`'s first, for a pop of several leases from that
-- key's first host to rank against: the key's second entry and, when the key is another
-- node's (a shared pop, so `node` has no ready host of its own), every other live node's
-- first entry. Returns the entry's score and member, or nil.
local function next_rival(node, ready_key)
  local entry = redis.call('ZRANGE', ready_key, 1, 1, 'WITHSCORES')
  local score, member = entry[1] and num(entry[2]), entry[1]
  if node ~= '' and ready_key ~= rkey(node) then
    for _, other in ipairs(redis.call('SMEMBERS', K_MEMBERS)) do
      local key = rkey(other)
      if other ~= node and key ~= ready_key then
        local top = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
        if top[1] and (member == nil or num(top[2]) < score or (num(top[2]) == score
            and string.sub(top[1], 1, 12) < string.sub(member, 1, 12))) then
          score, member = num(top[2]), top[1]
        end
      end
    end
  end
  if member == nil then return nil end
  return score, member
end

-- The ready-set member `node` pops next: its own best host; else a host adopted from the
-- pool; else one taken from the live node with the most ready hosts (at least `least`);
-- else, with `share`, another live node's best ready host, popped without taking it.
-- For '' (an unpartitioned frontier) the pool's best. Returns the member and its ready key.
local function next_for(node, least, now, maxph, share)
  if node == '' then return first_ready(K_READY), K_READY end
  local own = rkey(node)
  local best = first_ready(own)
  if best then return best, own end
  local source = first_ready(K_READY)
  if not source then
    local victim = steal_victim(node, least)
    if victim then source = first_allowed(rkey(victim), node) end
  end
  if not source then
    if share then return shared_ready(node) end
    return nil, own
  end
  move_host(string.sub(source, 29), node, now, maxph)
  return first_ready(own), own
end
