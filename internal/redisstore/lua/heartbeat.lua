-- heartbeat.lua: extends the leases a worker holds on one task stream. A
-- lease is the idle time of the delivery in the group's pending list;
-- XCLAIM ... JUSTID by the same consumer resets it. A delivery another
-- consumer has reclaimed is never taken back.
--
-- KEYS[1] task stream     taskq:{ns}:stream:<task>
-- ARGV[1] consumer group
-- ARGV[2] consumer name
-- ARGV[3] key prefix taskq:{ns}:
-- ARGV[4..] triples: entry id, run id, attempt
-- Returns two entries per triple: a code and, for code 2, the run's error
-- (why it was cancelled, e.g. "superseded by run <id>"), else "".
--   1  lease extended
--   0  lease lost: the delivery is no longer pending for this consumer
--   2  the run was cancelled or has ended: stop
--   3  a newer attempt owns the run (this one's lease lapsed): stop
-- Fails with READONLY on a read-only replica when it would extend a lease,
-- nothing written. Redis runs it at maxmemory: XCLAIM is not a write that
-- Redis refuses there.

local out = {}
for i = 4, #ARGV, 3 do
  local entry, run_id, attempt = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local r = redis.call('HMGET', ARGV[3] .. 'run:' .. run_id, 'status', 'attempt', 'error')
  local code, detail = 0, ''
  if r[2] ~= attempt then
    code = 3
  elseif r[1] ~= 'running' then
    code, detail = 2, r[3] or ''
  else
    local p = redis.call('XPENDING', KEYS[1], ARGV[1], entry, entry, 1)
    if p[1] and p[1][2] == ARGV[2] then
      redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, entry, 'JUSTID')
      code = 1
    end
  end
  out[#out + 1] = code
  out[#out + 1] = detail
end
return out
