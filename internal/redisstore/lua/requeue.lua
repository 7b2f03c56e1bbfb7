#!lua flags=allow-oom
-- requeue.lua: gives a run back to the queue at once, for a worker that shuts
-- down before its handler finished, so the run need not wait for the lease
-- to lapse. Fenced like finish.lua.
--
-- KEYS: KEY_COUNT (2)
--   KEYS[1] KEY_RUN     run hash     taskq:{ns}:run:<run id>
--   KEYS[2] KEY_STREAM  task stream  taskq:{ns}:stream:<task>
-- ARGV: ARG_COUNT (5)
--   ARGV[1] ARG_RUN_ID   run id
--   ARGV[2] ARG_ATTEMPT  attempt (fencing token)
--   ARGV[3] ARG_GROUP    consumer group
--   ARGV[4] ARG_NOW      now (unix ms), when the attempt ended
--   ARGV[5] ARG_PREFIX   key prefix taskq:{ns}:
-- The attempt given back goes into the run's attempt history as
-- "requeued" (taskq_add_attempt).
-- Returns {1, new entry id} or {0, reason} ("missing", "stale", or the status).
-- Fails with READONLY on a read-only replica, nothing written. Runs at
-- maxmemory (flag allow-oom): it replaces the run's delivery with another,
-- so that an accepted run is not held up until its lease lapses.

local run_key, stream = KEYS[KEY_RUN], KEYS[KEY_STREAM]
local r = redis.call('HMGET', run_key, RUN_STATUS, RUN_ATTEMPT, RUN_ENTRY, RUN_FLAGS, RUN_PRIORITY)
if not r[1] then
  return {0, 'missing'}
end
if tonumber(r[2]) ~= tonumber(ARGV[ARG_ATTEMPT]) then
  return {0, 'stale'}
end
if r[1] ~= 'running' then
  return {0, r[1]}
end
taskq_add_attempt(ARGV[ARG_PREFIX], run_key, ARGV[ARG_RUN_ID], r[4], ARGV[ARG_ATTEMPT], 'requeued', nil, ARGV[ARG_NOW],
  nil, 'given back to the queue: its worker shut down before the handler returned')
taskq_drop(taskq_lane(stream, r[5]), ARGV[ARG_GROUP], r[3])
return {1, taskq_requeue_entry(stream, run_key, ARGV[ARG_RUN_ID])}
