-- errors.lua: the error replies of the scripts.

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
