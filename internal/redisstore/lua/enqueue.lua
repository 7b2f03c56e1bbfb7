-- enqueue.lua: triggers runs. For each trigger it claims the idempotency
-- key, creates the run record and queues the run, as one step; when the key
-- is held, the conflict policy says what happens instead. One call takes
-- any number of triggers, handled in order as if each were its own call:
-- a later trigger of a key meets the run an earlier one created. A trigger
-- is written whole or not at all (see taskq_claim_write), and one refused
-- trigger does not stop the others.
--
-- KEYS: KEY_COUNT (1):
--   KEYS[1] KEY_RUNS  runs index  taskq:{ns}:runs
-- A trigger's own keys, its run hash taskq:{ns}:run:<run id>, its task's
-- stream taskq:{ns}:stream:<task> and its idempotency key
-- taskq:{ns}:key:<key>, are built from the prefix with the run ID, task
-- and key it is given, as is the partition's retry zset taskq:{ns}:retry:
-- all share the runs index's hash tag. Sending them as KEYS as well would
-- cost Redis more per trigger than building them (each argument is read,
-- made an object and handed to Lua), and a duplicate needs only its key.
-- ARGV: ARG_COUNT (5) first,
--   ARGV[1] ARG_PREFIX          key prefix taskq:{ns}:
--   ARGV[2] ARG_GROUP           consumer group
--   ARGV[3] ARG_SUPPRESSED_CAP  most entries of the partition's suppressed-
--                               trigger stream ('0' records none)
--   ARGV[4] ARG_SOURCE          where the call's triggers come from
--                               (client | http | cli | ...)
--   ARGV[5] ARG_TRIGGERS        how many triggers the call carries, n
-- then ITEM_ARG_COUNT (9) per trigger i, at 9i+6 .. 9i+14:
--   +0  ITEM_ARG_RUN_ID          run id
--   +1  ITEM_ARG_TASK            task name
--   +2  ITEM_ARG_INPUT           input (JSON)
--   +3  ITEM_ARG_META            additional metadata (JSON)
--   +4  ITEM_ARG_IDEMPOTENCY_KEY idempotency key as the user sees it ("" when
--                                not deduplicated)
--   +5  ITEM_ARG_SPEC            the run's settings, the first SPEC_RETENTION
--                                values of a spec (see taskq_spec): the
--                                strategy (none | ttl | status | debounce),
--                                the hold ms (the ttl for "ttl", the fallback
--                                ttl for "status", the window for
--                                "debounce"), retries, timeout, creation
--                                time, most deliveries, retain and retention
--                                ms; written as it is to the record and the
--                                stream entry
--   +6  ITEM_ARG_NOW             now (unix ms), the spec's creation time
--                                (an argument of its own costs Redis less
--                                than reading it from the spec)
--   +7  ITEM_ARG_POLICY          conflict policy: reject | attach | supersede,
--                                or "signal <max> <signal id>" for policy
--                                signal, max the most signals a run may hold
--                                (0 = no limit)
--   +8  ITEM_ARG_DIGEST          input digest, recorded when the trigger
--                                creates no run
-- A call with a trigger that asks to run later takes one more ARGV per
-- trigger after the last trigger's: the delay in ms of trigger i (0 queues
-- it at once), at ARG_COUNT + ITEM_ARG_COUNT * n + i + 1; other calls send
-- none, and the read finds nil. A delayed run is created queued, in the
-- partition's retry zset taskq:{ns}:retry at now + delay instead of its
-- task stream, with its key claimed at once; promote.lua queues it when it
-- is due.
-- A call with a trigger of a priority above the default sends those delays
-- (0 for none), and after them one more ARGV per trigger: the priority of
-- trigger i ('1', the default, '2' or '3'), at ARG_COUNT +
-- (ITEM_ARG_COUNT + 1) * n + i + 1. Such a run is queued in its task's
-- lane for the priority, taskq:{ns}:stream:<task>|p<priority>, and its
-- record says its priority (RUN_PRIORITY), for every later queueing.
-- Returns one flat array (Redis turns a table in a reply into a reply far
-- more slowly than a plain value): for each trigger in order, a code and
-- the values it says follow (see EnqueueReplies):
--   1, entry id                   accepted ('' when scheduled: a delay or
--                                 debounce)
--   5, entry id, old owner        accepted by superseding old owner
--   0, owner run id, pttl ms      rejected: the key is held; nothing written
--   2, owner run id               attached to the owner; nothing written
--   3, owner run id, signal id    the input was sent to the owner as a signal
--   4, owner run id               debounced: the queued owner now has this
--                                 input and the window starts again
--   an error reply alone, with nothing written for this trigger:
--     "TASKQ_WRONGTYPE <key> <type>"  a key holds a value of the wrong type
--     "TASKQ_EXISTS <run id>"         a run record with this ID exists
--     "TASKQ_OOM ..."                 Redis is at maxmemory: it refuses the
--                                     first write of a call (a trigger that
--                                     needs no write, a duplicate, is still
--                                     answered)
--     "TASKQ_READONLY ..."            the server is a read-only replica
-- The call as a whole fails with OOM or READONLY, nothing written, when its
-- first write is a debounce or a signal to a key's owner, which are not
-- written with pcall.
-- The triggers that create no run because their key is held (replies 0,
-- 2, 3 and 4) are recorded in one entry of the partition's suppressed-
-- trigger stream taskq:{ns}:suppressed (lib/suppressed.lua), a write Redis
-- may refuse without failing them.
-- A resend of the same trigger (go-redis sends a command again when its
-- reply was lost) finds the record the first send wrote, with this run ID,
-- task and spec (creation time included), and answers {1, entry id} as the
-- first send did (taskq_claim_existing). A run ID in use otherwise gets
-- TASKQ_EXISTS, unless the trigger's key is held by another run: then it
-- is answered as that run's duplicate, and nothing is written either way.

local prefix, group, suppressed_cap = ARGV[ARG_PREFIX], ARGV[ARG_GROUP], ARGV[ARG_SUPPRESSED_CAP]
local runs_key = KEYS[KEY_RUNS]
-- The partition's retry zset, named for the first trigger that is
-- scheduled; and the stream of the last trigger's task, named again only
-- when the task changes, as a call's triggers are mostly of one task (each
-- name built costs Redis a string to make, intern and collect).
local retry_key, stream_task, stream_key = nil, nil, nil
-- Suppressed triggers' records, nrecs values, in a table made with the
-- first (a table costs a call its making and its collection).
local recs, nrecs = nil, 0
-- The runs index is written by the call's first run that is created,
-- which checks its type and meets a refusal at maxmemory before anything
-- is written, and for the later ones by one ZADD at the end (one command
-- for a call's runs costs Redis about 2.5k instructions less per run than
-- one each): zs holds their scores and IDs, nzs values, made with the
-- second run created.
local indexed, zs, nzs = false, nil, 0

-- Each trigger, whose ARGV start at a, gives its code and the values x,
-- y that follow it, or an error reply as its code. It is written in the
-- loop rather than as a function: the call would make such a function
-- anew each time it runs (a closure over the call's locals).
local out, n = {}, 0
local a = ARG_COUNT + 1 -- the first trigger's ARGV
local ntriggers = tonumber(ARGV[ARG_TRIGGERS])
local d = ITEM_ARG_COUNT * ntriggers + 1 -- the first trigger's delay, if any, after ARG_COUNT
-- Whether the call sends priorities, ntriggers after the delays: looked up
-- once, so that a call without costs no more per trigger.
local prios = ARGV[ARG_COUNT + d + ntriggers + ntriggers - 1] ~= nil
for _ = 1, ntriggers do
  local code, x, y
  repeat -- once: a break ends the trigger
    local run_id, task, input, meta = ARGV[a + ITEM_ARG_RUN_ID], ARGV[a + ITEM_ARG_TASK], ARGV[a + ITEM_ARG_INPUT],
      ARGV[a + ITEM_ARG_META]
    local spec, now, policy = ARGV[a + ITEM_ARG_SPEC], ARGV[a + ITEM_ARG_NOW], ARGV[a + ITEM_ARG_POLICY]
    local strat, hold = taskq_spec_head(spec)
    local key, idem_key, delay = ARGV[a + ITEM_ARG_IDEMPOTENCY_KEY], nil, nil
    if strat ~= 'none' then
      idem_key = taskq_key_idempotency(prefix, key)
    end
    if strat == 'debounce' then
      delay = hold
    end
    delay = delay or ARGV[ARG_COUNT + d]
    local owner, prev_owner = taskq_claim_key(idem_key), nil
    if type(owner) == 'table' then
      code = owner
      break
    end
    if owner and policy == 'supersede' then
      -- Two statements: gopher-lua (miniredis) does not evaluate a multiple
      -- assignment's right side before it assigns.
      prev_owner = owner
      owner = nil
    end
    -- A run ID with a record is a resend of a trigger that created it, whose
    -- run holds the key, or an ID in use: looked at only where the key does
    -- not name another run, so that a duplicate costs no more. The run key
    -- is built here for the same reason; every trigger past "if owner" has it.
    local run_key
    if not owner or owner == run_id or prev_owner == run_id then
      run_key = taskq_key_run(prefix, run_id)
      if redis.call('EXISTS', run_key) == 1 then
        code, x = taskq_claim_existing(run_key, run_id, task, spec)
        break
      end
    end
    if owner then
      local outcome = 'rejected'
      code = 0
      if strat == 'debounce' and taskq_debounce_pending(prefix, owner) then
        taskq_debounce(prefix, owner, idem_key, input, meta, hold, now)
        code, outcome = 4, 'debounced'
      elseif policy == 'attach' then
        code, outcome = 2, 'attached'
      elseif policy ~= 'reject' then
        local max_signals, signal_id = string.match(policy, '^signal (%d+) (.*)$')
        if signal_id and taskq_signal(prefix, owner, signal_id, input, tonumber(max_signals))[1] == 1 then
          code, y, outcome = 3, signal_id, 'signalled'
        end
      end
      if code == 0 then
        y = redis.call('PTTL', idem_key)
      end
      -- taskq_suppressed_add, inlined: this is the duplicate path.
      recs = recs or {}
      recs[nrecs + 1] = SUPPRESSED_RECORD
      recs[nrecs + 2] = outcome .. ' ' .. owner .. ' ' .. ARGV[a + ITEM_ARG_DIGEST] .. ' ' .. task .. ' ' .. key
      nrecs = nrecs + 2
      x = owner
      break
    end
    if task ~= stream_task then
      stream_task, stream_key = task, taskq_key_stream(prefix, task)
    end
    if delay and not retry_key then
      retry_key = taskq_key_retry(prefix)
    end
    local prio = prios and ARGV[ARG_COUNT + d + ntriggers]
    if prio == '1' then
      prio = false
    end
    local entry = taskq_claim_run(run_key, prio and taskq_lane(stream_key, prio) or stream_key, runs_key, idem_key,
      run_id, task, input, meta, key, spec, hold, now, delay, retry_key, prev_owner, prefix, group, indexed)
    if type(entry) == 'table' then
      code = entry
      break
    end
    if prio then
      -- Recorded so that the run is queued again in its lane.
      redis.call('HSET', run_key, RUN_PRIORITY, prio)
    end
    if not indexed then
      indexed = true
    elseif zs then
      zs[nzs + 1], zs[nzs + 2] = now, run_id
      nzs = nzs + 2
    else
      zs, nzs = {now, run_id}, 2
    end
    if prev_owner then
      code, x, y = 5, entry, prev_owner
      break
    end
    code, x = 1, entry
  until true
  n = n + 1
  out[n] = code
  if x then
    n = n + 1
    out[n] = x
    if y then
      n = n + 1
      out[n] = y
    end
  end
  a, d = a + ITEM_ARG_COUNT, d + 1
end
for j = 1, nzs, 1000 do
  redis.call('ZADD', runs_key, unpack(zs, j, math.min(j + 999, nzs)))
end
if recs and suppressed_cap ~= '0' then
  taskq_suppressed_write(taskq_key_suppressed(prefix), suppressed_cap, ARGV[ARG_SOURCE], recs)
end
return out
