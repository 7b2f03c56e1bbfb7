#!lua flags=allow-oom
-- ratelimit_defer.lua: holds back runs a rate limit refused to start: each
-- delivery is acknowledged and deleted, and its run, still queued, waits in
-- the retry zset until due, when promote.lua queues it again with a new
-- entry, with the reason in RUN_WAITING meanwhile. No attempt is begun and
-- the delivery does not count toward the run's maximum deliveries. Any
-- number of deliveries per call, each as if on its own.
--
-- KEYS: KEY_COUNT (1) first,
--   KEYS[1] KEY_RETRY  retry zset  taskq:{ns}:retry
-- then ITEM_KEY_COUNT (2) per delivery i, at 2i+2 and 2i+3:
--   +0 ITEM_KEY_RUN     run hash     taskq:{ns}:run:<run id>
--   +1 ITEM_KEY_STREAM  task stream  taskq:{ns}:stream:<task>
-- ARGV: ARG_COUNT (1) first,
--   ARGV[1] ARG_GROUP  consumer group
-- then ITEM_ARG_COUNT (4) per delivery i, at 4i+2 .. 4i+5:
--   +0 ITEM_ARG_RUN_ID  run id
--   +1 ITEM_ARG_ENTRY   stream entry id of the delivery
--   +2 ITEM_ARG_DUE     when to queue the run again (unix ms)
--   +3 ITEM_ARG_REASON  why it waits, for RUN_WAITING
-- Returns a flat array with two values per delivery, in order:
--   1, ''      held back
--   0, reason  not held back, the entry is acknowledged and deleted as
--              start.lua would: reason is "missing" (no record), "stale"
--              (an older delivery of the run) or the run's terminal status
--   an error reply "TASKQ_WRONGTYPE <key> <type>", ""  when the run key
--              holds something else than a run; nothing written for it
-- A delivery of a running run whose entry it still is (reclaimed after its
-- lease lapsed) is held back too: the run is queued again, as start.lua
-- would begin a new attempt, and the lapsed attempt is fenced out.
-- On a read-only replica the call fails with READONLY, nothing written. It
-- runs at maxmemory (flag allow-oom): a run already accepted must be able
-- to wait for its start and then run, end and free its memory.

local group, retry = ARGV[ARG_GROUP], KEYS[KEY_RETRY]

local function hold(run_key, stream, run_id, entry, due, reason)
  local r = redis.pcall('HMGET', run_key, RUN_STATUS, RUN_ENTRY)
  if r.err then
    return taskq_failed(run_key, r), ''
  end
  local status = r[1]
  taskq_drop(stream, group, entry) -- whatever follows: held back, or nothing to run
  if not status then
    return 0, 'missing'
  end
  if taskq_is_terminal(status) then
    return 0, status
  end
  if r[2] ~= entry then
    return 0, 'stale'
  end
  redis.call('HSET', run_key, RUN_STATUS, 'queued', RUN_ENTRY, '', RUN_WAITING, reason)
  redis.call('ZADD', retry, due, run_id)
  return 1, ''
end

local out = {}
local k, a = KEY_COUNT + 1, ARG_COUNT + 1 -- the first delivery's KEYS and ARGV
for i = 1, (#KEYS - KEY_COUNT) / ITEM_KEY_COUNT do
  out[2 * i - 1], out[2 * i] = hold(KEYS[k + ITEM_KEY_RUN], KEYS[k + ITEM_KEY_STREAM], ARGV[a + ITEM_ARG_RUN_ID],
    ARGV[a + ITEM_ARG_ENTRY], ARGV[a + ITEM_ARG_DUE], ARGV[a + ITEM_ARG_REASON])
  k, a = k + ITEM_KEY_COUNT, a + ITEM_ARG_COUNT
end
return out
