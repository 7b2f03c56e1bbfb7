-- start.lua: begins attempts of runs a worker has just read (or reclaimed)
-- from their task streams, any number per call, each as if on its own. The
-- attempt number returned is the fencing token: finish.lua and
-- heartbeat.lua accept only the latest attempt.
--
-- KEYS, two per delivery i (i = 0, 1, ...), at 2i+1 and 2i+2:
--   run hash      taskq:{ns}:run:<run id>
--   task stream   taskq:{ns}:stream:<task>
-- ARGV[1] consumer group
-- ARGV[2] consumer name
-- ARGV[3] now (unix ms)
-- ARGV[4] key prefix taskq:{ns}:
-- then two per delivery i, at 2i+5 and 2i+6:
--   run id
--   stream entry id being delivered
-- Returns an array with one reply per delivery, in order:
--   {1, attempt, fails, input, meta, key, retries, timeout ms, created ms}   started
--   {0, reason}  not started, the entry is acknowledged and deleted; reason is
--                "missing" (no record), "stale" (an older delivery of the run),
--                "exhausted" (too many deliveries: the run is now failed),
--                or the run's terminal status
--   an error reply "TASKQ_WRONGTYPE <key> <type>" when the run key holds
--   something else than a run; nothing is written for that delivery

local group, consumer, now, prefix = ARGV[1], ARGV[2], ARGV[3], ARGV[4]

local function drop(stream, entry, reason)
  taskq_drop(stream, group, entry)
  return {0, reason}
end

local function start(run_key, stream, run_id, entry)
  local r = redis.pcall('HMGET', run_key, 'status', 'entry', 'attempt', 'maxdel',
    'fails', 'input', 'meta', 'key', 'retries', 'timeout', 'created')
  if r.err then
    return taskq_wrongtype(run_key)
  end
  local status = r[1]
  if not status then
    return drop(stream, entry, 'missing')
  end
  if taskq_is_terminal(status) then
    return drop(stream, entry, status)
  end
  if r[2] ~= entry then
    return drop(stream, entry, 'stale')
  end
  local attempt = (tonumber(r[3]) or 0) + 1
  local maxdel = tonumber(r[4]) or 0
  if maxdel > 0 and attempt > maxdel then
    taskq_terminate(prefix, group, run_key, run_id, 'failed', now, 'error',
      'delivered ' .. maxdel .. ' times without finishing (workers died or lost their lease)')
    return {0, 'exhausted'}
  end
  redis.call('HSET', run_key, 'status', 'running', 'attempt', attempt, 'started', now, 'consumer', consumer)
  return {1, attempt, tonumber(r[5]) or 0, r[6], r[7], r[8], tonumber(r[9]) or 0,
    tonumber(r[10]) or 0, tonumber(r[11]) or 0}
end

local out = {}
for i = 0, #KEYS / 2 - 1 do
  out[i + 1] = start(KEYS[2 * i + 1], KEYS[2 * i + 2], ARGV[2 * i + 5], ARGV[2 * i + 6])
end
return out
