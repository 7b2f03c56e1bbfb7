#!lua flags=allow-oom
-- concurrency_release.lua: gives slots of concurrency groups back, any
-- number per call (all groups of one partition), and hands the free slots
-- of each group to the runs first in its waiting line: each is reserved
-- for its run (token "") for ITEM_ARG_RESERVE ms, within which the run,
-- put back in its stream by concurrency_unpark.lua, takes it over
-- (concurrency_acquire.lua). A reservation nobody takes lapses like any
-- lease. Only the holder with the token given releases its slot: a run
-- whose slot lapsed and was taken over by a newer delivery never frees
-- the newer one's.
--
-- KEYS: KEY_COUNT (0) before ITEM_KEY_COUNT (3) per item i (i = 0, 1, ...),
-- at 3i+1 .. 3i+3:
--   +0 ITEM_KEY_HOLDERS  holders  taskq:{ns}:conc:h:<task>[#<limit>]|<group>
--   +1 ITEM_KEY_OWNERS   owners   taskq:{ns}:conc:o:<task>[#<limit>]|<group>
--   +2 ITEM_KEY_WAITING  waiting  taskq:{ns}:conc:w:<task>[#<limit>]|<group>
-- ARGV: ARG_COUNT (1) first,
--   ARGV[1] ARG_NOW  now (unix ms)
-- then ITEM_ARG_COUNT (4) per item i, at 4i+2 .. 4i+5:
--   +0 ITEM_ARG_RUN_ID    run id ("" to only hand free slots on)
--   +1 ITEM_ARG_TOKEN     the holder's token
--   +2 ITEM_ARG_MAX_RUNS  most runs of the group at once
--   +3 ITEM_ARG_RESERVE   how long a slot stays reserved (ms)
-- Returns a flat array per item: released (1 or 0), k, then the k runs
-- the group's free slots were reserved for, in line order; or an error
-- reply "TASKQ_WRONGTYPE <key> <type>", 0 (nothing written for the item).
-- On a read-only replica the call fails with READONLY, nothing written. It
-- runs at maxmemory (flag allow-oom): it frees slots and moves runs on.

local now = tonumber(ARGV[ARG_NOW])

local function release(holders, owners, waiting, run_id, token, max, reserve)
  local e = taskq_conc_prune(holders, owners, now) or taskq_check_type(waiting, 'zset')
  if e then
    return e, {}
  end
  local released = 0
  if run_id ~= '' and taskq_conc_token(redis.call('HGET', owners, run_id)) == token then
    redis.call('ZREM', holders, run_id)
    redis.call('HDEL', owners, run_id)
    released = 1
  end
  local next, n = {}, redis.call('ZCARD', holders)
  local deadline = string.format('%d', now + tonumber(reserve))
  while n < max do
    local p = redis.call('ZPOPMIN', waiting)
    if #p == 0 then
      break
    end
    redis.call('ZADD', holders, deadline, p[1])
    redis.call('HSET', owners, p[1], ARGV[ARG_NOW] .. ' ')
    next[#next + 1] = p[1]
    n = n + 1
  end
  return released, next
end

local out, n = {}, 0
local k, a = KEY_COUNT + 1, ARG_COUNT + 1 -- the first item's KEYS and ARGV
for _ = 1, (#KEYS - KEY_COUNT) / ITEM_KEY_COUNT do
  local released, next = release(KEYS[k + ITEM_KEY_HOLDERS], KEYS[k + ITEM_KEY_OWNERS], KEYS[k + ITEM_KEY_WAITING],
    ARGV[a + ITEM_ARG_RUN_ID], ARGV[a + ITEM_ARG_TOKEN], tonumber(ARGV[a + ITEM_ARG_MAX_RUNS]),
    ARGV[a + ITEM_ARG_RESERVE])
  out[n + 1], out[n + 2] = released, #next
  n = n + 2
  for j = 1, #next do
    out[n + j] = next[j]
  end
  n = n + #next
  k, a = k + ITEM_KEY_COUNT, a + ITEM_ARG_COUNT
end
return out
