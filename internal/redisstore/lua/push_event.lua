-- push_event.lua: stores an ingested event and triggers the run of every
-- task subscribed to its key, as one step: the fan-out of an event whose
-- tasks' runs all live in the event's slot (always, on one partition).
-- Otherwise the fan-out goes in steps: store_event.lua, trigger_event.lua,
-- record_event.lua (see fanout.go). A task whose key is already held
-- gets no run: the event records the run it was deduplicated to instead.
-- Every run is checked (taskq_claim_check) before the first write, so
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
-- KEYS: KEY_COUNT (4),
--   KEYS[1] KEY_EVENT            event hash           taskq:{ns}:event:<event id>
--   KEYS[2] KEY_EVENTS           events index         taskq:{ns}:events
--   KEYS[3] KEY_EVENT_KEY_INDEX  events-by-key index  taskq:{ns}:eventkey:<event key>
--   KEYS[4] KEY_RUNS             runs index           taskq:{ns}:runs
-- ARGV: ARG_COUNT (11) first,
--   ARGV[1] ARG_EVENT_ID    event id
--   ARGV[2] ARG_EVENT_KEY   event key
--   ARGV[3] ARG_PAYLOAD     payload (JSON object): the input of every run
--   ARGV[4] ARG_META        metadata (JSON object): the additional metadata of
--                           every run
--   ARGV[5] ARG_NOW         now (unix ms)
--   ARGV[6] ARG_RETENTION   event retention ms: the record and its index
--                           entries expire then
--   ARGV[7] ARG_PREFIX      key prefix taskq:{ns}:
--   ARGV[8] ARG_TASK_COUNT  number of subscribed tasks n
--   ARGV[9] ARG_SOURCE      "event:<event id>", recorded for each task
--                           deduplicated
--   ARGV[10] ARG_DIGEST     payload digest, recorded likewise
--   ARGV[11] ARG_SUPPRESSED_CAP  most entries of the suppressed-trigger
--                           stream ('0' records none)
-- then ITEM_ARG_COUNT (5) per task i (i = 0 .. n-1), at 5i+12 .. 5i+16:
--   +0  ITEM_ARG_TASK             task name
--   +1  ITEM_ARG_RUN_ID           run id
--   +2  ITEM_ARG_IDEMPOTENCY_KEY  idempotency key ("" when not deduplicated)
--   +3  ITEM_ARG_SPEC             the run's settings (see enqueue.lua)
--   +4  ITEM_ARG_ERROR            "" or why no run is attempted (the
--                                 expression failed)
-- then, only when a task's run has a priority above the default, one ARGV
-- per task i, its run's priority, at ARG_COUNT + ITEM_ARG_COUNT * n + i + 1
-- (as enqueue.lua's: the run is queued in its priority's lane).
-- The run fields mean what they mean in enqueue.lua.
-- The tasks deduplicated or debounced are recorded in one entry of the
-- suppressed-trigger stream taskq:{ns}:suppressed (lib/suppressed.lua)
-- once everything else is written.
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

local prefix = ARGV[ARG_PREFIX]
local n = tonumber(ARGV[ARG_TASK_COUNT])
local event_id, payload, meta = ARGV[ARG_EVENT_ID], ARGV[ARG_PAYLOAD], ARGV[ARG_META]
local now = tonumber(ARGV[ARG_NOW])
local retention = tonumber(ARGV[ARG_RETENTION])
local retry_key = taskq_key_retry(prefix)

local event = {
  event_key = KEYS[KEY_EVENT], events_key = KEYS[KEY_EVENTS], key_index_key = KEYS[KEY_EVENT_KEY_INDEX],
  id = event_id, key = ARGV[ARG_EVENT_KEY], payload = payload, meta = meta, now = now, retention = retention,
}
local bad = taskq_event_check(event) or taskq_check_type(retry_key, 'zset')
if bad then
  return bad
end

local runs = {}     -- what the event record says, per task
local reply = {}
local writes = {}   -- runs to create, written after every check passed
local debounce = {} -- owners to hand this payload to
local claimed = {}  -- idempotency key -> run created by this event
local swallowed = {} -- tasks deduplicated or debounced, to record

for i = 0, n - 1 do
  local a = ARG_COUNT + ITEM_ARG_COUNT * i + 1
  local task, run_id = ARGV[a + ITEM_ARG_TASK], ARGV[a + ITEM_ARG_RUN_ID]
  local spec = ARGV[a + ITEM_ARG_SPEC]
  local strat, hold = taskq_spec_head(spec)
  local r = {
    task = task, run_id = run_id, key = ARGV[a + ITEM_ARG_IDEMPOTENCY_KEY], spec = spec, strat = strat, hold = hold,
    input = payload, meta = meta, now = ARGV[ARG_NOW],
    run_key = taskq_key_run(prefix, run_id), stream_key = taskq_key_stream(prefix, task),
    runs_key = KEYS[KEY_RUNS], retry_key = retry_key, strict = true,
  }
  local prio = ARGV[ARG_COUNT + ITEM_ARG_COUNT * n + i + 1]
  if prio and prio ~= '1' then
    r.stream_key, r.prio = taskq_lane(r.stream_key, prio), prio
  end
  local entry = { task = r.task, idempotencyKey = r.key, error = ARGV[a + ITEM_ARG_ERROR], outcome = 'error', runId = '' }
  if entry.error == '' then
    if r.strat ~= 'none' then
      r.idem_key = taskq_key_idempotency(prefix, r.key)
    end
    if r.strat == 'debounce' then
      r.delay = r.hold
    end
    local earlier = r.idem_key and claimed[r.key]
    if earlier then
      entry.outcome, entry.runId = 'deduplicated', earlier
    else
      local refused = taskq_claim_check(r)
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
  if entry.outcome == 'deduplicated' or entry.outcome == 'debounced' then
    swallowed[#swallowed + 1] = entry
  end
  runs[#runs + 1] = entry
  reply[#reply + 1] = entry.outcome
  reply[#reply + 1] = entry.runId
end

for _, r in ipairs(writes) do
  local entry = taskq_claim_write(r)
  if type(entry) == 'table' then
    -- Every key's type was checked above, so this is Redis refusing the
    -- script's first write (OOM at maxmemory, READONLY on a replica):
    -- nothing was written.
    return entry
  end
end
for _, d in ipairs(debounce) do
  taskq_debounce(prefix, d.owner, d.idem_key, payload, meta, d.hold, now)
end

taskq_event_write(event)
if #runs > 0 then
  redis.call('HSET', KEYS[KEY_EVENT], EVENT_RUNS, cjson.encode(runs))
end
if #swallowed > 0 and ARGV[ARG_SUPPRESSED_CAP] ~= '0' then
  local recs, nrecs = {}, 0
  for _, e in ipairs(swallowed) do
    nrecs = taskq_suppressed_add(recs, nrecs, e.outcome, e.runId, ARGV[ARG_DIGEST], e.task, e.idempotencyKey)
  end
  taskq_suppressed_write(taskq_key_suppressed(prefix), ARGV[ARG_SUPPRESSED_CAP], ARGV[ARG_SOURCE], recs)
end
return reply
