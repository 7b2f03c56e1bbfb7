-- concurrency.lua: a concurrency group's slots. A group keeps, in its own
-- partition, the runs holding a slot (holders, a zset by lease deadline),
-- what each holder is (owners, a hash: "<acquired ms> <token>", the token
-- naming the worker and delivery, "" while the slot is reserved for a run
-- taken from the waiting line) and the runs waiting (a zset by creation
-- time).

-- Drops the holders whose lease lapsed before now (a number). Returns nil,
-- or an error reply when holders is not a zset (nothing written then).
local function taskq_conc_prune(holders, owners, now)
  local lapsed = redis.pcall('ZRANGEBYSCORE', holders, '-inf', '(' .. string.format('%d', now))
  if lapsed.err then
    return taskq_failed(holders, lapsed)
  end
  local e = taskq_check_type(owners, 'hash')
  if e then
    return e
  end
  for j = 1, #lapsed, 1000 do
    local part = {unpack(lapsed, j, math.min(j + 999, #lapsed))}
    redis.call('ZREM', holders, unpack(part))
    redis.call('HDEL', owners, unpack(part))
  end
  return nil
end

-- The token of an owner value, nil for none.
local function taskq_conc_token(owner)
  if not owner then
    return nil
  end
  local sp = string.find(owner, ' ', 1, true)
  if not sp then
    return ''
  end
  return string.sub(owner, sp + 1)
end

-- When an owner value says its slot was acquired (ms), 0 for none.
local function taskq_conc_acquired(owner)
  return tonumber(owner and string.match(owner, '^(%d+)') or 0) or 0
end
