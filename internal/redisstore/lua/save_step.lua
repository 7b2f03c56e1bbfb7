-- save_step.lua: stores the result of a run's durable step unless one is
-- stored already (the first completion of a step wins), and marks the run
-- as having steps so that finish.lua expires them with the record. A step
-- saved after the run ended expires with the record at once; a run whose
-- record is gone stores nothing.
--
-- KEYS[1] steps hash   taskq:{ns}:steps:<run id>
-- KEYS[2] run hash     taskq:{ns}:run:<run id>
-- ARGV[1] step name
-- ARGV[2] result (JSON)
-- Returns the stored result, or ARGV[2] when nothing was stored.
-- Fails with OOM when Redis is at maxmemory (a step result is new data, as
-- a trigger is) and READONLY on a read-only replica; nothing is written then.

local ttl = redis.call('PTTL', KEYS[2])
if ttl == -2 then
  return ARGV[2]
end
redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2])
taskq_flag(KEYS[2], 't')
if ttl > 0 then
  redis.call('PEXPIRE', KEYS[1], ttl)
end
return redis.call('HGET', KEYS[1], ARGV[1])
