#!lua flags=allow-oom
-- delete_schedule.lua: deletes a cron schedule and its cursor.
--
-- KEYS: KEY_COUNT (2)
--   KEYS[1] KEY_SCHEDULE   schedule hash    taskq:{ns}:schedule:<name>
--   KEYS[2] KEY_SCHEDULES  schedules index  taskq:{ns}:schedules
-- ARGV: ARG_COUNT (1)
--   ARGV[1] ARG_NAME  schedule name
-- The runs its ticks created, and their keys, are left as they are.
-- Returns 1, or 0 when there was no such schedule.
-- Fails with READONLY on a read-only replica, nothing written. Runs at
-- maxmemory (flag allow-oom): it frees memory.

-- The index first: a key of the wrong type fails the call before
-- anything is deleted.
redis.call('SREM', KEYS[KEY_SCHEDULES], ARGV[ARG_NAME])
return redis.call('DEL', KEYS[KEY_SCHEDULE])
