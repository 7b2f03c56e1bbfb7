-- record.lua: a run record's status and flags.

local function taskq_is_terminal(status)
  return status == 'succeeded' or status == 'failed' or status == 'cancelled'
end

-- A run's flags field (RUN_FLAGS) holds one letter per optional part the
-- run has, so ending a run reads one field to learn them all: s (a signals
-- stream), t (a steps hash), a (an attempt history), w (somebody waits for
-- its completion notice), d (a children hash: it spawned runs).
local function taskq_flag(run_key, letter)
  local x = redis.call('HGET', run_key, RUN_FLAGS) or ''
  if not string.find(x, letter, 1, true) then
    redis.call('HSET', run_key, RUN_FLAGS, x .. letter)
  end
end

local function taskq_has(x, letter)
  return x ~= nil and x ~= false and string.find(x, letter, 1, true) ~= nil
end

-- A run's spec (RUN_SPEC, or an entry's ENTRY_SPEC) split into its values,
-- indexed by SPEC_*, as strings. For paths off the trigger's and the
-- delivery's: those are sent what they need.
local function taskq_spec_values(spec)
  local v, n = {}, 0
  for w in string.gmatch(spec or '', '[^ ]+') do
    n = n + 1
    v[n] = w
  end
  return v
end

-- A run record's spec: spec, its RUN_SPEC as read, or for a record written
-- before RUN_SPEC existed (spec nil or false), one made from the fields it
-- had then (LEGACY_RUN_*); nil for no record.
local function taskq_record_spec(run_key, spec)
  if spec then
    return spec
  end
  local f = redis.call('HMGET', run_key, LEGACY_RUN_STRATEGY, LEGACY_RUN_HOLD, LEGACY_RUN_RETRIES, LEGACY_RUN_TIMEOUT,
    LEGACY_RUN_CREATED, LEGACY_RUN_MAX_DELIVERIES, LEGACY_RUN_RETAIN, LEGACY_RUN_RETENTION)
  if not f[SPEC_STRATEGY] then
    return nil
  end
  for i = SPEC_HOLD, SPEC_RETENTION do
    f[i] = f[i] or '0'
  end
  return table.concat(f, ' ', SPEC_STRATEGY, SPEC_RETENTION)
end

-- The strategy and the hold of a spec, its first two values (SPEC_STRATEGY,
-- SPEC_HOLD), as the trigger scripts read them.
local function taskq_spec_head(spec)
  return string.match(spec, '^(%a+) (%d+)')
end
