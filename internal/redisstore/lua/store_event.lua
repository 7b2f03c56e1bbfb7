-- store_event.lua: step 1 of an event's fan-out in steps (see fanout.go):
-- stores the event, as push_event.lua does, with its pending fan-out (what
-- each subscribed task's trigger needs, and where it goes) instead of its
-- outcomes, and enters it in the pending fan-outs, where a recoverer finds
-- it if the ingester dies before the last step (record_event.lua) removes
-- it. The fan-out is Go's to read; the script only keeps it.
--
-- KEYS: KEY_COUNT (4),
--   KEYS[1] KEY_EVENT            event hash           taskq:{ns}:event:<event id>
--   KEYS[2] KEY_EVENTS           events index         taskq:{ns}:events
--   KEYS[3] KEY_EVENT_KEY_INDEX  events-by-key index  taskq:{ns}:eventkey:<event key>
--   KEYS[4] KEY_FANOUTS          pending fan-outs     taskq:{ns}:fanouts
-- ARGV: ARG_COUNT (7),
--   ARGV[1] ARG_EVENT_ID   event id
--   ARGV[2] ARG_EVENT_KEY  event key
--   ARGV[3] ARG_PAYLOAD    payload (JSON object)
--   ARGV[4] ARG_META       metadata (JSON object)
--   ARGV[5] ARG_NOW        now (unix ms): the event's time, and when the
--                          fan-out entered the pending ones
--   ARGV[6] ARG_RETENTION  event retention ms: the record and its index
--                          entries expire then
--   ARGV[7] ARG_FANOUT     the pending fan-out (JSON)
-- Returns 1.
-- Errors, with nothing written:
--   "TASKQ_EVENT_EXISTS <event id>"  an event with this ID exists
--   "TASKQ_WRONGTYPE <key> <type>"   a key holds a value of the wrong type
--   "OOM ..."                        Redis is at maxmemory and refused to write
--   "READONLY ..."                   the server is a read-only replica

local now, retention = tonumber(ARGV[ARG_NOW]), tonumber(ARGV[ARG_RETENTION])
local event = {
  event_key = KEYS[KEY_EVENT], events_key = KEYS[KEY_EVENTS], key_index_key = KEYS[KEY_EVENT_KEY_INDEX],
  id = ARGV[ARG_EVENT_ID], key = ARGV[ARG_EVENT_KEY], payload = ARGV[ARG_PAYLOAD], meta = ARGV[ARG_META],
  now = now, retention = retention,
}
local bad = taskq_event_check(event) or taskq_check_type(KEYS[KEY_FANOUTS], 'zset')
if bad then
  return bad
end
taskq_event_write(event)
redis.call('HSET', KEYS[KEY_EVENT], EVENT_FANOUT, ARGV[ARG_FANOUT])
redis.call('ZADD', KEYS[KEY_FANOUTS], now, ARGV[ARG_EVENT_ID])
return 1
