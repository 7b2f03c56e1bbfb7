-- enqueue.lua: triggers runs. For each trigger it claims the idempotency
-- key, creates the run record and queues the run, as one step; when the key
-- is held, the conflict policy says what happens instead. One call takes
-- any number of triggers, handled in order as if each were its own call:
-- a later trigger of a key meets the run an earlier one created. A trigger
-- is written whole or not at all (see taskq_enqueue_write), and one refused
-- trigger does not stop the others.
--
-- KEYS, four per trigger i (i = 0, 1, ...), at 4i+1 .. 4i+4:
--   run hash          taskq:{ns}:run:<run id>
--   task stream       taskq:{ns}:stream:<task>
--   runs index        taskq:{ns}:runs
--   idempotency key   taskq:{ns}:key:<key>   (the runs index again when the
--                                            strategy is "none")
-- ARGV[1] key prefix taskq:{ns}:
-- ARGV[2] consumer group
-- then sixteen per trigger i, at 16i+3 .. 16i+18:
--   +0  run id
--   +1  task name
--   +2  input (JSON)
--   +3  additional metadata (JSON)
--   +4  idempotency key as the user sees it ("" when not deduplicated)
--   +5  strategy: none | ttl | status | debounce
--   +6  hold ms: the ttl for "ttl", the fallback ttl for "status", the
--       window for "debounce"
--   +7  retain ms after the run ends ("status" only; 0 releases at once)
--   +8  retries allowed after handler failures
--   +9  maximum deliveries (bounds redeliveries of runs whose worker died)
--   +10 handler timeout ms (0 = none)
--   +11 record retention ms after the run ends
--   +12 now (unix ms)
--   +13 conflict policy: reject | attach | supersede | signal
--   +14 signal id (policy "signal")
--   +15 most signals a run may hold (0 = no limit)
-- Returns an array with one reply per trigger, in order:
--   {1, entry id}                 accepted ('' when scheduled: debounce)
--   {1, entry id, old owner}      accepted by superseding old owner
--   {0, owner run id, pttl ms}    rejected: the key is held; nothing written
--   {2, owner run id}             attached to the owner; nothing written
--   {3, owner run id, signal id}  the input was sent to the owner as a signal
--   {4, owner run id}             debounced: the queued owner now has this
--                                 input and the window starts again
--   an error reply, with nothing written for this trigger:
--     "TASKQ_WRONGTYPE <key> <type>"  a key holds a value of the wrong type
--     "TASKQ_EXISTS <run id>"         a run record with this ID exists
--     "TASKQ_OOM ..."                 Redis is at maxmemory: it refuses the
--                                     first write of a call (a trigger that
--                                     needs no write, a duplicate, is still
--                                     answered)
--     "TASKQ_READONLY ..."            the server is a read-only replica
-- The call as a whole fails with OOM or READONLY, nothing written, when its
-- first write is a debounce or a signal to a key's owner, which are not
-- written with pcall.
-- A resend of the same trigger (go-redis sends a command again when its
-- reply was lost) finds the record the first send wrote, with this run ID,
-- task and creation time, and answers {1, entry id} as the first send did.

local prefix, group = ARGV[1], ARGV[2]

local function trigger(k, a)
  local run_key = KEYS[k]
  local run_id, task, input, meta = ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3]
  local strat, hold, now, policy = ARGV[a + 5], ARGV[a + 6], ARGV[a + 12], ARGV[a + 13]
  if redis.call('EXISTS', run_key) == 1 then
    local first = redis.pcall('HMGET', run_key, 'task', 'created', 'entry')
    if not first.err and first[1] == task and first[2] == now then
      return {1, first[3] or ''}
    end
    return redis.error_reply('TASKQ_EXISTS ' .. run_id)
  end
  local r = {
    run_key = run_key, stream_key = KEYS[k + 1], runs_key = KEYS[k + 2], run_id = run_id,
    task = task, input = input, meta = meta, key = ARGV[a + 4], strat = strat,
    hold = hold, retain = ARGV[a + 7], retries = ARGV[a + 8], maxdel = ARGV[a + 9],
    timeout = ARGV[a + 10], keep = ARGV[a + 11], now = now,
    prefix = prefix, group = group, retry_key = prefix .. 'retry',
    take_over = policy == 'supersede', run_checked = true,
  }
  if strat ~= 'none' then
    r.idem_key = KEYS[k + 3]
  end
  if strat == 'debounce' then
    r.delay = hold
  end
  local refused = taskq_enqueue_check(r)
  if refused then
    if refused.err or refused[1] ~= 0 then
      return refused
    end
    local owner = refused[2]
    if strat == 'debounce' and taskq_debounce_pending(prefix, owner) then
      taskq_debounce(prefix, owner, r.idem_key, input, meta, hold, now)
      return {4, owner}
    end
    if policy == 'attach' then
      return {2, owner}
    end
    if policy == 'signal' then
      local s = taskq_signal(prefix, owner, ARGV[a + 14], input, tonumber(ARGV[a + 15]) or 0)
      if s[1] == 1 then
        return {3, owner, ARGV[a + 14]}
      end
    end
    return refused
  end
  local entry = taskq_enqueue_write(r)
  if type(entry) == 'table' then
    return entry
  end
  if r.prev_owner then
    return {1, entry, r.prev_owner}
  end
  return {1, entry}
end

local out = {}
for i = 0, #KEYS / 4 - 1 do
  out[i + 1] = trigger(4 * i + 1, 16 * i + 3)
end
return out
