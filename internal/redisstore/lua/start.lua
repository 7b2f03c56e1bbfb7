-- start.lua: begins an attempt of a run a worker has just read (or reclaimed)
-- from its task stream. The attempt number it returns is the fencing token:
-- finish.lua and heartbeat.lua accept only the latest attempt.
--
-- KEYS[1] run hash      taskq:{ns}:run:<run id>
-- KEYS[2] task stream   taskq:{ns}:stream:<task>
-- ARGV[1] run id
-- ARGV[2] stream entry id being delivered
-- ARGV[3] consumer group
-- ARGV[4] consumer name
-- ARGV[5] now (unix ms)
-- ARGV[6] key prefix taskq:{ns}:
-- Returns:
--   {1, attempt, fails, input, meta, key, retries, timeout ms, created ms}   started
--   {0, reason}  not started, the entry is acknowledged and deleted; reason is
--                "missing" (no record), "stale" (an older delivery of the run),
--                "exhausted" (too many deliveries: the run is now failed),
--                or the run's terminal status

local prefix = ARGV[6]
local r = redis.call('HMGET', KEYS[1], 'status', 'entry', 'attempt', 'maxdel')
local status, entry = r[1], r[2]
if not status then
  redis.call('XACK', KEYS[2], ARGV[3], ARGV[2])
  redis.call('XDEL', KEYS[2], ARGV[2])
  return {0, 'missing'}
end
if taskq_is_terminal(status) then
  redis.call('XACK', KEYS[2], ARGV[3], ARGV[2])
  redis.call('XDEL', KEYS[2], ARGV[2])
  return {0, status}
end
if entry ~= ARGV[2] then
  redis.call('XACK', KEYS[2], ARGV[3], ARGV[2])
  redis.call('XDEL', KEYS[2], ARGV[2])
  return {0, 'stale'}
end
local attempt = (tonumber(r[3]) or 0) + 1
local maxdel = tonumber(r[4]) or 0
if maxdel > 0 and attempt > maxdel then
  taskq_terminate(prefix, ARGV[3], KEYS[1], ARGV[1], 'failed', ARGV[5], 'error',
    'delivered ' .. maxdel .. ' times without finishing (workers died or lost their lease)')
  return {0, 'exhausted'}
end
redis.call('HSET', KEYS[1], 'status', 'running', 'attempt', attempt, 'started', ARGV[5], 'consumer', ARGV[4])
local d = redis.call('HMGET', KEYS[1], 'fails', 'input', 'meta', 'key', 'retries', 'timeout', 'created')
return {1, attempt, tonumber(d[1]) or 0, d[2], d[3], d[4], tonumber(d[5]) or 0, tonumber(d[6]) or 0, tonumber(d[7]) or 0}
