#!lua flags=allow-oom
-- register.lua: records a task definition and returns the one it replaced,
-- so a worker can tell when another registered different content under the
-- same name.
--
-- KEYS[1] task registry   taskq:{ns}:tasks
-- ARGV[1] task name
-- ARGV[2] registration (JSON)
-- ARGV[3] "replace" to overwrite a different registration, "keep" to leave it
-- Returns the previous registration, or false when there was none.
-- Fails with READONLY on a read-only replica when it would write, nothing
-- written. Runs at maxmemory (flag allow-oom): a worker registers its tasks
-- when it starts, and workers must be able to start to drain the queue
-- while new triggers are refused; one record per task is bounded.

local old = redis.call('HGET', KEYS[1], ARGV[1])
if not old or ARGV[3] == 'replace' then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
end
return old
