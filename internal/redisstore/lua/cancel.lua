-- cancel.lua: cancels a queued, retrying or running run. Its delivery is
-- dropped, its key released per strategy, its waiters woken, and workers are
-- told on the cancel channel so a running handler's context is cancelled.
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

local prefix = ARGV[5]
local status = redis.call('HGET', KEYS[1], 'status')
if not status then
  return {0, 'missing'}
end
if taskq_is_terminal(status) then
  return {0, status}
end
local was_running = status == 'running'
taskq_terminate(prefix, ARGV[4], KEYS[1], ARGV[1], 'cancelled', ARGV[2], 'error', ARGV[3])
if was_running then
  redis.call('PUBLISH', prefix .. 'cancel', ARGV[1])
end
return {1, 'cancelled'}
