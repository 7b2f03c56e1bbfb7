-- heartbeat.lua: extends the leases a worker holds on one task stream. A
-- lease is the idle time of the delivery in the group's pending list;
-- XCLAIM ... JUSTID by the same consumer resets it. A delivery another
-- consumer has reclaimed is never taken back.
--
-- KEYS: KEY_COUNT (1)
--   KEYS[1] KEY_STREAM  task stream  taskq:{ns}:stream:<task>
-- ARGV: ARG_COUNT (3) first,
--   ARGV[1] ARG_GROUP     consumer group
--   ARGV[2] ARG_CONSUMER  consumer name
--   ARGV[3] ARG_PREFIX    key prefix taskq:{ns}:
-- then ITEM_ARG_COUNT (3) per lease i (i = 0, 1, ...), at 3i+4 .. 3i+6:
--   +0 ITEM_ARG_ENTRY    stream entry id
--   +1 ITEM_ARG_RUN_ID   run id
--   +2 ITEM_ARG_ATTEMPT  attempt (fencing token)
-- Returns two entries per lease: a code and, for code 2, the run's error
-- (why it was cancelled, e.g. "superseded by run <id>"), else "".
--   1  lease extended
--   0  lease lost: the delivery is no longer pending for this consumer
--   2  the run was cancelled or has ended: stop
--   3  a newer attempt owns the run (this one's lease lapsed): stop
-- Fails with READONLY on a read-only replica when it would extend a lease,
-- nothing written. Redis runs it at maxmemory: XCLAIM is not a write that
-- Redis refuses there.

local stream, group, consumer, prefix = KEYS[KEY_STREAM], ARGV[ARG_GROUP], ARGV[ARG_CONSUMER], ARGV[ARG_PREFIX]
local out = {}
for a = ARG_COUNT + 1, #ARGV, ITEM_ARG_COUNT do
  local entry, run_id, attempt = ARGV[a + ITEM_ARG_ENTRY], ARGV[a + ITEM_ARG_RUN_ID], ARGV[a + ITEM_ARG_ATTEMPT]
  local r = redis.call('HMGET', taskq_key_run(prefix, run_id), RUN_STATUS, RUN_ATTEMPT, RUN_ERROR)
  local code, detail = 0, ''
  if r[2] ~= attempt then
    code = 3
  elseif r[1] ~= 'running' then
    code, detail = 2, r[3] or ''
  else
    local p = redis.call('XPENDING', stream, group, entry, entry, 1)
    if p[1] and p[1][2] == consumer then
      redis.call('XCLAIM', stream, group, consumer, 0, entry, 'JUSTID')
      code = 1
    end
  end
  out[#out + 1] = code
  out[#out + 1] = detail
end
return out
