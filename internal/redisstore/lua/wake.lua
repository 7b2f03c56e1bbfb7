#!lua flags=allow-oom
-- wake.lua: wakes runs whose handlers wait durably for an event, a
-- signal or their children: each run still waiting is queued again at once, and a
-- run whose handler is at work has the wake recorded against its attempt
-- (taskq_wake in lib/signals.lua). Runs that are missing, ended, or wait
-- for something else (a sleep) are left alone. Any number of runs per
-- call, each as if on its own.
--
-- KEYS: KEY_COUNT (1):
--   KEYS[1] KEY_RETRY  retry zset  taskq:{ns}:retry
-- which routes the call to the partition's node; each run's hash
-- taskq:{ns}:run:<run id> is named from the prefix, in its hash tag.
-- ARGV: ARG_COUNT (1) first,
--   ARGV[1] ARG_PREFIX  key prefix taskq:{ns}:
-- then ITEM_ARG_COUNT (1) per run i, at i+2:
--   +0 ITEM_ARG_RUN_ID  run id
-- Returns a flat array with one value per run, in order: its status before
-- the wake ("" for a missing run), or an error reply "TASKQ_WRONGTYPE <key>
-- <type>" when its key holds something else than a run (nothing written
-- for it).
-- Fails with READONLY on a read-only replica, nothing written. It runs at
-- maxmemory (flag allow-oom), as promote.lua does: it advances runs already
-- accepted.

local prefix = ARGV[ARG_PREFIX]
local out = {}
for i = ARG_COUNT + 1, #ARGV, ITEM_ARG_COUNT do
  local run_id = ARGV[i + ITEM_ARG_RUN_ID]
  local run_key = taskq_key_run(prefix, run_id)
  local status = redis.pcall('HGET', run_key, RUN_STATUS)
  if type(status) == 'table' and status.err then
    out[#out + 1] = taskq_failed(run_key, status)
  else
    if status and not taskq_is_terminal(status) then
      taskq_wake(prefix, run_key, run_id, status)
    end
    out[#out + 1] = status or ''
  end
end
return out
