#!lua flags=allow-oom
-- take_cascades.lua: takes over the cascades of cancelled runs whose
-- children are still to be cancelled (see children.go). A cascade taken is
-- given a new time in the index, now, so that no other recoverer takes it
-- before the grace period has passed again; one whose recoverer dies is
-- taken again then. Entries whose run is gone (expired, and its children
-- with it) are removed.
--
-- Redis runs it at maxmemory: it only moves and removes entries.
--
-- KEYS: KEY_COUNT (1),
--   KEYS[1] KEY_CASCADES  cascades index  taskq:{ns}:cascades
-- ARGV: ARG_COUNT (4),
--   ARGV[1] ARG_CUTOFF  take cascades whose time is at or before it (unix ms)
--   ARGV[2] ARG_NOW     now (unix ms), their new time
--   ARGV[3] ARG_LIMIT   most entries to look at
--   ARGV[4] ARG_PREFIX  key prefix taskq:{ns}:
-- Returns a flat array, two values per cascade taken: the run's ID and
-- when it ended (unix ms, '' when the record does not say).
-- Looking at nothing pending costs one ZRANGEBYSCORE of an empty set.
-- Fails with READONLY on a read-only replica when it would take one,
-- nothing written; with "TASKQ_WRONGTYPE <key> <type>" when the index is
-- not a sorted set.

local cascades, prefix, now = KEYS[KEY_CASCADES], ARGV[ARG_PREFIX], ARGV[ARG_NOW]
local bad = taskq_check_type(cascades, 'zset')
if bad then
  return bad
end
local ids = redis.call('ZRANGEBYSCORE', cascades, '-inf', ARGV[ARG_CUTOFF], 'LIMIT', 0, ARGV[ARG_LIMIT])
local out = {}
for _, id in ipairs(ids) do
  -- A record of the wrong type cannot be a cancelled run: its entry goes.
  local r = redis.pcall('HMGET', taskq_key_run(prefix, id), RUN_STATUS, RUN_FINISHED)
  if not r.err and r[1] then
    redis.call('ZADD', cascades, 'XX', now, id)
    out[#out + 1] = id
    out[#out + 1] = r[2] or ''
  else
    redis.call('ZREM', cascades, id)
  end
end
return out
