-- finish.lua: records the outcome of an attempt. Only the run's latest
-- attempt may write (fencing): a worker that lost its lease and wakes up
-- late cannot overwrite the newer attempt's result or release its key.
--
-- KEYS[1] run hash      taskq:{ns}:run:<run id>
-- KEYS[2] retry zset    taskq:{ns}:retry
-- ARGV[1] run id
-- ARGV[2] attempt (fencing token from start.lua)
-- ARGV[3] outcome: succeeded | failed | retry
-- ARGV[4] result JSON (succeeded) or error message (failed, retry)
-- ARGV[5] now (unix ms)
-- ARGV[6] retry due time (unix ms; outcome "retry" only)
-- ARGV[7] consumer group
-- ARGV[8] key prefix taskq:{ns}:
-- Returns:
--   {1, status}   written; status is succeeded, failed, or queued (retry scheduled)
--   {0, reason}   nothing written: "missing", "stale" (a newer attempt owns
--                 the run), or the run's status when it already ended (cancelled)

local prefix, group = ARGV[8], ARGV[7]
local r = redis.call('HMGET', KEYS[1], 'status', 'attempt', 'task', 'entry')
local status = r[1]
if not status then
  return {0, 'missing'}
end
if tonumber(r[2]) ~= tonumber(ARGV[2]) then
  return {0, 'stale'}
end
if status ~= 'running' then
  return {0, status}
end
if ARGV[3] == 'succeeded' then
  taskq_terminate(prefix, group, KEYS[1], ARGV[1], 'succeeded', ARGV[5], 'result', ARGV[4])
  return {1, 'succeeded'}
end
if ARGV[3] == 'failed' then
  taskq_terminate(prefix, group, KEYS[1], ARGV[1], 'failed', ARGV[5], 'error', ARGV[4])
  return {1, 'failed'}
end
-- retry: the key stays held through every retry of a status-strategy run.
redis.call('HSET', KEYS[1], 'status', 'queued', 'error', ARGV[4], 'entry', '')
redis.call('HINCRBY', KEYS[1], 'fails', 1)
taskq_drop_entry(prefix, group, r[3], r[4])
redis.call('ZADD', KEYS[2], ARGV[6], ARGV[1])
return {1, 'queued'}
