-- lib.lua: helpers shared by the scripts that end runs. It is prepended to
-- those scripts when they are loaded, so each script stays one atomic EVAL.

-- A run's flags field x holds one letter per optional part the run has,
-- so ending a run reads one field to learn them all: s (a signals stream),
-- t (a steps hash), w (somebody waits for its completion notice).
local function taskq_flag(run_key, letter)
  local x = redis.call('HGET', run_key, 'x') or ''
  if not string.find(x, letter, 1, true) then
    redis.call('HSET', run_key, 'x', x .. letter)
  end
end

local function taskq_has(x, letter)
  return x ~= nil and x ~= false and string.find(x, letter, 1, true) ~= nil
end

-- A run's stream entry carries, besides its run id (r), what its worker
-- needs to run it and record its outcome: input (i), metadata (m), key (k)
-- and the spec (o) "<strategy> <retries> <timeout ms> <created ms>
-- <max deliveries> <retain ms> <retention ms> <failed attempts>
-- <attempts begun>". Redis then hands it to the worker with the delivery,
-- and start.lua and finish.lua read only the record fields that change
-- while a run is queued or running: each field read in a script costs
-- Redis about half a microsecond. Failed attempts and attempts begun
-- change only while the run is not queued, and a run is queued again with
-- a new entry; so a delivery's next attempt is <attempts begun> + 1 unless
-- the run changed since (which finish.lua checks when it begins an attempt).
local function taskq_spec(strat, retries, timeout, created, maxdel, retain, keep, fails, attempts)
  return strat .. ' ' .. retries .. ' ' .. timeout .. ' ' .. created .. ' ' .. maxdel .. ' ' .. retain .. ' ' .. keep ..
    ' ' .. fails .. ' ' .. attempts
end

-- Queues a run again (retry due, debounce window over, requeued) with a
-- stream entry made from its record. Returns the entry id.
local function taskq_requeue_entry(stream, run_key, run_id)
  local f = redis.call('HMGET', run_key, 'input', 'meta', 'key', 'strat', 'retries', 'timeout', 'created',
    'maxdel', 'retain', 'keep', 'fails', 'attempt')
  local entry = redis.call('XADD', stream, '*', 'r', run_id, 'i', f[1] or '', 'm', f[2] or '', 'k', f[3] or '',
    'o', taskq_spec(f[4] or '', f[5] or 0, f[6] or 0, f[7] or 0, f[8] or 0, f[9] or 0, f[10] or 0, f[11] or 0,
      f[12] or 0))
  redis.call('HSET', run_key, 'status', 'queued', 'entry', entry)
  return entry
end

-- Frees status-strategy keys, each only while its run still owns it: a
-- run whose key lapsed and was claimed by another run never frees the
-- newer owner's key. A key with retain > 0 is kept for that long instead.
-- One MGET reads every owner and one DEL frees the keys, where a GET and a
-- DEL per run would cost Redis a call each. b (see taskq_batch) holds the
-- keys' full names, their runs' ids and retain ms in three lists of b.n.
local function taskq_release_all(b)
  if b.n == 0 then
    return
  end
  local owners, free, n = redis.call('MGET', unpack(b.names, 1, b.n)), {}, 0
  for i = 1, b.n do
    if owners[i] == b.owners[i] then
      if b.retains[i] > 0 then
        redis.call('PEXPIRE', b.names[i], b.retains[i])
      else
        n = n + 1
        free[n] = b.names[i]
      end
    end
  end
  if n > 0 then
    redis.call('DEL', unpack(free, 1, n))
  end
end

-- Most acknowledged entries a stream may keep behind an older delivery
-- still pending (see taskq_trim_acked).
local TASKQ_MAX_LINGERING = 10000

-- Removes the acknowledged head of a task stream: every entry older than
-- the oldest delivery still pending, or than the next undelivered entry
-- when none is pending. One XTRIM costs Redis far less than an XDEL of the
-- same entries, which looks each one up. Entries acknowledged behind an
-- older pending delivery stay until it is acknowledged too; so that a
-- long-running handler cannot make them pile up, once more than
-- TASKQ_MAX_LINGERING linger the entries just acknowledged (acked, a list,
-- or nil) are deleted with XDEL instead. Entries not yet delivered are
-- never removed.
local function taskq_trim_acked(stream, group, acked)
  local p = redis.pcall('XPENDING', stream, group)
  if p.err then
    return -- no such stream or group: nothing to trim
  end
  local pending, low = tonumber(p[1]) or 0, p[2]
  -- Entries neither pending nor waiting to be delivered are acknowledged
  -- ones waiting to be trimmed; XLEN - pending bounds them from above,
  -- and only past the limit is the group's lag read to tell them apart.
  local over = acked and #acked > 0 and redis.call('XLEN', stream) - pending > TASKQ_MAX_LINGERING
  if not low or over then
    local last, lag
    for _, g in ipairs(redis.call('XINFO', 'GROUPS', stream)) do
      local named = false
      for j = 1, #g, 2 do
        if g[j] == 'name' then
          named = g[j + 1] == group
        elseif named and g[j] == 'last-delivered-id' then
          last = g[j + 1]
        elseif named and g[j] == 'lag' then
          lag = tonumber(g[j + 1])
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
    if over and redis.call('XLEN', stream) - pending - (lag or 0) > TASKQ_MAX_LINGERING then
      for j = 1, #acked, 1000 do
        redis.call('XDEL', stream, unpack(acked, j, math.min(j + 999, #acked)))
      end
    end
    if not low then
      local ms, seq = string.match(last, '^(%d+)-(%d+)$')
      low = ms .. '-' .. string.format('%.0f', tonumber(seq) + 1)
    end
  end
  redis.call('XTRIM', stream, 'MINID', low)
end

-- Acknowledges and deletes one delivery, outside the batched path of
-- finish.lua, so streams hold only deliveries that are still queued or in
-- flight (and acknowledged ones behind them, see taskq_trim_acked).
local function taskq_drop(stream, group, entry)
  redis.call('XACK', stream, group, entry)
  redis.call('XDEL', stream, entry)
  taskq_trim_acked(stream, group)
end

-- taskq_drop of a run's delivery, if it has one.
local function taskq_drop_entry(prefix, group, task, entry)
  if entry and entry ~= '' and task then
    taskq_drop(prefix .. 'stream:' .. task, group, entry)
  end
end

-- What taskq_end gathers across the runs one call ends (keys to release,
-- counts by status), for taskq_batch_done to act on once. The keys are
-- kept in parallel lists of n entries, as appending at a table's length
-- costs Redis a search for that length each time.
local function taskq_batch()
  return {n = 0, names = {}, owners = {}, retains = {}, ended = {}}
end

-- Releases the keys of the runs b gathered (see taskq_release_all) and
-- publishes their count per status.
local function taskq_batch_done(prefix, b)
  taskq_release_all(b)
  local msg = {}
  for status, n in pairs(b.ended) do
    msg[#msg + 1] = status .. ' ' .. n
  end
  if #msg > 0 then
    table.sort(msg)
    redis.call('PUBLISH', prefix .. 'finished', table.concat(msg, ' '))
  end
end

-- Ends a run whose record fields (strat, key, retain, keep and the flags
-- x) the caller has read: records the status, releases the key per
-- strategy, starts the retention clock and sends the completion notices.
-- The caller drops the run's delivery. field/value carry the result or the
-- error message. With began set, the attempt begins in the same write
-- (began its start time, consumer its worker; see finish.lua). The fields
-- come as arguments rather than in a table, as filling a table costs Redis
-- more for each run than passing values. Callers that end many runs pass
-- b, a taskq_batch, and call taskq_batch_done once at the end; with b nil
-- the key is released and the run counted at once.
--
-- Notices: the run's done channel is published only when a waiter asked
-- for it (flag w, see watch.lua); the namespace's finished channel gets
-- the count of runs ended per status, once per script call.
local function taskq_end(prefix, run_key, run_id, status, now, field, value, strat, key, retain, keep, x, b,
    began, attempt, consumer)
  if began then
    redis.call('HSET', run_key, 'status', status, 'finished', now, field, value,
      'attempt', attempt, 'started', began, 'consumer', consumer)
  else
    redis.call('HSET', run_key, 'status', status, 'finished', now, field, value)
  end
  local one = not b
  b = b or taskq_batch()
  if strat == 'status' and key and key ~= '' then
    local n = b.n + 1
    b.n, b.names[n], b.owners[n], b.retains[n] = n, prefix .. 'key:' .. key, run_id, tonumber(retain) or 0
  end
  b.ended[status] = (b.ended[status] or 0) + 1
  if one then
    taskq_batch_done(prefix, b)
  end
  -- keep goes to PEXPIRE as the string it came as: Redis formats a Lua
  -- number passed to a command with a printf of its own, at a cost.
  local kept = (tonumber(keep) or 0) > 0
  if kept then
    redis.call('PEXPIRE', run_key, keep)
  end
  if not x or x == '' then
    return -- no flags, the common case
  end
  if kept then
    -- Signals and step results live as long as the record.
    if taskq_has(x, 's') then
      redis.call('PEXPIRE', prefix .. 'signals:' .. run_id, keep)
    end
    if taskq_has(x, 't') then
      redis.call('PEXPIRE', prefix .. 'steps:' .. run_id, keep)
    end
  end
  if taskq_has(x, 'w') then
    redis.call('PUBLISH', prefix .. 'done:' .. run_id, status)
  end
end

-- Moves a run in any state to a terminal status: taskq_end, and its
-- delivery dropped and its retry or debounce timer removed.
local function taskq_terminate(prefix, group, run_key, run_id, status, now, field, value)
  local r = redis.call('HMGET', run_key, 'task', 'strat', 'key', 'retain', 'entry', 'keep', 'x')
  taskq_drop_entry(prefix, group, r[1], r[5])
  taskq_end(prefix, run_key, run_id, status, now, field, value, r[2], r[3], r[4], r[6], r[7])
  redis.call('ZREM', prefix .. 'retry', run_id)
end

local function taskq_is_terminal(status)
  return status == 'succeeded' or status == 'failed' or status == 'cancelled'
end

-- Enqueueing, shared by enqueue.lua and push_event.lua. Redis does not roll
-- a script back when a command fails midway, so a run is either written
-- whole or not at all: taskq_enqueue_check looks at the run's own keys
-- first, and taskq_enqueue_write writes the shared keys whose type it has
-- not checked with redis.pcall, in an order it can undo.
--
-- r is a table: run_key, stream_key, runs_key, idem_key (nil when not
-- deduplicated), run_id, task, input, meta, key, strat, hold, retain,
-- retries, maxdel, timeout, keep, now; optionally delay (ms: schedule the
-- run instead of queueing it, with retry_key), take_over (supersede the
-- owner, with prefix and group), run_checked (the caller has seen that
-- run_key does not exist), strict (check every key's type up front, for
-- callers that must write several runs all or nothing).

local function taskq_wrongtype(key)
  return redis.error_reply('TASKQ_WRONGTYPE ' .. key .. ' ' .. redis.call('TYPE', key)['ok'])
end

-- The error reply for a call on key that redis.pcall saw fail (e, its
-- error table). Only a wrong type is taskq's TASKQ_WRONGTYPE; anything else
-- keeps Redis's message and code, so that it says what happened: OOM
-- (Redis is at maxmemory and refuses a script's first write) or READONLY
-- (the server is a replica, a failover demoted it). Both come only at a
-- script's first write, so nothing was written before them. The code is
-- prefixed with TASKQ_ (TASKQ_OOM ..., TASKQ_READONLY ...) as the reply
-- may be one item of an array: a client that types error replies by their
-- code (go-redis) stops reading an array at an item typed OOM or READONLY.
local function taskq_failed(key, e)
  if string.sub(e.err, 1, 10) == 'WRONGTYPE ' then
    return taskq_wrongtype(key)
  end
  return redis.error_reply('TASKQ_' .. e.err)
end

local function taskq_check_type(key, want)
  local t = redis.call('TYPE', key)['ok']
  if t ~= 'none' and t ~= want then
    return redis.error_reply('TASKQ_WRONGTYPE ' .. key .. ' ' .. t)
  end
  return nil
end

-- Returns nil when the run can be written, {0, owner, pttl} when its key is
-- held, or an error reply.
local function taskq_enqueue_check(r)
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
  local old_key = r.prefix .. 'run:' .. old
  local status = redis.call('HGET', old_key, 'status')
  if status and not taskq_is_terminal(status) then
    taskq_terminate(r.prefix, r.group, old_key, old, 'cancelled', r.now, 'error', 'superseded by run ' .. r.run_id)
    -- A queued owner may be running too, in a handler whose attempt
    -- finish.lua would begin (see there): workers are told either way.
    redis.call('PUBLISH', r.prefix .. 'cancel', old .. '|' .. r.run_id)
    local sigs = redis.call('XRANGE', r.prefix .. 'signals:' .. old, '-', '+')
    for _, e in ipairs(sigs) do
      redis.call('XADD', r.prefix .. 'signals:' .. r.run_id, '*', unpack(e[2]))
    end
    return #sigs > 0
  end
  return false
end

-- Claims the key, creates the record, queues the run. Returns the entry id
-- ('' for a scheduled run), or an error reply with nothing written when a
-- shared key holds the wrong type, or when Redis refuses the first write
-- (OOM, READONLY: see taskq_failed). The runs index is written first and
-- the queue (stream or retry set) second, both with pcall, so a failure of
-- the second can be undone by removing the first; every later write goes
-- to a key already checked.
local function taskq_enqueue_write(r)
  local added = redis.pcall('ZADD', r.runs_key, r.now, r.run_id)
  if type(added) == 'table' and added.err then
    return taskq_failed(r.runs_key, added)
  end
  local entry, queue_key, queued = '', r.stream_key, nil
  if r.delay and tonumber(r.delay) > 0 then
    queue_key = r.retry_key
    queued = redis.pcall('ZADD', r.retry_key, tonumber(r.now) + tonumber(r.delay), r.run_id)
  else
    queued = redis.pcall('XADD', r.stream_key, '*', 'r', r.run_id, 'i', r.input, 'm', r.meta, 'k', r.key,
      'o', taskq_spec(r.strat, r.retries, r.timeout, r.now, r.maxdel, r.retain, r.keep, 0, 0))
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
    'task', r.task, 'status', 'queued', 'input', r.input, 'meta', r.meta,
    'key', r.key, 'strat', r.strat, 'hold', r.hold, 'retain', r.retain,
    'retries', r.retries, 'maxdel', r.maxdel, 'timeout', r.timeout, 'keep', r.keep,
    'created', r.now, 'entry', entry)
  if sigs then
    -- The signals carried over expire with the record (see taskq_flag).
    redis.call('HSET', r.run_key, 'x', 's')
  end
  return entry
end

-- Appends a signal to an active run's ordered signal stream, once per
-- signal id. Returns
-- {1, run id, signal id}, or {0, reason, run id, status} when the run is
-- missing or has ended, or {0, 'full', run id} at the per-run limit.
local function taskq_signal(prefix, run_id, signal_id, payload, limit)
  local status = redis.call('HGET', prefix .. 'run:' .. run_id, 'status')
  if not status then
    return {0, 'missing', run_id, ''}
  end
  if taskq_is_terminal(status) then
    return {0, 'finished', run_id, status}
  end
  local s = prefix .. 'signals:' .. run_id
  -- A resent call (its reply was lost) finds its signal among the newest
  -- and is answered as the first send was, rather than delivered twice.
  for _, e in ipairs(redis.call('XREVRANGE', s, '+', '-', 'COUNT', 16)) do
    if e[2][1] == 'id' and e[2][2] == signal_id then
      return {1, run_id, signal_id}
    end
  end
  if limit > 0 and redis.call('XLEN', s) >= limit then
    return {0, 'full', run_id, status}
  end
  redis.call('XADD', s, '*', 'id', signal_id, 'p', payload)
  taskq_flag(prefix .. 'run:' .. run_id, 's')
  return {1, run_id, signal_id}
end

-- Debounce: a run with the debounce strategy waits in the retry set until
-- its window passes. Until it starts, a newer trigger of its key hands it
-- the newer input and restarts the window.

-- Reports whether owner is a debounced run that has not started yet.
local function taskq_debounce_pending(prefix, owner)
  local o = redis.call('HMGET', prefix .. 'run:' .. owner, 'status', 'entry', 'strat')
  return o[1] == 'queued' and o[2] == '' and o[3] == 'debounce'
end

-- Gives the pending owner the newer input and starts its window again.
local function taskq_debounce(prefix, owner, idem_key, input, meta, hold, now)
  redis.call('HSET', prefix .. 'run:' .. owner, 'input', input, 'meta', meta)
  redis.call('PEXPIRE', idem_key, hold)
  redis.call('ZADD', prefix .. 'retry', tonumber(now) + tonumber(hold), owner)
end
