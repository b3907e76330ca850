-- Reserve one page of the crawl's page budget before the page is stored.
-- KEYS: budget (hash: max_pages, reserved)
-- Returns the pages reserved with this one, or -1 when the limit is reached (0: no limit).
local most = tonumber(redis.call('HGET', KEYS[1], 'max_pages') or '0')
local used = tonumber(redis.call('HGET', KEYS[1], 'reserved') or '0')
if most > 0 and used >= most then
  return -1
end
return redis.call('HINCRBY', KEYS[1], 'reserved', 1)
