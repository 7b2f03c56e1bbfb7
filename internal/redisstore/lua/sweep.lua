-- sweep.lua: removes index entries of runs whose records have expired, so
-- the runs index is bounded by retention like the records themselves.
--
-- KEYS[1] runs index      taskq:{ns}:runs  (or the events index)
-- ARGV[1] cutoff (unix ms): only entries created before it are looked at
-- ARGV[2] offset into the entries before the cutoff (a cursor over live ones)
-- ARGV[3] most entries to look at
-- ARGV[4] record key prefix (taskq:{ns}:run: or taskq:{ns}:event:)
-- Returns {removed, looked at}.
-- Fails with READONLY on a read-only replica when it would remove an entry,
-- nothing written. Redis runs it at maxmemory: ZREM frees memory.

local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[1], 'LIMIT', ARGV[2], ARGV[3])
local removed = 0
for _, id in ipairs(ids) do
  if redis.call('EXISTS', ARGV[4] .. id) == 0 then
    redis.call('ZREM', KEYS[1], id)
    removed = removed + 1
  end
end
return {removed, #ids}
