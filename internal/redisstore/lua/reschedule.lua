-- reschedule.lua: moves a scheduled run, one created to run later and not
-- yet due, to a new due time. Its idempotency key, when the run still owns
-- it, has its expiry moved by as much as the due time (a ttl or fallback
-- ttl counts from the due time, see docs/scheduling.md), so the key goes on
-- covering the run as long after it falls due as before.
--
-- KEYS: KEY_COUNT (2)
--   KEYS[1] KEY_RUN    run hash     taskq:{ns}:run:<run id>
--   KEYS[2] KEY_RETRY  retry zset   taskq:{ns}:retry
-- ARGV: ARG_COUNT (3)
--   ARGV[1] ARG_RUN_ID  run id
--   ARGV[2] ARG_DUE     new due time (unix ms; at or before now, the
--                       workers' forwarder queues the run at its next pass)
--   ARGV[3] ARG_PREFIX  key prefix taskq:{ns}:
-- Returns:
--   {1, previous due time (unix ms)}  moved
--   {0, why}                          nothing written; why is "missing",
--                                     "running", a terminal status, "queued"
--                                     (due already: in its task stream),
--                                     "retrying" (waiting for a retry) or
--                                     "debouncing" (waiting for its debounce
--                                     window)
-- Fails with READONLY on a read-only replica, and with OOM at maxmemory,
-- nothing written.

local run_key, retry, run_id = KEYS[KEY_RUN], KEYS[KEY_RETRY], ARGV[ARG_RUN_ID]
local r = redis.call('HMGET', run_key, RUN_STATUS, RUN_ENTRY, RUN_SPEC, RUN_ATTEMPT, RUN_FAILS,
  RUN_IDEMPOTENCY_KEY)
if not r[1] then
  return {0, 'missing'}
end
if r[1] ~= 'queued' then
  return {0, r[1]}
end
local old = redis.call('ZSCORE', retry, run_id)
if not old or (r[2] or '') ~= '' then
  return {0, 'queued'}
end
if taskq_spec_head(taskq_record_spec(run_key, r[3]) or '') == 'debounce' then
  return {0, 'debouncing'}
end
if (tonumber(r[4]) or 0) > 0 or (tonumber(r[5]) or 0) > 0 then
  return {0, 'retrying'}
end
local due = tonumber(ARGV[ARG_DUE])
redis.call('ZADD', retry, due, run_id)
if r[6] and r[6] ~= '' and r[3] ~= 'none' then
  local idem_key = taskq_key_idempotency(ARGV[ARG_PREFIX], r[6])
  if redis.call('GET', idem_key) == run_id then
    local pttl = redis.call('PTTL', idem_key)
    if pttl > 0 then
      redis.call('PEXPIRE', idem_key, math.max(pttl + due - tonumber(old), 1))
    end
  end
end
return {1, old}
