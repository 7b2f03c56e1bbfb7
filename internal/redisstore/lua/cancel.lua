#!lua flags=allow-oom
-- cancel.lua: cancels a queued, retrying or running run. Its delivery is
-- dropped, its key released per strategy, its waiters woken, and workers are
-- told on the cancel channel so a handler running it has its context
-- cancelled.
--
-- KEYS: KEY_COUNT (1)
--   KEYS[1] KEY_RUN  run hash  taskq:{ns}:run:<run id>
-- ARGV: ARG_COUNT (6)
--   ARGV[1] ARG_RUN_ID  run id
--   ARGV[2] ARG_NOW     now (unix ms)
--   ARGV[3] ARG_REASON  reason (stored as the run's error)
--   ARGV[4] ARG_GROUP   consumer group
--   ARGV[5] ARG_PREFIX  key prefix taskq:{ns}:
--   ARGV[6] ARG_NOTICE  what the cancel notice says after the run id and a
--                       "|" (why, for the handler; "" for nothing: the
--                       notice is the run id alone)
-- Returns:
--   {1, "cancelled"}
--   {0, "missing"} or {0, terminal status}: nothing written
-- Fails with READONLY on a read-only replica, nothing written. Runs at
-- maxmemory (flag allow-oom): cancelling frees a run's delivery and key.

local prefix, run_key, run_id = ARGV[ARG_PREFIX], KEYS[KEY_RUN], ARGV[ARG_RUN_ID]
local status = redis.call('HGET', run_key, RUN_STATUS)
if not status then
  return {0, 'missing'}
end
if taskq_is_terminal(status) then
  return {0, status}
end
taskq_terminate(prefix, ARGV[ARG_GROUP], run_key, run_id, 'cancelled', ARGV[ARG_NOW], RUN_ERROR, ARGV[ARG_REASON])
-- A queued run may be running too, in a handler whose attempt finish.lua
-- would begin (see there): workers are told either way.
local notice = ARGV[ARG_NOTICE]
if notice ~= '' then
  notice = run_id .. '|' .. notice
else
  notice = run_id
end
redis.call(CMD_PUBLISH, taskq_key_cancel(prefix), notice)
return {1, 'cancelled'}
