-- claim.lua: claiming an idempotency key for a new run, shared by
-- enqueue.lua and push_event.lua. A claim takes the key, creates the run
-- record and queues the run, as one step; the caller decides what happens
-- when the key is held (the conflict policy, or a debounce).
--
-- Redis does not roll a script back when a command fails midway, so a run
-- is either written whole or not at all: taskq_claim_check looks at the
-- run's own keys first, and taskq_claim_write writes the shared keys whose
-- type it has not checked with redis.pcall, in an order it can undo.
--
-- The steps come in two forms: taskq_claim_key and taskq_claim_run take
-- their values as arguments, which is what enqueue.lua calls once per
-- trigger (a table to fill and read for each trigger would cost Redis
-- more); taskq_claim_check and taskq_claim_write take a table r, for the
-- event scripts, which keep a run's values until it is written. r holds
-- run_key, stream_key, runs_key, idem_key (nil when not deduplicated),
-- run_id, task, input, meta, key, spec (the run's settings, see
-- taskq_spec), strat and hold (the spec's first two values), now;
-- optionally delay (ms: schedule the run instead of queueing it, with
-- retry_key), prio (a priority above the default, with stream_key its
-- lane), run_checked (the caller has seen that run_key does not
-- exist), strict (check every key's type up front, for callers that must
-- write several runs all or nothing).

-- Looks at the key a run would claim (idem_key, nil when the run is not
-- deduplicated). Returns the run holding it, nil when it is free, or an
-- error reply (a table).
local function taskq_claim_key(idem_key)
  if idem_key then
    local owner = redis.pcall('GET', idem_key)
    if type(owner) == 'table' and owner.err then
      return taskq_failed(idem_key, owner)
    end
    return owner or nil
  end
  return nil
end

-- taskq_claim_key for r, and the run's own keys unless r.run_checked.
-- Returns nil when the run may be written, {0, owner, pttl} when its key
-- is held, or an error reply.
local function taskq_claim_check(r)
  local owner = taskq_claim_key(r.idem_key)
  if type(owner) == 'table' then
    return owner
  end
  if owner then
    return {0, owner, redis.call('PTTL', r.idem_key)}
  end
  if not r.run_checked and redis.call('EXISTS', r.run_key) == 1 then
    return redis.error_reply('TASKQ_EXISTS ' .. r.run_id)
  end
  if r.strict then
    return taskq_check_type(r.stream_key, 'stream') or taskq_check_type(r.runs_key, 'zset')
  end
  return nil
end

-- Takes a key over from its owner old for run run_id: an active owner is
-- cancelled (its handler is told which run superseded it) and the signals
-- it was sent are carried over to the new owner, so none sent around the
-- takeover is lost. Returns true when signals were carried over.
local function taskq_supersede(prefix, group, old, run_id, now)
  local old_key = taskq_key_run(prefix, old)
  local status = redis.call('HGET', old_key, RUN_STATUS)
  if status and not taskq_is_terminal(status) then
    taskq_terminate(prefix, group, old_key, old, 'cancelled', now, RUN_ERROR, 'superseded by run ' .. run_id)
    -- A queued owner may be running too, in a handler whose attempt
    -- finish.lua would begin (see there): workers are told either way.
    redis.call(CMD_PUBLISH, taskq_key_cancel(prefix), old .. '|' .. run_id)
    local sigs = redis.call('XRANGE', taskq_key_signals(prefix, old), '-', '+')
    local to = taskq_key_signals(prefix, run_id)
    for _, e in ipairs(sigs) do
      redis.call('XADD', to, '*', unpack(e[2]))
    end
    return #sigs > 0
  end
  return false
end

-- Answers a trigger whose run ID has a record already (run_key exists). A
-- resend of the same trigger (go-redis sends a command again when its
-- reply was lost) finds the record the first send wrote, with this run
-- ID, task and spec (creation time included), and is answered {1, entry
-- id} as the first send was (as two values: 1, entry id); any other
-- trigger gets TASKQ_EXISTS.
local function taskq_claim_existing(run_key, run_id, task, spec)
  local first = redis.pcall('HMGET', run_key, RUN_TASK, RUN_SPEC, RUN_ENTRY)
  if not first.err and first[1] == task and first[2] == spec then
    return 1, first[3] or ''
  end
  return redis.error_reply('TASKQ_EXISTS ' .. run_id)
end

-- Claims the key, creates the record, queues the run: in the stream, or
-- with a delay (ms, nil or 0 for none) in the retry zset retry_key; with
-- prev_owner, taking the key over from it (prefix and group are for
-- that). With indexed, the caller has written runs_key in this call
-- already and adds the run to it itself once the run is written (one ZADD
-- for all a call's runs costs Redis less than one per run). For a run of
-- a priority above the default, stream_key is its lane (taskq_lane) and
-- the caller records the priority (RUN_PRIORITY). Returns the
-- entry id ('' for a scheduled run), or an error reply with nothing
-- written when a shared key holds the wrong type, or when Redis refuses
-- the first write (OOM, READONLY: see taskq_failed). The runs index is
-- written first and the queue (stream or retry set) second, both with
-- pcall, so a failure of the second can be undone by removing the first;
-- every later write goes to a key already checked.
local function taskq_claim_run(run_key, stream_key, runs_key, idem_key, run_id, task, input, meta, key, spec, hold,
    now, delay, retry_key, prev_owner, prefix, group, indexed)
  if not indexed then
    local added = redis.pcall('ZADD', runs_key, now, run_id)
    if type(added) == 'table' and added.err then
      return taskq_failed(runs_key, added)
    end
  end
  local entry, queue_key, queued = '', stream_key, nil
  if delay and tonumber(delay) > 0 then
    queue_key = retry_key
    queued = redis.pcall('ZADD', retry_key, tonumber(now) + tonumber(delay), run_id)
  elseif key == '' then
    -- A run without a key (not deduplicated) has no key field, as it has
    -- no metadata field without metadata: each field written costs a
    -- trigger Redis work, and readers take an absent one for "".
    if meta == '{}' then
      queued = redis.pcall('XADD', stream_key, '*', ENTRY_RUN_ID, run_id, ENTRY_INPUT, input, ENTRY_SPEC, spec)
    else
      queued = redis.pcall('XADD', stream_key, '*', ENTRY_RUN_ID, run_id, ENTRY_INPUT, input, ENTRY_META, meta,
        ENTRY_SPEC, spec)
    end
    entry = queued
  elseif meta == '{}' then
    queued = redis.pcall('XADD', stream_key, '*', ENTRY_RUN_ID, run_id, ENTRY_INPUT, input, ENTRY_IDEMPOTENCY_KEY, key,
      ENTRY_SPEC, spec)
    entry = queued
  else
    queued = redis.pcall('XADD', stream_key, '*', ENTRY_RUN_ID, run_id, ENTRY_INPUT, input, ENTRY_META, meta,
      ENTRY_IDEMPOTENCY_KEY, key, ENTRY_SPEC, spec)
    entry = queued
  end
  if type(queued) == 'table' and queued.err then
    if not indexed then
      redis.call('ZREM', runs_key, run_id)
    end
    return taskq_failed(queue_key, queued)
  end
  local sigs = prev_owner and taskq_supersede(prefix, group, prev_owner, run_id, now)
  if idem_key then
    redis.call('SET', idem_key, run_id, 'PX', hold)
  end
  -- attempt and fails start absent, read as 0; metadata {} (none, the
  -- common case) is not written either, and reads as {} (a field less
  -- costs a trigger about 2k instructions in the record and the entry),
  -- nor is an empty key, which reads as "".
  if key == '' then
    if meta == '{}' then
      redis.call('HSET', run_key, RUN_TASK, task, RUN_STATUS, 'queued', RUN_INPUT, input, RUN_SPEC, spec,
        RUN_ENTRY, entry)
    else
      redis.call('HSET', run_key, RUN_TASK, task, RUN_STATUS, 'queued', RUN_INPUT, input, RUN_META, meta,
        RUN_SPEC, spec, RUN_ENTRY, entry)
    end
  elseif meta == '{}' then
    redis.call('HSET', run_key, RUN_TASK, task, RUN_STATUS, 'queued', RUN_INPUT, input, RUN_IDEMPOTENCY_KEY, key,
      RUN_SPEC, spec, RUN_ENTRY, entry)
  else
    redis.call('HSET', run_key, RUN_TASK, task, RUN_STATUS, 'queued', RUN_INPUT, input, RUN_META, meta,
      RUN_IDEMPOTENCY_KEY, key, RUN_SPEC, spec, RUN_ENTRY, entry)
  end
  if sigs then
    -- The signals carried over expire with the record (see taskq_flag).
    redis.call('HSET', run_key, RUN_FLAGS, 's')
  end
  return entry
end

-- taskq_claim_run for r.
local function taskq_claim_write(r)
  local entry = taskq_claim_run(r.run_key, r.stream_key, r.runs_key, r.idem_key, r.run_id, r.task, r.input, r.meta,
    r.key, r.spec, r.hold, r.now, r.delay, r.retry_key)
  if r.prio and type(entry) ~= 'table' then
    redis.call('HSET', r.run_key, RUN_PRIORITY, r.prio)
  end
  return entry
end

-- Debounce: a run with the debounce strategy waits in the retry set until
-- its window passes. Until it starts, a newer trigger of its key hands it
-- the newer input and restarts the window.

-- Reports whether owner is a debounced run that has not started yet.
local function taskq_debounce_pending(prefix, owner)
  local run_key = taskq_key_run(prefix, owner)
  local o = redis.call('HMGET', run_key, RUN_STATUS, RUN_ENTRY, RUN_SPEC)
  return o[1] == 'queued' and o[2] == '' and taskq_spec_head(taskq_record_spec(run_key, o[3]) or '') == 'debounce'
end

-- Gives the pending owner the newer input and starts its window again.
local function taskq_debounce(prefix, owner, idem_key, input, meta, hold, now)
  redis.call('HSET', taskq_key_run(prefix, owner), RUN_INPUT, input, RUN_META, meta)
  redis.call('PEXPIRE', idem_key, hold)
  redis.call('ZADD', taskq_key_retry(prefix), tonumber(now) + tonumber(hold), owner)
end
