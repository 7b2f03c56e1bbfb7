-- sweep.lua: removes index entries of runs whose records have expired, so
-- the runs index is bounded by retention like the records themselves.
--
-- KEYS: KEY_COUNT (1)
--   KEYS[1] KEY_INDEX  runs index  taskq:{ns}:runs  (or the events index)
-- ARGV: ARG_COUNT (4)
--   ARGV[1] ARG_CUTOFF         cutoff (unix ms): only entries created before
--                              it are looked at
--   ARGV[2] ARG_OFFSET         offset into the entries before the cutoff (a
--                              cursor over live ones)
--   ARGV[3] ARG_LIMIT          most entries to look at
--   ARGV[4] ARG_RECORD_PREFIX  record key prefix (taskq:{ns}:run: or
--                              taskq:{ns}:event:)
-- Returns {removed, looked at}.
-- Fails with READONLY on a read-only replica when it would remove an entry,
-- nothing written. Redis runs it at maxmemory: ZREM frees memory.

local index, record_prefix = KEYS[KEY_INDEX], ARGV[ARG_RECORD_PREFIX]
local ids = redis.call('ZRANGEBYSCORE', index, '-inf', '(' .. ARGV[ARG_CUTOFF], 'LIMIT', ARGV[ARG_OFFSET],
  ARGV[ARG_LIMIT])
local removed = 0
for _, id in ipairs(ids) do
  if redis.call('EXISTS', record_prefix .. id) == 0 then
    redis.call('ZREM', index, id)
    removed = removed + 1
  end
end
return {removed, #ids}
