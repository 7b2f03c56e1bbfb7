#!lua flags=allow-oom
-- take_parked.lua: the parked runs of one partition a recoverer looks at
-- (see concurrency_park.lua): up to ARG_LIMIT of those due at or before
-- now, each due again at ARG_NEXT, so that recoverers share the work and
-- look at a run that waits long only now and then. Entries whose run is
-- gone, ended or no longer parked leave the index.
--
-- KEYS: KEY_COUNT (1)
--   KEYS[1] KEY_PARKED  parked index  taskq:{ns}:parked
-- ARGV: ARG_COUNT (4)
--   ARGV[1] ARG_NOW     now (unix ms)
--   ARGV[2] ARG_NEXT    when the runs taken are due again (unix ms)
--   ARGV[3] ARG_LIMIT   most runs to take
--   ARGV[4] ARG_PREFIX  key prefix taskq:{ns}:
-- Returns a flat array with four values per run taken: run id, task,
-- concurrency group, and which of the task's concurrency limits the group
-- is of (its index).
-- On a read-only replica the call fails with READONLY, nothing written. It
-- runs at maxmemory (flag allow-oom): it only moves scores and removes.

local parked, prefix = KEYS[KEY_PARKED], ARGV[ARG_PREFIX]
local due = redis.call('ZRANGEBYSCORE', parked, '-inf', ARGV[ARG_NOW], 'LIMIT', 0, ARGV[ARG_LIMIT])
local out = {}
for _, run_id in ipairs(due) do
  local r = redis.call('HMGET', taskq_key_run(prefix, run_id), RUN_STATUS, RUN_TASK, RUN_CONCURRENCY_GROUP,
    RUN_CONCURRENCY_LIMIT)
  if r[1] == 'queued' and r[3] then
    redis.call('ZADD', parked, ARGV[ARG_NEXT], run_id)
    local n = #out
    out[n + 1], out[n + 2], out[n + 3], out[n + 4] = run_id, r[2], r[3], r[4] or '0'
  else
    redis.call('ZREM', parked, run_id)
  end
end
return out
