-- signal.lua: delivers a payload to a run as a signal, appended to the
-- run's ordered signal stream. Addressed either to whoever owns an
-- idempotency key now, or to one run by ID.
--
-- KEYS: KEY_COUNT (1)
--   KEYS[1] KEY_TARGET  idempotency key  taskq:{ns}:key:<key>  (mode "key")
--                       or run hash      taskq:{ns}:run:<id>   (mode "run")
-- ARGV: ARG_COUNT (6)
--   ARGV[1] ARG_MODE         mode: key | run
--   ARGV[2] ARG_RUN_ID       run id (mode "run"; ignored for "key")
--   ARGV[3] ARG_SIGNAL_ID    signal id
--   ARGV[4] ARG_PAYLOAD      payload (JSON)
--   ARGV[5] ARG_PREFIX       key prefix taskq:{ns}:
--   ARGV[6] ARG_MAX_SIGNALS  most signals a run may hold (0 = no limit)
-- Returns:
--   {1, run id, signal id}         delivered
--   {0, "none"}                    nobody holds the key
--   {0, "missing", run id, ""}     the run does not exist (any more)
--   {0, "finished", run id, status} the owner has ended (key held by retain)
--   {0, "full", run id, status}    the run holds the most signals allowed
-- Fails with OOM when Redis is at maxmemory (a signal is new data) and
-- READONLY on a read-only replica; nothing is written then.

local run_id = ARGV[ARG_RUN_ID]
if ARGV[ARG_MODE] == 'key' then
  run_id = redis.call('GET', KEYS[KEY_TARGET])
  if not run_id then
    return {0, 'none'}
  end
end
return taskq_signal(ARGV[ARG_PREFIX], run_id, ARGV[ARG_SIGNAL_ID], ARGV[ARG_PAYLOAD], tonumber(ARGV[ARG_MAX_SIGNALS]) or 0)
