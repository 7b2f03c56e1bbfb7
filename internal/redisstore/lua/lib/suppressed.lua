-- suppressed.lua: the record of a trigger that created no run because
-- another run held its key (rejected, attached, signalled, debounced, or an
-- event's task deduplicated), shared by enqueue.lua, push_event.lua and
-- trigger_event.lua. One entry of the partition's capped stream
-- taskq:{ns}:suppressed, whose ID gives the time; see suppressed.go.

-- Appends the record, trimming the stream to about cap entries (MAXLEN ~:
-- whole nodes only, so up to a node more). With pcall: a record Redis
-- refuses (at maxmemory, on a replica, a key of the wrong type) costs the
-- trigger nothing, and the reply says what happened as before. A cap of
-- '0' records nothing.
local function taskq_suppress(stream_key, cap, key, owner, task, origin, outcome)
  if cap ~= '0' then
    redis.pcall('XADD', stream_key, 'MAXLEN', '~', cap, '*', SUPPRESSED_KEY, key, SUPPRESSED_OWNER, owner,
      SUPPRESSED_TASK, task, SUPPRESSED_ORIGIN, origin, SUPPRESSED_OUTCOME, outcome)
  end
end
