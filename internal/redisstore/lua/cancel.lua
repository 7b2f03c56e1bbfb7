#!lua flags=allow-oom
-- cancel.lua: cancels a queued, retrying or running run. Its delivery is
-- dropped, its key released per strategy, its waiters woken, and workers are
-- told on the cancel channel so a handler running it has its context
-- cancelled.
--
-- KEYS[1] run hash        taskq:{ns}:run:<run id>
-- ARGV[1] run id
-- ARGV[2] now (unix ms)
-- ARGV[3] reason (stored as the run's error)
-- ARGV[4] consumer group
-- ARGV[5] key prefix taskq:{ns}:
-- Returns:
--   {1, "cancelled"}
--   {0, "missing"} or {0, terminal status}: nothing written
-- Fails with READONLY on a read-only replica, nothing written. Runs at
-- maxmemory (flag allow-oom): cancelling frees a run's delivery and key.

local prefix = ARGV[5]
local status = redis.call('HGET', KEYS[1], 'status')
if not status then
  return {0, 'missing'}
end
if taskq_is_terminal(status) then
  return {0, status}
end
taskq_terminate(prefix, ARGV[4], KEYS[1], ARGV[1], 'cancelled', ARGV[2], 'error', ARGV[3])
-- A queued run may be running too, in a handler whose attempt finish.lua
-- would begin (see there): workers are told either way.
redis.call('PUBLISH', prefix .. 'cancel', ARGV[1])
return {1, 'cancelled'}
