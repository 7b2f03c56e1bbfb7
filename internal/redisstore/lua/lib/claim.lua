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
-- r is a table: run_key, stream_key, runs_key, idem_key (nil when not
-- deduplicated), run_id, task, input, meta, key, spec (the run's settings,
-- see taskq_spec), strat and hold (the spec's first two values), now;
-- optionally delay (ms: schedule the run instead of queueing it, with
-- retry_key), take_over (supersede the owner, with prefix and group),
-- run_checked (the caller has seen that run_key does not exist), strict
-- (check every key's type up front, for callers that must write several
-- runs all or nothing).

-- Returns nil when the run can be written, {0, owner, pttl} when its key is
-- held, or an error reply.
local function taskq_claim_check(r)
  if r.idem_key then
    local owner = redis.pcall('GET', r.idem_key)
    if type(owner) == 'table' and owner.err then
      return taskq_failed(r.idem_key, owner)
    end
    if owner then
      if not r.take_over then
        return {0, owner, redis.call('PTTL', r.idem_key)}
      end
      r.prev_owner = owner
    end
  end
  if not r.run_checked and redis.call('EXISTS', r.run_key) == 1 then
    return redis.error_reply('TASKQ_EXISTS ' .. r.run_id)
  end
  if r.strict then
    return taskq_check_type(r.stream_key, 'stream') or taskq_check_type(r.runs_key, 'zset')
  end
  return nil
end

-- Takes a key over from its owner: an active owner is cancelled (its
-- handler is told which run superseded it) and the signals it was sent are
-- carried over to the new owner, so none sent around the takeover is lost.
-- Returns true when signals were carried over.
local function taskq_supersede(r)
  local old = r.prev_owner
  local old_key = taskq_key_run(r.prefix, old)
  local status = redis.call('HGET', old_key, RUN_STATUS)
  if status and not taskq_is_terminal(status) then
    taskq_terminate(r.prefix, r.group, old_key, old, 'cancelled', r.now, RUN_ERROR, 'superseded by run ' .. r.run_id)
    -- A queued owner may be running too, in a handler whose attempt
    -- finish.lua would begin (see there): workers are told either way.
    redis.call(CMD_PUBLISH, taskq_key_cancel(r.prefix), old .. '|' .. r.run_id)
    local sigs = redis.call('XRANGE', taskq_key_signals(r.prefix, old), '-', '+')
    local to = taskq_key_signals(r.prefix, r.run_id)
    for _, e in ipairs(sigs) do
      redis.call('XADD', to, '*', unpack(e[2]))
    end
    return #sigs > 0
  end
  return false
end

-- Answers a trigger whose run ID has a record already. A resend of the
-- same trigger (go-redis sends a command again when its reply was lost)
-- finds the record the first send wrote, with this run ID, task and spec
-- (creation time included), and is answered {1, entry id} as the first
-- send was;
-- any other trigger gets TASKQ_EXISTS.
local function taskq_claim_existing(r)
  local first = redis.pcall('HMGET', r.run_key, RUN_TASK, RUN_SPEC, RUN_ENTRY)
  if not first.err and first[1] == r.task and first[2] == r.spec then
    return {1, first[3] or ''}
  end
  return redis.error_reply('TASKQ_EXISTS ' .. r.run_id)
end

-- Claims the key, creates the record, queues the run. Returns the entry id
-- ('' for a scheduled run), or an error reply with nothing written when a
-- shared key holds the wrong type, or when Redis refuses the first write
-- (OOM, READONLY: see taskq_failed). The runs index is written first and
-- the queue (stream or retry set) second, both with pcall, so a failure of
-- the second can be undone by removing the first; every later write goes
-- to a key already checked.
local function taskq_claim_write(r)
  local added = redis.pcall('ZADD', r.runs_key, r.now, r.run_id)
  if type(added) == 'table' and added.err then
    return taskq_failed(r.runs_key, added)
  end
  local entry, queue_key, queued = '', r.stream_key, nil
  if r.delay and tonumber(r.delay) > 0 then
    queue_key = r.retry_key
    queued = redis.pcall('ZADD', r.retry_key, tonumber(r.now) + tonumber(r.delay), r.run_id)
  else
    queued = redis.pcall('XADD', r.stream_key, '*', ENTRY_RUN_ID, r.run_id, ENTRY_INPUT, r.input, ENTRY_META, r.meta,
      ENTRY_IDEMPOTENCY_KEY, r.key, ENTRY_SPEC, r.spec)
    entry = queued
  end
  if type(queued) == 'table' and queued.err then
    redis.call('ZREM', r.runs_key, r.run_id)
    return taskq_failed(queue_key, queued)
  end
  local sigs = r.prev_owner and taskq_supersede(r)
  if r.idem_key then
    redis.call('SET', r.idem_key, r.run_id, 'PX', r.hold)
  end
  -- attempt and fails start absent, read as 0.
  redis.call('HSET', r.run_key,
    RUN_TASK, r.task, RUN_STATUS, 'queued', RUN_INPUT, r.input, RUN_META, r.meta,
    RUN_IDEMPOTENCY_KEY, r.key, RUN_SPEC, r.spec, RUN_ENTRY, entry)
  if sigs then
    -- The signals carried over expire with the record (see taskq_flag).
    redis.call('HSET', r.run_key, RUN_FLAGS, 's')
  end
  return entry
end

-- Debounce: a run with the debounce strategy waits in the retry set until
-- its window passes. Until it starts, a newer trigger of its key hands it
-- the newer input and restarts the window.

-- Reports whether owner is a debounced run that has not started yet.
local function taskq_debounce_pending(prefix, owner)
  local o = redis.call('HMGET', taskq_key_run(prefix, owner), RUN_STATUS, RUN_ENTRY, RUN_SPEC)
  return o[1] == 'queued' and o[2] == '' and taskq_spec_head(o[3] or '') == 'debounce'
end

-- Gives the pending owner the newer input and starts its window again.
local function taskq_debounce(prefix, owner, idem_key, input, meta, hold, now)
  redis.call('HSET', taskq_key_run(prefix, owner), RUN_INPUT, input, RUN_META, meta)
  redis.call('PEXPIRE', idem_key, hold)
  redis.call('ZADD', taskq_key_retry(prefix), tonumber(now) + tonumber(hold), owner)
end
