-- stream.lua: a task stream's deliveries: queueing a run again, dropping a
-- delivery, trimming what was acknowledged.

-- The stream of a task's runs of priority prio: stream, the task's stream
-- taskq:{ns}:stream:<task>, for the default priority (nil, '' or '1'),
-- else its lane for prio (see streamLane in layout.go).
local function taskq_lane(stream, prio)
  if prio and prio ~= '' and prio ~= '1' then
    return stream .. STREAM_LANE .. prio
  end
  return stream
end

-- Queues a run again (retry due, debounce window over, requeued) with a
-- stream entry made from its record, in stream, its task's stream, or the
-- lane of the run's priority (taskq_lane). Returns the entry id.
--
-- An entry carries, besides the run id, what its worker needs to run it and
-- record its outcome: input, metadata, key and the spec (see taskq_spec):
-- the record's, with the run's failed attempts and attempts begun.
-- Redis then hands it to the worker with the delivery, and start.lua and
-- finish.lua read only the record fields that change while a run is queued
-- or running: each field read in a script costs Redis about half a
-- microsecond. Failed attempts and attempts begun change only while the run
-- is not queued, and a run is queued again with a new entry; so a
-- delivery's next attempt is <attempts begun> + 1 unless the run changed
-- since (which finish.lua checks when it begins an attempt).
local function taskq_requeue_entry(stream, run_key, run_id)
  local f = redis.call('HMGET', run_key, RUN_INPUT, RUN_META, RUN_IDEMPOTENCY_KEY, RUN_SPEC, RUN_FAILS, RUN_ATTEMPT,
    RUN_PRIORITY)
  -- No metadata field for none and no key field for no key, as a trigger
  -- writes the entry (see taskq_claim_run); a table is cheap enough off the
  -- trigger's path.
  local e, n = {ENTRY_RUN_ID, run_id, ENTRY_INPUT, f[1] or ''}, 4
  if f[2] and f[2] ~= '{}' then
    e[n + 1], e[n + 2], n = ENTRY_META, f[2], n + 2
  end
  if f[3] and f[3] ~= '' then
    e[n + 1], e[n + 2], n = ENTRY_IDEMPOTENCY_KEY, f[3], n + 2
  end
  -- The record's spec, and the two values that change between deliveries.
  e[n + 1] = ENTRY_SPEC
  e[n + 2] = (taskq_record_spec(run_key, f[4]) or '') .. ' ' .. (f[5] or 0) .. ' ' .. (f[6] or 0)
  local entry = redis.call('XADD', taskq_lane(stream, f[7]), '*', unpack(e, 1, n + 2))
  redis.call('HSET', run_key, RUN_STATUS, 'queued', RUN_ENTRY, entry)
  return entry
end

-- Removes the acknowledged head of a task stream: every entry older than
-- the oldest delivery still pending, or than the next undelivered entry
-- when none is pending. One XTRIM costs Redis far less than an XDEL of the
-- same entries, which looks each one up. Entries acknowledged behind an
-- older pending delivery stay until it is acknowledged too; so that a
-- long-running handler cannot make them pile up, once more than
-- MAX_LINGERING_ENTRIES linger the entries just acknowledged (acked, a
-- list, or nil) are deleted with XDEL instead. While deliveries are
-- pending the trim removes whole stream nodes only, leaving at most one
-- node's acknowledged entries at the head; with none pending it is exact.
-- Entries not yet delivered are never removed.
local function taskq_trim_acked(stream, group, acked)
  -- The oldest pending delivery, read alone: the summary form of XPENDING
  -- lists every consumer of the group, so with 100 workers it made a
  -- finish of one outcome cost 433k instructions instead of 185k.
  local p = redis.pcall('XPENDING', stream, group, '-', '+', 1)
  if p.err then
    return -- no such stream or group: nothing to trim
  end
  local low = p[1] and p[1][1]
  -- MINID ~ drops whole nodes; an exact trim walks the head node entry by
  -- entry, which cost a finish of one outcome 36k instructions of its
  -- 234k. A drained stream (none pending) is trimmed exactly, to empty.
  local exact = not low
  -- Entries neither pending nor waiting to be delivered are acknowledged
  -- ones waiting to be trimmed. There can be more than
  -- MAX_LINGERING_ENTRIES only in a longer stream; only then is the group
  -- read to tell them apart (its pending deliveries and its lag). A
  -- drained stream needs no count: its exact trim below removes every
  -- entry delivered, so none can linger.
  local len = low and acked and #acked > 0 and redis.call('XLEN', stream)
  local over = len and len > MAX_LINGERING_ENTRIES
  if not low or over then
    local last, lag, pending
    for _, g in ipairs(redis.call('XINFO', 'GROUPS', stream)) do
      local named = false
      for j = 1, #g, 2 do
        if g[j] == 'name' then
          named = g[j + 1] == group
        elseif named and g[j] == 'last-delivered-id' then
          last = g[j + 1]
        elseif named and g[j] == 'lag' then
          lag = tonumber(g[j + 1])
        elseif named and g[j] == 'pending' then
          pending = tonumber(g[j + 1])
        end
      end
      if named then
        break
      end
    end
    if not last then
      return
    end
    -- Without a lag (Redis cannot tell it after some deletions) the
    -- waiting entries count as lingering too.
    if over and len - (pending or 0) - (lag or 0) > MAX_LINGERING_ENTRIES then
      for j = 1, #acked, 1000 do
        redis.call('XDEL', stream, unpack(acked, j, math.min(j + 999, #acked)))
      end
    end
    if not low then
      local ms, seq = string.match(last, '^(%d+)-(%d+)$')
      if not ms then
        ms, seq = '0', '0' -- "0": miniredis's for a group that delivered nothing
      end
      low = ms .. '-' .. string.format('%.0f', tonumber(seq) + 1)
    end
  end
  if exact then
    redis.call('XTRIM', stream, 'MINID', low)
  else
    redis.call('XTRIM', stream, 'MINID', '~', low)
  end
end

-- Acknowledges and deletes one delivery, outside the batched path of
-- finish.lua, so streams hold only deliveries that are still queued or in
-- flight (and acknowledged ones behind them, see taskq_trim_acked).
local function taskq_drop(stream, group, entry)
  redis.call('XACK', stream, group, entry)
  redis.call('XDEL', stream, entry)
  taskq_trim_acked(stream, group)
end

-- taskq_drop of a run's delivery, if it has one, from the lane of its
-- priority prio.
local function taskq_drop_entry(prefix, group, task, entry, prio)
  if entry and entry ~= '' and task then
    taskq_drop(taskq_lane(taskq_key_stream(prefix, task), prio), group, entry)
  end
end
