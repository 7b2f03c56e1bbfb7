-- save_step.lua: stores the result of a run's durable step unless one is
-- stored already (the first completion of a step wins), and marks the run
-- as having steps so that finish.lua expires them with the record. A step
-- saved after the run ended expires with the record at once; a run whose
-- record is gone stores nothing.
--
-- KEYS: KEY_COUNT (2)
--   KEYS[1] KEY_STEPS  steps hash  taskq:{ns}:steps:<run id>
--   KEYS[2] KEY_RUN    run hash    taskq:{ns}:run:<run id>
-- ARGV: ARG_COUNT (2)
--   ARGV[1] ARG_NAME    step name
--   ARGV[2] ARG_RESULT  result (JSON)
-- Returns the stored result, or the result given when nothing was stored.
-- Fails with OOM when Redis is at maxmemory (a step result is new data, as
-- a trigger is) and READONLY on a read-only replica; nothing is written then.

local steps, run_key, name, result = KEYS[KEY_STEPS], KEYS[KEY_RUN], ARGV[ARG_NAME], ARGV[ARG_RESULT]
local ttl = redis.call('PTTL', run_key)
if ttl == -2 then
  return result
end
redis.call('HSETNX', steps, name, result)
taskq_flag(run_key, 't')
if ttl > 0 then
  redis.call('PEXPIRE', steps, ttl)
end
return redis.call('HGET', steps, name)
