-- lib.lua: helpers shared by the scripts that end runs. It is prepended to
-- those scripts when they are loaded, so each script stays one atomic EVAL.

-- Frees a status-strategy key, but only while run_id still owns it: a run
-- whose key lapsed and was claimed by another run never frees the newer
-- owner's key. With retain > 0 the key is kept for that long instead.
local function taskq_release(prefix, run_id, strat, key, retain)
  if strat ~= 'status' or key == nil or key == '' then
    return
  end
  local k = prefix .. 'key:' .. key
  if redis.call('GET', k) == run_id then
    if retain > 0 then
      redis.call('PEXPIRE', k, retain)
    else
      redis.call('DEL', k)
    end
  end
end

-- Acknowledges and deletes a run's stream entry, so streams hold only
-- deliveries that are still queued or in flight.
local function taskq_drop_entry(prefix, group, task, entry)
  if entry and entry ~= '' and task then
    local s = prefix .. 'stream:' .. task
    redis.call('XACK', s, group, entry)
    redis.call('XDEL', s, entry)
  end
end

-- Moves a run to a terminal status: record it, drop its delivery, release
-- its key per strategy, start its retention clock and wake its waiters.
-- field/value carry the result or the error message.
local function taskq_terminate(prefix, group, run_key, run_id, status, now, field, value)
  local r = redis.call('HMGET', run_key, 'task', 'strat', 'key', 'retain', 'entry', 'keep')
  redis.call('HSET', run_key, 'status', status, 'finished', now, field, value)
  taskq_drop_entry(prefix, group, r[1], r[5])
  taskq_release(prefix, run_id, r[2], r[3], tonumber(r[4]) or 0)
  local keep = tonumber(r[6]) or 0
  if keep > 0 then
    redis.call('PEXPIRE', run_key, keep)
  end
  redis.call('ZREM', prefix .. 'retry', run_id)
  redis.call('PUBLISH', prefix .. 'done:' .. run_id, status)
end

local function taskq_is_terminal(status)
  return status == 'succeeded' or status == 'failed' or status == 'cancelled'
end
