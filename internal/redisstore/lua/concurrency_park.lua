#!lua flags=allow-oom
-- concurrency_park.lua: holds back deliveries whose concurrency group is
-- full (concurrency_acquire.lua answered "wait"), any number per call (all
-- runs of one partition). A parked run stays queued, with no delivery: its
-- entry is acknowledged and deleted, the record says why it waits and in
-- which group, and the partition's parked index lists it, so that a
-- recoverer finds it should its slot never come (see take_parked.lua).
-- Parking begins no attempt and counts no delivery. A run a dead worker's
-- attempt left running is parked as queued, its attempt number moved on
-- so that the dead attempt's late writes are refused.
--
-- KEYS: KEY_COUNT (1) first,
--   KEYS[1] KEY_PARKED  parked index  taskq:{ns}:parked
-- then ITEM_KEY_COUNT (2) per item i (i = 0, 1, ...), at 2i+2 and 2i+3:
--   +0 ITEM_KEY_RUN     run hash     taskq:{ns}:run:<run id>
--   +1 ITEM_KEY_STREAM  task stream  taskq:{ns}:stream:<task>
-- ARGV: ARG_COUNT (2) first,
--   ARGV[1] ARG_GROUP    consumer group
--   ARGV[2] ARG_RECHECK  when a recoverer first looks at the runs (unix ms)
-- then ITEM_ARG_COUNT (5) per item i, at 5i+3 .. 5i+7:
--   +0 ITEM_ARG_RUN_ID  run id
--   +1 ITEM_ARG_ENTRY   stream entry id of the delivery
--   +2 ITEM_ARG_REASON  why it waits (the record's waiting field)
--   +3 ITEM_ARG_GROUP_NAME  the concurrency group
--   +4 ITEM_ARG_LIMIT       which of the task's concurrency limits the
--                           group is of (its index, "0" for the first)
-- Returns one value per item: "held back"; or, with the delivery dropped
-- and nothing else written, "missing" (no record), "stale" (an older
-- delivery of the run) or the run's terminal status; or an error reply
-- "TASKQ_WRONGTYPE <key> <type>" (nothing written for the item).
-- On a read-only replica the call fails with READONLY, nothing written. It
-- runs at maxmemory (flag allow-oom): it moves accepted runs along.

local parked, group, recheck = KEYS[KEY_PARKED], ARGV[ARG_GROUP], ARGV[ARG_RECHECK]

local function park(run_key, stream, run_id, entry, reason, cgroup, climit)
  local r = redis.pcall('HMGET', run_key, RUN_STATUS, RUN_ENTRY, RUN_ATTEMPT)
  if r.err then
    return taskq_failed(run_key, r)
  end
  local e = taskq_check_type(parked, 'zset')
  if e then
    return e
  end
  local status = r[1]
  taskq_drop(stream, group, entry) -- whatever follows: parked, or nothing to run
  if not status then
    return 'missing'
  end
  if taskq_is_terminal(status) then
    return status
  end
  if r[2] ~= entry then
    return 'stale'
  end
  if status == 'running' then
    redis.call('HSET', run_key, RUN_STATUS, 'queued', RUN_ATTEMPT, string.format('%d', (tonumber(r[3]) or 0) + 1))
  end
  redis.call('HSET', run_key, RUN_ENTRY, '', RUN_WAITING, reason, RUN_CONCURRENCY_GROUP, cgroup)
  if climit == '0' then
    redis.call('HDEL', run_key, RUN_CONCURRENCY_LIMIT)
  else
    redis.call('HSET', run_key, RUN_CONCURRENCY_LIMIT, climit)
  end
  redis.call('ZADD', parked, recheck, run_id)
  return 'held back'
end

local out = {}
local k, a = KEY_COUNT + 1, ARG_COUNT + 1 -- the first item's KEYS and ARGV
for i = 1, (#KEYS - KEY_COUNT) / ITEM_KEY_COUNT do
  out[i] = park(KEYS[k + ITEM_KEY_RUN], KEYS[k + ITEM_KEY_STREAM], ARGV[a + ITEM_ARG_RUN_ID], ARGV[a + ITEM_ARG_ENTRY],
    ARGV[a + ITEM_ARG_REASON], ARGV[a + ITEM_ARG_GROUP_NAME], ARGV[a + ITEM_ARG_LIMIT])
  k, a = k + ITEM_KEY_COUNT, a + ITEM_ARG_COUNT
end
return out
