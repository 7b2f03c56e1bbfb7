#!lua flags=allow-oom
-- forget_waiters.lua: forgets registrations of runs waiting for an event
-- (see wake.go) that are still what the caller read when it woke them: a
-- run that registered again since, for a newer look, keeps its
-- registration. An event key left without registrations leaves the index
-- of keys with waiters, so the recoverer stops looking at it.
--
-- Redis runs it at maxmemory: it only removes.
--
-- KEYS: KEY_COUNT (1) first,
--   KEYS[1] KEY_INDEX  event keys with waiters  taskq:{ns}:eventwaits
-- then ITEM_KEY_COUNT (1) per item i, at i+2:
--   +0 ITEM_KEY_WAITERS  the key's registrations  taskq:{ns}:waiters:<event key>
-- ARGV: ARG_COUNT (0), then ITEM_ARG_COUNT (3) per item i, at 3i+1 .. 3i+3:
--   +0 ITEM_ARG_EVENT_KEY     the event key (its member in the index)
--   +1 ITEM_ARG_RUN_ID        the run; '' to only drop the key from the index
--                             when it has no registrations
--   +2 ITEM_ARG_REGISTRATION  the registration's value as read
-- Returns how many registrations it removed, or an error reply
-- "TASKQ_WRONGTYPE <key> <type>" (nothing written from that item on).
-- On a read-only replica the call fails with READONLY, nothing written.

local index = KEYS[KEY_INDEX]
local removed = 0
for i = 0, (#KEYS - KEY_COUNT) / ITEM_KEY_COUNT - 1 do
  local waiters = KEYS[KEY_COUNT + ITEM_KEY_COUNT * i + ITEM_KEY_WAITERS + 1]
  local base = ARG_COUNT + ITEM_ARG_COUNT * i + 1
  local event_key, run_id = ARGV[base + ITEM_ARG_EVENT_KEY], ARGV[base + ITEM_ARG_RUN_ID]
  local bad = taskq_check_type(waiters, 'hash')
  if bad then
    return bad
  end
  if run_id ~= '' and redis.call('HGET', waiters, run_id) == ARGV[base + ITEM_ARG_REGISTRATION] then
    removed = removed + redis.call('HDEL', waiters, run_id)
  end
  if redis.call('EXISTS', waiters) == 0 then
    redis.call('ZREM', index, event_key)
  end
end
return removed
