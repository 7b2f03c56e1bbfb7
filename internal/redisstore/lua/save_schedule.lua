#!lua flags=allow-oom
-- save_schedule.lua: registers a cron schedule, or writes a new definition
-- of one, in the namespace's home partition.
--
-- KEYS: KEY_COUNT (2)
--   KEYS[1] KEY_SCHEDULE   schedule hash    taskq:{ns}:schedule:<name>
--   KEYS[2] KEY_SCHEDULES  schedules index  taskq:{ns}:schedules
-- ARGV: ARG_COUNT (5)
--   ARGV[1] ARG_NAME        schedule name
--   ARGV[2] ARG_DEFINITION  the schedule (JSON)
--   ARGV[3] ARG_MODE        "create" to leave an existing schedule as it
--                           is, "replace" to write its new definition
--   ARGV[4] ARG_PAUSED      "1" to register a new schedule paused
--   ARGV[5] ARG_NOW         now (unix ms)
-- A new schedule's cursor is now: its first tick is the first after it was
-- registered. A new definition keeps the schedule's cursor and its paused
-- state, which belong to whoever paused it.
-- Returns {1 when written (0 when mode create met an existing schedule),
-- the previous definition or false}.
-- Fails with READONLY on a read-only replica, nothing written. Runs at
-- maxmemory (flag allow-oom): a worker registers its schedules when it
-- starts, as it does its tasks, and one record per schedule is bounded.

local sched = KEYS[KEY_SCHEDULE]
local old = redis.call('HGET', sched, SCHEDULE_DEFINITION)
if old and ARGV[ARG_MODE] ~= 'replace' then
  return {0, old}
end
redis.call('HSET', sched, SCHEDULE_DEFINITION, ARGV[ARG_DEFINITION], SCHEDULE_UPDATED, ARGV[ARG_NOW])
if not old then
  redis.call('HSET', sched, SCHEDULE_CREATED, ARGV[ARG_NOW])
  if not redis.call('HGET', sched, SCHEDULE_CURSOR) then
    redis.call('HSET', sched, SCHEDULE_CURSOR, ARGV[ARG_NOW])
  end
  if ARGV[ARG_PAUSED] == '1' then
    redis.call('HSET', sched, SCHEDULE_PAUSED, '1')
  end
  redis.call('SADD', KEYS[KEY_SCHEDULES], ARGV[ARG_NAME])
end
return {1, old}
