-- events.lua: an event record and its indexes, shared by push_event.lua
-- (an event and its runs in one step) and store_event.lua (the first step
-- of a fan-out in steps).
--
-- e is a table: event_key, events_key, key_index_key, id, key, payload,
-- meta, now (unix ms), retention (ms).

-- Returns an error reply, with nothing written, when the event cannot be
-- stored: its ID is taken, or an index holds a value of the wrong type.
local function taskq_event_check(e)
  if redis.call('EXISTS', e.event_key) == 1 then
    return redis.error_reply('TASKQ_EVENT_EXISTS ' .. e.id)
  end
  return taskq_check_type(e.events_key, 'zset') or taskq_check_type(e.key_index_key, 'zset')
end

-- Writes the event record, without its outcomes, expiring after its
-- retention, and indexes it. The first write is the record's, so Redis
-- refusing it (OOM, READONLY) leaves nothing written.
local function taskq_event_write(e)
  redis.call('HSET', e.event_key, EVENT_KEY, e.key, EVENT_PAYLOAD, e.payload, EVENT_META, e.meta,
    EVENT_CREATED, e.now)
  redis.call('PEXPIRE', e.event_key, e.retention)
  redis.call('ZADD', e.events_key, e.now, e.id)
  -- The per-key index trims itself: its entries are only ever read newest
  -- first, and the whole index expires when its key sees no events.
  redis.call('ZADD', e.key_index_key, e.now, e.id)
  redis.call('ZREMRANGEBYSCORE', e.key_index_key, '-inf', '(' .. (e.now - e.retention))
  redis.call('PEXPIRE', e.key_index_key, e.retention)
end
