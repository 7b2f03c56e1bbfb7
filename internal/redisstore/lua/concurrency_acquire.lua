#!lua flags=allow-oom
-- concurrency_acquire.lua: asks, for deliveries a worker has just read, for
-- a slot of each one's concurrency group, any number per call, each as if
-- on its own (all groups of one partition: see ConcurrencyPartition).
-- Holders whose lease lapsed are dropped first, so a slot of a dead worker
-- is given back once its lease ends.
--
-- KEYS: KEY_COUNT (0) before ITEM_KEY_COUNT (3) per item i (i = 0, 1, ...),
-- at 3i+1 .. 3i+3:
--   +0 ITEM_KEY_HOLDERS  holders  taskq:{ns}:conc:h:<task>[#<limit>]|<group>
--   +1 ITEM_KEY_OWNERS   owners   taskq:{ns}:conc:o:<task>[#<limit>]|<group>
--   +2 ITEM_KEY_WAITING  waiting  taskq:{ns}:conc:w:<task>[#<limit>]|<group>
-- ARGV: ARG_COUNT (1) first,
--   ARGV[1] ARG_NOW  now (unix ms)
-- then ITEM_ARG_COUNT (6) per item i, at 6i+2 .. 6i+7:
--   +0 ITEM_ARG_RUN_ID    run id
--   +1 ITEM_ARG_TOKEN     the holder's token (worker and delivery)
--   +2 ITEM_ARG_MAX_RUNS  most runs of the group at once
--   +3 ITEM_ARG_STRATEGY  group_round_robin | cancel_in_progress | cancel_newest
--   +4 ITEM_ARG_LEASE     lease of the slot (ms)
--   +5 ITEM_ARG_CREATED   the run's creation time (unix ms): its place in
--                         the waiting line
-- Returns a flat array with three values per item:
--   "held", holders, ""      the run holds a slot (a new one, the one it
--                            held, or one reserved for it): start it
--   "wait", holders, ""      the group is full: the run is in the waiting
--                            line (once, however often it asks)
--   "evict", holders, run    cancel_in_progress: the oldest holder, run,
--                            lost its slot to this run: cancel it
--   "full", holders, ""      cancel_newest: the group is full, nothing
--                            written: cancel this run
--   an error reply "TASKQ_WRONGTYPE <key> <type>", "", ""  nothing written
--                            for that item
-- On a read-only replica the call fails with READONLY, nothing written. It
-- runs at maxmemory (flag allow-oom): runs already accepted must start.

local now = tonumber(ARGV[ARG_NOW])

local function hold(holders, owners, waiting, run_id, token, lease, acquired)
  redis.call('ZADD', holders, string.format('%d', now + lease), run_id)
  redis.call('HSET', owners, run_id, acquired .. ' ' .. token)
  redis.call('ZREM', waiting, run_id)
end

local function acquire(holders, owners, waiting, run_id, token, max, strategy, lease, created)
  local e = taskq_conc_prune(holders, owners, now) or taskq_check_type(waiting, 'zset')
  if e then
    return e, '', ''
  end
  lease = tonumber(lease)
  local n = redis.call('ZCARD', holders)
  if redis.call('ZSCORE', holders, run_id) then
    local acquired = taskq_conc_acquired(redis.call('HGET', owners, run_id))
    hold(holders, owners, waiting, run_id, token, lease, string.format('%d', acquired))
    return 'held', n, ''
  end
  if n < max then
    hold(holders, owners, waiting, run_id, token, lease, ARGV[ARG_NOW])
    return 'held', n + 1, ''
  end
  if strategy == 'cancel_in_progress' and n > 0 then
    local hs = redis.call('ZRANGE', holders, 0, -1)
    local os = redis.call('HMGET', owners, unpack(hs))
    local oldest, at = hs[1], taskq_conc_acquired(os[1])
    for j = 2, #hs do
      local t = taskq_conc_acquired(os[j])
      if t < at then
        oldest, at = hs[j], t
      end
    end
    redis.call('ZREM', holders, oldest)
    redis.call('HDEL', owners, oldest)
    hold(holders, owners, waiting, run_id, token, lease, ARGV[ARG_NOW])
    return 'evict', n, oldest
  end
  if strategy == 'cancel_newest' then
    return 'full', n, ''
  end
  redis.call('ZADD', waiting, 'NX', created, run_id)
  return 'wait', n, ''
end

local out, n = {}, 0
local k, a = KEY_COUNT + 1, ARG_COUNT + 1 -- the first item's KEYS and ARGV
for _ = 1, (#KEYS - KEY_COUNT) / ITEM_KEY_COUNT do
  local c, x, y = acquire(KEYS[k + ITEM_KEY_HOLDERS], KEYS[k + ITEM_KEY_OWNERS], KEYS[k + ITEM_KEY_WAITING],
    ARGV[a + ITEM_ARG_RUN_ID], ARGV[a + ITEM_ARG_TOKEN], tonumber(ARGV[a + ITEM_ARG_MAX_RUNS]),
    ARGV[a + ITEM_ARG_STRATEGY], ARGV[a + ITEM_ARG_LEASE], ARGV[a + ITEM_ARG_CREATED])
  out[n + 1], out[n + 2], out[n + 3] = c, x, y
  n = n + 3
  k, a = k + ITEM_KEY_COUNT, a + ITEM_ARG_COUNT
end
return out
