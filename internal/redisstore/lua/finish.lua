#!lua flags=allow-oom
-- finish.lua: records the outcomes of attempts, any number per call, each
-- as if on its own. Only a run's latest attempt may write (fencing): a
-- worker that lost its lease and wakes up late cannot overwrite the newer
-- attempt's result or release its key. What costs Redis a call per run is
-- done once for all runs at the end instead: their stream entries are
-- acknowledged with one XACK per stream and trimmed off its acknowledged
-- head (taskq_trim_acked), their keys are released with one MGET and one
-- DEL, and one notice counts them (taskq_batch_done).
--
-- An attempt that start.lua has not begun is begun here, in the same
-- write as its outcome: a worker runs a delivery's handler at once and
-- asks start.lua to begin the attempt only if the handler is still running
-- a moment later, so a short run costs one script call instead of two. It
-- begins only if the run is still queued with the delivery's entry and
-- has begun no attempt since the entry was written (the entry's spec says
-- how many it had): otherwise a cancel, a newer delivery or another worker
-- got there first, and nothing is written.
--
-- KEYS[1] retry zset    taskq:{ns}:retry
-- then one per attempt i (i = 0, 1, ...), at i+2:
--   run hash            taskq:{ns}:run:<run id>
-- ARGV[1] consumer group
-- ARGV[2] key prefix taskq:{ns}:
-- then fourteen per attempt i, at 14i+3 .. 14i+16:
--   +0  run id
--   +1  attempt (fencing token from start.lua, or the delivery's next
--       attempt for one begun here)
--   +2  outcome: succeeded | failed | retry
--   +3  result JSON (succeeded) or error message (failed, retry)
--   +4  when the attempt ended (unix ms)
--   +5  retry due time (unix ms; outcome "retry" only)
--   +6  task, +7 stream entry id, +8 strategy, +9 idempotency key,
--   +10 retain ms, +11 retention ms: what the delivery told the worker
--       (none of them changes once the run is queued), so they need not be
--       read from the record. With +8 "" they are read from the record.
--   +12 when the handler began (unix ms) for an attempt to begin here
--       (needs +6 .. +11), "" for one start.lua began
--   +13 the worker's consumer name, for an attempt to begin here
-- Returns a flat array with two values per attempt, in order (Redis turns
-- a table in a reply into a reply much more slowly than a plain value):
--   1, status     written; status is succeeded, failed, or queued (retry scheduled)
--   0, reason     nothing written: "missing", "stale" (a newer attempt owns
--                 the run), or the run's status when it already ended (cancelled)
--   an error reply "TASKQ_WRONGTYPE <key> <type>", "" when the run key holds
--   something else than a run; nothing is written for that attempt
-- On a read-only replica the call fails with READONLY, nothing written. It
-- runs at maxmemory (flag allow-oom): ending runs is how memory is freed
-- while new triggers are refused (their deliveries and keys go, and their
-- records start to expire), so workers keep draining the queue; what it
-- adds is each run's result (see docs/operations.md).

local group, prefix = ARGV[1], ARGV[2]
local entries = {} -- task -> stream entries to acknowledge and trim
local counts = {}  -- task -> how many entries
local tasks = {}   -- tasks in the order first seen
local b = taskq_batch()

-- One attempt's outcome. What the delivery told the worker comes as
-- arguments (a, the attempt's first ARGV) and locals: filling a table for
-- each attempt would cost Redis more.
local function finish(run_key, a)
  local run_id, attempt, outcome, payload, now = ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4]
  local task, entry, strat, key, retain, keep = ARGV[a + 6], ARGV[a + 7], ARGV[a + 8], ARGV[a + 9], ARGV[a + 10],
    ARGV[a + 11]
  local began = ARGV[a + 12]
  local r
  if strat == '' then
    began = nil
    r = redis.pcall('HMGET', run_key, 'status', 'attempt', 'x',
      'task', 'entry', 'strat', 'key', 'retain', 'keep')
    if not r.err then
      task, entry, strat, key, retain, keep = r[4], r[5], r[6], r[7], r[8], r[9]
    end
  elseif began ~= '' then
    r = redis.pcall('HMGET', run_key, 'status', 'attempt', 'x', 'entry')
  else
    began = nil
    r = redis.pcall('HMGET', run_key, 'status', 'attempt', 'x')
  end
  if r.err then
    return taskq_failed(run_key, r), ''
  end
  local status = r[1]
  if not status then
    return 0, 'missing'
  end
  if began then
    -- Begun here: only while nothing happened to the run since the entry.
    if taskq_is_terminal(status) then
      return 0, status
    end
    if status ~= 'queued' or r[4] ~= entry or (tonumber(r[2]) or 0) + 1 ~= tonumber(attempt) then
      return 0, 'stale'
    end
  else
    if tonumber(r[2]) ~= tonumber(attempt) then
      return 0, 'stale'
    end
    if status ~= 'running' then
      return 0, status
    end
  end
  if task and entry and entry ~= '' then
    local e = entries[task]
    if not e then
      e = {}
      entries[task], counts[task] = e, 0
      tasks[#tasks + 1] = task
    end
    local n = counts[task] + 1
    e[n], counts[task] = entry, n
  end
  if outcome == 'succeeded' or outcome == 'failed' then
    -- A running run is in no retry or debounce timer, so unlike
    -- taskq_terminate there is nothing to remove from the retry zset.
    local field = outcome == 'succeeded' and 'result' or 'error'
    taskq_end(prefix, run_key, run_id, outcome, now, field, payload, strat, key, retain, keep, r[3], b,
      began, attempt, ARGV[a + 13])
    return 1, outcome
  end
  -- retry: the key stays held through every retry of a status-strategy run.
  if began then
    redis.call('HSET', run_key, 'status', 'queued', 'error', payload, 'entry', '',
      'attempt', attempt, 'started', began, 'consumer', ARGV[a + 13])
  else
    redis.call('HSET', run_key, 'status', 'queued', 'error', payload, 'entry', '')
  end
  redis.call('HINCRBY', run_key, 'fails', 1)
  redis.call('ZADD', KEYS[1], ARGV[a + 5], run_id)
  return 1, 'queued'
end

local out = {}
for i = 0, #KEYS - 2 do
  out[2 * i + 1], out[2 * i + 2] = finish(KEYS[i + 2], 14 * i + 3)
end
taskq_batch_done(prefix, b)
for _, task in ipairs(tasks) do
  local s, e, n = prefix .. 'stream:' .. task, entries[task], counts[task]
  -- In slices, as unpack's results must fit Lua's stack.
  for j = 1, n, 1000 do
    redis.call('XACK', s, group, unpack(e, j, math.min(j + 999, n)))
  end
  taskq_trim_acked(s, group, e)
end
return out
