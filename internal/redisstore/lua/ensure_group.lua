#!lua flags=allow-oom
-- ensure_group.lua: creates a task's streams, one per priority (the
-- task's stream and its lanes, see taskq_lane), and their consumer group
-- where missing. The group starts at the stream's beginning, so runs
-- queued before any worker existed are delivered.
--
-- KEYS: KEY_COUNT (1)
--   KEYS[1] KEY_STREAM  task stream  taskq:{ns}:stream:<task>; its lanes
--                       taskq:{ns}:stream:<task>|p2 and |p3 are built
--                       from it, in its hash tag
-- ARGV: ARG_COUNT (1)
--   ARGV[1] ARG_GROUP   consumer group
-- Returns 1 when it created a group, 0 when every group existed.
-- Errors, with nothing written: "TASKQ_WRONGTYPE <key> <type>" when a
-- stream's key holds something else than a stream; READONLY on a
-- read-only replica.
-- Runs at maxmemory (flag allow-oom): a worker creates its groups when it
-- starts, and workers must be able to start to drain the queue while new
-- triggers are refused, even runs triggered before any worker created the
-- group; one group per stream, three streams per task, is bounded.

local streams = {KEYS[KEY_STREAM], taskq_lane(KEYS[KEY_STREAM], '2'), taskq_lane(KEYS[KEY_STREAM], '3')}
for _, s in ipairs(streams) do
  local e = taskq_check_type(s, 'stream')
  if e then
    return e
  end
end
local created = 0
for _, s in ipairs(streams) do
  local r = redis.pcall('XGROUP', 'CREATE', s, ARGV[ARG_GROUP], '0', 'MKSTREAM')
  if type(r) == 'table' and r.err then
    if string.sub(r.err, 1, 10) ~= 'BUSYGROUP ' then
      return taskq_failed(s, r)
    end
  else
    created = 1
  end
end
return created
