-- trigger_event.lua: step 2 of an event's fan-out in steps (see fanout.go):
-- triggers the runs of subscribed tasks whose runs live under one prefix,
-- any number per call, in order, each as push_event.lua would (the key
-- claimed, the run created and queued; a held key swallowed as
-- "deduplicated", or "debounced" to a waiting debounced owner).
--
-- Each trigger is idempotent on (event, task): its outcome is kept in a
-- marker, and a trigger whose marker exists answers what the marker says
-- and writes nothing, so a replay (an ingester's go-redis resending the
-- call, a recoverer finishing a fan-out its ingester left, two recoverers
-- at once) never creates a second run. The marker is written with the run,
-- in the same script, and kept for the event's retention.
--
-- KEYS: KEY_COUNT (0) before ITEM_KEY_COUNT (5) per task i (i = 0, 1, ...),
-- at 5i+1 .. 5i+5:
--   +0 ITEM_KEY_MARKER       the task's marker  taskq:{ns}:evtrig:<event id>:<task>
--   +1 ITEM_KEY_RUN          run hash           taskq:{ns}:run:<run id>
--   +2 ITEM_KEY_STREAM       task stream        taskq:{ns}:stream:<task>
--   +3 ITEM_KEY_RUNS         runs index         taskq:{ns}:runs
--   +4 ITEM_KEY_IDEMPOTENCY  idempotency key    taskq:{ns}:key:<key>  (the runs
--                                               index again when the strategy
--                                               is "none")
-- ARGV: ARG_COUNT (8) first,
--   ARGV[1] ARG_PREFIX     key prefix taskq:{ns}: of the runs
--   ARGV[2] ARG_PAYLOAD    payload (JSON object): the input of every run
--   ARGV[3] ARG_META       metadata (JSON object): the additional metadata
--                          of every run
--   ARGV[4] ARG_NOW        the event's time (unix ms): every run's creation
--   ARGV[5] ARG_RETENTION  event retention ms: the markers expire then
--   ARGV[6] ARG_SOURCE     "event:<event id>", recorded for each task
--                          deduplicated
--   ARGV[7] ARG_DIGEST     payload digest, recorded likewise
--   ARGV[8] ARG_SUPPRESSED_CAP  most entries of the suppressed-trigger
--                          stream ('0' records none)
-- then ITEM_ARG_COUNT (4) per task i, at 4i+9 .. 4i+12:
--   +0 ITEM_ARG_TASK             task name
--   +1 ITEM_ARG_RUN_ID           run id
--   +2 ITEM_ARG_IDEMPOTENCY_KEY  idempotency key ("" when not deduplicated)
--   +3 ITEM_ARG_SPEC             the run's settings (see enqueue.lua)
-- then, only when a task's run has a priority above the default, one ARGV
-- per task i (from 1), its run's priority, at ARG_COUNT + ITEM_ARG_COUNT *
-- n + i, n the tasks (as enqueue.lua's: the run is queued in its
-- priority's lane).
-- The run fields mean what they mean in enqueue.lua.
-- The tasks deduplicated or debounced are recorded in one entry of the
-- suppressed-trigger stream taskq:{ns}:suppressed (lib/suppressed.lua),
-- once: a replay that finds the marker records nothing again.
-- Returns an array with one reply per task, in order:
--   {outcome, run id}  outcome "created" (run id: the run created),
--                      "deduplicated" or "debounced" (run id: the run
--                      holding the key); the first outcome again when the
--                      marker exists
--   an error reply, with nothing written for this task:
--     "TASKQ_WRONGTYPE <key> <type>"  a key holds a value of the wrong type
--     "TASKQ_EXISTS <run id>"         a run record with this ID exists
--     "TASKQ_OOM ..."                 Redis is at maxmemory and refused the
--                                     task's first write
--     "TASKQ_READONLY ..."            the server is a read-only replica
-- The call as a whole fails with OOM or READONLY, nothing written, when its
-- first write is a debounce, which is not written with pcall.

local prefix, payload, meta = ARGV[ARG_PREFIX], ARGV[ARG_PAYLOAD], ARGV[ARG_META]
local now, retention = ARGV[ARG_NOW], ARGV[ARG_RETENTION]
local retry_key = taskq_key_retry(prefix)
local recs, nrecs = {}, 0 -- suppressed triggers' records

-- One task, whose KEYS start at k and ARGV at a, of priority prio (nil:
-- the default).
local function trigger(k, a, prio)
  local marker = KEYS[k + ITEM_KEY_MARKER]
  local first = redis.pcall('GET', marker)
  if type(first) == 'table' and first.err then
    return taskq_failed(marker, first)
  end
  if first then
    local outcome, run_id = string.match(first, '^(%S+) (%S*)$')
    return {outcome, run_id}
  end
  local task, run_id, spec = ARGV[a + ITEM_ARG_TASK], ARGV[a + ITEM_ARG_RUN_ID], ARGV[a + ITEM_ARG_SPEC]
  local strat, hold = taskq_spec_head(spec)
  local r = {
    run_key = KEYS[k + ITEM_KEY_RUN], stream_key = KEYS[k + ITEM_KEY_STREAM], runs_key = KEYS[k + ITEM_KEY_RUNS],
    run_id = run_id, task = task, input = payload, meta = meta, key = ARGV[a + ITEM_ARG_IDEMPOTENCY_KEY],
    spec = spec, strat = strat, hold = hold, now = now, prefix = prefix, retry_key = retry_key,
  }
  if strat ~= 'none' then
    r.idem_key = KEYS[k + ITEM_KEY_IDEMPOTENCY]
  end
  if strat == 'debounce' then
    r.delay = hold
  end
  if prio and prio ~= '1' then
    r.stream_key, r.prio = taskq_lane(r.stream_key, prio), prio
  end
  local outcome, owner
  local refused = taskq_claim_check(r)
  if refused then
    if refused.err then
      return refused
    end
    outcome, owner = 'deduplicated', refused[2]
    if strat == 'debounce' and taskq_debounce_pending(prefix, owner) then
      taskq_debounce(prefix, owner, r.idem_key, payload, meta, hold, now)
      outcome = 'debounced'
    end
    nrecs = taskq_suppressed_add(recs, nrecs, outcome, owner, ARGV[ARG_DIGEST], task, r.key)
  else
    local entry = taskq_claim_write(r)
    if type(entry) == 'table' then
      return entry
    end
    outcome, owner = 'created', run_id
  end
  -- A marker Redis refuses (the first write of a swallowed collision, at
  -- maxmemory) costs nothing: no run was created, so a replay may decide
  -- again.
  redis.pcall('SET', marker, outcome .. ' ' .. owner, 'PX', retention)
  return {outcome, owner}
end

local out = {}
local k, a = KEY_COUNT + 1, ARG_COUNT + 1 -- the first task's KEYS and ARGV
local n = (#KEYS - KEY_COUNT) / ITEM_KEY_COUNT
for i = 1, n do
  out[i] = trigger(k, a, ARGV[ARG_COUNT + ITEM_ARG_COUNT * n + i])
  k, a = k + ITEM_KEY_COUNT, a + ITEM_ARG_COUNT
end
if ARGV[ARG_SUPPRESSED_CAP] ~= '0' then
  taskq_suppressed_write(taskq_key_suppressed(prefix), ARGV[ARG_SUPPRESSED_CAP], ARGV[ARG_SOURCE], recs)
end
return out
