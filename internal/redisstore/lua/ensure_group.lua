#!lua flags=allow-oom
-- ensure_group.lua: creates a task's stream and its consumer group if
-- missing. The group starts at the stream's beginning, so runs queued
-- before any worker existed are delivered.
--
-- KEYS: KEY_COUNT (1)
--   KEYS[1] KEY_STREAM  task stream  taskq:{ns}:stream:<task>
-- ARGV: ARG_COUNT (1)
--   ARGV[1] ARG_GROUP   consumer group
-- Returns 1 when it created the group, 0 when the group existed.
-- Errors, with nothing written: "TASKQ_WRONGTYPE <key> <type>" when the
-- key holds something else than a stream; READONLY on a read-only replica.
-- Runs at maxmemory (flag allow-oom): a worker creates its groups when it
-- starts, and workers must be able to start to drain the queue while new
-- triggers are refused, even runs triggered before any worker created the
-- group; one group per task is bounded.

local r = redis.pcall('XGROUP', 'CREATE', KEYS[KEY_STREAM], ARGV[ARG_GROUP], '0', 'MKSTREAM')
if type(r) == 'table' and r.err then
  if string.sub(r.err, 1, 10) == 'BUSYGROUP ' then
    return 0
  end
  return taskq_failed(KEYS[KEY_STREAM], r)
end
return 1
