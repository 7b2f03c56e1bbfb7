-- enqueue.lua: claims an idempotency key, creates the run record and queues
-- the run, as one step. Redis does not roll a script back when a command
-- fails midway, so every key is checked before the first write: either all
-- of key, record and stream entry are written, or none is. When the key is
-- held, the conflict policy says what happens instead.
--
-- KEYS[1] run hash          taskq:{ns}:run:<run id>
-- KEYS[2] task stream       taskq:{ns}:stream:<task>
-- KEYS[3] runs index        taskq:{ns}:runs
-- KEYS[4] idempotency key   taskq:{ns}:key:<key>   (absent when ARGV[6] is "none")
-- ARGV[1]  run id
-- ARGV[2]  task name
-- ARGV[3]  input (JSON)
-- ARGV[4]  additional metadata (JSON)
-- ARGV[5]  idempotency key as the user sees it ("" when not deduplicated)
-- ARGV[6]  strategy: none | ttl | status | debounce
-- ARGV[7]  hold ms: the ttl for "ttl", the fallback ttl for "status", the
--          window for "debounce"
-- ARGV[8]  retain ms after the run ends ("status" only; 0 releases at once)
-- ARGV[9]  retries allowed after handler failures
-- ARGV[10] maximum deliveries (bounds redeliveries of runs whose worker died)
-- ARGV[11] handler timeout ms (0 = none)
-- ARGV[12] record retention ms after the run ends
-- ARGV[13] now (unix ms)
-- ARGV[14] conflict policy: reject | attach | supersede | signal
-- ARGV[15] signal id (policy "signal")
-- ARGV[16] key prefix taskq:{ns}:
-- ARGV[17] consumer group
-- ARGV[18] most signals a run may hold (0 = no limit)
-- Returns:
--   {1, entry id}                 accepted ('' when scheduled: debounce)
--   {1, entry id, old owner}      accepted by superseding old owner
--   {0, owner run id, pttl ms}    rejected: the key is held; nothing written
--   {2, owner run id}             attached to the owner; nothing written
--   {3, owner run id, signal id}  the input was sent to the owner as a signal
--   {4, owner run id}             debounced: the queued owner now has this
--                                 input and the window starts again
-- A resend of the same trigger (go-redis sends a command again when its
-- reply was lost) finds the record the first send wrote, with this run ID,
-- task and creation time, and answers {1, entry id} as the first send did.
-- Errors, with nothing written:
--   "TASKQ_WRONGTYPE <key> <type>"  a key holds a value of the wrong type
--   "TASKQ_EXISTS <run id>"         a run record with this ID exists

local prefix, policy, strat = ARGV[16], ARGV[14], ARGV[6]
if redis.call('TYPE', KEYS[1])['ok'] == 'hash' then
  local first = redis.call('HMGET', KEYS[1], 'task', 'created', 'entry')
  if first[1] == ARGV[2] and first[2] == ARGV[13] then
    return {1, first[3] or ''}
  end
end
local r = {
  run_key = KEYS[1], stream_key = KEYS[2], runs_key = KEYS[3], run_id = ARGV[1],
  task = ARGV[2], input = ARGV[3], meta = ARGV[4], key = ARGV[5], strat = strat,
  hold = ARGV[7], retain = ARGV[8], retries = ARGV[9], maxdel = ARGV[10],
  timeout = ARGV[11], keep = ARGV[12], now = ARGV[13],
  prefix = prefix, group = ARGV[17], retry_key = prefix .. 'retry',
  take_over = policy == 'supersede',
}
if strat ~= 'none' then
  r.idem_key = KEYS[4]
end
if strat == 'debounce' then
  r.delay = ARGV[7]
end
local refused = taskq_enqueue_check(r)
if refused then
  if refused.err or refused[1] ~= 0 then
    return refused
  end
  local owner = refused[2]
  if strat == 'debounce' and taskq_debounce_pending(prefix, owner) then
    taskq_debounce(prefix, owner, KEYS[4], ARGV[3], ARGV[4], ARGV[7], ARGV[13])
    return {4, owner}
  end
  if policy == 'attach' then
    return {2, owner}
  end
  if policy == 'signal' then
    local s = taskq_signal(prefix, owner, ARGV[15], ARGV[3], tonumber(ARGV[18]) or 0)
    if s[1] == 1 then
      return {3, owner, ARGV[15]}
    end
  end
  return refused
end
local entry = taskq_enqueue_write(r)
if r.prev_owner then
  return {1, entry, r.prev_owner}
end
return {1, entry}
