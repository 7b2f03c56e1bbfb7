-- record.lua: a run record's status and flags.

local function taskq_is_terminal(status)
  return status == 'succeeded' or status == 'failed' or status == 'cancelled'
end

-- A run's flags field (RUN_FLAGS) holds one letter per optional part the
-- run has, so ending a run reads one field to learn them all: s (a signals
-- stream), t (a steps hash), a (an attempt history), w (somebody waits for
-- its completion notice).
local function taskq_flag(run_key, letter)
  local x = redis.call('HGET', run_key, RUN_FLAGS) or ''
  if not string.find(x, letter, 1, true) then
    redis.call('HSET', run_key, RUN_FLAGS, x .. letter)
  end
end

local function taskq_has(x, letter)
  return x ~= nil and x ~= false and string.find(x, letter, 1, true) ~= nil
end
