#!lua flags=allow-oom
-- pause_schedule.lua: pauses or resumes a cron schedule.
--
-- KEYS: KEY_COUNT (1)
--   KEYS[1] KEY_SCHEDULE  schedule hash  taskq:{ns}:schedule:<name>
-- ARGV: ARG_COUNT (2)
--   ARGV[1] ARG_PAUSED  "1" to pause, "0" to resume
--   ARGV[2] ARG_NOW     now (unix ms)
-- Resuming moves the cursor to now unless it is later (it never goes
-- back): the ticks the schedule had while paused do not fire.
-- Returns 1, or 0 when there is no such schedule (nothing written).
-- Fails with READONLY on a read-only replica, nothing written. Runs at
-- maxmemory (flag allow-oom): it only changes fields that exist.

local sched = KEYS[KEY_SCHEDULE]
if redis.call('EXISTS', sched) == 0 then
  return 0
end
if ARGV[ARG_PAUSED] == '1' then
  redis.call('HSET', sched, SCHEDULE_PAUSED, '1')
  return 1
end
redis.call('HDEL', sched, SCHEDULE_PAUSED)
local cursor = tonumber(redis.call('HGET', sched, SCHEDULE_CURSOR) or '0')
if cursor < tonumber(ARGV[ARG_NOW]) then
  redis.call('HSET', sched, SCHEDULE_CURSOR, ARGV[ARG_NOW])
end
return 1
