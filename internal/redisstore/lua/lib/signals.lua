-- signals.lua: appending a signal to a run's signal stream, for signal.lua
-- and for a trigger whose conflict policy sends its input to the key's
-- owner as a signal (enqueue.lua).

-- Reports whether a run waiting for what (its RUN_WAITING) is woken by a
-- wake: a signal wait, an event wait or a wait for its children.
local function taskq_wakeable(what)
  return what ~= nil and what ~= false and (string.sub(what, 1, #WAIT_SIGNAL_PREFIX) == WAIT_SIGNAL_PREFIX or
    string.sub(what, 1, #WAIT_EVENT_PREFIX) == WAIT_EVENT_PREFIX or
    string.sub(what, 1, #WAIT_CHILDREN_PREFIX) == WAIT_CHILDREN_PREFIX)
end

-- Wakes a run (status, not ended) whose handler waits durably for a
-- signal or an event (see wake.lua): a waiting run is queued again at once, to replay and read it (one
-- that sleeps keeps sleeping). A run whose handler is at work may be about
-- to wait, having looked for a signal just before this one came: the wake
-- is recorded against its attempt (RUN_WAKE, the attempt a queued run's
-- handler runs as if one runs before its start), and finish.lua does not
-- let that attempt's signal wait wait.
local function taskq_wake(prefix, run_key, run_id, status)
  if status == STATUS_WAITING then
    local w = redis.call('HMGET', run_key, RUN_WAITING, RUN_TASK)
    if taskq_wakeable(w[1]) then
      redis.call('ZREM', taskq_key_retry(prefix), run_id)
      redis.call('HDEL', run_key, RUN_WAITING)
      taskq_requeue_entry(taskq_key_stream(prefix, w[2]), run_key, run_id)
    end
    return
  end
  local attempt = tonumber(redis.call('HGET', run_key, RUN_ATTEMPT)) or 0
  if status == 'queued' then
    attempt = attempt + 1
  end
  redis.call('HSET', run_key, RUN_WAKE, string.format('%d', attempt))
end

-- Appends a signal to an active run's ordered signal stream, once per
-- signal id, and wakes the run if it waits for one (finish.lua, outcome
-- wait). Returns
-- {1, run id, signal id}, or {0, reason, run id, status} when the run is
-- missing or has ended, or {0, 'full', run id} at the per-run limit.
local function taskq_signal(prefix, run_id, signal_id, payload, limit)
  local run_key = taskq_key_run(prefix, run_id)
  local status = redis.call('HGET', run_key, RUN_STATUS)
  if not status then
    return {0, 'missing', run_id, ''}
  end
  if taskq_is_terminal(status) then
    return {0, 'finished', run_id, status}
  end
  local s = taskq_key_signals(prefix, run_id)
  -- A resent call (its reply was lost) finds its signal among the newest
  -- and is answered as the first send was, rather than delivered twice.
  for _, e in ipairs(redis.call('XREVRANGE', s, '+', '-', 'COUNT', 16)) do
    if e[2][1] == SIGNAL_ENTRY_ID and e[2][2] == signal_id then
      return {1, run_id, signal_id}
    end
  end
  if limit > 0 and redis.call('XLEN', s) >= limit then
    return {0, 'full', run_id, status}
  end
  redis.call('XADD', s, '*', SIGNAL_ENTRY_ID, signal_id, SIGNAL_ENTRY_PAYLOAD, payload)
  taskq_flag(run_key, 's')
  taskq_wake(prefix, run_key, run_id, status)
  return {1, run_id, signal_id}
end
