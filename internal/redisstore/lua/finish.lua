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
-- An attempt that fails or is retried is also appended to the run's
-- attempt history (taskq_add_attempt, capped at MAX_ATTEMPT_RECORDS); one
-- that succeeds is not: the record keeps the latest attempt.
--
-- KEYS: KEY_COUNT (1):
--   KEYS[1] KEY_RETRY  retry zset  taskq:{ns}:retry
-- Each attempt's run hash taskq:{ns}:run:<run id> is named from the prefix
-- and its run ID, in KEYS[1]'s hash tag: sent as KEYS as well, it would
-- cost Redis more (each argument is read, made an object and handed to
-- Lua as a string) than the name costs to build.
-- ARGV: ARG_COUNT (3) first,
--   ARGV[1] ARG_GROUP     consumer group
--   ARGV[2] ARG_PREFIX    key prefix taskq:{ns}:
--   ARGV[3] ARG_CONSUMER  the worker's consumer name, recorded for the
--                         attempts begun here (one worker's outcomes share
--                         a call; "" when none begins here)
-- then ITEM_ARG_COUNT (11) per attempt i, at 11i+4 .. 11i+14:
--   +0  ITEM_ARG_RUN_ID           run id
--   +1  ITEM_ARG_ATTEMPT          attempt (fencing token from start.lua, or the
--                                 delivery's next attempt for one begun here)
--   +2  ITEM_ARG_OUTCOME          outcome: succeeded | failed | "retry <due>" |
--                                 "wait <due>", due the retry's due time or
--                                 when the waiting run wakes (unix ms)
--   +3  ITEM_ARG_PAYLOAD          result JSON (succeeded), error message
--                                 (failed, retry), or what the run waits for
--                                 (wait)
--   +4  ITEM_ARG_NOW              when the attempt ended (unix ms)
--   +5  ITEM_ARG_TASK             task, or for a run of a priority above the
--                                 default its lane, <task>|p<n>: names the
--                                 stream of its entry ("" to read +5 .. +9
--                                 from the record),
--   +6  ITEM_ARG_ENTRY            stream entry id,
--   +7  ITEM_ARG_IDEMPOTENCY_KEY  the key to release: the idempotency key of
--                                 a status-strategy run, "" for any other,
--   +8  ITEM_ARG_RETAIN           retain ms,
--   +9  ITEM_ARG_RETENTION        retention ms: what the delivery told the
--                                 worker (none of them changes once the run
--                                 is queued), so they need not be read from
--                                 the record.
--   +10 ITEM_ARG_BEGAN            when the handler began (unix ms) for an
--                                 attempt to begin here (needs +5 .. +9), ""
--                                 for one start.lua began
-- Returns a flat array with two values per attempt, in order (Redis turns
-- a table in a reply into a reply much more slowly than a plain value):
--   1, status     written; status is succeeded, failed, queued (retry
--                 scheduled) or waiting
--   0, reason     nothing written: "missing", "stale" (a newer attempt owns
--                 the run), or the run's status when it already ended (cancelled)
--   an error reply "TASKQ_WRONGTYPE <key> <type>", "" when the run key holds
--   something else than a run; nothing is written for that attempt
-- On a read-only replica the call fails with READONLY, nothing written. It
-- runs at maxmemory (flag allow-oom): ending runs is how memory is freed
-- while new triggers are refused (their deliveries and keys go, and their
-- records start to expire), so workers keep draining the queue; what it
-- adds is each run's result (see docs/operations.md).

local group, prefix, consumer = ARGV[ARG_GROUP], ARGV[ARG_PREFIX], ARGV[ARG_CONSUMER]
-- The stream entries to acknowledge and trim: of the first task seen
-- (task1, n1 entries in e1), and of the others in more (its first more.n
-- entries name them in the order seen, and more[task] lists a task's
-- entries, with their count at [0]), made only for a second task. A call
-- of one task's runs, the common case, makes no table for them but e1:
-- each table a call makes costs Redis its making and its collection.
local task1, e1, n1, more = nil, nil, 0, nil
local b = taskq_batch()

-- Each attempt's outcome, c and v in the reply. What the delivery told the
-- worker comes as arguments (a, the attempt's first ARGV) read into
-- locals: filling a table for each attempt would cost Redis more. It is
-- written in the loop rather than as a function: the call would make such
-- a function anew each time it runs (a closure over the call's locals).
local out = {}
local a = ARG_COUNT + 1 -- the first attempt's ARGV
for i = 0, (#ARGV - ARG_COUNT) / ITEM_ARG_COUNT - 1 do
  local c, v
  repeat -- once: a break ends the attempt
    local run_id, attempt, outcome, payload, now = ARGV[a + ITEM_ARG_RUN_ID], ARGV[a + ITEM_ARG_ATTEMPT],
      ARGV[a + ITEM_ARG_OUTCOME], ARGV[a + ITEM_ARG_PAYLOAD], ARGV[a + ITEM_ARG_NOW]
    local run_key = taskq_key_run(prefix, run_id)
    -- A key sent with the delivery's fields is a status-strategy run's,
    -- the only kind finishing releases (taskq_end).
    local task, entry, strat, key, retain, keep = ARGV[a + ITEM_ARG_TASK], ARGV[a + ITEM_ARG_ENTRY], 'status',
      ARGV[a + ITEM_ARG_IDEMPOTENCY_KEY], ARGV[a + ITEM_ARG_RETAIN], ARGV[a + ITEM_ARG_RETENTION]
    local began, retry_at = ARGV[a + ITEM_ARG_BEGAN], nil
    if outcome ~= 'succeeded' and outcome ~= 'failed' then
      if string.byte(outcome, 1) == 119 then -- "wait <due>"
        retry_at, outcome = string.sub(outcome, 6), 'wait'
      else
        retry_at, outcome = string.sub(outcome, 7), 'retry' -- "retry <due>"
      end
    end
    local r
    if task == '' then
      began = nil
      r = redis.pcall('HMGET', run_key, RUN_STATUS, RUN_ATTEMPT, RUN_FLAGS, RUN_TASK, RUN_ENTRY, RUN_SPEC,
        RUN_IDEMPOTENCY_KEY, RUN_PRIORITY)
      if not r.err then
        local spec = taskq_spec_values(taskq_record_spec(run_key, r[6]))
        task, entry, strat, key, retain, keep = r[4], r[5], spec[SPEC_STRATEGY], r[7], spec[SPEC_RETAIN],
          spec[SPEC_RETENTION]
        if task and r[8] then
          task = task .. STREAM_LANE .. r[8] -- the stream named below: its lane
        end
      end
    elseif began ~= '' then
      r = redis.pcall('HMGET', run_key, RUN_STATUS, RUN_ATTEMPT, RUN_FLAGS, RUN_ENTRY)
    else
      began = nil
      r = redis.pcall('HMGET', run_key, RUN_STATUS, RUN_ATTEMPT, RUN_FLAGS)
    end
    if r.err then
      c, v = taskq_failed(run_key, r), ''
      break
    end
    local status = r[1]
    if not status then
      c, v = 0, 'missing'
      break
    end
    if began then
      -- Begun here: only while nothing happened to the run since the entry.
      if taskq_is_terminal(status) then
        c, v = 0, status
        break
      end
      -- Attempts are written as decimal integers, so compared as strings
      -- where they can be (tonumber costs Redis about 700 instructions).
      if status ~= 'queued' or r[4] ~= entry or (r[2] and (tonumber(r[2]) or 0) + 1 ~= tonumber(attempt)) or
          (not r[2] and attempt ~= '1') then
        c, v = 0, 'stale'
        break
      end
    else
      if r[2] ~= attempt then
        c, v = 0, 'stale'
        break
      end
      if status ~= 'running' then
        c, v = 0, status
        break
      end
    end
    if task and entry and entry ~= '' then
      if task == task1 then
        n1 = n1 + 1
        e1[n1] = entry
      elseif not task1 then
        task1, e1, n1 = task, {entry}, 1
      else
        more = more or {n = 0}
        local e = more[task]
        if e then
          e[0] = e[0] + 1
          e[e[0]] = entry
        else
          more.n = more.n + 1
          more[more.n], more[task] = task, {[0] = 1, entry}
        end
      end
    end
    if outcome == 'wait' then
      -- The handler waits durably: the run gives its delivery back and
      -- sleeps in the retry zset until due (or a signal, see signal.lua).
      -- Neither a failure nor a delivery that counts (start.lua subtracts
      -- RUN_WAITS), and the key stays held as through a retry.
      if began then
        redis.call('HSET', run_key, RUN_STATUS, STATUS_WAITING, RUN_WAITING, payload, RUN_ENTRY, '',
          RUN_ATTEMPT, attempt, RUN_STARTED, began, RUN_CONSUMER, consumer)
      else
        redis.call('HSET', run_key, RUN_STATUS, STATUS_WAITING, RUN_WAITING, payload, RUN_ENTRY, '')
      end
      redis.call('HINCRBY', run_key, RUN_WAITS, 1)
      -- A wake that came while this attempt ran (see taskq_wake) ends a
      -- signal or event wait before it starts: the run is queued again at
      -- once.
      if taskq_wakeable(payload) and redis.call('HGET', run_key, RUN_WAKE) == attempt then
        redis.call('HDEL', run_key, RUN_WAITING)
        -- task names the delivery's stream, the lane of a run of another
        -- priority: the record names the task.
        taskq_requeue_entry(taskq_key_stream(prefix, redis.call('HGET', run_key, RUN_TASK)), run_key, run_id)
        c, v = 1, 'queued'
        break
      end
      redis.call('ZADD', KEYS[KEY_RETRY], retry_at, run_id)
      c, v = 1, STATUS_WAITING
      break
    end
    local x = r[3]
    if outcome ~= 'succeeded' then
      -- A failure or a retry goes into the attempt history; a success is
      -- the record's latest attempt and writes nothing more.
      x = taskq_add_attempt(prefix, run_key, run_id, x, attempt, outcome, began, now, consumer,
        payload)
    end
    if outcome == 'succeeded' or outcome == 'failed' then
      -- A running run is in no retry or debounce timer, so unlike
      -- taskq_terminate there is nothing to remove from the retry zset.
      local field = outcome == 'succeeded' and RUN_RESULT or RUN_ERROR
      taskq_end(prefix, run_key, run_id, outcome, now, field, payload, strat, key, retain, keep, x, b,
        began, attempt, consumer)
      c, v = 1, outcome
      break
    end
    -- retry: the key stays held through every retry of a status-strategy run.
    if began then
      redis.call('HSET', run_key, RUN_STATUS, 'queued', RUN_ERROR, payload, RUN_ENTRY, '',
        RUN_ATTEMPT, attempt, RUN_STARTED, began, RUN_CONSUMER, consumer)
    else
      redis.call('HSET', run_key, RUN_STATUS, 'queued', RUN_ERROR, payload, RUN_ENTRY, '')
    end
    redis.call('HINCRBY', run_key, RUN_FAILS, 1)
    redis.call('ZADD', KEYS[KEY_RETRY], retry_at, run_id)
    c, v = 1, 'queued'
  until true
  out[2 * i + 1], out[2 * i + 2] = c, v
  a = a + ITEM_ARG_COUNT
end
taskq_batch_done(prefix, b)
-- Acknowledges and trims one task's entries (e, n of them). Its values
-- come as arguments: a function of the call that reads its locals costs
-- Redis more to make.
local function ack(key_prefix, consumer_group, task, e, n)
  local s = taskq_key_stream(key_prefix, task)
  -- In slices, as unpack's results must fit Lua's stack.
  for j = 1, n, 1000 do
    redis.call('XACK', s, consumer_group, unpack(e, j, math.min(j + 999, n)))
  end
  taskq_trim_acked(s, consumer_group, e)
end
if task1 then
  ack(prefix, group, task1, e1, n1)
end
if more then
  for j = 1, more.n do
    ack(prefix, group, more[j], more[more[j]], more[more[j]][0])
  end
end
return out
