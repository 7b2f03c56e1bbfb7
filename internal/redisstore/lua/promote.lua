#!lua flags=allow-oom
-- promote.lua: queues runs whose retry backoff has elapsed (or debounce
-- window, or wait for a rate limit: ratelimit_defer.lua, or durable wait:
-- finish.lua), and clears the reason a held-back run gave for waiting
-- (RUN_WAITING).
--
-- KEYS: KEY_COUNT (1)
--   KEYS[1] KEY_RETRY  retry zset  taskq:{ns}:retry
-- ARGV: ARG_COUNT (3)
--   ARGV[1] ARG_NOW     now (unix ms)
--   ARGV[2] ARG_LIMIT   most runs to move in one call
--   ARGV[3] ARG_PREFIX  key prefix taskq:{ns}:
-- Returns {the number of runs queued again, when the earliest run left in
-- the zset is due (its score, unix ms; "" when none is left)}, so that a
-- forwarder learns when to call again without a second command.
-- Fails with READONLY on a read-only replica, nothing written. Runs at
-- maxmemory (flag allow-oom): runs already accepted must reach their
-- retries to end, and end to free memory.

local prefix, retry = ARGV[ARG_PREFIX], KEYS[KEY_RETRY]
local due = redis.call('ZRANGEBYSCORE', retry, '-inf', ARGV[ARG_NOW], 'LIMIT', 0, ARGV[ARG_LIMIT])
local n = 0
for _, run_id in ipairs(due) do
  local run_key = taskq_key_run(prefix, run_id)
  local r = redis.call('HMGET', run_key, RUN_STATUS, RUN_TASK)
  if r[1] == 'queued' or r[1] == STATUS_WAITING then
    taskq_requeue_entry(taskq_key_stream(prefix, r[2]), run_key, run_id)
    redis.call('HDEL', run_key, RUN_WAITING)
    n = n + 1
  end
  redis.call('ZREM', retry, run_id)
end
local next = redis.call('ZRANGE', retry, 0, 0, 'WITHSCORES')
return {n, next[2] or ''}
