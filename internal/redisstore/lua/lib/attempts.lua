-- attempts.lua: a run's attempt history (keyAttempts), written on the
-- paths where an attempt ends without succeeding.

-- Appends an attempt that ended without succeeding to the run's attempt
-- history (keyAttempts), trimmed to its latest MAX_ATTEMPT_RECORDS, and
-- sets flag a so that the history expires with the record (taskq_end).
-- Only the failure, retry, lapse and requeue paths call it: a run whose
-- attempt succeeds writes nothing here. x is the flags field as the caller
-- read it; began nil reads the attempt's start and worker from the record
-- (an attempt start.lua began). Returns the flags field as it is now, for
-- a caller that goes on to end the run.
local function taskq_add_attempt(prefix, run_key, run_id, x, attempt, outcome, began, ended, consumer, err)
  if not began then
    local r = redis.call('HMGET', run_key, RUN_STARTED, RUN_CONSUMER)
    began, consumer = r[1] or '', r[2] or ''
  end
  redis.call('XADD', taskq_key_attempts(prefix, run_id), 'MAXLEN', MAX_ATTEMPT_RECORDS, '*',
    ATTEMPT_ENTRY_NUMBER, attempt, ATTEMPT_ENTRY_OUTCOME, outcome, ATTEMPT_ENTRY_BEGAN, began,
    ATTEMPT_ENTRY_ENDED, ended, ATTEMPT_ENTRY_CONSUMER, consumer or '', ATTEMPT_ENTRY_ERROR, err or '')
  x = x or ''
  if not string.find(x, 'a', 1, true) then
    x = x .. 'a'
    redis.call('HSET', run_key, RUN_FLAGS, x)
  end
  return x
end
