-- suppressed.lua: the records of triggers that created no run because
-- another run held their key (rejected, attached, signalled, debounced, or
-- an event's task deduplicated), shared by enqueue.lua, push_event.lua and
-- trigger_event.lua. A call's records go in one entry of its partition's
-- capped stream taskq:{ns}:suppressed, whose ID gives their time; see
-- suppressed.go.

-- Adds one trigger's record to recs, a list of fields and values of n
-- entries; returns the new n.
local function taskq_suppressed_add(recs, n, outcome, owner, digest, task, key)
  recs[n + 1] = SUPPRESSED_RECORD
  recs[n + 2] = outcome .. ' ' .. owner .. ' ' .. digest .. ' ' .. task .. ' ' .. key
  return n + 2
end

-- Writes the call's records, if any, as one entry, trimming the stream to
-- about cap entries (MAXLEN ~: whole nodes only, so up to a node more).
-- With pcall: a record Redis refuses (at maxmemory, on a replica, a key of
-- the wrong type) costs the triggers nothing, and the reply says what
-- happened as before.
local function taskq_suppressed_write(stream_key, cap, source, recs)
  if #recs > 0 then
    redis.pcall('XADD', stream_key, 'MAXLEN', '~', cap, '*', SUPPRESSED_SOURCE, source, unpack(recs))
  end
end
