#!lua flags=allow-oom
-- watch.lua: asks for a run's completion notice. Ending a run publishes
-- its done channel only when flag w is set (see taskq_flag and taskq_end),
-- so that runs nobody waits for cost Redis no PUBLISH. A waiter subscribes
-- to the channel first and then calls this script: the run either ends
-- after the flag is set, and is published, or had ended already, which
-- the reply says.
--
-- KEYS: KEY_COUNT (1)
--   KEYS[1] KEY_RUN  run hash  taskq:{ns}:run:<run id>
-- ARGV: ARG_COUNT (0)
-- Returns the run's status, or false when there is no such run.
-- Fails with READONLY on a read-only replica when it would set the flag.
-- Runs at maxmemory (flag allow-oom): waiting for the result of a run
-- already accepted adds one letter to its record.

local status = redis.call('HGET', KEYS[KEY_RUN], RUN_STATUS)
if status and not taskq_is_terminal(status) then
  taskq_flag(KEYS[KEY_RUN], 'w')
end
return status
