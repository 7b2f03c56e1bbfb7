#!lua flags=allow-oom
-- advance_schedule.lua: moves a schedule's cursor to a tick that fired,
-- unless it is already at or past it: the cursor never goes back, so a
-- scheduler that was paused and reports an old tick changes nothing.
--
-- KEYS: KEY_COUNT (1)
--   KEYS[1] KEY_SCHEDULE  schedule hash  taskq:{ns}:schedule:<name>
-- ARGV: ARG_COUNT (1)
--   ARGV[1] ARG_TICK  the tick fired (unix ms)
-- Returns the cursor after the call (unix ms), or false when there is no
-- such schedule (deleted meanwhile: nothing written, no record made
-- again).
-- Fails with READONLY on a read-only replica, nothing written. Runs at
-- maxmemory (flag allow-oom): it only changes a field that exists, and a
-- tick already fired must be recorded.

local sched = KEYS[KEY_SCHEDULE]
local cursor = redis.call('HGET', sched, SCHEDULE_CURSOR)
if not cursor then
  return false
end
if tonumber(cursor) < tonumber(ARGV[ARG_TICK]) then
  redis.call('HSET', sched, SCHEDULE_CURSOR, ARGV[ARG_TICK])
  return ARGV[ARG_TICK]
end
return cursor
