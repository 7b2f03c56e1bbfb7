#!lua flags=allow-oom
-- take_fanouts.lua: takes over fan-outs whose ingester left them pending
-- (see fanout.go). A fan-out taken is given a new time in the pending ones,
-- now, so that no other recoverer takes it before the grace period has
-- passed again; one whose recoverer dies too is taken again then. Entries
-- whose event is gone (expired) or no longer pending are removed.
--
-- Redis runs it at maxmemory: it only moves and removes entries.
--
-- KEYS: KEY_COUNT (1),
--   KEYS[1] KEY_FANOUTS  pending fan-outs  taskq:{ns}:fanouts
-- ARGV: ARG_COUNT (4),
--   ARGV[1] ARG_CUTOFF        take fan-outs whose time is at or before it
--                             (unix ms)
--   ARGV[2] ARG_NOW           now (unix ms), their new time
--   ARGV[3] ARG_LIMIT         most entries to look at
--   ARGV[4] ARG_EVENT_PREFIX  key prefix of the event records
--                             (taskq:{ns}:event:)
-- Returns a flat array, five values per fan-out taken: event id, the
-- pending fan-out (JSON), payload, metadata, the event's time (unix ms).
-- Looking at nothing pending costs one ZRANGEBYSCORE of an empty set.
-- Fails with READONLY on a read-only replica when it would take one,
-- nothing written; with "TASKQ_WRONGTYPE <key> <type>" when the pending
-- fan-outs are not a sorted set.

local fanouts, event_prefix, now = KEYS[KEY_FANOUTS], ARGV[ARG_EVENT_PREFIX], ARGV[ARG_NOW]
local bad = taskq_check_type(fanouts, 'zset')
if bad then
  return bad
end
local ids = redis.call('ZRANGEBYSCORE', fanouts, '-inf', ARGV[ARG_CUTOFF], 'LIMIT', 0, ARGV[ARG_LIMIT])
local out = {}
for _, id in ipairs(ids) do
  -- A record of the wrong type cannot be a pending fan-out: its entry goes.
  local e = redis.pcall('HMGET', event_prefix .. id, EVENT_FANOUT, EVENT_PAYLOAD, EVENT_META, EVENT_CREATED)
  if not e.err and e[1] then
    redis.call('ZADD', fanouts, 'XX', now, id)
    out[#out + 1] = id
    out[#out + 1] = e[1]
    out[#out + 1] = e[2]
    out[#out + 1] = e[3]
    out[#out + 1] = e[4]
  else
    redis.call('ZREM', fanouts, id)
  end
end
return out
