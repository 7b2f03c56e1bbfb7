-- ending.lua: ending runs. What a call that ends many runs would pay once
-- per run (releasing keys, publishing notices) it gathers and does once.

-- The statuses a run ends with, in the order of their names: how the
-- finished channel's notice lists its counts.
local ended_statuses = {'cancelled', 'failed', 'succeeded'}

-- Frees status-strategy keys, each only while its run still owns it: a
-- run whose key lapsed and was claimed by another run never frees the
-- newer owner's key. A key with retain > 0 is kept for that long instead.
-- One MGET reads every owner and one DEL frees the keys, where a GET and a
-- DEL per run would cost Redis a call each. b (see taskq_batch) holds the
-- keys' full names in its first b.n entries, their runs' ids in b.owners,
-- and in b.retains, made for the first, the retain ms of those kept.
local function taskq_release_all(b)
  local n = b.n
  if n == 0 then
    return
  end
  local owners, free, nfree = redis.call('MGET', unpack(b, 1, n)), nil, 0
  for i = 1, n do
    if owners[i] == b.owners[i] then
      local retain = b.retains and b.retains[i]
      if retain then
        redis.call('PEXPIRE', b[i], retain)
      elseif free then
        nfree = nfree + 1
        free[nfree] = b[i]
      elseif nfree < i - 1 then
        -- The first key not freed in turn: the ones to free from here on
        -- go in a list of their own.
        free = {unpack(b, 1, nfree)}
        nfree = nfree + 1
        free[nfree] = b[i]
      else
        nfree = i
      end
    end
  end
  if free then
    redis.call('DEL', unpack(free, 1, nfree))
  elseif nfree > 0 then
    -- The common case, every key freed, or the first nfree: b's own
    -- entries, with no list made for them.
    redis.call('DEL', unpack(b, 1, nfree))
  end
end

-- What taskq_end gathers across the runs one call ends, for
-- taskq_batch_done to act on once: the keys to release (see
-- taskq_release_all) and the count of runs ended per status, b[status].
-- Few tables, as each table a call makes costs Redis its making and its
-- collection (about 1.5k instructions); the keys are kept in parallel
-- lists of n entries, as appending at a table's length costs Redis a
-- search for that length each time.
local function taskq_batch()
  return {n = 0, owners = {}}
end

-- Releases the keys of the runs b gathered (see taskq_release_all) and
-- publishes their count per status, in the order of the statuses' names.
local function taskq_batch_done(prefix, b)
  taskq_release_all(b)
  local msg
  for _, status in ipairs(ended_statuses) do
    local n = b[status]
    if n then
      msg = (msg and msg .. ' ' or '') .. status .. ' ' .. n
    end
  end
  if msg then
    redis.call(CMD_PUBLISH, taskq_key_finished(prefix), msg)
  end
end

-- Ends a run whose record fields (strategy, key, retain, retention and the
-- flags) the caller has read: records the status, releases the key per
-- strategy, starts the retention clock and sends the completion notices.
-- The caller drops the run's delivery. field/value carry the result or the
-- error message (RUN_RESULT or RUN_ERROR). With began set, the attempt
-- begins in the same write (began its start time, consumer its worker; see
-- finish.lua). The fields come as arguments rather than in a table, as
-- filling a table costs Redis more for each run than passing values.
-- Callers that end many runs pass b, a taskq_batch, and call
-- taskq_batch_done once at the end; with b nil the key is released and the
-- run counted at once.
--
-- Notices: the run's done channel is published only when a waiter asked
-- for it (flag w, see watch.lua); the namespace's finished channel gets
-- the count of runs ended per status, once per script call.
local function taskq_end(prefix, run_key, run_id, status, now, field, value, strat, key, retain, keep, x, b,
    began, attempt, consumer)
  if began then
    redis.call('HSET', run_key, RUN_STATUS, status, RUN_FINISHED, now, field, value,
      RUN_ATTEMPT, attempt, RUN_STARTED, began, RUN_CONSUMER, consumer)
  else
    redis.call('HSET', run_key, RUN_STATUS, status, RUN_FINISHED, now, field, value)
  end
  local one = not b
  b = b or taskq_batch()
  if strat == 'status' and key and key ~= '' then
    local n = b.n + 1
    b.n, b[n], b.owners[n] = n, taskq_key_idempotency(prefix, key), run_id
    if retain ~= '0' and (tonumber(retain) or 0) > 0 then
      b.retains = b.retains or {}
      b.retains[n] = retain
    end
  end
  b[status] = (b[status] or 0) + 1
  if one then
    taskq_batch_done(prefix, b)
  end
  -- keep goes to PEXPIRE as the string it came as: Redis formats a Lua
  -- number passed to a command with a printf of its own, at a cost.
  local kept = (tonumber(keep) or 0) > 0
  if kept then
    redis.call('PEXPIRE', run_key, keep)
  end
  if not x or x == '' then
    return -- no flags, the common case
  end
  if kept then
    -- Signals, step results, the attempt history and the children live as
    -- long as the record.
    if taskq_has(x, 's') then
      redis.call('PEXPIRE', taskq_key_signals(prefix, run_id), keep)
    end
    if taskq_has(x, 't') then
      redis.call('PEXPIRE', taskq_key_steps(prefix, run_id), keep)
    end
    if taskq_has(x, 'a') then
      redis.call('PEXPIRE', taskq_key_attempts(prefix, run_id), keep)
    end
    if taskq_has(x, 'd') then
      redis.call('PEXPIRE', taskq_key_children(prefix, run_id), keep)
    end
  end
  if taskq_has(x, 'w') then
    redis.call(CMD_PUBLISH, taskq_key_done(prefix, run_id), status)
  end
end

-- Moves a run in any state to a terminal status: taskq_end, and its
-- delivery dropped and its retry or debounce timer removed. A run with
-- children (flag d) that is cancelled joins the partition's cascades: its
-- children are cancelled with it, by the canceller or else by a worker
-- (see children.go).
local function taskq_terminate(prefix, group, run_key, run_id, status, now, field, value)
  local r = redis.call('HMGET', run_key, RUN_TASK, RUN_SPEC, RUN_IDEMPOTENCY_KEY, RUN_ENTRY, RUN_FLAGS, RUN_PRIORITY)
  local spec = taskq_spec_values(taskq_record_spec(run_key, r[2]))
  taskq_drop_entry(prefix, group, r[1], r[4], r[6])
  taskq_end(prefix, run_key, run_id, status, now, field, value, spec[SPEC_STRATEGY], r[3], spec[SPEC_RETAIN],
    spec[SPEC_RETENTION], r[5])
  redis.call('ZREM', taskq_key_retry(prefix), run_id)
  if status == 'cancelled' and taskq_has(r[5], 'd') then
    redis.call('ZADD', taskq_key_cascades(prefix), now, run_id)
  end
end
