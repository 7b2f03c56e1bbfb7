-- push_event.lua: stores an ingested event and triggers the run of every
-- task subscribed to its key, as one step. A task whose key is already held
-- gets no run: the event records the run it was deduplicated to instead.
-- Every run is checked (taskq_enqueue_check) before the first write, so
-- either the event and all its runs are written, or nothing is.
--
-- Keys are namespace-wide, so two tasks of one event whose expressions
-- yield the same key collide with each other: the later task (in argument
-- order) is deduplicated to the earlier one's run.
--
-- A task with the debounce strategy behaves as a direct trigger does: when
-- its key is held by a debounced run that has not started, that run takes
-- this event's payload and its window starts again (outcome "debounced").
--
-- KEYS[1] event hash          taskq:{ns}:event:<event id>
-- KEYS[2] events index        taskq:{ns}:events
-- KEYS[3] events-by-key index taskq:{ns}:eventkey:<event key>
-- KEYS[4] runs index          taskq:{ns}:runs
-- ARGV[1] event id
-- ARGV[2] event key
-- ARGV[3] payload (JSON object): the input of every run
-- ARGV[4] metadata (JSON object): the additional metadata of every run
-- ARGV[5] now (unix ms)
-- ARGV[6] event retention ms: the record and its index entries expire then
-- ARGV[7] key prefix taskq:{ns}:
-- ARGV[8] number of subscribed tasks n
-- then 11 arguments per task, in this order:
--   task name, run id, idempotency key ("" when not deduplicated),
--   strategy (none | ttl | status | debounce), hold ms, retain ms, retries,
--   maximum deliveries, timeout ms, run record retention ms,
--   error ("" or why no run is attempted: the expression failed)
-- The run fields mean what they mean in enqueue.lua.
-- Returns a flat array, two entries per task in argument order:
--   outcome ("created" | "deduplicated" | "debounced" | "error"), run id
--   (the created run, or the run holding the key; "" for "error").
-- Errors, with nothing written:
--   "TASKQ_EVENT_EXISTS <event id>"  an event with this ID exists
--   "TASKQ_WRONGTYPE <key> <type>"   a key holds a value of the wrong type
--   "TASKQ_EXISTS <run id>"          a run record with this ID exists
--   "TASKQ_OOM ..."                  Redis is at maxmemory and refused to write
--   "TASKQ_READONLY ..."             the server is a read-only replica
--   (or OOM ..., READONLY ... when the debounce or the event's own write
--   comes first)

local prefix = ARGV[7]
local n = tonumber(ARGV[8])
local now = tonumber(ARGV[5])
local retention = tonumber(ARGV[6])

if redis.call('EXISTS', KEYS[1]) == 1 then
  return redis.error_reply('TASKQ_EVENT_EXISTS ' .. ARGV[1])
end
local bad = taskq_check_type(KEYS[2], 'zset') or taskq_check_type(KEYS[3], 'zset')
  or taskq_check_type(prefix .. 'retry', 'zset')
if bad then
  return bad
end

local runs = {}     -- what the event record says, per task
local reply = {}
local writes = {}   -- runs to create, written after every check passed
local debounce = {} -- owners to hand this payload to
local claimed = {}  -- idempotency key -> run created by this event

for i = 0, n - 1 do
  local a = 9 + i * 11
  local r = {
    task = ARGV[a], run_id = ARGV[a + 1], key = ARGV[a + 2], strat = ARGV[a + 3],
    hold = ARGV[a + 4], retain = ARGV[a + 5], retries = ARGV[a + 6], maxdel = ARGV[a + 7],
    timeout = ARGV[a + 8], keep = ARGV[a + 9],
    input = ARGV[3], meta = ARGV[4], now = ARGV[5],
    run_key = prefix .. 'run:' .. ARGV[a + 1], stream_key = prefix .. 'stream:' .. ARGV[a],
    runs_key = KEYS[4], retry_key = prefix .. 'retry', strict = true,
  }
  local entry = { task = r.task, idempotencyKey = r.key, error = ARGV[a + 10], outcome = 'error', runId = '' }
  if entry.error == '' then
    if r.strat ~= 'none' then
      r.idem_key = prefix .. 'key:' .. r.key
    end
    if r.strat == 'debounce' then
      r.delay = r.hold
    end
    local earlier = r.idem_key and claimed[r.key]
    if earlier then
      entry.outcome, entry.runId = 'deduplicated', earlier
    else
      local refused = taskq_enqueue_check(r)
      if refused and refused.err then
        return refused
      end
      if refused then
        local owner = refused[2]
        entry.outcome, entry.runId = 'deduplicated', owner
        if r.strat == 'debounce' and taskq_debounce_pending(prefix, owner) then
          entry.outcome = 'debounced'
          debounce[#debounce + 1] = { owner = owner, idem_key = r.idem_key, hold = r.hold }
        end
      else
        entry.outcome, entry.runId = 'created', r.run_id
        if r.idem_key then
          claimed[r.key] = r.run_id
        end
        writes[#writes + 1] = r
      end
    end
  end
  runs[#runs + 1] = entry
  reply[#reply + 1] = entry.outcome
  reply[#reply + 1] = entry.runId
end

for _, r in ipairs(writes) do
  local entry = taskq_enqueue_write(r)
  if type(entry) == 'table' then
    -- Every key's type was checked above, so this is Redis refusing the
    -- script's first write (OOM at maxmemory, READONLY on a replica):
    -- nothing was written.
    return entry
  end
end
for _, d in ipairs(debounce) do
  taskq_debounce(prefix, d.owner, d.idem_key, ARGV[3], ARGV[4], d.hold, now)
end

redis.call('HSET', KEYS[1], 'key', ARGV[2], 'payload', ARGV[3], 'meta', ARGV[4], 'created', ARGV[5])
if #runs > 0 then
  redis.call('HSET', KEYS[1], 'runs', cjson.encode(runs))
end
redis.call('PEXPIRE', KEYS[1], retention)
redis.call('ZADD', KEYS[2], now, ARGV[1])
-- The per-key index trims itself: its entries are only ever read newest
-- first, and the whole index expires when its key sees no events.
redis.call('ZADD', KEYS[3], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', '(' .. (now - retention))
redis.call('PEXPIRE', KEYS[3], retention)
return reply
