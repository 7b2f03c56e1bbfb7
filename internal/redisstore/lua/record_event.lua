#!lua flags=allow-oom
-- record_event.lua: step 3 of an event's fan-out in steps (see fanout.go):
-- records every subscribed task's outcome on the event and takes the
-- fan-out out of the pending ones. The first call to record them wins: the
-- outcomes come from the markers of trigger_event.lua, so every caller has
-- the same ones for the tasks that got a trigger, and a later call (a
-- recoverer racing a slow ingester) is answered with what was recorded.
--
-- Redis runs it at maxmemory: it finishes a fan-out whose runs exist, and
-- the outcomes it writes are smaller than the pending fan-out it deletes.
--
-- KEYS: KEY_COUNT (2),
--   KEYS[1] KEY_EVENT    event hash        taskq:{ns}:event:<event id>
--   KEYS[2] KEY_FANOUTS  pending fan-outs  taskq:{ns}:fanouts
-- ARGV: ARG_COUNT (2),
--   ARGV[1] ARG_EVENT_ID  event id
--   ARGV[2] ARG_RUNS      every task's outcome, in the order of the tasks
--                         (JSON array of EventRun)
-- Returns:
--   {1}           recorded
--   {0, runs}     recorded before: runs is what was (JSON)
--   {2}           the event is gone (its retention passed): nothing to record
-- Errors, with nothing written:
--   "TASKQ_WRONGTYPE <key> <type>"  a key holds a value of the wrong type
--   "READONLY ..."                  the server is a read-only replica

local event_key, fanouts = KEYS[KEY_EVENT], KEYS[KEY_FANOUTS]
local bad = taskq_check_type(event_key, 'hash') or taskq_check_type(fanouts, 'zset')
if bad then
  return bad
end
if redis.call('EXISTS', event_key) == 0 then
  redis.call('ZREM', fanouts, ARGV[ARG_EVENT_ID])
  return {2}
end
if redis.call('HEXISTS', event_key, EVENT_FANOUT) == 0 then
  return {0, redis.call('HGET', event_key, EVENT_RUNS) or '[]'}
end
redis.call('HSET', event_key, EVENT_RUNS, ARGV[ARG_RUNS])
redis.call('HDEL', event_key, EVENT_FANOUT)
redis.call('ZREM', fanouts, ARGV[ARG_EVENT_ID])
return {1}
