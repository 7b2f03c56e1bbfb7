-- signal.lua: delivers a payload to a run as a signal, appended to the
-- run's ordered signal stream. Addressed either to whoever owns an
-- idempotency key now, or to one run by ID.
--
-- KEYS[1] idempotency key   taskq:{ns}:key:<key>   (ARGV[1] = "key")
--         or run hash       taskq:{ns}:run:<id>    (ARGV[1] = "run")
-- ARGV[1] mode: key | run
-- ARGV[2] run id (mode "run"; ignored for "key")
-- ARGV[3] signal id
-- ARGV[4] payload (JSON)
-- ARGV[5] key prefix taskq:{ns}:
-- ARGV[6] most signals a run may hold (0 = no limit)
-- Returns:
--   {1, run id, signal id}         delivered
--   {0, "none"}                    nobody holds the key
--   {0, "missing", run id, ""}     the run does not exist (any more)
--   {0, "finished", run id, status} the owner has ended (key held by retain)
--   {0, "full", run id, status}    the run holds the most signals allowed
-- Fails with OOM when Redis is at maxmemory (a signal is new data) and
-- READONLY on a read-only replica; nothing is written then.

local run_id = ARGV[2]
if ARGV[1] == 'key' then
  run_id = redis.call('GET', KEYS[1])
  if not run_id then
    return {0, 'none'}
  end
end
return taskq_signal(ARGV[5], run_id, ARGV[3], ARGV[4], tonumber(ARGV[6]) or 0)
