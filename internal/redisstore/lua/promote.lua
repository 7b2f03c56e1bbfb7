#!lua flags=allow-oom
-- promote.lua: queues runs whose retry backoff has elapsed.
--
-- KEYS[1] retry zset      taskq:{ns}:retry
-- ARGV[1] now (unix ms)
-- ARGV[2] most runs to move in one call
-- ARGV[3] key prefix taskq:{ns}:
-- Returns the number of runs queued again.
-- Fails with READONLY on a read-only replica, nothing written. Runs at
-- maxmemory (flag allow-oom): runs already accepted must reach their
-- retries to end, and end to free memory.

local prefix = ARGV[3]
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])
local n = 0
for _, run_id in ipairs(due) do
  local run_key = prefix .. 'run:' .. run_id
  local r = redis.call('HMGET', run_key, 'status', 'task')
  if r[1] == 'queued' then
    taskq_requeue_entry(prefix .. 'stream:' .. r[2], run_key, run_id)
    n = n + 1
  end
  redis.call('ZREM', KEYS[1], run_id)
end
return n
