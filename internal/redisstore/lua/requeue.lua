#!lua flags=allow-oom
-- requeue.lua: gives a run back to the queue at once, for a worker that shuts
-- down before its handler finished, so the run need not wait for the lease
-- to lapse. Fenced like finish.lua.
--
-- KEYS[1] run hash      taskq:{ns}:run:<run id>
-- KEYS[2] task stream   taskq:{ns}:stream:<task>
-- ARGV[1] run id
-- ARGV[2] attempt (fencing token)
-- ARGV[3] consumer group
-- Returns {1, new entry id} or {0, reason} ("missing", "stale", or the status).
-- Fails with READONLY on a read-only replica, nothing written. Runs at
-- maxmemory (flag allow-oom): it replaces the run's delivery with another,
-- so that an accepted run is not held up until its lease lapses.

local r = redis.call('HMGET', KEYS[1], 'status', 'attempt', 'entry')
if not r[1] then
  return {0, 'missing'}
end
if tonumber(r[2]) ~= tonumber(ARGV[2]) then
  return {0, 'stale'}
end
if r[1] ~= 'running' then
  return {0, r[1]}
end
taskq_drop(KEYS[2], ARGV[3], r[3])
return {1, taskq_requeue_entry(KEYS[2], KEYS[1], ARGV[1])}
