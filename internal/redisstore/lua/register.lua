#!lua flags=allow-oom
-- register.lua: records a task definition and returns the one it replaced,
-- so a worker can tell when another registered different content under the
-- same name.
--
-- KEYS: KEY_COUNT (1)
--   KEYS[1] KEY_TASKS  task registry  taskq:{ns}:tasks
-- ARGV: ARG_COUNT (3)
--   ARGV[1] ARG_NAME          task name
--   ARGV[2] ARG_REGISTRATION  registration (JSON)
--   ARGV[3] ARG_MODE          "replace" to overwrite a different registration,
--                             "keep" to leave it
-- Returns the previous registration, or false when there was none.
-- Fails with READONLY on a read-only replica when it would write, nothing
-- written. Runs at maxmemory (flag allow-oom): a worker registers its tasks
-- when it starts, and workers must be able to start to drain the queue
-- while new triggers are refused; one record per task is bounded.

local tasks, name = KEYS[KEY_TASKS], ARGV[ARG_NAME]
local old = redis.call('HGET', tasks, name)
if not old or ARGV[ARG_MODE] == 'replace' then
  redis.call('HSET', tasks, name, ARGV[ARG_REGISTRATION])
end
return old
