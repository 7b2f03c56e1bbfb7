#!lua flags=allow-oom
-- concurrency_unpark.lua: puts parked runs back in their task streams,
-- any number per call (all runs of one partition): each was given a slot
-- (concurrency_release.lua reserved one for it) or a recoverer found it
-- neither waiting nor holding one. The run gets a new entry made from its
-- record, its waiting reason is cleared and it leaves the parked index. A
-- run that is not parked is left alone: it is in its stream already, or
-- its delivery is still being parked (then a recoverer puts it back).
--
-- KEYS: KEY_COUNT (1) first,
--   KEYS[1] KEY_PARKED  parked index  taskq:{ns}:parked
-- then ITEM_KEY_COUNT (2) per item i (i = 0, 1, ...), at 2i+2 and 2i+3:
--   +0 ITEM_KEY_RUN     run hash     taskq:{ns}:run:<run id>
--   +1 ITEM_KEY_STREAM  task stream  taskq:{ns}:stream:<task>
-- ARGV: ARG_COUNT (0) before ITEM_ARG_COUNT (1) per item i, at i+1:
--   +0 ITEM_ARG_RUN_ID  run id
-- Returns one value per item: "queued" (back in its stream), "not parked",
-- "missing" (no record) or the run's terminal status (those two also leave
-- the parked index), or an error reply "TASKQ_WRONGTYPE <key> <type>"
-- (nothing written for the item).
-- On a read-only replica the call fails with READONLY, nothing written. It
-- runs at maxmemory (flag allow-oom): it moves accepted runs along.

local parked = KEYS[KEY_PARKED]

local function unpark(run_key, stream, run_id)
  local r = redis.pcall('HMGET', run_key, RUN_STATUS, RUN_CONCURRENCY_GROUP)
  if r.err then
    return taskq_failed(run_key, r)
  end
  local e = taskq_check_type(parked, 'zset') or taskq_check_type(stream, 'stream')
  if e then
    return e
  end
  if not r[1] then
    redis.call('ZREM', parked, run_id)
    return 'missing'
  end
  if taskq_is_terminal(r[1]) then
    redis.call('ZREM', parked, run_id)
    return r[1]
  end
  if not r[2] then
    return 'not parked'
  end
  taskq_requeue_entry(stream, run_key, run_id)
  redis.call('HDEL', run_key, RUN_WAITING, RUN_CONCURRENCY_GROUP, RUN_CONCURRENCY_LIMIT)
  redis.call('ZREM', parked, run_id)
  return 'queued'
end

local out = {}
local k, a = KEY_COUNT + 1, ARG_COUNT + 1 -- the first item's KEYS and ARGV
for i = 1, (#KEYS - KEY_COUNT) / ITEM_KEY_COUNT do
  out[i] = unpark(KEYS[k + ITEM_KEY_RUN], KEYS[k + ITEM_KEY_STREAM], ARGV[a + ITEM_ARG_RUN_ID])
  k, a = k + ITEM_KEY_COUNT, a + ITEM_ARG_COUNT
end
return out
